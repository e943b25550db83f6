#!/bin/bash
# SPDX-License-Identifier: MIT
# The captures of our own traffic in pcaps/ours still decode and verify:
# every RoCEv2 ICRC recomputes (roce-pcap), tshark sees no malformed frame,
# and each has the RoCEv2 frames its README line promises.
set -u
tool=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
n=0
for f in "$src"/pcaps/ours/*.pcap; do
  n=$((n + 1))
  out=$("$tool" check "$f") || fail "$f: $(echo "$out" | tail -1)"
  bad=$(tshark -n -r "$f" --disable-heuristic rpcrdma_infiniband -Y '_ws.malformed' 2>/dev/null | wc -l)
  [ "$bad" = 0 ] || fail "$f: $bad malformed frames"
  echo "$(basename "$f"): $(echo "$out" | tail -1)"
done
[ $n -ge 6 ] || fail "expected 6 captures, found $n"
v6=$src/pcaps/ours/ours-client-rxe-server-ipv6.pcap
st=$(tshark -n -r "$v6" -o udp.check_checksum:TRUE -Y 'ipv6.src == fe80::c612:10 && udp.dstport == 4791' \
       -T fields -e udp.checksum.status 2>/dev/null | sort | uniq -c | tr -s ' ')
[ "$st" = " 60 1" ] || fail "$v6: our 60 IPv6 RoCEv2 frames should all have a good UDP checksum, got '$st'"
for f in two-stacks-lossy ours-rxe-lossy; do
  naks=$(tshark -n -r "$src/pcaps/ours/$f.pcap" -Y 'infiniband.aeth.syndrome == 0x60' 2>/dev/null | wc -l)
  [ "$naks" -ge 1 ] || fail "$f: no PSN sequence error NAK"
done
grep -q "RC_SEND_ONLY_WITH_INVALIDATE" <("$tool" check "$src/pcaps/ours/two-stacks.pcap") || fail "no Send with Invalidate"
grep -q "RC_RDMA_READ_RESPONSE_LAST" <("$tool" check "$src/pcaps/ours/two-stacks.pcap") || fail "no Read response"
echo "pcaps/ours: ok"
