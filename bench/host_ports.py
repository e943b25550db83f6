#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 41's benchmark: nd-perf between two network namespaces on the kernel-interface ports,
all in one run so that the ratios compare like with like on a noisy machine.

  af_xdp      net_af_xdp on a veth pair whose ends carry the kernel's addresses (the adapter takes
              them: identity = kernel); once per PMD `busy_budget` value given (--busy-budgets)
  af_packet   net_af_packet on a veth pair with no kernel addresses (the adapter's own)
  tap         net_tap: two taps on a Linux bridge in a namespace (tests/support/ndnet.py)

Each runs `nd-perf send_lat -s 8` and `write_bw -s 8` / `-s 65536`, inline progress, --repeat
times; the medians are reported with the ratios against af_packet. Root (veth, namespaces, XDP).

    sudo bench/host_ports.py --build build [--iters 20000] [--repeat 3] [--busy-budgets 64,0]
"""
import argparse
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "support"))
from ndnet import Net, VethPair  # noqa: E402

PROFILES = os.path.join(SOURCE, "drivers-cfg")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def parse(test, text, size):
    """send_lat: typical us; write_bw: (MB/s, M msg/s)."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] == str(size) and f[1].isdigit():
            if test == "send_lat":
                return float(f[4])          # t_typical[usec]
            return float(f[3]), float(f[4])  # BW average[MB/sec], MsgRate[Mpps]
    raise RuntimeError(f"no result row in:\n{text[-1500:]}")


def perf(tools, test, size, iters, port_args_s, port_args_c, server_ip, pair, tmp, name):
    exe = os.path.join(tools, "nd-perf")
    base = [exe, test, "-s", str(size), "-n", str(iters), "--timeout", "60"]
    srv = pair.start("s", base + port_args_s, os.path.join(tmp, f"{name}.server.txt"))
    time.sleep(2.5)  # the server's adapter is up and listening (XDP attach)
    cli = pair.start("c", base + port_args_c + [server_ip], os.path.join(tmp, f"{name}.client.txt"))
    cli.wait(timeout=180)
    srv.wait(timeout=60)
    cli.out.seek(0)
    out = cli.out.read()
    if cli.returncode != 0 or srv.returncode != 0:
        srv.out.seek(0)
        raise RuntimeError(f"{name}: client {cli.returncode} server {srv.returncode}\n{out[-1500:]}\n{srv.out.read()[-1500:]}")
    return parse(test, out, size)


def afxdp_profile(tmp, busy):
    path = os.path.join(tmp, f"af_xdp_busy{busy}.ini")
    with open(os.path.join(PROFILES, "net_af_xdp.ini")) as f:
        text = f.read()
    text = re.sub(r"^devargs = (.*)$", rf"devargs = \1,busy_budget={busy}", text, flags=re.M)
    with open(path, "w") as f:
        f.write(text)
    return path


def measure(kind, tools, tmp, a, busy=None):
    """{figure: [values]} for one kind of port."""
    res = {"lat8": [], "rate8": [], "bw64k": []}
    runs = [("send_lat", 8, a.iters, "lat8"), ("write_bw", 8, a.iters * 5, "rate8"),
            ("write_bw", 65536, max(200, a.iters // 20), "bw64k")]
    for r in range(a.repeat):
        for test, size, iters, key in runs:
            name = f"{kind}{busy if busy is not None else ''}-{key}-{r}"
            if kind == "tap":
                with Net("hpt", 79) as net:
                    v = perf_tap(net, tools, test, size, iters, tmp, name)
            else:
                addrs = {"s": ["10.64.0.1/24"], "c": ["10.64.0.2/24"]} if kind == "af_xdp" else {}
                with VethPair("hp", addrs) as pair:
                    if kind == "af_xdp":
                        prof = afxdp_profile(tmp, busy)
                        ps = ["--profile", prof, "--iface", pair.dev["s"]]
                        pc = ["--profile", prof, "--iface", pair.dev["c"]]
                        ip = "10.64.0.1"
                    else:
                        prof = os.path.join(PROFILES, "net_af_packet.ini")
                        ps = ["--profile", prof, "--iface", pair.dev["s"], "--ip", "10.65.0.1/24", "--set",
                              "port.mtu=1500"]
                        pc = ["--profile", prof, "--iface", pair.dev["c"], "--ip", "10.65.0.2/24", "--set",
                              "port.mtu=1500"]
                        ip = "10.65.0.1"
                    v = perf(tools, test, size, iters, ps, pc, ip, pair, tmp, name)
            if key == "lat8":
                res[key].append(v)
            elif key == "rate8":
                res[key].append(v[1])
            else:
                res[key].append(v[0])
            print(f"  {name}: {v}", flush=True)
    return {k: statistics.median(v) for k, v in res.items()}


def perf_tap(net, tools, test, size, iters, tmp, name):
    exe = os.path.join(tools, "nd-perf")
    base = [exe, test, "-s", str(size), "-n", str(iters), "--timeout", "60"]
    srv = net.start(tmp, "server", base, net.config(tmp, "server"))
    time.sleep(1.0)
    cli = net.start(tmp, "client", base + [net.ip("server")], net.config(tmp, "client"))
    cli.wait(timeout=180)
    srv.wait(timeout=60)
    cli.out.seek(0)
    out = cli.out.read()
    shutil.copy(os.path.join(tmp, "client.out"), os.path.join(tmp, f"{name}.client.txt"))
    if cli.returncode != 0 or srv.returncode != 0:
        raise RuntimeError(f"{name}: client {cli.returncode} server {srv.returncode}\n{out[-1500:]}")
    return parse(test, out, size)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--busy-budgets", default="64,0", help="af_xdp PMD busy_budget values to run")
    ap.add_argument("--kinds", default="af_xdp,af_packet,tap")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (veth, network namespaces, XDP)")
        return 2
    tools = os.path.abspath(os.path.join(a.build, "tools", "nd"))
    tmp = tempfile.mkdtemp(prefix="host-ports-")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs); nd-perf inline progress; medians of {a.repeat}")
    rows = {}
    kinds = a.kinds.split(",")
    for kind in kinds:
        if kind == "af_xdp":
            for b in a.busy_budgets.split(","):
                rows[f"af_xdp busy_budget={b}"] = measure(kind, tools, tmp, a, int(b))
        else:
            rows[kind] = measure(kind, tools, tmp, a)
    base = rows.get("af_packet")
    print(f"\n{'port':28} {'send_lat 8B us':>15} {'write 8B Mmsg/s':>16} {'write 64KB MB/s':>16}"
          + ("   lat/af_packet  rate/af_packet" if base else ""))
    for name, r in rows.items():
        line = f"{name:28} {r['lat8']:15.2f} {r['rate8']:16.3f} {r['bw64k']:16.0f}"
        if base:
            line += f"   {r['lat8'] / base['lat8']:13.2f}x {r['rate8'] / base['rate8']:14.2f}x"
        print(line)
    print(f"(outputs in {tmp})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
