#!/bin/sh
# SPDX-License-Identifier: MIT
# build-ms-programs.sh OUTDIR
#
# Compiles and links Microsoft's own ND2 samples and unit tests, unmodified, from where they
# are (../shared/networkdirect/src beside the repository), against libnd2 the way any program
# is built on it: the compiler ($CXX, else c++), the programs' own sources and include
# directories, ndtestutil.cpp (which the Windows build links into every program), -DUNICODE
# -D_UNICODE, and `pkg-config --cflags --libs nd2` (the caller gives PKG_CONFIG_PATH: a build
# tree's <builddir>/meson-uninstalled, or an installed nd2.pc). Nothing of this project is
# named otherwise. One line per program; exits 1 if any does not build (77, skipped, when the
# sources are not there). The programs are only built, never run here; each gets an rpath to
# the libnd2 pkg-config names, so it runs from OUTDIR as it is.
#
# Optimisation flags: -O2 plus what keeps code that is valid for MSVC meaning what it means
# there. ndrpingpong.cpp waits for the peer's RDMA Write by spinning on a plain (not volatile)
# byte of its registered buffer, which the NIC writes:
#     while ((m_pBuf[szXfer - 1]) != clientVal);
# MSVC reloads the byte on every turn. g++ -O2 does not: with C++'s forward-progress rule
# (-ffinite-loops, on by default for C++11 and later) it deletes the side-effect-free loop
# outright, and without that rule it still moves the load out of the loop (loop-invariant
# motion in the tree optimizers, and partial redundancy elimination), leaving `cmp; jne` to
# itself: an endless spin. So:
#   -fno-finite-loops          a loop without side effects is not assumed to end;
#   -fno-tree-loop-im          no loop-invariant motion of the load (GIMPLE);
#   -fno-tree-pre              no partial redundancy elimination of it (which also hoists);
#   -fno-move-loop-invariants  nor the RTL loop-invariant pass;
#   -fno-gcse-lm               nor GCSE's load motion;
#   -fno-strict-aliasing       MSVC has no type-based alias analysis, and the samples pun
#                              types (a LONGLONG filled as a FILETIME).
# With these, each spin loop of DoPongs / DoPings compiles to `cmpb $val, (mem); jne` back to
# that compare, a reload per turn; without the first three the loop is deleted or spins on a
# register. This script checks it in ndrpingpong's disassembly (objdump, line info from -g;
# kept as OUTDIR/ndrpingpong.dis) and fails if a spin loop is gone or its back edge does not
# re-read memory.
#
# usage: PKG_CONFIG_PATH=... [CXX=g++] build-ms-programs.sh OUTDIR
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# Where Microsoft's sources are: $NETWORKDIRECT_SRC, else shared/ beside the repository (the
# developers' layout), else /work/shared (a clone made elsewhere on a developer's machine).
ms=
for d in ${NETWORKDIRECT_SRC:-} "$root/../shared/networkdirect/src" /work/shared/networkdirect/src; do
  if [ -d "$d/examples" ] && [ -d "$d/unittests" ]; then ms=$d; break; fi
done
cxx=${CXX:-c++}
if [ -z "$ms" ]; then
  echo "SKIP-ALLOWED: Microsoft's ND sources are not here (NETWORKDIRECT_SRC, shared/ beside the repository)"
  exit 77
fi
ms=$(cd "$ms" && pwd)
command -v pkg-config >/dev/null || { echo "FAIL: pkg-config is not installed"; exit 1; }
nd2=$(pkg-config --cflags --libs nd2) ||
  { echo "FAIL: pkg-config finds no nd2 (PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-})"; exit 1; }
rpath=
for f in $(pkg-config --libs-only-L nd2); do rpath="$rpath -Wl,-rpath,${f#-L}"; done
# A sanitized libnd2 (build-asan) needs its runtime in the program too.
san=
case "${ND2_SANITIZE:-none}" in none|"") ;; *) san="-fsanitize=$ND2_SANITIZE" ;; esac

opt="-O2 -g -fno-finite-loops -fno-tree-loop-im -fno-tree-pre -fno-move-loop-invariants"
opt="$opt -fno-gcse-lm -fno-strict-aliasing"
inc="-I$ms/examples -I$ms/examples/ndtestutil"
util=$ms/examples/ndtestutil/ndtestutil.cpp

mkdir -p "$out"
out=$(cd "$out" && pwd)
failed=0
# build NAME SOURCES...: one compiler run, as the task's command line is.
build() {
  name=$1
  shift
  # shellcheck disable=SC2086  # the flag lists are meant to be split
  if $cxx $opt $san -DUNICODE -D_UNICODE "$@" "$util" $inc $nd2 $rpath \
      -o "$out/$name.tmp" >"$out/$name.log" 2>&1; then
    mv -f "$out/$name.tmp" "$out/$name"
    warnings=$(grep -c 'warning:' "$out/$name.log" || true)
    echo "ok     $name ($warnings warnings of Microsoft's code: $out/$name.log)"
  else
    rm -f "$out/$name.tmp"
    echo "FAILED $name: $out/$name.log"
    sed -n '1,40p' "$out/$name.log"
    failed=$((failed + 1))
  fi
}

for p in ndadapterinfo ndcat ndping ndpingpong ndrping ndrpingpong ndmrlat; do
  build "$p" "$ms/examples/$p/$p.cpp"
done
for p in ndcq ndmval ndmw; do
  build "$p" "$ms/unittests/$p/$p.cpp"
done
build ndmemorytest "$ms"/unittests/ndmemorytest/*.cpp -I"$ms/unittests/ndmemorytest"

# The spin loops of ndrpingpong (DoPongs line 75, DoPings line 271): every backward branch of
# their code must jump to a span that reads memory.
src=$ms/examples/ndrpingpong/ndrpingpong.cpp
spin_lines=$(grep -n 'while ((m_pBuf\[szXfer - 1\]) != ' "$src" | cut -d: -f1)
if ! command -v objdump >/dev/null; then
  echo "FAILED spin-loop check: objdump (binutils) is not installed"
  failed=$((failed + 1))
elif [ -z "$spin_lines" ]; then
  echo "FAILED spin-loop check: no 'while ((m_pBuf[szXfer - 1]) != ...);' in $src"
  failed=$((failed + 1))
elif [ -x "$out/ndrpingpong" ]; then
  objdump -d -l --no-show-raw-insn "$out/ndrpingpong" >"$out/ndrpingpong.dis"
  for line in $spin_lines; do
    verdict=$(awk -v want="ndrpingpong.cpp:$line" '
      function hex(s,   i, c, v) {
        v = 0
        for (i = 1; i <= length(s); i++)
          v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
        return v
      }
      /^\/.*:[0-9]+( \(discriminator [0-9]+\))?$/ {
        sub(/ \(discriminator.*/, ""); n = split($0, parts, "/"); cur = parts[n]; next
      }
      /^ *[0-9a-f]+:\t/ {
        if (cur != want) next
        addr = $1; sub(/:$/, "", addr); a = hex(addr)
        k++; at[k] = a
        # a memory read: an operand in parentheses, not an address computation or a padding nop
        reads_mem[k] = ($0 ~ /\(/ && $2 !~ /^(nop|lea|xchg)/)
        if ($2 ~ /^j/ && $3 ~ /^[0-9a-f]+$/ && hex($3) <= a) {
          t = hex($3); loops++; reads = 0
          for (i = 1; i <= k; i++) if (at[i] >= t && at[i] <= a && reads_mem[i]) reads++
          if (reads == 0) bad++
        }
      }
      END { if (loops == 0) print "none"; else if (bad > 0) print "register"; else print "memory" }
    ' "$out/ndrpingpong.dis")
    case "$verdict" in
      memory) echo "ok     ndrpingpong.cpp:$line spin loop re-reads the buffer every turn" ;;
      none) echo "FAILED ndrpingpong.cpp:$line spin loop is gone (deleted by the optimizer)"
            failed=$((failed + 1)) ;;
      *) echo "FAILED ndrpingpong.cpp:$line spin loop does not re-read memory (load hoisted)"
         failed=$((failed + 1)) ;;
    esac
  done
fi

if [ "$failed" -ne 0 ]; then
  echo "$failed of Microsoft's programs or checks failed"
  exit 1
fi
echo "all 11 of Microsoft's ND programs built in $out"
