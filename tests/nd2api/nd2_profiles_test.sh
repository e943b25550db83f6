#!/bin/sh
# SPDX-License-Identifier: MIT
# Where libnd2 finds a profile named without a path (stack/host/host.h, DriversCfgDir), with
# no source tree: an ND2 configuration in a scratch folder says `profile = net_ring.ini`, and
# nd-adapterinfo must open the copy that
#   1. the build tree holds (build/drivers-cfg, beside the library's folder);
#   2. SOFT_RNIC_DRIVERS_CFG names (a copy with a MAC of its own, which the listing shows);
#      an empty folder there: a clear error naming the profile, exit non-zero;
#   3. an installed prefix holds: libnd2 copied to PREFIX/lib/<multiarch>/ (loaded first through
#      LD_LIBRARY_PATH), the profile to PREFIX/share/soft-rnic/drivers-cfg/ with another MAC.
#
# usage: nd2_profiles_test.sh BUILD_DIR ND_ADAPTERINFO
set -eu
build=$(cd "$1" && pwd)
prog=$2
tmp=$(mktemp -d /tmp/nd2_profiles.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '[adapter0]\nprofile = net_ring.ini\nip = 10.9.0.1/24\n' > "$tmp/nd2.ini"
mac_of() { sed -n 's/^[[:space:]]*mac: //p' "$1" | head -n 1; }
with_mac() {  # a copy of the shipped net_ring.ini with port.mac = $2, into folder $1
  mkdir -p "$1"
  sed "s/^\[port\]$/[port]\nmac = $2/" "$build/drivers-cfg/net_ring.ini" > "$1/net_ring.ini"
}

# 1. the build tree's copy
ND2_CONFIG="$tmp/nd2.ini" "$prog" > "$tmp/1.txt" 2>&1 || { cat "$tmp/1.txt"; fail "build tree: exit $?"; }
grep -q "address: 10.9.0.1" "$tmp/1.txt" || { cat "$tmp/1.txt"; fail "build tree: no adapter listed"; }
echo "build tree: net_ring.ini found in $build/drivers-cfg (mac $(mac_of "$tmp/1.txt"))"

# 2. SOFT_RNIC_DRIVERS_CFG
with_mac "$tmp/mine" 02:aa:bb:cc:dd:01
SOFT_RNIC_DRIVERS_CFG="$tmp/mine" ND2_CONFIG="$tmp/nd2.ini" "$prog" > "$tmp/2.txt" 2>&1 ||
  { cat "$tmp/2.txt"; fail "SOFT_RNIC_DRIVERS_CFG: exit non-zero"; }
[ "$(mac_of "$tmp/2.txt")" = 02:aa:bb:cc:dd:01 ] || { cat "$tmp/2.txt"; fail "SOFT_RNIC_DRIVERS_CFG's copy not used"; }
echo "SOFT_RNIC_DRIVERS_CFG: its copy is used"
mkdir -p "$tmp/empty"
if SOFT_RNIC_DRIVERS_CFG="$tmp/empty" ND2_CONFIG="$tmp/nd2.ini" "$prog" > "$tmp/2b.txt" 2>&1; then
  cat "$tmp/2b.txt"; fail "an empty SOFT_RNIC_DRIVERS_CFG: exit 0"
fi
grep -q "net_ring.ini" "$tmp/2b.txt" && grep -q "no such profile" "$tmp/2b.txt" ||
  { cat "$tmp/2b.txt"; fail "an empty SOFT_RNIC_DRIVERS_CFG: no clear error"; }
echo "an empty SOFT_RNIC_DRIVERS_CFG: $(grep -m1 'no such profile' "$tmp/2b.txt")"

# 3. an installed prefix
multi=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
lib="$tmp/prefix/lib/$multi"
mkdir -p "$lib"
for f in "$build"/nd2api/libnd2.so*; do [ -d "$f" ] || cp -P "$f" "$lib/"; done
with_mac "$tmp/prefix/share/soft-rnic/drivers-cfg" 02:aa:bb:cc:dd:02
LD_LIBRARY_PATH="$lib" ND2_CONFIG="$tmp/nd2.ini" "$prog" > "$tmp/3.txt" 2>&1 ||
  { cat "$tmp/3.txt"; fail "installed prefix: exit non-zero"; }
[ "$(mac_of "$tmp/3.txt")" = 02:aa:bb:cc:dd:02 ] || { cat "$tmp/3.txt"; fail "the prefix's share/soft-rnic/drivers-cfg not used"; }
echo "installed prefix: share/soft-rnic/drivers-cfg beside lib/$multi/libnd2.so is used"
echo PASS
