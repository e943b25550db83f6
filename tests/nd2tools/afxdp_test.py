#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nd-perf on net_af_xdp adapters beside the kernel, as a user runs it on a host's NIC.

Two network namespaces the case creates (and deletes, also on failure) joined by a veth pair;
each end carries the kernel's addresses (10.62.0.1/24 + fd00:62::1/64, and .2 / ::2) and an
ND2 adapter on net_af_xdp with no address of its own (identity = kernel: it takes the
interface's). Cases (--case):

  pair      nd-perf send_lat 8 B and write_bw 64 KB over IPv4 and IPv6 while a TCP stream and
            ICMP echoes run between the same two addresses through the kernels and finish
            intact (tests/interop/kernel_traffic.py); every RoCEv2 frame of the captures has a
            good ICRC (roce-pcap check) and tshark finds none malformed; the XDP programs are
            gone from both interfaces afterwards
  faults    write_bw with 2% loss each way at the ports and a path MTU (-m 1024) below the
            interface's: it completes (retransmissions), both exit 0
  sigkill   a server killed with SIGKILL leaves its XDP program, which then passes UDP 4791 to
            the kernel (a kernel socket on 4791 receives the peer's datagrams: no black hole);
            the next server removes it (its stderr says so) and serves a client
  bad       clear errors, exit non-zero, nothing left attached: an --ip that is not the
            interface's (the message lists the interface's), no such interface, the interface
            down, a port.mtu above the interface's, a second adapter on an interface in use

Needs root (veth, namespaces, XDP): otherwise it skips (exit 77), which CI counts as a failure.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "support"))
from ndnet import CaseFailure, VethPair  # noqa: E402
KT = os.path.join(SOURCE, "tests", "interop", "kernel_traffic.py")
PROFILE = os.path.join(SOURCE, "drivers-cfg", "net_af_xdp.ini")
SKIP = 77


Failure = CaseFailure


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Pair(VethPair):
    """The case's two namespaces: the veth ends carry 10.62.0.1/24 + fd00:62::1/64 (server, "s")
    and .2 / ::2 (client, "c")."""

    def __init__(self):
        self.ip = {"s": "10.62.0.1", "c": "10.62.0.2"}
        self.ip6 = {"s": "fd00:62::1", "c": "fd00:62::2"}
        super().__init__("ax", {s: [f"{self.ip[s]}/24", f"{self.ip6[s]}/64"] for s in "sc"})

    def xdp(self, side):
        out = self.sh(side, ["ip", "-d", "link", "show", "dev", self.dev[side]]).stdout
        m = re.search(r"prog/xdp id (\d+) name (\S+)", out)
        return m.group(2) if m else ""


def read(p):
    p.out.flush()
    with open(p.path) as f:
        return f.read()


def wait(p, timeout, what):
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Failure(f"{what} did not end within {timeout} s:\n{read(p)[-2000:]}")
    return p.returncode


def perf_args(tools, side, pair, test, size, iters, extra=(), server_ip=None, capture=None):
    a = [os.path.join(tools, "nd-perf"), test, "-s", str(size), "-n", str(iters), "--profile", PROFILE,
         "--iface", pair.dev[side], "--timeout", "30"] + list(extra)
    if capture:
        a += ["--capture", capture]
    if server_ip:
        a.append(server_ip)
    return a


def wait_attached(pair, side, p, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pair.xdp(side) == "soft_rnic_xdp":
            time.sleep(0.3)  # the owner record and the address map follow the attach
            return
        if p.poll() is not None:
            raise Failure(f"the server exited ({p.returncode}) before attaching:\n{read(p)[-2000:]}")
        time.sleep(0.05)
    raise Failure("the server's XDP program never appeared")


def run_pair(tools, tmp, pair, test, size, iters, v6=False, extra=(), name="run", capture=False, traffic=False):
    dst = pair.ip6["s"] if v6 else pair.ip["s"]
    caps = {s: os.path.join(tmp, f"{name}.{s}.pcap") if capture else None for s in "sc"}
    # The server listens on its first address unless told (nd-perf --source_ip).
    srv_extra = list(extra) + (["--source_ip", dst] if v6 else [])
    srv = pair.start("s", perf_args(tools, "s", pair, test, size, iters, srv_extra, capture=caps["s"]),
                     os.path.join(tmp, f"{name}.server.txt"))
    wait_attached(pair, "s", srv)
    client = perf_args(tools, "c", pair, test, size, iters, extra, server_ip=dst, capture=caps["c"])
    if traffic:
        sink = pair.start("s", [sys.executable, KT, "sink"] + (["--ipv6"] if v6 else []),
                          os.path.join(tmp, f"{name}.sink.txt"))
        client = [sys.executable, KT, "around", "--peer", dst, "--bytes", str(4 << 20), "--"] + client
    cli = pair.start("c", client, os.path.join(tmp, f"{name}.client.txt"))
    rc_c = wait(cli, 120, f"{name} client")
    rc_s = wait(srv, 60, f"{name} server")
    if traffic:
        sink.kill()
    out_c, out_s = read(cli), read(srv)
    log(f"--- {name} client (exit {rc_c})\n{out_c.strip()[-1500:]}")
    check(rc_c == 0 and rc_s == 0, f"{name}: client exit {rc_c}, server exit {rc_s}:\n{out_s[-1500:]}")
    check(re.search(rf"^\s*{size}\s+{iters}\s", out_c, re.M), f"{name}: no result row for {size} B")
    if traffic:
        check("TCP" in out_c and "intact" in out_c, f"{name}: the kernel's TCP stream did not finish intact")
    for s in "sc":
        check(pair.xdp(s) == "", f"{name}: an XDP program is left on {pair.dev[s]}")
    return out_c, caps


def check_pcap(tools, pcap):
    r = subprocess.run([os.path.join(tools, "..", "roce-pcap"), "check", pcap], capture_output=True, text=True)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()
    m = re.match(r"(\d+) packets, (\d+) ok, (\d+) bad", last)
    check(m and int(m.group(1)) > 0 and int(m.group(3)) == 0, f"roce-pcap check {pcap}: {last}")
    t = subprocess.run(["tshark", "-n", "-r", pcap, "--disable-heuristic", "rpcrdma_infiniband", "-Y", "_ws.malformed || udp.dstport == 4791", "-T", "fields",
                        "-e", "_ws.malformed", "-e", "udp.dstport"], capture_output=True, text=True)
    check(t.returncode == 0, f"tshark {pcap}: {t.stderr[-500:]}")
    rows = t.stdout.splitlines()
    malformed = [r for r in rows if r.split("\t")[0]]
    roce = sum(1 for r in rows if r.endswith("\t4791"))
    check(not malformed, f"tshark: {len(malformed)} malformed frames in {pcap}")
    check(roce == int(m.group(1)), f"tshark sees {roce} RoCEv2 frames, roce-pcap {m.group(1)} ({pcap})")
    log(f"{os.path.basename(pcap)}: {last}; tshark {roce} RoCEv2, 0 malformed")


def case_pair(tools, tmp):
    with Pair() as pair:
        for v6 in (False, True):
            fam = "ipv6" if v6 else "ipv4"
            _, caps = run_pair(tools, tmp, pair, "send_lat", 8, 2000, v6, name=f"lat-{fam}", capture=True,
                               traffic=True)
            for c in caps.values():
                check_pcap(tools, c)
            _, caps = run_pair(tools, tmp, pair, "write_bw", 65536, 500, v6, name=f"bw-{fam}", capture=True,
                               traffic=True)
            for c in caps.values():
                check_pcap(tools, c)


def case_faults(tools, tmp):
    with Pair() as pair:
        # 64 KB Writes: a lost packet is repaired on the NAK of the next one. (A lost last
        # packet of a ping-pong waits for the ACK timeout the CM negotiates, 2.1 s.)
        loss = ["--set", "fault.rx_drop=0.02", "--set", "fault.tx_drop=0.02"]
        run_pair(tools, tmp, pair, "write_bw", 65536, 300, extra=loss + ["-m", "1024"], name="faults")
        # IPv6 keeps the interface's MTU (nd-perf's -m 1024 makes the port's 1104, below IPv6's 1280).
        run_pair(tools, tmp, pair, "write_bw", 65536, 300, v6=True, extra=loss, name="faults-ipv6")


def case_sigkill(tools, tmp):
    with Pair() as pair:
        srv = pair.start("s", perf_args(tools, "s", pair, "send_lat", 8, 100), os.path.join(tmp, "killed.txt"))
        wait_attached(pair, "s", srv)
        os.killpg(srv.pid, signal.SIGKILL)
        srv.wait()
        check(pair.xdp("s") == "soft_rnic_xdp", "SIGKILL is expected to leave the program (the case is about it)")
        # The program is still attached but its sockets are gone: UDP 4791 reaches the kernel.
        rx = pair.start("s", [sys.executable, "-c",
                              "import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                              "s.bind(('0.0.0.0',4791)); s.settimeout(15)\n"
                              "n=0\nwhile n<5:\n d,_=s.recvfrom(100); n+=1\nprint('got',n)"],
                        os.path.join(tmp, "kernel4791.txt"))
        time.sleep(0.5)
        pair.sh("c", [sys.executable, "-c",
                      "import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                      f"for i in range(40):\n s.sendto(b'x'*32,('{pair.ip['s']}',4791)); time.sleep(0.05)"])
        rc = wait(rx, 20, "the kernel's UDP 4791 socket")
        check(rc == 0 and "got 5" in read(rx), f"UDP 4791 did not reach the kernel after SIGKILL: {read(rx)}")
        log("after SIGKILL: UDP 4791 reaches the kernel (no black hole)")
        # The next adapter removes the stale program and works.
        out, _ = run_pair(tools, tmp, pair, "send_lat", 8, 200, name="restart")
        srv_out = open(os.path.join(tmp, "restart.server.txt")).read()
        check("removed a stale soft_rnic_xdp program" in srv_out, f"no stale-program line:\n{srv_out[-1500:]}")


def case_bad(tools, tmp):
    with Pair() as pair:
        def bad(name, args, words, side="s"):
            p = pair.start(side, args, os.path.join(tmp, f"bad-{name}.txt"))
            rc = wait(p, 30, f"bad input {name}")
            out = read(p)
            check(rc != 0, f"{name}: exit 0:\n{out}")
            for w in words:
                check(w in out, f"{name}: '{w}' not in the message:\n{out[-1500:]}")
            check(pair.xdp("s") == "", f"{name}: left an XDP program attached")
            log(f"{name}: exit {rc}, message names {words}")
        base = perf_args(tools, "s", pair, "send_lat", 8, 10)
        bad("ip-not-ours", base + ["--ip", "10.62.0.9/24"], ["10.62.0.9", "10.62.0.1/24", pair.dev["s"]])
        bad("no-iface", [a if a != pair.dev["s"] else "nosuch0" for a in base], ["nosuch0"])
        bad("mtu", base + ["--set", "port.mtu=2000"], ["2000", "1500", pair.dev["s"]])
        pair.sh("s", ["ip", "link", "set", pair.dev["s"], "down"])
        bad("down", base, [pair.dev["s"], "down"])
        pair.sh("s", ["ip", "link", "set", pair.dev["s"], "up"])
        time.sleep(1.5)
        first = pair.start("s", base, os.path.join(tmp, "first.txt"))
        wait_attached(pair, "s", first)
        second = pair.start("s", base, os.path.join(tmp, "second.txt"))
        rc = wait(second, 30, "a second adapter on the interface")
        out = read(second)
        check(rc != 0 and "already carries a soft-RNIC adapter" in out and str(first.pid) in out or
              rc != 0 and "already carries a soft-RNIC adapter" in out, f"second adapter: exit {rc}:\n{out[-1500:]}")
        check(pair.xdp("s") == "soft_rnic_xdp", "the first adapter's program must stay")
        first.kill()
        first.wait()


CASES = {"pair": case_pair, "faults": case_faults, "sigkill": case_sigkill, "bad": case_bad}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools-dir", required=True, help="build/tools/nd")
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (veth, network namespaces, XDP)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix=f"afxdp-{a.case}-")
    try:
        CASES[a.case](os.path.abspath(a.tools_dir), tmp)
    except Failure as e:
        log(f"FAIL: {e}\n(outputs in {tmp})")
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
