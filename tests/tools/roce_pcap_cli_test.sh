#!/bin/bash
# SPDX-License-Identifier: MIT
# roce-pcap check: exit 0 and a full count on good captures; a bad line, the
# frame number and exit 1 when one ICRC is corrupted; exit 1 on a capture with
# no RoCEv2. Independent count: tshark's own list of UDP/4791 frames.
set -u
tool=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for f in "$src"/pcaps/reference/*/*.pcap; do
  out=$("$tool" check "$f") || fail "check $f exited $?"
  want=$(tshark -n -r "$f" -Y 'udp.dstport == 4791' 2>/dev/null | wc -l)
  echo "$out" | tail -1 | grep -qx "$want packets, $want ok, 0 bad" || fail "$f: $(echo "$out" | tail -1), tshark sees $want"
  [ "$(echo "$out" | grep -c 'icrc=ok')" = "$want" ] || fail "$f: per-line count"
done

# The hardware capture uses source ports 69/72 (Wireshark shows TFTP): still RoCE.
"$tool" check "$src/pcaps/reference/hardware/hisilicon-roce.pcap" | grep -q "RC_SEND_FIRST .*qp=0x0000" || fail "hardware lines"

# Corrupt the last byte (the ICRC) of frame 5 of rping.pcap with python's stdlib.
python3 - "$src/pcaps/reference/rxe/rping.pcap" "$tmp/bad.pcap" <<'PY'
import sys, struct
d = bytearray(open(sys.argv[1], 'rb').read())
off, n = 24, 0
while off + 16 <= len(d):
    caplen = struct.unpack('<I', d[off+8:off+12])[0]
    n += 1
    if n == 5:
        d[off + 16 + caplen - 1] ^= 0x01
    off += 16 + caplen
open(sys.argv[2], 'wb').write(d)
PY
out=$("$tool" check "$tmp/bad.pcap"); rc=$?
[ $rc = 1 ] || fail "corrupted capture exited $rc"
echo "$out" | grep -Eq '^ +5 .*icrc=bad$' || fail "frame 5 not reported bad"
echo "$out" | tail -1 | grep -qx "65 packets, 64 ok, 1 bad" || fail "summary: $(echo "$out" | tail -1)"

# write -> check round trip; a capture with no RoCEv2 (only the TCP part) exits 1.
"$tool" write "$tmp/s.pcap" >/dev/null || fail write
"$tool" check "$tmp/s.pcap" | tail -1 | grep -qx "114 packets, 114 ok, 0 bad" || fail "write/check"
tshark -n -r "$src/pcaps/reference/hardware/hisilicon-roce.pcap" -Y tcp -w "$tmp/tcp.pcap" -F pcap 2>/dev/null
"$tool" check "$tmp/tcp.pcap" >/dev/null; [ $? = 1 ] || fail "no-RoCE capture should exit 1"
echo "roce-pcap CLI: ok"
