#!/bin/sh
# SPDX-License-Identifier: MIT
# The pkg-config file of libnd2, both ways an ND2 program is built against it:
#   1. from the build tree:  PKG_CONFIG_PATH=BUILD/meson-uninstalled pkg-config --cflags --libs nd2
#   2. after `meson install --destdir TMP`: the installed nd2.pc, headers and library (found
#      through PKG_CONFIG_SYSROOT_DIR=TMP), the source tree out of the picture.
# Each time the program (PROGRAM: hello_nd2, nothing but <ndspi.h>/<ndsupport.h>) is compiled
# with -Wall -Wextra -Werror from a scratch folder, run with an ND2_CONFIG that names a profile
# copied beside it, and must print what it received and the libnd2 it ran on — the build
# tree's, then the installed one.
#
# usage: nd2_pkgconfig_test.sh BUILD_DIR SOURCE_DIR PROGRAM
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
prog=$3
cxx=${CXX:-c++}
# A sanitized libnd2 (build-asan) needs its runtime first in the program too.
san=""
case "${ND2_SANITIZE:-none}" in none|"") ;; *) san="-fsanitize=$ND2_SANITIZE" ;; esac
tmp=$(mktemp -d /tmp/nd2_pkgconfig.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

command -v pkg-config >/dev/null || fail "pkg-config is not installed"
cp "$prog" "$tmp/hello_nd2.cc"
cp "$src/drivers-cfg/net_ring.ini" "$tmp/ring.ini"
cat > "$tmp/nd2.ini" <<EOF
; one adapter on a net_ring port (the profile beside this file)
[adapter0]
profile = ring.ini
port.ring = nd2pkgcfg
ip = 10.0.0.1/24
ip6 = fd00::1/64
EOF
cd "$tmp"

# run NAME LIBDIRS EXPECTED_LIB_PREFIX
run() {
  out=$(ND2_CONFIG="$tmp/nd2.ini" LD_LIBRARY_PATH="$2" timeout 60 "./$1" 10.0.0.1 2>&1) ||
    fail "$1 exited $?: $out"
  echo "$out"
  echo "$out" | grep -qx "received: hello over ND2" || fail "$1 did not receive its message"
  lib=$(echo "$out" | sed -n 's/^libnd2: //p')
  case "$lib" in
    "$3"/*) ;;
    *) fail "$1 ran on $lib, not on a library under $3" ;;
  esac
}

# 1. The build tree.
flags=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags --libs nd2) ||
  fail "pkg-config found no nd2 in $build/meson-uninstalled"
echo "build tree: pkg-config --cflags --libs nd2 = $flags"
# shellcheck disable=SC2086
$cxx -std=c++17 -Wall -Wextra -Werror $san hello_nd2.cc $flags -o hello_uninstalled || fail "build-tree compile"
libdirs=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --libs-only-L nd2 | sed 's/-L//g; s/ \+/:/g; s/:$//')
run hello_uninstalled "$libdirs" "$build"

# 2. Installed (into a scratch DESTDIR).
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >install.log 2>&1 ||
  { cat install.log; fail "meson install"; }
pc=$(find "$tmp/root" -name nd2.pc | head -n 1)
[ -n "$pc" ] || fail "no nd2.pc installed"
hdr=$(find "$tmp/root" -name ndspi.h | head -n 1)
[ -n "$hdr" ] || fail "no ndspi.h installed"
echo "installed: $pc, $(dirname "$hdr")"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_LIBDIR=$(dirname "$pc") pkg-config --cflags --libs nd2) ||
  fail "pkg-config could not read the installed nd2.pc"
echo "installed: pkg-config --cflags --libs nd2 = $flags"
case "$flags" in
  *"$src"*|*"$build"*) fail "the installed flags point into the source or build tree: $flags" ;;
esac
# shellcheck disable=SC2086
$cxx -std=c++17 -Wall -Wextra -Werror $san hello_nd2.cc $flags -o hello_installed || fail "installed compile"
libdirs=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_LIBDIR=$(dirname "$pc") pkg-config --libs-only-L nd2 |
  sed 's/-L//g; s/ \+/:/g; s/:$//')
run hello_installed "$libdirs" "$tmp/root"
echo "nd2 pkg-config: build tree and installed both build and run an ND2 program"
