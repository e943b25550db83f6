#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Microsoft's own ND2 samples and unit tests (../shared/networkdirect, built unmodified by
build-ms-programs.sh) run as Microsoft intends: the two-sided ones as a server and a client
in two processes, each with an adapter on a net_tap port, the taps on a bridge in a network
namespace made for the test (tests/support/ndnet.py); the one-sided ones on the server's
adapter. The verdict is each program's own: both processes exit 0, neither prints a failure
(their LogIfErrorExit / LOG_FAILURE lines: "failed", "Failed"), and each prints what its
success prints — ndmemorytest "<Test>: passed" (or "<Test> is server-only / client-only"),
ndcq "PASSED" per test, ndcat "Validation of full Addresslist passed", the samples their
"End of test" line and, for the client, one result row per transfer size. (Their exit codes
alone would not do: they exit with their source line, which Linux truncates to 8 bits.)

  networkdirect_test.py --bin-dir DIR --case CASE [--progress default|thread|inline|yield] [--smoke]

CASE: adapterinfo, cat, mrlat, cq, mval, mw, ping-p, ping-b, pingpong-p, pingpong-b,
rping-w-p, rping-r-b, rpingpong-p, rpingpong-b, memorytest-<Test> (one of TESTS below).
--progress: the adapters' `progress` key (default: none, the library's default).
--smoke: the long cases (the four samples' 23 sizes, ndmw's 8 M sequential Writes: minutes
each) only through their first sizes / into phase 2, then stopped: what the test command runs;
the whole runs are suite networkdirect-full.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ndnet import CaseFailure, Net, check, read, wait_all  # noqa: E402

# ndmemorytest's -t names, and which side prints "<name>: passed" (both, or only one: the
# other prints "<name> is server-only ..." / "... client-only ...").
TESTS = {
    "NdConnClose": "both", "NdConnListenClosing": "both", "NdConnReject": "both",
    "NdDualConnection": "both", "NdDualListen": "server", "NdInvalidIP": "client",
    "NdInvalidRead": "both", "NdInvalidWrite": "both", "NdLargePrivateData": "both",
    "NdLargeQPDepth": "server", "NdMRDeregister": "both", "NdMRInvalidBuffer": "both",
    "NdOverRead": "both", "NdOverWrite": "both", "NdQpMax": "server",
    "NdReceiveFlushQP": "server", "NdSendNoReceive": "both", "NdReceiveConnClosed": "both",
    "NdWriteViolation": "both",
}
SAMPLES = {"ping": "ndping", "pingpong": "ndpingpong", "rping": "ndrping", "rpingpong": "ndrpingpong"}
SIZES = 23  # 1 B .. 4 MB: the samples' table has a row per size
# --smoke: a sample until its client's table has these first rows (1 .. 8 B: the connection,
# the warm-up and four sizes of 100,000 or 500,000 transfers each, 10-50 s), ndmw until phase 2 is
# this long into its 8 M sequential Writes.
SMOKE_ROWS = 4
SMOKE_MW_SECONDS = 10
FAIL_RE = re.compile(r"fail", re.I)
RUN_TIMEOUT = 3300


def program_lines(out):
    """The program's own lines: not DPDK's net_tap notes at start (no multiq qdisc here)."""
    return [l for l in out.splitlines() if not l.startswith(("tap_", "qdisc_", "eth_dev_tap_create"))]


def own_lines(out):
    """Lines the program printed, not our library's log lines (e.g. `roce: QP ... failed
    (rnr-retries-exhausted)`, which NdSendNoReceive causes on purpose)."""
    return [l for l in program_lines(out) if not l.startswith(("roce: ", "libnd2: "))]


def show(who, out):
    for line in program_lines(out):
        print(f"  {who}: {line}", flush=True)


def no_failure(who, out):
    # A "Warning: ..." line is a deviation the program itself tolerates (ndmval expects
    # ND_DATA_OVERRUN for a receive too small where the ND2 page names ND_BUFFER_OVERFLOW,
    # which we return, and warns): shown, not a failure.
    bad = [l for l in own_lines(out) if FAIL_RE.search(l) and not l.startswith("Warning:")]
    check(not bad, f"the {who} reported a failure: {bad[0] if bad else ''}")


def wait_until(procs, done, timeout):
    """Waits until done([outputs]) holds while every process still runs, then ends them (by
    PID: they are ours). False if one exited first or the time ran out."""
    deadline = time.monotonic() + timeout
    while True:
        if done([read(p) for p in procs]):
            ok = all(p.poll() is None for p in procs)
            break
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            ok = False
            break
        time.sleep(0.1)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    return ok


def run_pair(net, tmp, server_cmd, client_cmd, progress, timeout=RUN_TIMEOUT, may_exit=False,
             until=None, what=""):
    """Server and client to their end, both exiting 0 with no failure printed; with `until` (a
    predicate on their outputs, `what` says what it waits for) only until it holds, the two
    still running, then stopped."""
    srv = net.start(tmp, "server", server_cmd, net.config(tmp, "server", progress), may_exit=may_exit)
    # Microsoft's servers print nothing when they listen: their tap exists once NdStartup has
    # opened the adapter, and the listener follows within milliseconds.
    time.sleep(1.0)
    cli = net.start(tmp, "client", client_cmd, net.config(tmp, "client", progress), may_exit=may_exit)
    t0 = time.monotonic()
    if until:
        reached = wait_until([srv, cli], until, timeout)
        rcs = [0, 0] if reached else [p.returncode for p in (srv, cli)]
    else:
        rcs = wait_all([srv, cli], timeout=timeout)
    outs = [read(srv), read(cli)]
    net.procs.clear()
    print(f"---- {' '.join(os.path.basename(c) for c in client_cmd[2:])} "
          f"({time.monotonic() - t0:.1f} s{', stopped at ' + what if until else ''})", flush=True)
    show("server", outs[0])
    show("client", outs[1])
    for who, rc, out in zip(("server", "client"), rcs, outs):
        no_failure(who, out)
    if until:
        check(reached, f"the pair did not reach {what} within {timeout} s, both running "
                       f"(exit codes {[p.returncode for p in (srv, cli)]})")
    for who, rc in zip(("server", "client"), rcs):
        check(rc == 0, f"the {who} exited {rc}")
    return outs


def run_one(net, tmp, cmd, progress, timeout=300):
    p = net.start(tmp, "server", cmd, net.config(tmp, "server", progress), bridge=False)
    rc = wait_all([p], timeout=timeout)[0]
    out = read(p)
    net.procs.clear()
    print(f"---- {' '.join(os.path.basename(c) for c in cmd[2:])}", flush=True)
    show("out", out)
    check(rc == 0, f"exited {rc}")
    no_failure("program", out)
    return out


def table(out):
    """The sizes of the result rows a sample's client printed (ndping's format is
    " %9ul %9ul ...": MSVC prints the l after each number too), after its warm-up."""
    return [int(r) for r in re.findall(r"^\s*(\d+)l?\s+\d+l?\s+[\d.]+", out, re.M)][-SIZES:]


def case(bindir, tmp, net, name, progress, smoke=False):
    # Line-buffered stdout (stdbuf): a run cut short still shows how far it got.
    exe = lambda p: ["stdbuf", "-oL", os.path.join(bindir, p)]  # noqa: E731
    srv, cli = net.ip("server"), net.ip("server")  # a client names the server's address
    kind, _, rest = name.partition("-")
    if name == "adapterinfo":
        out = run_one(net, tmp, exe("ndadapterinfo") + [srv], progress)
        check(re.search(r"MaxInboundReadLimit", out), "ndadapterinfo printed no adapter info")
    elif name == "cat":
        out = run_one(net, tmp, exe("ndcat") + [srv], progress)
        check("Validation of full Addresslist passed" in out, "ndcat: no 'passed' line")
    elif name == "mrlat":
        out = run_one(net, tmp, exe("ndmrlat") + [srv], progress)
        check("End of test" in out, "ndmrlat printed no 'End of test' line")
    elif name == "cq":
        out = run_one(net, tmp, exe("ndcq") + [srv], progress)
        check(out.count("PASSED") >= 3, "ndcq: fewer than its three PASSED lines")
    elif name == "mw" and smoke:
        # Phase 1 (32 MB read, validated, and written back) complete on the client, then
        # SMOKE_MW_SECONDS of phase 2's 4-byte Writes with both running (the server's progress,
        # "%Id%%\r", has no newline: it shows only at the end).
        prog = exe("ndmw")
        since = {}

        def phase2_for_a_while(o):
            if "Phase 1: complete" in o[1] and "Phase 2:" in o[0]:
                since.setdefault("t", time.monotonic())
            return "t" in since and time.monotonic() - since["t"] >= SMOKE_MW_SECONDS
        run_pair(net, tmp, prog + ["-s", srv], prog + ["-c", cli], progress, timeout=300,
                 until=phase2_for_a_while, what=f"phase 1 complete and {SMOKE_MW_SECONDS} s of phase 2")
    elif name in ("mval", "mw"):
        prog = exe("nd" + name)
        outs = run_pair(net, tmp, prog + ["-s", srv], prog + ["-c", cli], progress,
                        timeout=300 if name == "mval" else RUN_TIMEOUT)
        for who, out in zip(("server", "client"), outs):
            check("End of test" in out, f"the {who} printed no 'End of test' line")
        check(any("Test complete." in o for o in outs), f"nd{name}: no side printed 'Test complete.'")
    elif kind in SAMPLES:
        flags = ["-" + f for f in rest.split("-")]
        prog = exe(SAMPLES[kind])
        want = SMOKE_ROWS if smoke else SIZES
        until = (lambda o: len(table(o[1])) >= SMOKE_ROWS) if smoke else None
        outs = run_pair(net, tmp, prog + ["-s"] + flags + [srv], prog + ["-c"] + flags + [cli], progress,
                        timeout=300 if smoke else RUN_TIMEOUT, until=until,
                        what=f"the client's {SMOKE_ROWS} first rows")
        if not smoke:
            for who, out in zip(("server", "client"), outs):
                check("End of test" in out, f"the {who} printed no 'End of test' line")
        rows = table(outs[1])
        check(len(rows) >= want and rows[:want] == [1 << i for i in range(want)],
              f"the client's table does not list the sizes 1 .. {1 << (want - 1)} (rows: {rows})")
    elif kind == "memorytest" and rest in TESTS:
        prog = exe("ndmemorytest")
        # A side may be done before its tap is on the bridge (no part in the test, or a part
        # of its own: NdMRInvalidBuffer's server can finish in the harness's first 20 ms):
        # its exit status and lines are judged below all the same.
        outs = run_pair(net, tmp, prog + ["-s", "-t", rest, srv], prog + ["-c", "-t", rest, cli], progress,
                        timeout=300, may_exit=True)
        who = TESTS[rest]
        for role, out in zip(("server", "client"), outs):
            if who in ("both", role):
                check(f"{rest}: passed" in out, f"the {role} did not print '{rest}: passed'")
            else:
                check(re.search(rf"{rest} is \w+-only", out), f"the {role} did not say it has no part")
    else:
        raise CaseFailure(f"unknown case {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True, help="where build-ms-programs.sh put the programs")
    ap.add_argument("--case", required=True)
    ap.add_argument("--progress", default="default", choices=["default", "thread", "inline", "yield"])
    ap.add_argument("--smoke", action="store_true",
                    help="the long cases (samples, mw) only until their first sizes / phase 2 "
                         "have run, both programs still running and nothing failed; then stopped")
    ap.add_argument("--key", action="append", default=[], metavar="KEY=VALUE",
                    help="one more adapter key for both sides (e.g. port.rx_interrupt=off); repeatable")
    a = ap.parse_args()
    extra = dict(k.split("=", 1) for k in a.key)
    if os.geteuid() != 0:
        print("SKIP: needs root (TAP devices, a network namespace)")
        return 77
    progress = {"default": None, "yield": "thread"}.get(a.progress, a.progress)
    if not os.access(os.path.join(a.bin_dir, "ndmemorytest"), os.X_OK):
        # Not built yet (a case run without networkdirect_build first): build them now.
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build-ms-programs.sh")
        r = subprocess.run([script, a.bin_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(r.stdout, flush=True)
        if r.returncode != 0:
            return r.returncode
    tmp = tempfile.mkdtemp(prefix="networkdirect-")
    try:
        with Net("nms", 79) as net:
            if a.progress == "yield":
                extra["progress_yield"] = "on"
            if extra:
                net_config = net.config
                net.config = lambda t, r, p, **k: net_config(t, r, p, **extra, **k)
            case(a.bin_dir, tmp, net, a.case, progress, a.smoke)
    except CaseFailure as e:
        print(f"FAIL: {e}", flush=True)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
