# SPDX-License-Identifier: MIT
"""Two ND2 processes on one machine, each with an adapter on a net_tap port, the taps on a Linux
bridge in a network namespace made for the test (and deleted after, also on failure); the
programs run inside the namespace (Net). Or two namespaces joined by a veth pair whose ends may
carry the kernel's addresses, for the ports beside the kernel (VethPair: net_af_xdp,
net_af_packet; tests/nd2tools/afxdp_test.py, bench/host_ports.py). Shared by the test drivers that run ND2 programs in pairs
(tests/nd2tools, tests/nd2api/nd2_progress_test.py, tests/networkdirect).

    with Net("ndt") as net:
        p = net.start(tmp, "server", [exe, "-s", ...], net.config(tmp, "server"))
        wait_for_text(p, "listening")
        ...
        rcs = wait_all([p, q])

Needs root (TAP devices, ip netns). Addresses: 198.18.<subnet>.1 (server) and .2 (client).
"""
import os
import subprocess
import time


class CaseFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def write_config(path, sections):
    with open(path, "w") as f:
        for name, keys in sections.items():
            f.write(f"[{name}]\n")
            for k, v in keys.items():
                f.write(f"{k} = {v}\n")


def end_all(procs):
    """Kills what is still running of `procs` (started by the test) and reaps them."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


class Net:
    """A network namespace with a bridge; taps that DPDK creates in it are attached as they appear.
    `prefix` (3 letters) names the namespace, bridge and taps; `subnet` is the third octet of
    the adapters' 198.18.x.0/24."""

    def __init__(self, prefix="ndt", subnet=77):
        tag = f"{os.getpid() % 100000}"
        self.prefix = prefix
        self.subnet = subnet
        self.ns = f"{prefix}{tag}"
        self.bridge = f"{prefix}br"
        self.taps = {"server": f"{prefix}s{tag}", "client": f"{prefix}c{tag}"}
        self.procs = []

    def ip(self, role):
        return f"198.18.{self.subnet}.{1 if role == 'server' else 2}"

    def sh(self, *args, check_rc=True):
        p = subprocess.run(["ip", "-n", self.ns] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        if check_rc and p.returncode != 0:
            raise CaseFailure(f"ip -n {self.ns} {' '.join(args)}: {p.stdout.strip()}")
        return p.returncode

    def __enter__(self):
        subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "netns", "add", self.ns], check=True, timeout=30)
        subprocess.run(["ip", "netns", "exec", self.ns, "sysctl", "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"],
                       check=True, timeout=30)
        self.sh("link", "set", "lo", "up")
        self.sh("link", "add", self.bridge, "type", "bridge", "forward_delay", "0")
        self.sh("link", "set", self.bridge, "up")
        return self

    def __exit__(self, *exc):
        end_all(self.procs)
        subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL, timeout=30)
        return False

    def config(self, tmp, role, progress="inline", **keys):
        """An ND2_CONFIG for `role`'s adapter; progress None leaves the library's default;
        `keys` are more adapter keys (e.g. progress_yield="on")."""
        n = 1 if role == "server" else 2
        path = os.path.join(tmp, f"{role}.ini")
        adapter = {"profile": "net_tap.ini", "iface": self.taps[role], "ip": f"{self.ip(role)}/24",
                   "port.ipv6": f"fd00:{self.subnet}::{n}/64",
                   "port.mac": f"02:00:c6:12:{self.subnet:02x}:0{n}"}
        if progress is not None:
            adapter["progress"] = progress
        adapter.update(keys)
        write_config(path, {"adapter0": adapter})
        return path

    def start(self, tmp, role, cmd, config, bridge=True, may_exit=False):
        """Runs cmd as `role` in the namespace and joins its tap to the bridge once it has
        one. may_exit: the program may end before its tap was joined (a side with no part
        in a test); its exit status is the caller's to judge."""
        out = open(os.path.join(tmp, f"{role}.out"), "w+")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, "env", f"ND2_CONFIG={config}"] + cmd,
                             stdout=out, stderr=subprocess.STDOUT, text=True)
        p.out = out
        self.procs.append(p)
        if not bridge:  # a program with no peer: its tap may come and go before we look
            return p
        # Join the tap to the bridge as soon as the program has created it.
        deadline = time.monotonic() + 30
        while self.sh("link", "show", self.taps[role], check_rc=False) != 0:
            if p.poll() is not None:
                if may_exit:
                    return p
                raise CaseFailure(f"{role} exited ({p.returncode}) before its tap appeared:\n{read(p)}")
            if time.monotonic() > deadline:
                raise CaseFailure(f"{role}: tap {self.taps[role]} never appeared")
            time.sleep(0.02)
        if self.sh("link", "set", self.taps[role], "master", self.bridge, "up", check_rc=False) != 0:
            # The tap went away: the program has ended (its status is the caller's to judge).
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                raise CaseFailure(f"{role}: could not join tap {self.taps[role]} to the bridge")
        return p


class VethPair:
    """Two network namespaces joined by a veth pair (sides "s" and "c"), both deleted after, also
    on failure; the processes started with start() are killed first. `addrs` maps a side to the
    kernel addresses its end carries ("10.62.0.1/24", "fd00:62::1/64"; IPv6 without DAD), none by
    default. `prefix` (2 letters) names the namespaces and interfaces."""

    def __init__(self, prefix, addrs=None):
        tag = f"{os.getpid() % 100000}"
        self.ns = {"s": f"{prefix}s{tag}", "c": f"{prefix}c{tag}"}
        self.dev = dict(self.ns)
        self.addrs = addrs or {}
        self.procs = []

    def sh(self, side, cmd, check_rc=True):
        r = subprocess.run(["ip", "netns", "exec", self.ns[side]] + cmd, capture_output=True, text=True, timeout=60)
        if check_rc and r.returncode != 0:
            raise CaseFailure(f"{' '.join(cmd)} in {self.ns[side]}: {r.stderr.strip()}")
        return r

    def __enter__(self):
        for n in self.ns.values():
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
            subprocess.run(["ip", "netns", "add", n], check=True)
        subprocess.run(["ip", "link", "add", self.dev["s"], "netns", self.ns["s"], "type", "veth", "peer", "name",
                        self.dev["c"], "netns", self.ns["c"]], check=True)
        for s in ("s", "c"):
            self.sh(s, ["ip", "link", "set", "lo", "up"])
            for a in self.addrs.get(s, []):
                self.sh(s, ["ip", "addr", "add", a, "dev", self.dev[s]] + (["nodad"] if ":" in a else []))
            self.sh(s, ["ip", "link", "set", self.dev[s], "up"])
        deadline = time.time() + 10
        while time.time() < deadline:
            states = [self.sh(s, ["cat", f"/sys/class/net/{self.dev[s]}/operstate"]).stdout.strip() for s in "sc"]
            if states == ["up", "up"]:
                break
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        end_all(self.procs)
        for n in self.ns.values():
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        return False

    def start(self, side, args, out_path, extra_env=None):
        """Runs args on `side` (its own session), output to out_path (p.out, p.path)."""
        env = dict(os.environ, **(extra_env or {}))
        f = open(out_path, "w+")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[side]] + args, stdout=f, stderr=subprocess.STDOUT,
                             text=True, env=env, start_new_session=True)
        p.out, p.path = f, out_path
        self.procs.append(p)
        return p


def read(p):
    p.out.flush()
    p.out.seek(0)
    return p.out.read()


def wait_for_text(p, text, timeout=30):
    deadline = time.monotonic() + timeout
    while text not in read(p):
        if p.poll() is not None:
            raise CaseFailure(f"exited ({p.returncode}) before printing '{text}':\n{read(p)}")
        if time.monotonic() > deadline:
            raise CaseFailure(f"no '{text}' after {timeout} s")
        time.sleep(0.02)


def wait_all(procs, timeout=90):
    """Waits for every process; once one fails, the others are killed (their peer is gone)."""
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs):
        if any(p.poll() not in (None, 0) for p in procs) or time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            break
        time.sleep(0.05)
    return [p.returncode for p in procs]
