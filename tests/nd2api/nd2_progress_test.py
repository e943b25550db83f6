#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Progress that does not depend on the application: nd2_progress_peer's cases in two
processes over two taps on a bridge in a network namespace made for the test (root).

Each case has one side do an ND2 call and then nothing — sleep, spin on memory, exit — and the
other side check, within a bound shorter than the sleep, that the protocol went on: the RTU
after CompleteConnect, the REJ after Reject, the DREQ after Disconnect, a release or exit(),
ARP and the CM answered while a listening server sleeps, the ACKs of Writes to a server that
polls memory. Run with the library's default progress and with the other options:

  --progress default   no `progress` key (the library's default: a progress thread)
  --progress thread    progress = thread
  --progress inline    progress = inline: only the cases whose frames leave in the call
                       itself, or at exit (an inline adapter cannot answer ARP while its
                       application sleeps, nor ACK while it polls memory: nd2api/README.md)
  --progress yield     progress = thread with progress_yield = on

Every case: both sides print "CASE ROLE: ok" and exit 0.
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ndnet import CaseFailure, Net, check, read, wait_all, wait_for_text  # noqa: E402

CASES = ["complete-sleep", "reject-sleep", "disconnect-sleep", "release-sleep", "exit",
         "listen-sleep", "poll-memory"]
INLINE_CASES = ["complete-sleep", "reject-sleep", "disconnect-sleep", "release-sleep", "exit"]


def run_case(peer, tmp, net, case, progress, keys):
    server_addr = net.ip("server")
    srv = net.start(tmp, "server", [peer, "server", case, server_addr],
                    net.config(tmp, "server", progress, **keys))
    wait_for_text(srv, "listening")
    cli = net.start(tmp, "client", [peer, "client", case, server_addr],
                    net.config(tmp, "client", progress, **keys))
    t0 = time.monotonic()
    rcs = wait_all([srv, cli], timeout=60)
    outs = [read(srv), read(cli)]
    net.procs.clear()
    print(f"---- {case} (progress {progress or 'default'}{' ' + str(keys) if keys else ''}, "
          f"{time.monotonic() - t0:.1f} s)", flush=True)
    for who, out in zip(("server", "client"), outs):
        for line in out.splitlines():
            if not line.startswith(("tap_", "qdisc_", "eth_dev_tap_create")):
                print(f"  {who}: {line}", flush=True)
    for who, rc, out in zip(("server", "client"), rcs, outs):
        check(rc == 0 and f"{case} {who}: ok" in out, f"{case}: the {who} exited {rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the nd2_progress_peer program")
    ap.add_argument("--progress", required=True, choices=["default", "thread", "inline", "yield"])
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (TAP devices, a network namespace)")
        return 77
    progress = {"default": None, "yield": "thread"}.get(a.progress, a.progress)
    keys = {"progress_yield": "on"} if a.progress == "yield" else {}
    cases = INLINE_CASES if a.progress == "inline" else CASES
    tmp = tempfile.mkdtemp(prefix="nd2progress-")
    try:
        with Net("ndp", 78) as net:
            for case in cases:
                run_case(a.peer, tmp, net, case, progress, keys)
    except CaseFailure as e:
        print(f"FAIL: {e}", flush=True)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"PASS: {len(cases)} cases", flush=True)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
