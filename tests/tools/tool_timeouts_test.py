#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A tool's --timeout ends every wait for its peer: no hang past it, in either role.

Each tool that takes --timeout (nd-perf, rping, rc-pingpong, rc-rdma, the nd-* programs) must
exit non-zero, within the timeout and a few seconds, printing one line that names what it waited
for, when its peer never comes or stops answering. Cases (--case):

  nd-perf      (a) a server with --timeout 3 and no client (net_ring: no peer needed);
               over two taps on a bridge in a namespace (tests/support/ndnet.py):
               (b) a write_bw server whose client is stopped (SIGSTOP) during its run: the
                   server's wait for the end-of-test handshake, which lasts while the client's
                   frames arrive, ends 3 s after they stop; (b') the same for send_bw (the
                   server receiving); (c) a client whose server is stopped: the client's wait
                   for completions ends
  rping        (a) a server with --timeout 3 and no client; (b) a server whose client stops
               between pings (taps); (c) a client whose server stops
  rc-pingpong  (a) a server with --timeout 3 and no client; over taps (the TCP exchange through
               the namespace's loopback): (b) a server whose client makes the exchange and then
               sends nothing (a script of ours); (b') a server whose client is stopped mid-run
  rc-rdma      (a) no peer at all; (b) a peer that accepts the TCP connection and never answers
  nd-programs  nd-ping, nd-pingpong, nd-rping, nd-rpingpong servers with --timeout 3 and no
               client (their --timeout bounds the whole run; the line names the wait)

The processes are the test's own, ended by their PIDs. (b)/(c) need root (taps, a network
namespace): without it those parts skip (exit 77 if nothing else ran).
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
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ndnet import CaseFailure, Net, check, read, wait_for_text, write_config  # noqa: E402

TIMEOUT = 3     # the --timeout given to the side that must give up
SLACK = 4       # seconds past it allowed (start-up, the last liveness window, exit)
PEER_TIMEOUT = 40   # the other side's: longer than the case


def log(msg):
    print(msg, flush=True)


def show(title, out):
    log(f"---- {title}")
    for line in out.splitlines()[-12:]:
        if not re.match(r"^(tap_|qdisc_|eth_dev_tap_create)", line):
            log("  " + line)


def expect_timeout(p, t0, what, pattern, limit=TIMEOUT + SLACK):
    """p (started at t0) exits non-zero within `limit` s with one line matching `pattern`."""
    try:
        p.wait(timeout=limit + 10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise CaseFailure(f"{what}: still running {limit + 10} s after the start (hung past --timeout)")
    took = time.monotonic() - t0
    out = read(p)
    show(f"{what} (exit {p.returncode}, {took:.1f} s)", out)
    check(p.returncode not in (0, None), f"{what}: exit {p.returncode}, expected non-zero")
    check(took <= limit, f"{what}: took {took:.1f} s, more than {limit} s")
    lines = [l for l in out.splitlines() if re.search(pattern, l)]
    check(len(lines) == 1, f"{what}: no single line matching '{pattern}' in its output")
    log(f"ok   {what}: exit {p.returncode} after {took:.1f} s: {lines[0].strip()}")


def start_local(tmp, name, cmd, env=None):
    """A process outside any namespace, its output in tmp/name.out."""
    out = open(os.path.join(tmp, f"{name}.out"), "w+")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    p.out = out
    return p


def stop(p):
    """SIGSTOP to one of our processes (by its PID)."""
    os.kill(p.pid, signal.SIGSTOP)


def end(procs):
    """Ends our processes by PID (SIGKILL also ends a stopped one)."""
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def tap_opts(net, role, src):
    """rping / rc-pingpong port options for `role`'s tap (what Net.config writes for ND2)."""
    n = 1 if role == "server" else 2
    return ["--profile", os.path.join(src, "drivers-cfg", "net_tap.ini"), "--iface", net.taps[role],
            "--ip", f"{net.ip(role)}/24", "--set", f"port.mac=02:00:c6:12:{net.subnet:02x}:0{n}"]


def root():
    return os.geteuid() == 0


# ---- nd-perf ----------------------------------------------------------------------------------

def case_nd_perf(b, src, tmp):
    exe = os.path.join(b, "tools", "nd", "nd-perf")
    # (a) No client, --timeout 3: the wait for the first client ends.
    t0 = time.monotonic()
    p = start_local(tmp, "a", [exe, "write_bw", "--profile", "net_ring.ini", "--ip", "10.79.0.1/24",
                               "--timeout", str(TIMEOUT)])
    expect_timeout(p, t0, "nd-perf server, no client", r"timed out after 3 s waiting for a client to connect")
    if not root():
        return "skipped the two-process parts (not root)"
    with Net("ntp", 79) as net:
        # (b) write_bw: the server waits for the end-of-test handshake while the client writes.
        # (b') send_bw: the server receives.
        for test, pattern in (("write_bw", r"timed out after 3 s waiting for the client's end-of-test handshake"
                                           r" on connection A: no frame from the peer"),
                              ("send_bw", r"timed out after 3 s waiting for a message on connection B")):
            srv = net.start(tmp, "server", [exe, test, "-D", "60", "--timeout", str(TIMEOUT)],
                            net.config(tmp, "server"))
            wait_for_text(srv, "Waiting for client to connect")
            cli = net.start(tmp, "client", [exe, test, "-D", "60", "--timeout", str(PEER_TIMEOUT), net.ip("server")],
                            net.config(tmp, "client"))
            wait_for_text(cli, "#bytes")
            time.sleep(0.5)  # the test under way
            stop(cli)
            t0 = time.monotonic()
            # write_bw: the server looks at its frame count once per --timeout, so the wait ends
            # 3-6 s after the frames stop.
            expect_timeout(srv, t0, f"nd-perf {test} server, its client stopped", pattern,
                           limit=2 * TIMEOUT + SLACK if test == "write_bw" else TIMEOUT + SLACK)
            end([cli])
            net.procs.clear()
        # (c) The client's wait for its completions, the server stopped.
        srv = net.start(tmp, "server", [exe, "write_bw", "-D", "60"], net.config(tmp, "server"))
        wait_for_text(srv, "Waiting for client to connect")
        cli = net.start(tmp, "client", [exe, "write_bw", "-D", "60", "--timeout", str(TIMEOUT), net.ip("server")],
                        net.config(tmp, "client"))
        wait_for_text(cli, "#bytes")
        time.sleep(0.5)
        stop(srv)
        t0 = time.monotonic()
        expect_timeout(cli, t0, "nd-perf write_bw client, its server stopped",
                       r"timed out after 3 s waiting for a completion on connection B")
        end([srv])
        net.procs.clear()
    return ""


# ---- rping ------------------------------------------------------------------------------------

def case_rping(b, src, tmp):
    exe = os.path.join(b, "tools", "rping")
    t0 = time.monotonic()
    p = start_local(tmp, "a", [exe, "-s", "-a", "10.79.1.1", "--profile", "net_ring.ini", "--ip", "10.79.1.1/24",
                               "--timeout", str(TIMEOUT)])
    expect_timeout(p, t0, "rping server, no client", r"rping: timed out after 3 s waiting for a client to connect")
    if not root():
        return "skipped the two-process parts (not root)"
    with Net("nrp", 80) as net:
        # (b) The client stops between pings (-C 0: it pings until stopped; -v: each ping printed).
        srv = net.start(tmp, "server", [exe, "-s", "-a", net.ip("server"), "--timeout", str(TIMEOUT)] +
                        tap_opts(net, "server", src), "/dev/null")
        wait_for_text(srv, "rping: listening")
        cli = net.start(tmp, "client", [exe, "-c", "-v", "-a", net.ip("server"), "--timeout", str(PEER_TIMEOUT)] +
                        tap_opts(net, "client", src), "/dev/null")
        wait_for_text(cli, "ping data: rdma-ping-")
        stop(cli)
        t0 = time.monotonic()
        expect_timeout(srv, t0, "rping server, its client stopped",
                       r"rping: timed out after 3 s waiting for .*(a receive completion|a send completion)")
        end([cli])
        net.procs.clear()
        # (c) The server stops: the client's wait for its next completion ends.
        srv = net.start(tmp, "server", [exe, "-s", "-a", net.ip("server")] + tap_opts(net, "server", src), "/dev/null")
        wait_for_text(srv, "rping: listening")
        cli = net.start(tmp, "client", [exe, "-c", "-v", "-a", net.ip("server"), "--timeout", str(TIMEOUT)] +
                        tap_opts(net, "client", src), "/dev/null")
        wait_for_text(cli, "ping data: rdma-ping-")
        stop(srv)
        t0 = time.monotonic()
        expect_timeout(cli, t0, "rping client, its server stopped",
                       r"rping: timed out after 3 s waiting for .*(a receive completion|a send completion)")
        end([srv])
        net.procs.clear()
    return ""


# ---- rc-pingpong ------------------------------------------------------------------------------

def case_rc_pingpong(b, src, tmp):
    exe = os.path.join(b, "tools", "rc-pingpong")
    ring = os.path.join(src, "drivers-cfg", "net_ring.ini")
    t0 = time.monotonic()
    p = start_local(tmp, "a", [exe, "--profile", ring, "--ip", "10.79.2.1/24", "-p", "18601",
                               "--timeout", str(TIMEOUT)])
    expect_timeout(p, t0, "rc-pingpong server, no client",
                   r"timed out waiting to accept a client \(after 3 s, --timeout\)")
    if not root():
        return "skipped the two-process parts (not root)"
    with Net("nrc", 81) as net:
        # (b) A client that makes the exchange and then sends nothing: a script of ours speaking
        # ibv_rc_pingpong's exchange (over the namespace's loopback) with the GID of the bridge's
        # own address, which answers the server's ARP. The server posts no send first: it waits
        # for the first message.
        fake_ip = f"198.18.{net.subnet}.3"
        net.sh("addr", "add", f"{fake_ip}/24", "dev", net.bridge)
        gid = "0" * 20 + "ffff" + "".join(f"{int(x):02x}" for x in fake_ip.split("."))
        srv = net.start(tmp, "server", [exe, "-p", "18602", "--timeout", str(TIMEOUT)] + tap_opts(net, "server", src),
                        "/dev/null")
        wait_for_text(srv, "local address:")
        fake = net.start(tmp, "fake", [sys.executable, "-c", FAKE_PINGPONG_CLIENT, "127.0.0.1", "18602",
                                       f"0000:000123:000456:{gid}"], "/dev/null", bridge=False)
        wait_for_text(fake, "exchanged")
        t0 = time.monotonic()
        expect_timeout(srv, t0, "rc-pingpong server, its client silent after the exchange",
                       r"rc-pingpong: timed out after 3 s waiting for a completion \(the peer's next message")
        end([fake])
        net.procs.clear()
        net.sh("addr", "del", f"{fake_ip}/24", "dev", net.bridge)
        # The real client's exchange is TCP to its server's address: that address on the
        # namespace's loopback (the bridge must not answer ARP for it: arp_ignore).
        net.sh("addr", "add", f"{net.ip('server')}/32", "dev", "lo")
        subprocess.run(["ip", "netns", "exec", net.ns, "sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=1"],
                       check=True, timeout=30)
        # (b') The real client, stopped during the run: the server ends by the timeout, or sooner
        # when a send of its own was outstanding (its retries run out: Failed status ...).
        srv = net.start(tmp, "server", [exe, "-p", "18603", "-n", "100000000", "--timeout", str(TIMEOUT)] +
                        tap_opts(net, "server", src), "/dev/null")
        wait_for_text(srv, "local address:")
        cli = net.start(tmp, "client", [exe, "-p", "18603", "-n", "100000000", "--timeout", str(PEER_TIMEOUT)] +
                        tap_opts(net, "client", src) + [net.ip("server")], "/dev/null")
        wait_for_text(cli, "remote address:")
        time.sleep(0.3)
        stop(cli)
        t0 = time.monotonic()
        expect_timeout(srv, t0, "rc-pingpong server, its client stopped",
                       r"rc-pingpong: timed out after 3 s waiting for a completion|^Failed status io-timeout")
        end([cli])
        net.procs.clear()
    return ""


# ibv_rc_pingpong's client side of the exchange, then silence: argv = server, port, message.
FAKE_PINGPONG_CLIENT = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
s.sendall(sys.argv[3].encode() + b"\0")
got = b""
while len(got) < 52:
    b = s.recv(52 - len(got))
    if not b:
        sys.exit("the server closed the exchange")
    got += b
s.sendall(b"done\0")
print("exchanged", got[:51].decode(), flush=True)
time.sleep(60)
"""


# ---- rc-rdma ----------------------------------------------------------------------------------

def case_rc_rdma(b, src, tmp):
    exe = os.path.join(b, "tools", "rc-rdma")
    ring = os.path.join(src, "drivers-cfg", "net_ring.ini")
    # (a) Nobody listens on the peer's port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
    t0 = time.monotonic()
    p = start_local(tmp, "a", [exe, "--profile", ring, "--ip", "10.79.3.1/24", "-p", str(free_port),
                               "--timeout", str(TIMEOUT), "127.0.0.1"])
    expect_timeout(p, t0, "rc-rdma, no peer", r"rc-rdma: timed out after 3 s waiting for the peer's TCP server")
    # (b) A peer that takes the connection and the QP line and never answers.
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    held = []

    def accept():
        try:
            c, _ = ls.accept()
            held.append(c)
            c.recv(4096)
        except OSError:
            pass
    th = threading.Thread(target=accept, daemon=True)
    th.start()
    t0 = time.monotonic()
    p = start_local(tmp, "b", [exe, "--profile", ring, "--ip", "10.79.3.1/24", "-p", str(ls.getsockname()[1]),
                               "--timeout", str(TIMEOUT), "127.0.0.1"])
    expect_timeout(p, t0, "rc-rdma, a silent peer", r"rc-rdma: timed out after 3 s waiting for the peer's QP line")
    for c in held:
        c.close()
    ls.close()
    return ""


# ---- the nd-* programs ------------------------------------------------------------------------

def case_nd_programs(b, src, tmp):
    config = os.path.join(tmp, "ring.ini")
    write_config(config, {"adapter0": {"profile": "net_ring.ini", "port.ring": "ndttmo", "ip": "10.79.4.1/24"}})
    env = dict(os.environ)
    env["ND2_CONFIG"] = config
    for prog in ("nd-ping", "nd-pingpong", "nd-rping", "nd-rpingpong"):
        t0 = time.monotonic()
        p = start_local(tmp, prog, [os.path.join(b, "tools", "nd", prog), "-s", "--timeout", str(TIMEOUT),
                                    "10.79.4.1"], env)
        expect_timeout(p, t0, f"{prog} server, no client",
                       rf"{prog}: timed out after 3 s \(--timeout\) waiting for a client to connect")
    return ""


CASES = {"nd-perf": case_nd_perf, "rping": case_rping, "rc-pingpong": case_rc_pingpong, "rc-rdma": case_rc_rdma,
         "nd-programs": case_nd_programs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tool-timeouts-")
    t0 = time.monotonic()
    try:
        note = CASES[a.case](a.build_dir, a.src, tmp)
    except CaseFailure as e:
        log(f"FAIL: {e}")
        return 1
    except subprocess.TimeoutExpired as e:
        log(f"FAIL: timed out: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"PASS ({time.monotonic() - t0:.1f} s){': ' + note if note else ''}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # meson's timeout: clean up on the way out
    sys.exit(main())
