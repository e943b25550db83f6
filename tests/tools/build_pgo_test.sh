#!/bin/bash
# SPDX-License-Identifier: MIT
# tools/build-pgo --quick into a temporary directory: the training writes a profile for each of
# the data path's objects, the final build compiles with -fprofile-use and finds them (no
# missing-profile warning for the data path's), and its nd-perf runs a test over --pair.
# Usage: build_pgo_test.sh SOURCE_DIR
set -u
src=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
if ! "$src/tools/build-pgo" --quick "$d/b" >"$d/log" 2>&1; then
  echo "FAIL: tools/build-pgo --quick exited non-zero"
  tail -n 30 "$d/log"
  exit 1
fi
for f in stack/engine/libroce_engine.a.p/engine.cc stack/rc/libroce_rc.a.p/requester.cc \
         stack/rc/libroce_rc.a.p/responder.cc stack/rc/libroce_rc.a.p/completer.cc \
         stack/wire/libroce_wire.a.p/packet.cc stack/wire/libroce_wire.a.p/frame.cc \
         stack/wire/libroce_wire.a.p/icrc.cc stack/port/libroce_port.a.p/port.cc \
         nd2api/libnd2.so.0.1.0.p/src_qp.cc nd2api/libnd2.so.0.1.0.p/src_cq.cc; do
  if [ -s "$d/b/$f.gcda" ]; then echo "ok   profile $f.gcda"; else fail "no profile $f.gcda"; fi
done
if grep -q -- '-fprofile-use' "$d/b/compile_commands.json"; then
  echo "ok   the final build compiles with -fprofile-use"
else
  fail "no -fprofile-use in the final build's compile commands"
fi
# (Files the training never runs, e.g. stack/rc/tx.cc, the simulator's, have none: compiled as
# without a profile.)
missing=$(grep 'missing-profile' "$d/log" |
  grep -E '/(engine|requester|responder|completer|packet|frame|icrc|port|src_qp|src_cq)\.cc\.gcda' || true)
if [ -z "$missing" ]; then echo "ok   no missing profile for the data path"; else fail "missing profiles: $missing"; fi
out=$(timeout 120 "$d/b/tools/nd-perf" send_lat --pair -n 500 -s 8 2>&1)
if echo "$out" | "$src/tools/plot-bench" --check --rows 1 --size 8 --iters 500 - >/dev/null 2>&1; then
  echo "ok   the PGO build's nd-perf send_lat --pair"
else
  fail "the PGO build's nd-perf send_lat --pair: $(echo "$out" | tail -n 3)"
fi
echo "$fails failed"
[ $fails = 0 ]
