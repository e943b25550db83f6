#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The nd-* ND2 programs (tools/nd/) as a user runs them.

Cases (--case):
  cli              command-line errors of the programs: clear message, exit 2, no crash
  adapterinfo      nd-adapterinfo on a configured address (every ND2_ADAPTER_INFO field, the
                   address list) and on addresses that are not ND addresses; with no address,
                   the list of both adapters (driver, name, MAC, MTU, queues, each one's own
                   addresses, its limits); as root also a net_ring + net_tap configuration
                   (the tap's driver, interface and MAC)
  loopback-PROG    PROG's server and client in one process on one adapter (--loopback, the
                   adapter's loopback connections), --verify, 1 B .. 4 MB, in the polling (-p)
                   and blocking (-b) modes, with inline progress and a progress thread
  pair-PROG        PROG's server and client in two processes with an adapter each: two
                   net_tap ports on a Linux bridge in a network namespace the case creates
                   (and deletes, also on failure), --verify, 1 B .. 4 MB, -p and -b; then the
                   same pair with different data patterns (--seed), which the checking side
                   must report as a data mismatch (exit 1)
PROG is one of ping, pingpong, rping (both -w and -r), rpingpong.

Every run must exit 0 and print the summary line with the counts the schedule implies (pings
and bytes; both sides agree): a mismatch of data, of counts or any other exit fails the case.
Runs are bounded (--timeout for the programs, a timeout here too). Needs root for pair-*
(TAP devices, a network namespace): otherwise it skips (exit 77), which CI counts as a failure.
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
from ndnet import CaseFailure, Net, check, read, wait_all, wait_for_text, write_config  # noqa: E402

RUN_TIMEOUT = 90          # seconds, one program run
MAX_XFER = 4 * 1024 * 1024
HDR_LEN = 40
MAX_VOLUME = 500 * MAX_XFER
MAX_ITERATIONS = {"ping": 500000, "pingpong": 100000, "rping": 500000, "rpingpong": 100000}


def log(msg):
    print(msg, flush=True)


def schedule(prog, iters, warmup, min_size=1, max_size=MAX_XFER):
    """(messages, bytes, phases) that a run with these options moves (the originals' schedule)."""
    n = warmup
    b = warmup * HDR_LEN
    phases = 1 if warmup else 0
    s = min_size
    while s <= max_size:
        k = max(1, min(MAX_ITERATIONS[prog], MAX_VOLUME // s, iters))
        n += k
        b += k * s
        phases += 1
        s *= 2
    return n, b, phases


def run(cmd, env, timeout=RUN_TIMEOUT):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout


def show(title, out):
    log(f"---- {title}")
    for line in out.splitlines():
        # DPDK's net_tap notes on every start (no multiq qdisc in this kernel): noise.
        if not re.match(r"^(tap_|qdisc_|eth_dev_tap_create)", line):
            log("  " + line)


def expect_summary(out, who, prog, verb, n, b, verified_word=None):
    """The summary line `nd-PROG: WHO VERB N ..., B bytes` with these counts."""
    m = re.search(rf"^nd-{prog}: {who} {verb} (\d+) \w+, (\d+) bytes(.*)$", out, re.M)
    check(m, f"no '{who} {verb}' summary line from nd-{prog}")
    check(int(m.group(1)) == n and int(m.group(2)) == b,
          f"nd-{prog} {who}: {m.group(1)} messages / {m.group(2)} bytes, expected {n} / {b}")
    if verified_word:
        check(verified_word in m.group(3), f"nd-{prog} {who} did not verify the data")


def check_run(prog, opts, out, warmup, iters, mode_flags):
    """The summary lines of a successful --verify run (both sides' output may be in `out`)."""
    n, b, phases = schedule(prog, iters, warmup)
    if prog == "ping":
        if "server" in opts:
            expect_summary(out, "server", prog, "received", n, b, "verified")
            check(re.search(rf", {phases} syncs", out), f"nd-ping server: expected {phases} syncs")
        if "client" in opts:
            expect_summary(out, "client", prog, "sent", n, b)
    elif prog in ("pingpong", "rpingpong"):
        if "server" in opts:
            expect_summary(out, "server", prog, "answered", n, b, "verified")
        if "client" in opts:
            expect_summary(out, "client", prog, "sent", n, b, "verified")
    elif prog == "rping":
        verb = "read" if "-r" in mode_flags else "wrote"
        if "server" in opts:
            op = "read" if "-r" in mode_flags else "write"
            check(re.search(rf"^nd-rping: server done \({op}\)$", out, re.M), "no nd-rping server summary")
        if "client" in opts:
            expect_summary(out, "client", prog, verb, n, b, "verified")
    if "client" in opts:
        # The client's table: one row per size, 1 .. 4194304.
        rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+\d+$", out, re.M)
        check([int(r[0]) for r in rows] == [1 << i for i in range(23)],
              f"nd-{prog}: the client's table does not list the sizes 1 .. 4194304")


def env_with(config):
    env = dict(os.environ)
    env["ND2_CONFIG"] = config
    return env


# ---- cli ------------------------------------------------------------------------------------

def case_cli(tools, tmp):
    config = os.path.join(tmp, "ring.ini")
    write_config(config, {"adapter0": {"profile": "net_ring.ini", "port.ring": "ndtcli",
                                       "ip": "10.77.0.1/24"}})
    env = env_with(config)
    bad = [
        (["nd-ping", "10.77.0.1"], "Exactly one of client (c) or server (s) must be specified."),
        (["nd-ping", "-s", "-c", "10.77.0.1"], "Exactly one of client (c) or server (s)"),
        (["nd-pingpong", "-s", "-p", "-b", "10.77.0.1"], "Exactly one of blocking (b) or polling (p)"),
        (["nd-rping", "-c", "-r", "-w", "10.77.0.1"], "Exactly one of read (r) or write (w)"),
        (["nd-rpingpong", "-c", "10.77.0.300"], "Bad address."),
        (["nd-rpingpong", "-c", "10.77.0.1:99999"], "Bad address."),
        (["nd-ping", "-c", "0.0.0.0"], "Bad address."),
        (["nd-ping", "-c", "-n", "0", "10.77.0.1"], "Invalid or missing SGE length."),
        (["nd-ping", "-c", "-n", "x", "10.77.0.1"], "Bad value 'x' for -n"),
        (["nd-ping", "-c", "-q", "10.77.0.1"], "Missing value for -q."),
        (["nd-pingpong", "-c", "--bogus", "10.77.0.1"], "Unknown option '--bogus'."),
        (["nd-rping", "-c", "--min-size", "64", "--max-size", "8", "10.77.0.1"],
         "--min-size is above --max-size."),
        (["nd-adapterinfo", "-x", "10.77.0.1"], "Unknown option '-x'."),
        (["nd-adapterinfo", "banana"], "Bad address."),
    ]
    for args, msg in bad:
        rc, out = run([os.path.join(tools, args[0])] + args[1:], env)
        check(rc == 2, f"{' '.join(args)}: exit {rc}, expected 2\n{out}")
        check(msg in out, f"{' '.join(args)}: no '{msg}' in\n{out}")
        check("Options:" in out, f"{' '.join(args)}: no usage text")
    rc, out = run([os.path.join(tools, "nd-ping"), "-h"], env)
    check(rc == 0 and "54324" in out, "nd-ping -h: usage with the default port 54324")
    for prog, port in (("pingpong", 54325), ("rping", 54326), ("rpingpong", 54327)):
        rc, out = run([os.path.join(tools, "nd-" + prog), "--help"], env)
        check(rc == 0 and str(port) in out, f"nd-{prog} --help: default port {port}")
    # A client whose server does not exist: a clear ND error, exit 1 (no hang, no crash).
    rc, out = run([os.path.join(tools, "nd-ping"), "-c", "--timeout", "60", "10.77.0.1:5"], env)
    check(rc == 1 and "ND_CONNECTION_REFUSED" in out, f"nd-ping to a closed port:\n{out}")
    # An address of no adapter.
    rc, out = run([os.path.join(tools, "nd-pingpong"), "-s", "--timeout", "60", "10.77.0.9"], env)
    check(rc == 1 and "NdOpenAdapter failed" in out, f"nd-pingpong -s on a foreign address:\n{out}")
    # More SGEs than the adapter allows: the provider's refusal, named.
    rc, out = run([os.path.join(tools, "nd-rpingpong"), "-s", "-n", "1000", "--timeout", "60", "10.77.0.1"], env)
    check(rc == 1 and "CreateQueuePair failed" in out and "ND_INVALID_PARAMETER" in out,
          f"nd-rpingpong -n 1000:\n{out}")
    # -l: everything goes to the log file.
    logf = os.path.join(tmp, "log.txt")
    rc, out = run([os.path.join(tools, "nd-adapterinfo"), "-l", logf, "10.77.0.1"], env)
    check(rc == 0 and "InfoVersion" not in out, f"nd-adapterinfo -l: exit {rc}, output {out!r}")
    with open(logf) as f:
        check("InfoVersion: 131072" in f.read(), "nd-adapterinfo -l: the log file lacks the adapter info")
    log("cli: every bad command line got its message and exit 2; connection errors exit 1")


# ---- adapterinfo ------------------------------------------------------------------------------

def case_adapterinfo(tools, tmp):
    config = os.path.join(tmp, "ring.ini")
    write_config(config, {
        "adapter0": {"profile": "net_ring.ini", "port.ring": "ndtai", "ip": "10.77.0.1/24",
                     "port.ipv6": "fd00:77::1/64"},
        "adapter1": {"profile": "net_ring.ini", "port.ring": "ndtai", "port.ring_side": "b",
                     "ip": "10.77.0.2/24", "port.ipv6": "fd00:77::2/64",
                     "port.mac": "02:00:00:00:77:02"}})
    env = env_with(config)
    prog = os.path.join(tools, "nd-adapterinfo")
    ids = set()
    for ip in ("10.77.0.1", "10.77.0.2"):
        rc, out = run([prog, ip], env)
        show(f"nd-adapterinfo {ip}", out)
        check(rc == 0, f"nd-adapterinfo {ip}: exit {rc}")
        fields = dict(re.findall(r"^(\w+): (\S*)$", out, re.M))
        expect = {"InfoVersion": "131072", "MaxCallerData": "56", "MaxCalleeData": "148",
                  "MaxInboundReadLimit": None, "MaxOutboundReadLimit": None,
                  "MaxInitiatorSge": None, "MaxReceiveSge": None, "MaxReadSge": None,
                  "MaxTransferLength": None, "MaxInlineDataSize": None,
                  "MaxReceiveQueueDepth": None, "MaxInitiatorQueueDepth": None,
                  "MaxSharedReceiveQueueDepth": None, "MaxCompletionQueueDepth": None,
                  "InlineRequestThreshold": None, "LargeRequestThreshold": None,
                  "MaxRegistrationSize": None, "MaxWindowSize": None, "VendorId": None,
                  "DeviceId": None, "AdapterId": None}
        for k, v in expect.items():
            check(k in fields, f"nd-adapterinfo: no {k} line")
            if v is not None:
                check(fields[k] == v, f"nd-adapterinfo: {k} is {fields[k]}, expected {v}")
        check(int(fields["MaxTransferLength"]) >= MAX_XFER + HDR_LEN, "MaxTransferLength below 4 MB")
        ids.add(fields["AdapterId"])
        for flag in ("IN_ORDER_DMA_SUPPORTED", "LOOPBACK_CONNECTIONS_SUPPORTED"):
            check("ND_ADAPTER_FLAG_" + flag in out, f"nd-adapterinfo: no {flag}")
        addrs = re.findall(r"^Address \d+: (\S+)$", out, re.M)
        check(sorted(addrs) == sorted(["10.77.0.1", "10.77.0.2", "fd00:77::1", "fd00:77::2"]),
              f"nd-adapterinfo: address list {addrs}")
    check(len(ids) == 2, "the two adapters report the same AdapterId")

    # No address: every adapter, each with its port, its own addresses and its limits.
    rc, out = run([prog], env)
    show("nd-adapterinfo (no address)", out)
    check(rc == 0, f"nd-adapterinfo with no address: exit {rc}")
    blocks = parse_adapter_list(out)
    check([b["adapter"] for b in blocks] == ["0", "1"], f"nd-adapterinfo: adapters {[b['adapter'] for b in blocks]}")
    check(re.search(r"^2 adapters$", out, re.M), "nd-adapterinfo: no '2 adapters' line")
    want = [("net_ring_ndtai_a", None, ["10.77.0.1", "fd00:77::1"]),
            ("net_ring_ndtai_b", "02:00:00:00:77:02", ["10.77.0.2", "fd00:77::2"])]
    for b, (name, mac, addrs) in zip(blocks, want):
        who = f"nd-adapterinfo, adapter {b['adapter']}"
        for k, v in (("driver", "net_ring"), ("name", name), ("interface", "-"), ("rx_queues", "1"),
                     ("tx_queues", "1"), ("mtu", "4200"), ("MaxCallerData", "56"), ("InfoVersion", "131072")):
            check(b.get(k) == v, f"{who}: {k} is {b.get(k)}, expected {v}")
        check(b.get("identity", "").startswith("own"), f"{who}: identity {b.get('identity')}")
        check(b.get("xdp_mode", "").startswith("none"), f"{who}: xdp_mode {b.get('xdp_mode')}")
        check(re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", b.get("mac", "")), f"{who}: mac {b.get('mac')}")
        if mac:
            check(b["mac"] == mac, f"{who}: mac {b['mac']}, expected {mac}")
        check(sorted(b["address"]) == sorted(addrs), f"{who}: addresses {b['address']}, expected {addrs}")
        check(re.fullmatch(r"rx \d+, tx \d+, rx drops \d+, tx drops \d+", b.get("frames", "")),
              f"{who}: frames {b.get('frames')}")
        for k in ("MaxInitiatorSge", "MaxTransferLength", "MaxCompletionQueueDepth", "AdapterFlags"):
            check(k in b, f"{who}: no {k} line")
    check(blocks[0]["mac"] != blocks[1]["mac"], "nd-adapterinfo: both adapters list the same MAC")
    check({b["AdapterId"] for b in blocks} == ids, "nd-adapterinfo: the list's AdapterIds are not the adapters'")
    # -l with no address: the list goes to the log file.
    logf = os.path.join(tmp, "list.txt")
    rc, out = run([prog, "-l", logf], env)
    with open(logf) as f:
        check(rc == 0 and out == "" and "2 adapters" in f.read(), f"nd-adapterinfo -l (no address): exit {rc} {out!r}")
    if os.geteuid() == 0:
        adapterinfo_tap(prog, tmp)
    # Not an ND address: NdCheckAddress fails, the program says so and exits 1.
    rc, out = run([prog, "10.77.0.3"], env)
    check(rc == 1 and "NdCheckAddress for the input address failed" in out,
          f"nd-adapterinfo 10.77.0.3: exit {rc}\n{out}")
    # No configuration file: NdStartup's error, exit 1.
    rc, out = run([prog, "10.77.0.1"], env_with(os.path.join(tmp, "missing.ini")))
    check(rc == 1 and "NdStartup failed" in out, f"nd-adapterinfo without a config: exit {rc}\n{out}")
    log("adapterinfo: both adapters' limits, flags and addresses, alone and listed with their ports; "
        "bad addresses refused")


def parse_adapter_list(out):
    """nd-adapterinfo's list: one dict per `adapter: N` block of `\tkey: value` lines
    (`address` a list)."""
    blocks = []
    for line in out.splitlines():
        m = re.match(r"^adapter: (\d+)$", line)
        if m:
            blocks.append({"adapter": m.group(1), "address": []})
            continue
        m = re.match(r"^\t(\w+): ?(.*)$", line)
        if m and blocks:
            if m.group(1) == "address":
                blocks[-1]["address"].append(m.group(2))
            else:
                blocks[-1][m.group(1)] = m.group(2)
    return blocks


def adapterinfo_tap(prog, tmp):
    """A net_ring adapter and a net_tap one (its tap in a namespace of the test's): the list
    names the tap's driver, interface and MAC."""
    with Net("nda", 78) as net:
        tap = net.taps["server"]
        config = os.path.join(tmp, "mixed.ini")
        write_config(config, {
            "adapter0": {"profile": "net_ring.ini", "port.ring": "ndtaimix", "ip": "10.78.0.1/24"},
            "adapter1": {"profile": "net_tap.ini", "iface": tap, "ip": "198.18.78.1/24",
                         "port.ipv6": "fd00:78::1/64", "port.mac": "02:00:c6:12:4e:01"}})
        p = net.start(tmp, "server", [prog], config, bridge=False)
        p.wait(timeout=RUN_TIMEOUT)
        out = read(p)
        show("nd-adapterinfo (no address; net_ring + net_tap)", out)
        check(p.returncode == 0, f"nd-adapterinfo on net_ring + net_tap: exit {p.returncode}")
        blocks = parse_adapter_list(out)
        check(len(blocks) == 2, f"nd-adapterinfo on net_ring + net_tap: {len(blocks)} adapters listed")
        b = blocks[1]
        for k, v in (("driver", "net_tap"), ("interface", tap), ("mac", "02:00:c6:12:4e:01"), ("mtu", "1500")):
            check(b.get(k) == v, f"nd-adapterinfo, the tap adapter: {k} is {b.get(k)}, expected {v}")
        check(sorted(b["address"]) == ["198.18.78.1", "fd00:78::1"],
              f"nd-adapterinfo, the tap adapter: addresses {b['address']}")
        check(blocks[0].get("driver") == "net_ring", "nd-adapterinfo: the ring adapter's driver")
        net.procs.clear()


# ---- loopback ---------------------------------------------------------------------------------

def loopback_runs(prog):
    modes = [["-p"], ["-b"]]
    if prog == "rping":
        modes = [["-w", "-p"], ["-r", "-b"], ["-r", "-p"], ["-w", "-b"]]
    return modes


def case_loopback(tools, tmp, prog):
    iters, warmup = 2, 3
    for progress in ("inline", "thread"):
        config = os.path.join(tmp, f"loop-{progress}.ini")
        write_config(config, {"adapter0": {"profile": "net_ring.ini", "port.ring": "ndtloop",
                                           "ip": "10.77.0.1/24", "progress": progress}})
        for mode in loopback_runs(prog):
            # The -n 3 runs split every transfer over three SGEs (40 + 40 + the rest).
            nsge = ["-n", "3"] if progress == "thread" else []
            cmd = [os.path.join(tools, "nd-" + prog), "--loopback", "--verify", "--iters", str(iters),
                   "--warmup", str(warmup), "--timeout", str(RUN_TIMEOUT - 10)] + mode + nsge + ["10.77.0.1"]
            t0 = time.monotonic()
            rc, out = run(cmd, env_with(config))
            show(f"{' '.join(cmd[1:])} (progress {progress}, {time.monotonic() - t0:.1f} s)", out)
            check(rc == 0, f"nd-{prog} --loopback {' '.join(mode)}: exit {rc}")
            check_run(prog, ("server", "client"), out, warmup, iters, mode)
    log(f"loopback-{prog}: every mode passed, every byte verified")


# ---- pair (two processes, two taps on a bridge in a namespace) --------------------------------

def pair_once(tools, tmp, net, prog, mode, server_extra, client_extra, progress="inline"):
    common = ["--verify", "--timeout", str(RUN_TIMEOUT - 10)] + mode
    exe = os.path.join(tools, "nd-" + prog)
    t0 = time.monotonic()
    srv = net.start(tmp, "server", [exe, "-s"] + common + server_extra + ["198.18.77.1"],
                    net.config(tmp, "server", progress))
    wait_for_text(srv, "listening on 198.18.77.1:")
    cli = net.start(tmp, "client", [exe, "-c"] + common + client_extra + ["198.18.77.1"],
                    net.config(tmp, "client", progress))
    rcs = wait_all([srv, cli])
    outs = [read(srv), read(cli)]
    desc = f"nd-{prog} {' '.join(mode)} ({progress}, {time.monotonic() - t0:.1f} s)"
    show(f"server: {desc}", outs[0])
    show(f"client: {desc}", outs[1])
    net.procs.clear()
    return rcs, outs


def case_pair(tools, tmp, prog):
    if os.geteuid() != 0:
        log("SKIP: pair cases need root (TAP devices, a network namespace)")
        sys.exit(77)
    iters, warmup = 2, 2
    sched = ["--iters", str(iters), "--warmup", str(warmup)]
    modes = [["-p"], ["-b"]]
    if prog == "rping":
        modes = [["-w", "-p"], ["-r", "-b"]]
    with Net() as net:
        for i, mode in enumerate(modes):
            # The second run uses a progress thread in both processes.
            progress = "thread" if i == 1 else "inline"
            rcs, outs = pair_once(tools, tmp, net, prog, mode, sched, sched, progress)
            check(rcs == [0, 0], f"nd-{prog} {' '.join(mode)}: exit codes server {rcs[0]}, client {rcs[1]}")
            check_run(prog, ("server",), outs[0], warmup, iters, mode)
            check_run(prog, ("client",), outs[1], warmup, iters, mode)

        # Different data patterns: the checking side must see a mismatch and exit 1.
        small = ["--iters", "2", "--warmup", "0", "--max-size", "64"]
        mode = ["-r", "-p"] if prog == "rping" else ["-p"]
        rcs, outs = pair_once(tools, tmp, net, prog, mode, small + ["--seed", "1"], small + ["--seed", "2"])
        checker = 1 if prog == "rping" else 0   # rping -r: the client checks what it read
        check(rcs[checker] == 1 and "data mismatch" in outs[checker],
              f"nd-{prog}: different data patterns went unnoticed (exit codes {rcs})")
    log(f"pair-{prog}: two processes over two taps, every byte verified; a wrong pattern is caught")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools-dir", required=True, help="where nd-ping & co. are (<builddir>/tools/nd)")
    ap.add_argument("--case", required=True)
    a = ap.parse_args()
    for p in ("nd-adapterinfo", "nd-ping", "nd-pingpong", "nd-rping", "nd-rpingpong"):
        if not os.access(os.path.join(a.tools_dir, p), os.X_OK):
            log(f"FAIL: {p} was not built in {a.tools_dir}")
            return 1
    tmp = tempfile.mkdtemp(prefix="nd2tools-")
    try:
        kind, _, prog = a.case.partition("-")
        if a.case == "cli":
            case_cli(a.tools_dir, tmp)
        elif a.case == "adapterinfo":
            case_adapterinfo(a.tools_dir, tmp)
        elif kind == "loopback" and prog in MAX_ITERATIONS:
            case_loopback(a.tools_dir, tmp, prog)
        elif kind == "pair" and prog in MAX_ITERATIONS:
            case_pair(a.tools_dir, tmp, prog)
        else:
            log(f"unknown case {a.case}")
            return 2
    except CaseFailure as e:
        log(f"FAIL: {e}")
        return 1
    except subprocess.TimeoutExpired as e:
        log(f"FAIL: timed out: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log("PASS")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # meson's timeout: clean up on the way out
    sys.exit(main())
