#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Interop test harness: our stack (or any host command) against Linux kernel
Soft-RoCE (rdma_rxe) in rxe-peer qemu guests.  Python 3 stdlib only.

One run = one case:
  1. boot the guests (`rxe-peer up --count N [--mtu M]`) in a netns of its own
     (rxeit<pid>, so runs never collide with each other or with a developer's
     `rocepeer`), read their parameters (`rxe-peer info`)
  2. attach the host side: af_packet -> a veth (IFACE in the netns, its peer on
     the bridge) made before the host command starts; tap -> the TAP the DPDK
     process creates is enslaved to the bridge as soon as it appears
  3. tcpdump on the bridge -> BUILD/interop-captures/CASE.pcap
  4. rxe hw_counters of every guest before
  5. the commands: either an ibv_rc_pingpong pair (--server/--client, each
     `host` or `vmN`; the server starts first and the client only once it
     listens on TCP 18515) or free commands (--host-cmd, --guest-cmd), all with
     timeouts; exit codes and output are kept
  6. counters after; stop the capture; check it: `roce-pcap check` (every
     RoCEv2 ICRC valid) and tshark (no malformed frame, same RoCEv2 count)
  7. ALWAYS (also on failure, Ctrl-C, SIGTERM from meson): kill what it started
     by PID (host process groups, guest jobs via `rxe-peer kill`, tcpdump) and
     `rxe-peer down` (kills the qemus by PID, deletes the netns)

Exit status: 0 pass, 1 fail, 77 skip. It skips (77, with the reason) only when
the machine cannot run a case: not root, no qemu/TCG, no kernel with rxe, netns
unavailable. With CI=true (also 1/yes) in the environment those fail instead
(exit 1): CI machines are root with qemu, so every case must run there. A
binary the case needs that the build did not produce (--require, rc-pingpong,
roce-pcap) always fails. A host command whose GoogleTest output shows a
skipped, DISABLED_ or no case at all fails the case (the `exchange` case).

Usage:
  interop.py --build-dir build --case NAME      a case from cases.txt
  interop.py --list                             names in cases.txt
  interop.py --build-dir build --name X --vms 2 --server vm1 --client vm2 --size 4096 --iters 100
See tests/interop/README.md.
"""
import argparse
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools"))
import test_summary  # noqa: E402  (tools/test_summary.py: what a skipped gtest case looks like)

SKIP = 77
# CI machines are root with qemu: there, what would skip is a failure (README).
CI = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
RXE_PEER = os.path.join(HERE, "rxe-peer", "rxe-peer")
CASES_FILE = os.path.join(HERE, "cases.txt")
NET = os.environ.get("RXE_PEER_NET", "198.18.0")
BRIDGE = os.environ.get("RXE_PEER_BR", "rxebr0")
STATE_ROOT = os.environ.get("RXE_PEER_STATE", "/tmp/rxe-peer")
PINGPONG_PORT = 18515

# Our rc-pingpong on the host (tools/rc_pingpong.cc), run inside the netns.
# The ONE place to adapt if its command line changes (or set env
# RC_PINGPONG_CMD). Placeholders: {build} {source} {profile} (net_tap /
# net_af_packet) {iface} {host_ip} {host_prefix} {mtu} (bridge MTU) {faults} {gid_index}
# {size} {iters} {mtu_opt} ("-m N" or "") {server} ("" for the server).
RC_PINGPONG_CMD = os.environ.get(
    "RC_PINGPONG_CMD",
    "{build}/tools/rc-pingpong --profile {source}/drivers-cfg/{profile}.ini --iface {iface}"
    " --ip {host_ip}/{host_prefix} --set port.mtu={mtu} {faults}"
    " -g {gid_index} -s {size} -n {iters} {mtu_opt} -c {server}")
# --loss P becomes these (our port's fault injection, drivers-cfg [fault]).
FAULTS_FMT = os.environ.get("RC_PINGPONG_FAULTS", "--set fault.rx_drop={p} --set fault.tx_drop={p}")
HOST_GID_INDEX = os.environ.get("RC_PINGPONG_GID_INDEX", "0")  # accepted, our GID is the port address
# The guest side: $RXE_DEV (and $RXE_GID_INDEX, the IPv4 GID, the default
# {gid_index}) are expanded in the guest.
GUEST_PINGPONG_CMD = "ibv_rc_pingpong -d $RXE_DEV -g {gid_index} -s {size} -n {iters} {mtu_opt} -c {server}"

# rxe hw_counters (drivers/infiniband/sw/rxe/rxe_hw_counters.c). FATAL ones
# fail a case when they move; RECOVERABLE ones are reported as warnings (rxe
# retransmits spuriously under TCG: completer_retry_err/duplicate_request
# move even between two guests) unless --fail-on names them.
FATAL_COUNTERS = {"retry_exceeded_err", "retry_rnr_exceeded_err", "send_err", "link_downed"}
RECOVERABLE_COUNTERS = {"completer_retry_err", "rcvd_seq_err", "rcvd_rnr_err", "send_rnr_err",
                        "duplicate_request", "out_of_seq_request"}


class Skip(Exception):
    """The machine cannot run the case (77; a failure under CI=true)."""


class Failure(Exception):
    pass


class Interrupted(BaseException):
    pass


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------- processes
class Procs:
    """Everything this run started, for the cleanup."""

    def __init__(self):
        self.groups = []      # Popen of host commands (own session -> own process group)
        self.foreground = []  # rxe-peer/tshark/... children currently waited for
        self.guest_jobs = []  # rxe-peer --bg job ids not yet collected
        self.tcpdump = None

    def kill_groups(self):
        for p in self.groups:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 3
        for p in self.groups:
            while p.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


PROCS = Procs()


def run(cmd, timeout=None, env=None, check=False):
    """Runs cmd (list), returns (rc, stdout, stderr). rc 124 on timeout."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    PROCS.foreground.append(p)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.terminate()
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        rc = 124
    finally:
        PROCS.foreground.remove(p)
    if check and rc != 0:
        raise Failure(f"{' '.join(cmd)} exited {rc}: {err.strip()[-2000:]}")
    return rc, out, err


class Peer:
    """rxe-peer with this run's namespace."""

    def __init__(self, ns):
        self.ns = ns
        self.env = dict(os.environ, RXE_PEER_NS=ns)

    def __call__(self, *args, timeout=120, check=True):
        return run([RXE_PEER, *args], timeout=timeout, env=self.env, check=check)

    def info(self, vm):
        _, out, _ = self("info", "--vm", str(vm))
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def counters(self, vm):
        rc, out, _ = self("counters", "--vm", str(vm), timeout=60, check=False)
        if rc != 0:
            return None
        c = {}
        for line in out.splitlines():
            m = re.match(r"^(\w+) = (\d+)$", line.strip())
            if m:
                c[m.group(1)] = int(m.group(2))
        return c

    def start_job(self, vm, cmd, timeout):
        """Starts `cmd` (bash) in guest vm, line-buffered so that output of a
        killed program survives; returns the job id."""
        _, out, _ = self("run", "--vm", str(vm), "--bg", "--timeout", str(int(timeout)), "--",
                         "stdbuf", "-oL", "-eL", "bash", "-c", cmd)
        job = out.strip()
        PROCS.guest_jobs.append(job)
        return job

    def wait_job(self, job, timeout):
        """(rc, output); kills the job when it overruns (rc 124)."""
        rc, out, err = self("wait", job, timeout=timeout, check=False)
        if rc == 124:
            # bounded: a guest spinning at 100 % (TCG, 1 vCPU) can starve its
            # agent; `rxe-peer down` ends the job anyway
            _, out, err = self("kill", job, timeout=20, check=False)
            rc = 124
        if job in PROCS.guest_jobs:
            PROCS.guest_jobs.remove(job)
        return rc, out + err

    def kill_job(self, job):
        rc, out, err = self("kill", job, timeout=20, check=False)
        if job in PROCS.guest_jobs:
            PROCS.guest_jobs.remove(job)
        return rc, out + err

    def guest_listening(self, vm, port, timeout=40):
        script = (f"for i in $(seq 1 {timeout * 10}); do ss -Hltn 'sport = :{port}' | grep -q . && exit 0;"
                  " sleep 0.1; done; exit 1")
        rc, _, _ = self("run", "--vm", str(vm), "--timeout", str(timeout + 5), "--", "bash", "-c", script,
                        timeout=timeout + 30, check=False)
        return rc == 0


def _die_with_parent():
    """preexec_fn: new session (own process group, killed as one) and SIGTERM
    when the harness dies, even by SIGKILL (PR_SET_PDEATHSIG survives exec,
    and `bash -c CMD` execs a single command)."""
    os.setsid()
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def ns_exec(ns, *cmd):
    return ["ip", "netns", "exec", ns, *cmd]


# --------------------------------------------------------------- preflight
def preflight(peer):
    if os.geteuid() != 0:
        raise Skip("not root")
    for tool in ("ip", "bash"):
        if not shutil.which(tool):
            raise Skip(f"no {tool}")
    if not os.path.exists("/dev/net/tun"):
        raise Skip("no /dev/net/tun")
    probe = f"{peer.ns}probe"
    rc, _, err = run(["ip", "netns", "add", probe], timeout=30)
    if rc != 0:
        raise Skip(f"cannot create a network namespace: {err.strip()}")
    run(["ip", "netns", "del", probe], timeout=30)
    rc, _, err = peer("deps", timeout=1800, check=False)  # installs qemu, kernel, rdma-core once
    if rc != 0:
        raise Skip(f"rxe-peer deps failed (no apt?): {err.strip()[-500:]}")
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        raise Skip("no qemu-system-x86_64")
    _, out, _ = run([qemu, "-accel", "help"], timeout=30)
    if "tcg" not in out.split() and "kvm" not in out.split():
        raise Skip(f"qemu has neither TCG nor KVM: {out.strip()}")
    kvers = [d for d in glob.glob("/lib/modules/*")
             if os.path.exists(f"/boot/vmlinuz-{os.path.basename(d)}")
             and glob.glob(f"{d}/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*")]
    if not kvers:
        raise Skip("no kernel in /boot with rdma_rxe modules")
    for tool in ("tcpdump", "tshark"):
        if not shutil.which(tool):
            raise Skip(f"no {tool}")


def reap_stale():
    """Takes down guests/namespaces of earlier runs of this harness whose
    process is gone (e.g. SIGKILLed): qemus by their PID files (rxe-peer down)."""
    for d in glob.glob(os.path.join(STATE_ROOT, "rxeit*")):
        m = re.fullmatch(r"rxeit(\d+)", os.path.basename(d))
        if not m:
            continue
        pid = int(m.group(1))
        alive = False
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                alive = b"interop.py" in f.read()
        except OSError:
            pass
        if not alive:
            log(f"reaping stale run state {d}")
            Peer(os.path.basename(d))("down", timeout=120, check=False)
            shutil.rmtree(d, ignore_errors=True)


# --------------------------------------------------------------- capture
def capture_start(ns, path, logpath):
    logf = open(logpath, "w")
    # `ip netns exec` execs tcpdump: the PID is tcpdump's. -Z root: it may
    # write into a root-owned build dir.
    p = subprocess.Popen(ns_exec(ns, "tcpdump", "-Z", "root", "-i", BRIDGE, "-s", "0", "-U",
                                 "--immediate-mode", "-B", "16384", "-w", path),
                         stdout=logf, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    PROCS.tcpdump = p
    for _ in range(200):
        with open(logpath) as f:
            if "listening on" in f.read():
                return p
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise Failure(f"tcpdump did not start: {open(logpath).read().strip()}")


def capture_stop(logpath):
    p = PROCS.tcpdump
    if p is None:
        return None
    time.sleep(0.5)  # let the last frames reach the file
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    PROCS.tcpdump = None
    m = re.search(r"(\d+) packets? dropped by kernel", open(logpath).read())
    return int(m.group(1)) if m else None


def uses_host_stack(a):
    return "host" in (a.server, a.client) or bool(a.host_cmd)


def check_udp6_checksums(pcap, src, notes):
    """Our RoCEv2-over-IPv6 frames must carry a correct UDP checksum (zero is
    illegal over IPv6; rxe itself sends zero, which receivers must accept)."""
    rc, out, err = run(["tshark", "-n", "-r", pcap, "-o", "udp.check_checksum:TRUE",
                        "-Y", f"ipv6.src == {src} && udp.dstport == 4791",
                        "-T", "fields", "-e", "frame.number", "-e", "udp.checksum.status"], timeout=1800)
    if rc != 0:
        return [f"tshark (UDP checksums) exited {rc}: {err.strip()[-500:]}"]
    rows = [l.split("\t") for l in out.splitlines() if l.strip()]
    bad = [r[0] for r in rows if r[1:2] != ["1"]]  # 1 = Good
    notes.append(f"IPv6 UDP checksums of our frames: {len(rows) - len(bad)} good, {len(bad)} not")
    problems = []
    if not rows:
        problems.append(f"no RoCEv2 frame from {src} in the capture")
    if bad:
        problems.append(f"{len(bad)} of our IPv6 frames have a bad UDP checksum, e.g. frames {', '.join(bad[:10])}")
    return problems


def check_capture(build, pcap, expect_roce):
    """Returns (problems, notes)."""
    problems, notes = [], []
    tool = os.path.join(build, "tools", "roce-pcap")
    t0 = time.time()
    rc, out, err = run([tool, "check", pcap], timeout=1800)
    summary = out.strip().splitlines()[-1] if out.strip() else err.strip()
    m = re.match(r"(\d+) packets, (\d+) ok, (\d+) bad", summary)
    n_roce = int(m.group(1)) if m else -1
    notes.append(f"roce-pcap check: {summary} ({time.time() - t0:.1f} s)")
    if m and int(m.group(3)) > 0:
        bad = [l.strip() for l in out.splitlines()[:-1] if not l.endswith("icrc=ok")][:10]
        problems.append(f"{m.group(3)} RoCEv2 frames with a bad ICRC: " + "; ".join(bad))
    elif rc != 0 and (expect_roce or not m or n_roce != 0):
        problems.append(f"roce-pcap check exited {rc}: {summary}")
    ts = ["tshark", "-n", "-r", pcap, "--disable-heuristic", "rpcrdma_infiniband"]
    t0 = time.time()
    rc, out, err = run(ts + ["-Y", "_ws.malformed || udp.dstport == 4791", "-T", "fields",
                             "-e", "frame.number", "-e", "_ws.malformed", "-e", "udp.dstport"], timeout=1800)
    if rc != 0:
        problems.append(f"tshark exited {rc}: {err.strip()[-500:]}")
    else:
        malformed = [l.split("\t")[0] for l in out.splitlines() if l.split("\t")[1:2] != [""]]
        ts_roce = sum(1 for l in out.splitlines() if l.endswith("\t4791"))
        notes.append(f"tshark: {ts_roce} RoCEv2 frames, {len(malformed)} malformed ({time.time() - t0:.1f} s)")
        if malformed:
            problems.append(f"tshark: {len(malformed)} malformed frames, e.g. frames {', '.join(malformed[:10])}")
        if m and ts_roce != n_roce:
            problems.append(f"tshark sees {ts_roce} RoCEv2 frames, roce-pcap {n_roce}")
    return problems, notes


CM_ATTRS = {"REQ": 0x10, "MRA": 0x11, "REJ": 0x12, "REP": 0x13, "RTU": 0x14, "DREQ": 0x15, "DREP": 0x16}


# --lost-dreq-end: our rping server's wait for a next ping that ended the test
# because the client's DREQ never reached it.
LOST_DREQ_WAIT = re.compile(r"rping: timed out after \d+ s waiting for the client's next ping")


def cm_mads(pcap, host_ip):
    """The capture's CM MADs in order, as (sender, attribute ID): sender "host"
    (our address) or "guest" (any other), as tshark decodes them; or an error."""
    rc, out, err = run(["tshark", "-n", "-r", pcap, "-Y", "infiniband.mad.attributeid", "-T", "fields",
                        "-e", "ip.src", "-e", "ipv6.src", "-e", "infiniband.mad.attributeid"], timeout=600)
    if rc != 0:
        return None, f"tshark (CM MADs) exited {rc}: {err.strip()[-300:]}"
    mads = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 3 or not f[2]:
            continue
        mads.append(("host" if (f[0] or f[1]) == host_ip.split("/")[0] else "guest", int(f[2], 16)))
    return mads, None


def lost_dreq_judge(pcap, host_ip, report, notes):
    """--lost-dreq-end: our rping server timed out waiting for a next ping. On a
    link with loss at our port, CM MADs included, that is the right end when the
    client finished (its command exited 0) and its DREQ is on the wire with no
    DREP of ours after it: our port dropped it, and librdmacm's rping destroys
    its id right after rdma_disconnect, which ends the kernel's DREQ retries
    (cm.c: DREQ_SENT -> timewait), so nothing more came. Otherwise the
    server's failure stands."""
    problem = report.pop("lost_dreq_problem", None)
    if problem is None:
        return []
    guests_ok = all(c.get("rc") == 0 for k, c in report["commands"].items()
                    if k.startswith("vm") and not k.endswith("-bg"))
    mads, _ = cm_mads(pcap, host_ip)
    mads = mads or []
    last_dreq = max((i for i, m in enumerate(mads) if m == ("guest", CM_ATTRS["DREQ"])), default=-1)
    answered = any(m == ("host", CM_ATTRS["DREP"]) for m in mads[last_dreq + 1:]) if last_dreq >= 0 else True
    if guests_ok and last_dreq >= 0 and not answered:
        notes.append("the guest's DREQ was lost at our port (no DREP of ours on the wire) and the guest's "
                     "rping sent no other: our server's timeout ended the test, as it must")
        return []
    return [problem + f"\n(not a lost DREQ: guests exited 0: {guests_ok}, a guest DREQ on the wire: "
            f"{last_dreq >= 0}, answered: {answered})"]


def check_cm_mads(pcap, specs, host_ip, notes):
    """--expect-cm ATTR@host|guest[:N]: tshark decodes the CM MADs; at least N
    of ATTR from our address (host) or any other (guest)."""
    mads, err = cm_mads(pcap, host_ip)
    if err:
        return [err]
    seen = {}
    for m in mads:
        seen[m] = seen.get(m, 0) + 1
    names = {v: k for k, v in CM_ATTRS.items()}
    notes.append("CM MADs: " + ", ".join(f"{names.get(k[1], hex(k[1]))}@{k[0]}={v}" for k, v in sorted(seen.items())))
    problems = []
    for spec in specs:
        m = re.match(r"^(\w+)@(host|guest)(?::(\d+))?$", spec)
        if not m or m.group(1) not in CM_ATTRS:
            problems.append(f"bad --expect-cm {spec}")
            continue
        want = int(m.group(3) or 1)
        got = seen.get((m.group(2), CM_ATTRS[m.group(1)]), 0)
        if got < want:
            problems.append(f"expected at least {want} CM {m.group(1)} from {m.group(2)} on the wire, saw {got}")
    return problems


# --------------------------------------------------------------- counters
def counter_deltas(before, after):
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


# --------------------------------------------------------------- host side
class HostCmd:
    def __init__(self, ns, name, cmd, outpath, env):
        self.name, self.cmd, self.outpath = name, cmd, outpath
        self.start = time.time()
        self.out = open(outpath, "w")
        self.p = subprocess.Popen(ns_exec(ns, "bash", "-c", cmd), stdout=self.out, stderr=subprocess.STDOUT,
                                  env=env, preexec_fn=_die_with_parent)
        PROCS.groups.append(self.p)

    def alive(self):
        return self.p.poll() is None

    def wait(self, timeout):
        try:
            rc = self.p.wait(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            self.kill()
            rc = 124
        self.elapsed = time.time() - self.start
        self.out.close()
        return rc

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
                self.p.wait(timeout=3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait()

    def output(self):
        with open(self.outpath, errors="replace") as f:
            return f.read()


def host_listening(ns, port):
    rc, out, _ = run(ns_exec(ns, "ss", "-Hltn", f"sport = :{port}"), timeout=10)
    return rc == 0 and out.strip() != ""


def attach_tap_when_up(peer, iface, host, timeout=30):
    """Enslaves the TAP the DPDK process creates once it exists."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rc, _, _ = run(ns_exec(peer.ns, "ip", "link", "show", iface), timeout=10)
        if rc == 0:
            peer("attach", iface)
            log(f"attached TAP {iface} to {BRIDGE}")
            return
        if not host.alive():
            raise Failure(f"host command exited before creating {iface}")
        time.sleep(0.1)
    raise Failure(f"TAP {iface} did not appear within {timeout} s")


# --------------------------------------------------------------- the case
def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--captures", help="default BUILD/interop-captures")
    ap.add_argument("--case", help="run the line NAME of cases.txt (other options add to it)")
    ap.add_argument("--list", action="store_true", help="print the case names of cases.txt")
    ap.add_argument("--name", help="case name (captures and logs are named after it)")
    ap.add_argument("--vms", type=int, help="guests to boot (default: the highest vmN used, at least 1)")
    ap.add_argument("--mtu", type=int, default=1500, help="bridge/guest netdev MTU (4200: rxe active MTU 4096)")
    ap.add_argument("--attach", choices=["none", "tap", "af_packet", "af_xdp"], default="none",
                    help="af_xdp: a veth carrying the kernel's --host-ip (and --host-ip6), our adapter beside it")
    ap.add_argument("--iface", help="host interface: default dtap0 (tap) / dpdk0 (af_packet)")
    ap.add_argument("--host-ip", default=f"{NET}.10", help="the RoCE address of our stack")
    ap.add_argument("--ipv6", action="store_true",
                    help="RoCEv2 over IPv6: guests up with --ipv6 use their link-local RoCE v2 GID, "
                         "our stack --host-ip6")
    ap.add_argument("--host-ip6", default="fe80::c612:10", help="our stack's IPv6 address with --ipv6 (/64)")
    ap.add_argument("--server", help="ibv_rc_pingpong pair: host | vmN")
    ap.add_argument("--client", help="ibv_rc_pingpong pair: host | vmN")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--path-mtu", type=int, help="-m for both sides")
    ap.add_argument("--loss", type=float, help="our port drops this fraction each way (fault injection)")
    ap.add_argument("--host-cmd", help="free host command (bash, run in the netns); {build} {source} expand")
    ap.add_argument("--guest-cmd", action="append", default=[], metavar="vmN:CMD",
                    help="free guest command (bash, in the guest); repeatable")
    ap.add_argument("--require", action="append", default=[], metavar="PATH",
                    help="fail unless this file exists ({build} expands): the build must produce it")
    ap.add_argument("--no-roce", action="store_true", help="the capture may hold no RoCEv2 frame")
    ap.add_argument("--fail-on", action="append", default=[], metavar="COUNTER",
                    help="fail if this recoverable rxe counter moves")
    ap.add_argument("--expect-counter", action="append", default=[], metavar="COUNTER",
                    help="fail unless this rxe counter moved on some guest (e.g. loss recovery)")
    ap.add_argument("--expect-host-counter", action="append", default=[], metavar="COUNTER",
                    help="fail unless our rc-pingpong's closing counter line shows COUNTER > 0 "
                         "(e.g. retransmits, seq-naks: sent/received summed)")
    ap.add_argument("--timeout", type=float, help="seconds for the commands (default from size/iters)")
    ap.add_argument("--guest-bg", action="append", default=[], metavar="vmN:CMD",
                    help="a guest command (a server) started before the host command and killed once it exits")
    ap.add_argument("--lost-dreq-end", action="store_true",
                    help="our rping server timing out on the next ping passes when the capture shows "
                         "the guest's DREQ unanswered (lost at our port) and the guest exited 0")
    ap.add_argument("--expect-cm", action="append", default=[], metavar="ATTR@host|guest[:N]",
                    help="the capture must hold at least N (default 1) CM MADs of ATTR "
                         "(REQ MRA REJ REP RTU DREQ DREP) sent by our stack (host) or a guest")
    args = ap.parse_args(argv)
    if args.case:
        line = find_case(args.case)
        args = ap.parse_args(line + argv)
        args.name = args.name or args.case
    return args


def read_cases():
    cases = []
    with open(CASES_FILE) as f:
        for raw in f:
            line = raw.strip()
            if line and not line.startswith("#"):
                toks = shlex.split(line)
                if toks[0] == "full":  # suite interop-full (cases.txt)
                    toks = toks[1:]
                cases.append((toks[0], toks[1:]))
    return cases


def find_case(name):
    for n, toks in read_cases():
        if n == name:
            return toks
    sys.exit(f"no case {name} in {CASES_FILE}")


def endpoint_vm(ep):
    m = re.fullmatch(r"vm(\d+)", ep or "")
    return int(m.group(1)) if m else None


def default_timeout(a):
    # TCG guests: ~15 ms per round trip plus ~0.6-0.9 ms per KB each way
    # (measured: 1 B x 1000 in 15 s, 64 KB x 1000 in 35-58 s); x4 margin
    per_iter = 0.015 + a.size / 1024 * 0.0009
    t = 60 + 4 * a.iters * per_iter
    return t * (3 if a.loss else 1)


def run_case(a, report):
    build = os.path.abspath(a.build_dir)
    fmt = {"build": build, "source": SOURCE_DIR,
           # the guest does not see every host path (its /tmp is its own): free
           # kernel traffic beside RoCE (af_xdp cases): `{kernel_traffic} sink` in
           # a guest, `{kernel_traffic} around --peer IP -- CMD` on the host
           "kernel_traffic": "/usr/bin/python3 -c " + shlex.quote(
               open(os.path.join(SOURCE_DIR, "tests", "interop", "kernel_traffic.py")).read()),
           # guest commands get our pyverbs peer inline, `{rdma_peer} ARGS`
           "rdma_peer": "/usr/bin/python3 -c " + shlex.quote(
               open(os.path.join(SOURCE_DIR, "tests", "interop", "rdma_peer.py")).read()),
           "rdmacm_peer": "/usr/bin/python3 -c " + shlex.quote(
               open(os.path.join(SOURCE_DIR, "tests", "interop", "rdmacm_peer.py")).read()),
           # tools/plot-bench for guest commands (a clone under /tmp is not there)
           "plot_bench": "/usr/bin/python3 -c " + shlex.quote(
               open(os.path.join(SOURCE_DIR, "tools", "plot-bench")).read())}
    name = a.name or "adhoc"
    capdir = os.path.abspath(a.captures or os.path.join(build, "interop-captures"))
    os.makedirs(capdir, exist_ok=True)
    base = os.path.join(capdir, name)
    for old in glob.glob(base + ".*"):
        os.remove(old)
    report["captures"] = capdir
    pingpong = bool(a.server or a.client)
    if pingpong and not (a.server and a.client):
        raise Failure("--server and --client go together")
    if pingpong and (a.host_cmd or a.guest_cmd or a.guest_bg):
        raise Failure("--server/--client or --host-cmd/--guest-cmd, not both")
    uses_host = a.host_cmd or "host" in (a.server, a.client)
    if "host" in (a.server, a.client):
        a.require.append("{build}/tools/rc-pingpong")
    a.require.append("{build}/tools/roce-pcap")
    for r in a.require:
        path = r.format(**fmt)
        if not os.path.exists(path):
            raise Failure(f"{path} is not built: the case needs it (ninja -C {a.build_dir})")
    if uses_host and a.attach == "none" and pingpong:
        raise Failure("our stack needs --attach tap|af_packet")
    iface = a.iface or {"tap": "dtap0", "af_packet": "dpdk0", "af_xdp": "dpdk0"}.get(a.attach, "")
    vms_used = [endpoint_vm(e) for e in (a.server, a.client)] + \
               [endpoint_vm(g.split(":", 1)[0]) for g in a.guest_cmd + a.guest_bg]
    nvms = a.vms or max([v for v in vms_used if v] + [1])
    timeout = a.timeout or default_timeout(a)

    peer = Peer(f"rxeit{os.getpid()}")
    report["netns"] = peer.ns
    preflight(peer)
    reap_stale()

    t0 = time.time()
    log(f"booting {nvms} guest(s), netns {peer.ns}, MTU {a.mtu}")
    up = ["up", "--count", str(nvms)] + (["--mtu", str(a.mtu)] if a.mtu != 1500 else []) + \
         (["--ipv6"] if a.ipv6 else [])
    rc, out, err = peer(*up, timeout=300, check=False)
    if rc != 0:
        raise Failure(f"rxe-peer up failed ({rc}): {err.strip()[-3000:]}")
    report["boot_s"] = round(time.time() - t0, 1)
    vms = {n: peer.info(n) for n in range(1, nvms + 1)}
    for n, v in vms.items():
        log(f"vm{n}: ip={v['ip']} gid_index={v['gid_index']} gid={v['gid']} active_mtu={v['active_mtu']}"
            f" boot={v.get('boot_seconds')}s")
    if a.ipv6:
        for n, v in vms.items():
            v["gid_index"], v["gid"] = link_local_gid(peer, n, v)
            log(f"vm{n}: IPv6 link-local RoCE v2 GID [{v['gid_index']}] {v['gid']}")
    report["vms"] = vms

    if a.attach in ("af_packet", "af_xdp"):
        peer("veth", iface)
        log(f"veth {iface} (netns {peer.ns}) <-> {iface}-br on {BRIDGE}")
    if a.attach == "af_xdp":
        # The kernel owns the addresses (ARP, ND, TCP, ICMP); our adapter
        # takes them as its GIDs and gets only RoCEv2 through its XDP program.
        # The bridge carries the netns's own 198.18.0.1/24: the guests' host
        # routes go through the veth (the kernel then names it as theirs, as
        # rdma-core resolves a RoCE path), and each interface answers ARP for
        # its own addresses only (else the bridge answers for .10 too).
        cmds = ["sysctl -qw net.ipv4.conf.all.arp_ignore=1", "sysctl -qw net.ipv4.conf.all.arp_announce=2",
                f"ip addr add {a.host_ip}/24 dev {iface}"]
        cmds += [f"ip route replace {v['ip']}/32 dev {iface} src {a.host_ip}" for v in vms.values()]
        if a.ipv6:
            cmds = [f"sysctl -qw net.ipv6.conf.{iface}.disable_ipv6=0",
                    f"ip addr add {a.host_ip6}/64 dev {iface} nodad"] + cmds
        for c in cmds:
            r = subprocess.run(["ip", "netns", "exec", peer.ns] + c.split(), capture_output=True, text=True)
            if r.returncode != 0:
                raise Failure(f"{c}: {r.stderr.strip()}")
        log(f"{iface}: kernel addresses {a.host_ip}/24" + (f", {a.host_ip6}/64" if a.ipv6 else ""))

    env = dict(os.environ, RXE_PEER=RXE_PEER, RXE_PEER_NS=peer.ns, RXE_BRIDGE=BRIDGE,
               RXE_BRIDGE_IP=f"{NET}.1", RXE_HOST_IP=a.host_ip, RXE_HOST_IFACE=iface,
               RXE_ATTACH=a.attach, RXE_MTU=str(a.mtu), RXE_CAPTURE=base + ".pcap",
               ROCE_BUILD_DIR=build, ROCE_SOURCE_DIR=SOURCE_DIR,
               RXE_PEER_IP=vms[1]["ip"], RXE_GID_INDEX=vms[1]["gid_index"])
    for n, v in vms.items():
        env[f"RXE_VM{n}_IP"] = v["ip"]
        env[f"RXE_VM{n}_GID_INDEX"] = v["gid_index"]
        env[f"RXE_VM{n}_GID"] = v["gid"]
        env[f"RXE_VM{n}_MAC"] = v["mac"]

    capture_start(peer.ns, base + ".pcap", base + ".tcpdump.log")
    before = {n: peer.counters(n) for n in vms}

    problems = []
    t0 = time.time()
    if pingpong:
        problems += run_pingpong(a, peer, vms, env, fmt, iface, base, timeout, report)
    else:
        problems += run_free(a, peer, env, fmt, iface, base, timeout, report)
    report["commands_s"] = round(time.time() - t0, 1)

    after = {n: peer.counters(n) for n in vms}
    dropped = capture_stop(base + ".tcpdump.log")
    report["tcpdump_dropped"] = dropped
    if dropped:
        report["warnings"].append(f"tcpdump dropped {dropped} frames: the capture checks saw only part")

    moved_any = set()
    for n in vms:
        if before[n] is None or after[n] is None:
            problems.append(f"vm{n}: could not read rxe counters (guest dead?)")
            continue
        d = counter_deltas(before[n], after[n])
        report["counters"][f"vm{n}"] = d
        moved_any |= set(d)
        log(f"vm{n} rxe counters moved: " + (", ".join(f"{k}+{v}" for k, v in sorted(d.items())) or "none"))
        for k, v in sorted(d.items()):
            if k in FATAL_COUNTERS or k in a.fail_on:
                problems.append(f"vm{n}: error counter {k} +{v}")
            elif k in RECOVERABLE_COUNTERS or k.endswith("_err"):
                report["warnings"].append(f"vm{n}: {k} +{v}")
    for k in a.expect_counter:
        if k not in moved_any:
            problems.append(f"expected rxe counter {k} to move (it did not)")

    t0 = time.time()
    cp, notes = check_capture(build, base + ".pcap", expect_roce=not a.no_roce)
    if a.expect_cm:
        cp += check_cm_mads(base + ".pcap", a.expect_cm, a.host_ip6 if a.ipv6 else a.host_ip, notes)
    cp += lost_dreq_judge(base + ".pcap", a.host_ip6 if a.ipv6 else a.host_ip, report, notes)
    if a.ipv6 and uses_host_stack(a):
        cp += check_udp6_checksums(base + ".pcap", a.host_ip6, notes)
    report["capture_check_s"] = round(time.time() - t0, 1)
    report["capture"] = notes
    report["pcap_bytes"] = os.path.getsize(base + ".pcap")
    for note in notes:
        log(note)
    problems += cp
    return problems


def link_local_gid(peer, n, v):
    """(index, gid) of the guest's fe80:: RoCE v2 GID (ibv_devinfo -v); Failure if none."""
    rc, out, err = peer("run", "--vm", str(n), "--", "ibv_devinfo", "-v", "-d", v.get("ibdev", "rxe0"),
                        timeout=60, check=False)
    for m in re.finditer(r"GID\[\s*(\d+)\]:\s*(fe80:[0-9a-f:]+), RoCE v2", out):
        return m.group(1), m.group(2)
    raise Failure(f"vm{n} has no link-local RoCE v2 GID (rc {rc}): {(out + err).strip()[-800:]}")


def guest_cmd_line(a, server_ip, vm_info):
    gid = vm_info["gid_index"] if a.ipv6 else "$RXE_GID_INDEX"
    return " ".join(GUEST_PINGPONG_CMD.format(size=a.size, iters=a.iters, server=server_ip or "", gid_index=gid,
                                              mtu_opt=f"-m {a.path_mtu}" if a.path_mtu else "").split())


def host_cmd_line(a, fmt, iface, server_ip):
    return " ".join(RC_PINGPONG_CMD.format(
        **fmt, iface=iface, host_ip=a.host_ip6 if a.ipv6 else a.host_ip, host_prefix=64 if a.ipv6 else 24,
        mtu=a.mtu,
        profile={"tap": "net_tap", "af_packet": "net_af_packet", "af_xdp": "net_af_xdp"}[a.attach],
        faults=FAULTS_FMT.format(p=a.loss) if a.loss else "", gid_index=HOST_GID_INDEX,
        size=a.size, iters=a.iters, mtu_opt=f"-m {a.path_mtu}" if a.path_mtu else "",
        server=server_ip or "").split())


class Side:
    """One end of the pingpong pair: a host process or a guest job."""

    def __init__(self, role, ep, a, peer, vms, env, fmt, iface, base, timeout, server_ip):
        self.role, self.ep, self.peer = role, ep, peer
        self.vm = endpoint_vm(ep)
        if ep == "host":
            self.cmd = host_cmd_line(a, fmt, iface, server_ip)
            log(f"{role} (host): {self.cmd}")
            self.host = HostCmd(peer.ns, role, self.cmd, f"{base}.{role}.host.log", env)
            self.start = self.host.start
            if a.attach == "tap":
                attach_tap_when_up(peer, iface, self.host)
        elif self.vm in vms:
            self.cmd = guest_cmd_line(a, server_ip, vms[self.vm])
            log(f"{role} (vm{self.vm}): {self.cmd}")
            self.start = time.time()
            self.job = peer.start_job(self.vm, f"exec {self.cmd}", timeout + 10)
        else:
            raise Failure(f"bad endpoint {ep}")
        self.outpath = f"{base}.{role}.{ep}.txt"

    def listening(self):
        if self.ep == "host":
            deadline = time.time() + 60
            while time.time() < deadline and self.host.alive():
                if host_listening(self.peer.ns, PINGPONG_PORT):
                    return True
                time.sleep(0.2)
            return False
        return self.peer.guest_listening(self.vm, PINGPONG_PORT)

    def wait(self, timeout):
        if self.ep == "host":
            rc = self.host.wait(timeout)
            out, self.elapsed = self.host.output(), self.host.elapsed
        else:
            rc, out = self.peer.wait_job(self.job, timeout)
            self.elapsed = time.time() - self.start
        with open(self.outpath, "w") as f:
            f.write(out)
        self.rc, self.out = rc, out
        return rc

    def kill(self):
        if self.ep == "host":
            self.host.kill()
            return self.wait(1)
        rc, out = self.peer.kill_job(self.job)
        self.elapsed = time.time() - self.start
        with open(self.outpath, "w") as f:
            f.write(out)
        self.rc, self.out = rc, out
        return rc


ADDR_RE = r"  {} address:\s+LID 0x([0-9a-f]+), QPN 0x([0-9a-f]+), PSN 0x([0-9a-f]+), GID (\S+)"


def addresses(out):
    loc = re.search(ADDR_RE.format("local"), out)
    rem = re.search(ADDR_RE.format("remote"), out)
    return (loc.groups() if loc else None), (rem.groups() if rem else None)


def host_counter(out, name):
    """Value of NAME in rc-pingpong's 'rc-pingpong: qp ...' line ('a/b' pairs summed); None if absent."""
    for line in out.splitlines():
        if line.startswith("rc-pingpong: qp "):
            m = re.search(r"(?:^|\s)" + re.escape(name) + r" (\d+)(?:/(\d+))?(?:\s|$)", line)
            if m:
                return int(m.group(1)) + int(m.group(2) or 0)
    return None


def run_pingpong(a, peer, vms, env, fmt, iface, base, timeout, report):
    problems = []
    host_addr = a.host_ip if a.attach == "af_xdp" else f"{NET}.1"  # af_xdp: the kernel owns our address
    server_ip = host_addr if a.server == "host" else vms[endpoint_vm(a.server)]["ip"]
    deadline = time.time() + timeout
    server = Side("server", a.server, a, peer, vms, env, fmt, iface, base, timeout, None)
    if not server.listening():
        server.kill()
        return [f"server did not listen on TCP {PINGPONG_PORT}: {server.out.strip()[-1500:]}"]
    client = Side("client", a.client, a, peer, vms, env, fmt, iface, base, timeout, server_ip)
    crc = client.wait(deadline - time.time())
    if crc == 0:
        src = server.wait(max(deadline - time.time(), 15))
    else:
        time.sleep(2)  # the server would wait for a client forever
        src = server.kill()
    for side, rc in ((server, src), (client, crc)):
        r = {"endpoint": side.ep, "cmd": side.cmd, "rc": rc, "seconds": round(side.elapsed, 1),
             "output_tail": side.out.strip().splitlines()[-8:]}
        report["commands"][side.role] = r
        log(f"{side.role} ({side.ep}) exited {rc} after {side.elapsed:.1f} s: "
            + " | ".join(side.out.strip().splitlines()[-2:]))
        problems += sanitizer_reports(f"{side.role} ({side.ep})", side.out, side.outpath)
        if rc != 0:
            problems.append(f"{side.role} ({side.ep}) exited {rc}" + (" (timeout)" if rc == 124 else "")
                            + ": " + " | ".join(side.out.strip().splitlines()[-4:]))
            continue
        want = f"{a.size * a.iters * 2} bytes in"
        if want not in side.out:
            problems.append(f"{side.role} ({side.ep}) did not print '{want} ...'")
        if "invalid data in page" in side.out:
            problems.append(f"{side.role} ({side.ep}) found invalid data (-c)")
    host_side = [s for s in (server, client) if s.ep == "host"]
    for k in a.expect_host_counter:
        if not host_side or host_side[0].rc != 0:
            continue  # already failed above, or no host side
        v = host_counter(host_side[0].out, k)
        log(f"host counter {k} = {v}")
        report.setdefault("host_counters", {})[k] = v
        if v is None:
            problems.append(f"host output has no counter '{k}' in its 'rc-pingpong: qp' line")
        elif v == 0:
            problems.append(f"expected our counter {k} to move (it stayed 0)")
    if src == 0 and crc == 0:
        sl, sr = addresses(server.out)
        cl, cr = addresses(client.out)
        if None in (sl, sr, cl, cr) or sl != cr or cl != sr:
            problems.append(f"address lines do not match: server local {sl} remote {sr}; client local {cl} remote {cr}")
    return problems


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", ": runtime error: ")


def sanitizer_reports(who, out, path):
    """A sanitizer build (build-asan/) reports to stderr; UBSan may go on, so
    the exit status alone does not show it."""
    return [f"{who}: sanitizer report '{m.strip(': ')}' (see {path})" for m in SANITIZER_MARKERS if m in out]


def gtest_skips(who, out, path):
    """A GoogleTest host command (the `exchange` case) exits 0 when its cases
    skip: here, with the guests up, every case must run."""
    return [f"{who}: GoogleTest case {s.what} did not run: {s.reason or 'no reason printed'} (see {path})"
            for s in test_summary.gtest_skips(out)]


def run_free(a, peer, env, fmt, iface, base, timeout, report):
    problems = []
    deadline = time.time() + timeout
    jobs = []
    bg = []
    for g in a.guest_bg:
        vm, cmd = g.split(":", 1)
        n = endpoint_vm(vm)
        cmd = cmd.format(**fmt)
        log(f"guest vm{n} (background): {cmd}")
        bg.append((f"vm{n}", cmd, peer.start_job(n, cmd, timeout + 10)))
    if bg:
        time.sleep(2)  # let the servers listen
    for g in a.guest_cmd:
        vm, cmd = g.split(":", 1)
        n = endpoint_vm(vm)
        cmd = cmd.format(**fmt)
        log(f"guest vm{n}: {cmd}")
        jobs.append((f"vm{n}", cmd, peer.start_job(n, cmd, timeout + 10), time.time()))
    host = None
    if a.host_cmd:
        cmd = a.host_cmd.format(**fmt)
        log(f"host: {cmd}")
        host = HostCmd(peer.ns, "host", cmd, base + ".host.txt", env)
        if a.attach == "tap":
            attach_tap_when_up(peer, iface, host)
        rc = host.wait(deadline - time.time())
        out = host.output()
        report["commands"]["host"] = {"cmd": cmd, "rc": rc, "seconds": round(host.elapsed, 1),
                                      "output_tail": out.strip().splitlines()[-15:]}
        log(f"host command exited {rc} after {host.elapsed:.1f} s")
        problems += sanitizer_reports("host command", out, base + ".host.txt")
        problems += gtest_skips("host command", out, base + ".host.txt")
        if rc != 0:
            problem = (f"host command exited {rc}" + (" (timeout)" if rc == 124 else "") + ":\n"
                       + "\n".join(out.strip().splitlines()[-40:]))
            if a.lost_dreq_end and rc == 1 and LOST_DREQ_WAIT.search(out):
                report["lost_dreq_problem"] = problem  # judged on the capture (lost_dreq_judge)
            else:
                problems.append(problem)
    for vm, cmd, job in bg:
        rc, out = peer.kill_job(job)
        with open(f"{base}.{vm}.bg.txt", "w") as f:
            f.write(out)
        report["commands"][vm + "-bg"] = {"cmd": cmd, "output_tail": out.strip().splitlines()[-8:]}
        log(f"{vm} background command stopped")
    for vm, cmd, job, start in jobs:
        rc, out = peer.wait_job(job, max(deadline - time.time(), 5))
        with open(f"{base}.{vm}.txt", "w") as f:
            f.write(out)
        report["commands"][vm] = {"cmd": cmd, "rc": rc, "seconds": round(time.time() - start, 1),
                                  "output_tail": out.strip().splitlines()[-8:]}
        log(f"{vm} command exited {rc}")
        if rc != 0:
            problems.append(f"{vm} command exited {rc}: " + " | ".join(out.strip().splitlines()[-4:]))
    return problems


# --------------------------------------------------------------- main
def cleanup(ns):
    """Kills what this run started (by PID) and takes the guests down. Guest
    jobs need no kill of their own: `rxe-peer down` stops their qemus."""
    PROCS.kill_groups()
    if PROCS.tcpdump is not None and PROCS.tcpdump.poll() is None:
        PROCS.tcpdump.send_signal(signal.SIGINT)
        try:
            PROCS.tcpdump.wait(timeout=10)
        except subprocess.TimeoutExpired:
            PROCS.tcpdump.kill()
            PROCS.tcpdump.wait()
    busy = [p for p in PROCS.foreground if p.poll() is None]
    for p in busy:  # an rxe-peer wait/run we were in: it exits once its guest is gone
        p.terminate()
    if ns and os.path.isdir(os.path.join(STATE_ROOT, ns)):
        rc, _, err = Peer(ns)("down", timeout=120, check=False)
        if rc != 0:
            log(f"rxe-peer down exited {rc}: {err.strip()}")
        shutil.rmtree(os.path.join(STATE_ROOT, ns), ignore_errors=True)
    PROCS.guest_jobs.clear()
    for p in busy:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main(argv):
    a = parse_args(argv)
    if a.list:
        for n, _ in read_cases():
            print(n)
        return 0
    report = {"case": a.name or "adhoc", "warnings": [], "commands": {}, "counters": {}}
    status, problems = 1, []

    def on_signal(signum, _frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    t0 = time.time()
    try:
        problems = run_case(a, report)
        status = 1 if problems else 0
    except Skip as e:
        if CI:
            log(f"FAIL: CI=true, and this machine cannot run the case: {e}")
            problems = [f"cannot run under CI=true (CI machines are root with qemu): {e}"]
        else:
            log(f"SKIP: {e}")
            status, problems = SKIP, [f"skipped: {e}"]
    except Failure as e:
        problems = [str(e)]
    except Interrupted as e:
        problems = [f"interrupted by {e}"]
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        t1 = time.time()
        cleanup(report.get("netns"))
        report["cleanup_s"] = round(time.time() - t1, 1)
    report["total_s"] = round(time.time() - t0, 1)
    report["problems"] = problems
    report["result"] = {0: "PASS", SKIP: "SKIP"}.get(status, "FAIL")
    for w in report["warnings"]:
        log(f"warning: {w}")
    for p in problems:
        log(f"problem: {p}")
    pcap = os.path.join(report.get("captures", ""), f"{report['case']}.pcap")
    if status == 0 and os.environ.get("INTEROP_KEEP_PCAP") == "fail" and os.path.exists(pcap):
        os.remove(pcap)  # CI disk: a 64 KiB x 1000 capture is ~170 MB
    if "captures" in report:
        with open(os.path.join(report["captures"], f"{report['case']}.report.json"), "w") as f:
            json.dump(report, f, indent=1)
    timing = " ".join(f"{k}={report[k]}s" for k in ("boot_s", "commands_s", "capture_check_s", "cleanup_s", "total_s")
                      if k in report)
    log(f"{report['result']} {report['case']} ({timing})"
        + (f"; capture and logs in {report['captures']}/{report['case']}.*" if "captures" in report else ""))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
