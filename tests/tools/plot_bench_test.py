#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""tools/plot-bench on saved output (tests/tools/plot_bench/): nd-perf -a runs over the ring pair
(bandwidth: write_bw, latency: send_lat) and perftest 6.06's own tables (a guest's ib_write_bw and
ib_write_lat). --check accepts them and rejects broken tables (naming the line); plotting writes
one PNG per kind with one line per run. Usage: plot_bench_test.py SOURCE_DIR"""
import os
import struct
import subprocess
import sys
import tempfile

src = sys.argv[1]
tool = os.path.join(src, "tools", "plot-bench")
data = os.path.join(src, "tests", "tools", "plot_bench")
BW = os.path.join(data, "ndperf_write_bw_pair_a.txt")
LAT = os.path.join(data, "ndperf_send_lat_pair_a.txt")
PT_BW = os.path.join(data, "perftest_write_bw_client.txt")
PT_LAT = os.path.join(data, "perftest_write_lat_client.txt")
failures = []


def run(*args, stdin=None):
    p = subprocess.run([tool, *args], input=stdin, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


# --check on good tables: every row, with its size, iterations and figures.
rc, out, err = run("--check", "--rows", "23", BW, LAT)
expect(rc == 0, f"--check of the nd-perf -a samples exits 0 ({err.strip()[-200:]})")
expect(out.count(" bw size=") == 23 and out.count(" lat size=") == 23, "--check prints 23 bw and 23 lat rows")
expect("bw size=8388608 iters=20 " in out and "lat size=2 iters=20 " in out, "--check reads sizes and iterations")
rc, out, err = run("--check", "--rows", "1", "--size", "64", "--iters", "5", PT_BW, PT_LAT)
expect(rc == 0, f"--check accepts perftest's own tables ({err.strip()[-200:]})")
expect("bw_avg=0.05 msg_rate=0.000813" in out and "t_typical=2740.52" in out, "perftest's figures are read")
rc, out, err = run("--check", "--size", "65536", PT_BW)
expect(rc == 1 and "expected 65536" in err, "--check --size: a wrong size fails")
rc, out, err = run("--check", "-", stdin=open(BW).read())
expect(rc == 0, "--check reads standard input")

with tempfile.TemporaryDirectory() as tmp:
    def write(name, text):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    lines = open(BW).read().splitlines()
    i = next(n for n, l in enumerate(lines) if l.lstrip().startswith("2 "))
    short = lines[:i] + [" ".join(lines[i].split()[:4])] + lines[i + 1:]
    rc, out, err = run("--check", write("short.txt", "\n".join(short) + "\n"))
    expect(rc == 1 and f":{i + 1}:" in err and "4 fields, expected 5" in err,
           f"a row with a missing field fails, naming line {i + 1} ({err.strip()})")
    bad = lines[:i] + [lines[i].replace("20", "twenty", 1)] + lines[i + 1:]
    rc, out, err = run("--check", write("nan.txt", "\n".join(bad) + "\n"))
    expect(rc == 1 and "not a number" in err, "a row with a word for a number fails")
    lat = open(LAT).read().splitlines()
    k = next(n for n, l in enumerate(lat) if l.lstrip().startswith("64 "))
    f = lat[k].split("\t")
    nanrow = lat[:k] + [lat[k].replace(lat[k].split()[6], "-nan", 1)] + lat[k + 1:]
    rc, out, err = run("--check", write("nan.txt", "\n".join(nanrow) + "\n"))
    expect(rc == 0 and "t_stdev=nan" in out, f"perftest's -nan for a t_stdev is accepted ({err.strip()})")
    # perftest's table when its clock calibration failed ('Correlation coefficient r^2: 0.886 <
    # 0.9' on a loaded TCG guest: every time inf, t_stdev -nan; the row as a guest printed it):
    # rejected, unless --uncalibrated-ok, which still checks its size and iterations.
    pt = open(PT_LAT).read().splitlines()
    j = next(n for n, l in enumerate(pt) if l.lstrip().startswith("64 "))
    inf_row = " 64      100          inf            inf          inf      \t       inf         \t-nan   \t\tinf     \t\tinf     "
    uncal = write("uncal.txt", "\n".join(pt[:j] + [inf_row] + pt[j + 1:]) + "\n")
    rc, out, err = run("--check", "--rows", "1", "--size", "64", "--iters", "100", uncal)
    expect(rc == 1 and "not a number" in err, f"a latency row of inf times fails by default ({err.strip()})")
    rc, out, err = run("--check", "--uncalibrated-ok", "--rows", "1", "--size", "64", "--iters", "100", uncal)
    expect(rc == 0 and "clock calibration failed" in out, f"--uncalibrated-ok accepts it ({err.strip()})")
    rc, out, err = run("--check", "--uncalibrated-ok", "--iters", "5", uncal)
    expect(rc == 1 and "expected 5" in err, "--uncalibrated-ok still checks the iterations")
    half = inf_row.replace("inf", "12.5", 1)  # t_min measured, the rest not: not a calibration failure
    rc, out, err = run("--check", "--uncalibrated-ok", write("half.txt", "\n".join(pt[:j] + [half] + pt[j + 1:]) + "\n"))
    expect(rc == 1, "--uncalibrated-ok rejects a row with some times inf and others measured")
    w = lines[i].split()
    zero = lines[:i] + [" ".join(w[:3] + ["0.00", "0.000000"])] + lines[i + 1:]
    rc, out, err = run("--check", write("zero.txt", "\n".join(zero) + "\n"))
    expect(rc == 1 and "both 0" in err, f"a row with a BW and a message rate of 0 fails ({err.strip()})")
    # The BW row of a perftest whose clock calibration failed: every figure 0. Rejected by
    # default; --uncalibrated-ok accepts it (size and iterations still checked) but not a row
    # with a peak and no average or rate (that is not a calibration failure).
    allzero = write("allzero.txt", "\n".join(lines[:i] + [" ".join(w[:2] + ["0.00", "0.00", "0.000000"])] + lines[i + 1:]) + "\n")
    rc, out, err = run("--check", allzero)
    expect(rc == 1 and "both 0" in err, f"an all-zero BW row fails by default ({err.strip()})")
    rc, out, err = run("--check", "--uncalibrated-ok", allzero)
    expect(rc == 0 and "clock calibration failed" in out, f"--uncalibrated-ok accepts an all-zero BW row ({err.strip()})")
    rc, out, err = run("--check", "--uncalibrated-ok", "--iters", "5", allzero)
    expect(rc == 1 and "expected 5" in err, "--uncalibrated-ok still checks a BW row's iterations")
    rc, out, err = run("--check", "--uncalibrated-ok", write("zero.txt", "\n".join(zero) + "\n"))
    expect(rc == 1 and "both 0" in err, f"--uncalibrated-ok rejects a BW row with a peak but no average or rate ({err.strip()})")
    tiny = lines[:i] + [" ".join(w[:3] + ["0.00", w[4]])] + lines[i + 1:]
    rc, out, err = run("--check", write("tiny.txt", "\n".join(tiny) + "\n"))
    expect(rc == 0, "0.00 MB/sec with a message rate is accepted (small messages on a slow link)")
    rc, out, err = run("--check", write("none.txt", "nd-perf: connection A to 1.2.3.4 port 18515: refused\n"))
    expect(rc == 1 and "no result table" in err, "an output without a table fails")
    rc, out, err = run("--check", write("header.txt", "\n".join(lines[: i]) + "\n" + "-" * 87 + "\n"))
    expect(rc == 1 and "without rows" in err, "a header without rows fails")
    twice = open(BW).read() + open(BW).read()
    rc, out, err = run("--check", write("twice.txt", twice))
    expect(rc == 1 and "not rising" in err, "two runs in one file fail (sizes not rising)")
    rc, out, err = run("--check", "--rows", "23", write("empty.txt", ""))
    expect(rc == 1, "an empty file fails")

    # Plots: one PNG per kind present, one line per run (two labelled runs here).
    prefix = os.path.join(tmp, "plots", "x")
    os.makedirs(os.path.dirname(prefix))
    rc, out, err = run("-o", prefix, "--title", "test", "ring pair=" + BW, "again=" + BW, "lat=" + LAT)
    expect(rc == 0, f"plotting exits 0 ({err.strip()[-300:]})")
    for kind in ("bw", "lat"):
        p = f"{prefix}-{kind}.png"
        expect(os.path.exists(p) and png_size(p) == (700, 420) and os.path.getsize(p) > 10000,
               f"{kind}: a 700x420 PNG is written ({os.path.getsize(p) if os.path.exists(p) else 'missing'} bytes)")
        expect(p in out.split(), f"{kind}: its path is printed")
    prefix2 = os.path.join(tmp, "plots", "bwonly")
    rc, out, err = run("-o", prefix2, PT_BW)
    expect(rc == 0 and os.path.exists(prefix2 + "-bw.png") and not os.path.exists(prefix2 + "-lat.png"),
           "only the kinds present are drawn (perftest's ib_write_bw table: bw only)")
    gb = open(PT_BW).read().replace("[MB/sec]", "[Gb/sec]")
    rc, out, err = run("-o", os.path.join(tmp, "mixed"), PT_BW, write("gb.txt", gb))
    expect(rc == 1 and "different units" in err, "runs in MB/s and Gb/s are refused")
    rc, out, err = run("-o", os.path.join(tmp, "none"), os.path.join(tmp, "none.txt"))
    expect(rc == 1 and not os.path.exists(os.path.join(tmp, "none-bw.png")), "no table: nothing drawn, exit 1")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
