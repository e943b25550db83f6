#!/bin/bash
# SPDX-License-Identifier: MIT
# nd-perf's six tests with --pair (server and client in one process, two ND2 adapters on an
# in-process net_ring pair; no root, no peer): each exits 0 and prints one well-formed result row
# of the size and iterations asked (tools/plot-bench --check); -a prints the 23 sizes 2 .. 8 MiB;
# --set reaches both adapters; -D runs for its duration; a bad command line exits 2 with a reason.
# Usage: nd_perf_pair_test.sh ND_PERF SOURCE_DIR
set -u
nd=$1 src=$2
check="$src/tools/plot-bench --check"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cd "$(mktemp -d)" || exit 1
trap 'rm -rf "$PWD"' EXIT

run() {  # NAME EXPECTED-ROWS SIZE ITERS -- nd-perf args
  local name=$1 rows=$2 size=$3 iters=$4
  shift 5
  local out rc
  out=$(timeout 120 "$nd" "$@" 2>&1)
  rc=$?
  if [ $rc != 0 ]; then
    fail "$name: exit $rc"
    echo "$out" | tail -5
    return
  fi
  local args=(--rows "$rows")
  [ -n "$size" ] && args+=(--size "$size")
  [ -n "$iters" ] && args+=(--iters "$iters")
  if ! echo "$out" | $check "${args[@]}" - >check.txt 2>&1; then
    fail "$name: the table"
    cat check.txt
    echo "$out" | tail -8
    return
  fi
  echo "ok   $name: $(grep -c . check.txt) row(s)"
}

run write_bw 1 65536 300 -- write_bw --pair -n 300 -s 65536
run read_bw 1 65536 300 -- read_bw --pair -n 300 -s 65536 -o 4
run send_bw 1 4096 300 -- send_bw --pair -n 300 -s 4096
run write_lat 1 2 300 -- write_lat --pair -n 300
run send_lat 1 64 300 -- send_lat --pair -n 300 -s 64
run read_lat 1 4096 300 -- read_lat --pair -n 300 -s 4096
run "write_bw -Q 7 -t 16" 1 1000 333 -- write_bw --pair -n 333 -s 1000 -Q 7 -t 16
run "send_bw -a" 23 "" 20 -- send_bw --pair -a -n 20
run "read_lat -a" 23 "" 20 -- read_lat --pair -a -n 20
run "write_bw --report_gbits -I 64" 1 64 1000 -- write_bw --pair -n 1000 -s 64 -I 64 --report_gbits
# --set with --pair: the key on both adapters (here: each with an engine thread of its own).
run "send_lat --set progress=thread" 1 64 300 -- send_lat --pair -n 300 -s 64 --set progress=thread
run "write_bw --set progress=thread" 1 8 3000 -- write_bw --pair -n 3000 -s 8 --set progress=thread

# -D: the run lasts about its duration and counts what completed.
start=$(date +%s%N)
run "write_bw -D 1" 1 8192 "" -- write_bw --pair -D 1 -s 8192
ms=$((($(date +%s%N) - start) / 1000000))
[ $ms -ge 1000 ] && [ $ms -lt 20000 ] && echo "ok   -D 1 took $ms ms" || fail "-D 1 took $ms ms"
run "send_bw -D 1" 1 8192 "" -- send_bw --pair -D 1 -s 8192

# Bad command lines: exit 2 and a reason, nothing run.
bad() {  # WHAT PATTERN -- args
  local what=$1 pat=$2
  shift 3
  local out rc
  out=$(timeout 20 "$nd" "$@" 2>&1)
  rc=$?
  if [ $rc = 2 ] && echo "$out" | grep -q -- "$pat"; then echo "ok   $what"; else fail "$what: exit $rc: $out"; fi
}
bad "no test" "Usage" --
bad "unknown test" "unknown test" -- ping_bw
bad "bidirectional" "not supported" -- write_bw -b --pair
bad "-D with a latency test" "bandwidth tests" -- send_lat -D 2 --pair
bad "-m not a power of two" "must be" -- write_bw -m 1000 --pair
bad "-n below perftest's 5" "bad value" -- write_bw -n 1 --pair
bad "--pair with a server" "takes no server" -- write_bw --pair 10.0.0.1
bad "--pair with --ip" "no port options but --set" -- write_bw --pair --ip 10.0.0.9/24
bad "port options without --ip" "need --ip" -- write_bw --profile net_tap.ini
bad "a bad server address" "bad address" -- write_bw --ip 10.9.0.1/24 --profile net_ring.ini not-an-ip
bad "-c UD" "RC" -- send_bw -c UD --pair

echo "$fails failed"
[ $fails = 0 ]
