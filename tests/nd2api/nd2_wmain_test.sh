#!/bin/sh
# SPDX-License-Identifier: MIT
# tchar.h's _tmain under _UNICODE (wmain) really runs: nd2_wmain_program.cc is built from a
# scratch folder with the build tree's `pkg-config --cflags --libs nd2` only (its main comes
# from the nd2_wmain archive), run with arguments that are ASCII, UTF-8, empty, with a space,
# and not decodable, under a UTF-8 locale and under C; its output must be, byte for byte, what
# wmain should have received. Then nd2_own_main_program.cc (its own main) is linked with the
# Libs before and after its source: the archive must not take its place either way.
#
# usage: nd2_wmain_test.sh BUILD_DIR WMAIN_PROGRAM OWN_MAIN_PROGRAM
set -eu
build=$(cd "$1" && pwd)
cxx=${CXX:-c++}
san=""
case "${ND2_SANITIZE:-none}" in none|"") ;; *) san="-fsanitize=$ND2_SANITIZE" ;; esac
tmp=$(mktemp -d /tmp/nd2_wmain.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cp "$2" "$tmp/wmain_program.cc"
cp "$3" "$tmp/own_main.cc"
cd "$tmp"

export PKG_CONFIG_PATH="$build/meson-uninstalled"
flags=$(pkg-config --cflags --libs nd2) || fail "pkg-config finds no nd2 in $PKG_CONFIG_PATH"
libdirs=$(pkg-config --libs-only-L nd2 | sed 's/-L//g; s/ \+/:/g; s/:$//')
echo "pkg-config --cflags --libs nd2 = $flags"
# shellcheck disable=SC2086
$cxx -std=c++17 -Wall -Wextra -Werror $san -DUNICODE -D_UNICODE wmain_program.cc $flags \
  -o wmain_program || fail "compile wmain_program"
nm wmain_program | grep -q ' [TW] wmain$' || fail "wmain is not a C-linkage symbol"

# expect LOCALE EXPECTED_FILE ARGS...
run() {
  loc=$1 want=$2
  shift 2
  rc=0
  LC_ALL=$loc LD_LIBRARY_PATH="$libdirs" ./wmain_program "$@" >got.txt 2>err.txt || rc=$?
  [ "$rc" -eq $(( $# + 1 + 40 )) ] || { cat err.txt; fail "exit status $rc under $loc, not wmain's $(( $# + 1 + 40 ))"; }
  cmp -s got.txt "$want" || { echo "--- expected"; od -c "$want"; echo "--- got"; od -c got.txt; fail "wrong output under $loc"; }
  echo "ok: wmain under LC_ALL=$loc got $# arguments as expected"
}

# Under UTF-8, "é" is one wide character (U+00E9) and prints back as its two bytes; the byte
# 0xFF is not UTF-8, so that argument is widened byte by byte (U+00FF, printed as UTF-8 "ÿ").
printf 'argc=6\nargv[1] len=5 first=0068 text=[hello] again=[hello]\nargv[2] len=3 first=00E9 text=[\303\251t\303\251] again=[\303\251t\303\251]\nargv[3] len=0 first=0000 text=[] again=[]\nargv[4] len=3 first=0061 text=[a b] again=[a b]\nargv[5] len=2 first=00FF text=[\303\277z] again=[\303\277z]\nargv[argc]=NULL\nLC_NUMERIC=C 1.5\n' >want_utf8.txt
run C.UTF-8 want_utf8.txt hello "$(printf '\303\251t\303\251')" "" "a b" "$(printf '\377z')"
# Under C, each byte of "é" is not ASCII: widened byte by byte (U+00C3 U+00A9), which C cannot
# print back: '?' each.
printf 'argc=3\nargv[1] len=3 first=00C3 text=[??t] again=[??t]\nargv[2] len=3 first=002D text=[-s1] again=[-s1]\nargv[argc]=NULL\nLC_NUMERIC=C 1.5\n' >want_c.txt
run C want_c.txt "$(printf '\303\251t')" -s1

# A program with its own main: the archive's weak main never wins.
for order in after before; do
  if [ "$order" = after ]; then
    # shellcheck disable=SC2086
    $cxx -std=c++17 -Wall -Wextra -Werror $san own_main.cc $flags -o own_main || fail "compile own_main ($order)"
  else
    # shellcheck disable=SC2086
    $cxx -std=c++17 -Wall -Wextra -Werror $san $flags own_main.cc $(pkg-config --libs nd2) -o own_main ||
      fail "compile own_main ($order)"
  fi
  rc=0
  out=$(LD_LIBRARY_PATH="$libdirs" ./own_main x 2>&1) || rc=$?
  [ "$rc" -eq 3 ] && [ "$out" = "own main: 2 x -1" ] ||
    fail "own main with the Libs $order the source: exit $rc, output '$out'"
  echo "ok: a program's own main runs with pkg-config's Libs $order its source"
done
echo "nd2_wmain: wmain is called with the converted command line; own mains are untouched"
