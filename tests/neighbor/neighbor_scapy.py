#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Independent reference check of the neighbour layer with scapy.

  gen   DIR  writes DIR/inputs.pcap (ARP and NDP frames built by scapy) and
             DIR/manifest.txt, one line per input: "<idx> reply|none|resolves <ip>"
  check DIR  reads DIR/replies.txt ("<idx> <hex>" for each frame our code sent
             in answer to input idx) and DIR/requests.txt ("<kind> <hex>" for
             each request our code sent when asked to resolve a peer), parses
             them with scapy, and checks every field and checksum against what
             RFC 826 / RFC 4861 say a host must send. Exit status 0 if all good.

Driven by tests/neighbor/scapy_test.cc, which feeds the inputs to roce::neighbor::NeighborTable.
"""
import sys

from scapy.all import (ARP, Dot1Q, Ether, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,
                       ICMPv6NDOptSrcLLAddr, ICMPv6NDOptUnknown, IPv6, Padding, Raw, rdpcap,
                       wrpcap)
from scapy.layers.inet6 import in6_getnsma, in6_getnsmac, inet_pton, inet_ntop
import socket

OUR_MAC = "02:00:00:00:00:01"
PEER_MAC = "02:00:00:00:00:02"
OTHER_MAC = "02:00:00:00:00:03"
OUR_V4 = ["10.0.0.1", "10.0.0.9"]
OUR_V6 = ["fe80::1", "2001:db8::1"]
PEER_V4 = "10.0.0.2"
PEER_V6 = ["fe80::2", "2001:db8::2"]
VLAN = 100
BCAST = "ff:ff:ff:ff:ff:ff"


def snm(ip):
    return inet_ntop(socket.AF_INET6, in6_getnsma(inet_pton(socket.AF_INET6, ip)))


def snm_mac(ip):
    return in6_getnsmac(in6_getnsma(inet_pton(socket.AF_INET6, ip)))


def cases():
    """(frame, expectation) pairs; the expectation is also what check() uses."""
    c = []
    arp = lambda **kw: Ether(src=PEER_MAC, dst=BCAST) / ARP(hwsrc=PEER_MAC, **kw)
    c.append((arp(op=1, psrc=PEER_V4, pdst=OUR_V4[0]), "reply"))
    c.append((arp(op=1, psrc="10.0.0.5", pdst=OUR_V4[1]), "reply"))
    c.append((arp(op=1, psrc=PEER_V4, pdst="10.0.0.77"), "none"))          # not ours
    c.append((arp(op=1, psrc="0.0.0.0", pdst=OUR_V4[0]), "reply"))         # RFC 5227 probe
    c.append((arp(op=1, psrc=PEER_V4, pdst=PEER_V4), "none"))              # gratuitous
    c.append((arp(op=2, psrc=PEER_V4, pdst=PEER_V4, hwdst=BCAST), "none"))  # gratuitous reply
    # NS to the solicited-node group, with the source link-layer option.
    ns = lambda src, dst, tgt, mac=PEER_MAC, edst=None, hlim=255, opts=True: (
        Ether(src=mac, dst=edst or (snm_mac(tgt) if dst == snm(tgt) else OUR_MAC)) /
        IPv6(src=src, dst=dst, hlim=hlim) / ICMPv6ND_NS(tgt=tgt) /
        (ICMPv6NDOptSrcLLAddr(lladdr=mac) if opts else Raw(b"")))
    c.append((ns(PEER_V6[0], snm(OUR_V6[0]), OUR_V6[0]), "reply"))
    c.append((ns(PEER_V6[1], OUR_V6[1], OUR_V6[1], opts=False), "reply"))   # unicast NUD, no SLLA
    c.append((ns("::", snm(OUR_V6[1]), OUR_V6[1], opts=False), "reply"))    # DAD: to all-nodes
    c.append((ns(PEER_V6[0], snm("fe80::77"), "fe80::77"), "none"))         # not ours
    c.append((ns(PEER_V6[0], snm(OUR_V6[0]), OUR_V6[0], hlim=64), "none"))  # off-link: drop
    bad = ns(PEER_V6[0], snm(OUR_V6[0]), OUR_V6[0])
    bad[ICMPv6ND_NS].cksum = 0x1234
    c.append((bad, "none"))                                                 # bad checksum: drop
    # NS with an unknown option (a nonce, RFC 3971 type 14) before the SLLA.
    c.append((Ether(src=PEER_MAC, dst=snm_mac(OUR_V6[0])) /
              IPv6(src=PEER_V6[0], dst=snm(OUR_V6[0]), hlim=255) / ICMPv6ND_NS(tgt=OUR_V6[0]) /
              ICMPv6NDOptUnknown(type=14, len=1, data=b"\x01\x02\x03\x04\x05\x06") /
              ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC), "reply"))
    # Unsolicited NA for an address we know nothing of: discarded.
    c.append((Ether(src=OTHER_MAC, dst="33:33:00:00:00:01") /
              IPv6(src="fe80::3", dst="ff02::1", hlim=255) /
              ICMPv6ND_NA(tgt="fe80::3", R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr=OTHER_MAC),
              "none"))
    # 802.1Q, VLAN 100 (fed to a table configured with that VLAN).
    c.append((Ether(src=PEER_MAC, dst=BCAST) / Dot1Q(vlan=VLAN, prio=3) /
              ARP(op=1, hwsrc=PEER_MAC, psrc=PEER_V4, pdst=OUR_V4[0]), "reply"))
    c.append((Ether(src=PEER_MAC, dst=snm_mac(OUR_V6[1])) / Dot1Q(vlan=VLAN) /
              IPv6(src=PEER_V6[1], dst=snm(OUR_V6[1]), hlim=255) / ICMPv6ND_NS(tgt=OUR_V6[1]) /
              ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC), "reply"))
    # Answers to the requests our code sends when resolving the peers (the
    # test looks them up first): an ARP reply and solicited NAs.
    c.append((Ether(src=PEER_MAC, dst=OUR_MAC) /
              ARP(op=2, hwsrc=PEER_MAC, psrc="10.0.0.3", hwdst=OUR_MAC, pdst=OUR_V4[0]),
              "resolves 10.0.0.3"))
    c.append((Ether(src=PEER_MAC, dst=OUR_MAC) /
              IPv6(src="2001:db8::3", dst=OUR_V6[1], hlim=255) /
              ICMPv6ND_NA(tgt="2001:db8::3", R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC),
              "resolves 2001:db8::3"))
    return c


def gen(d):
    cs = cases()
    frames = [f for f, _ in cs]
    wrpcap(d + "/inputs.pcap", frames)
    with open(d + "/manifest.txt", "w") as m:
        for i, (_, e) in enumerate(cs):
            m.write("%d %s\n" % (i, e))


errors = []


def expect(what, got, want):
    if got != want:
        errors.append("%s: got %r, want %r" % (what, got, want))


def icmpv6_checksum_ok(pkt, layer):
    got = pkt[layer].cksum
    again = pkt.__class__(bytes(pkt))
    del again[layer].cksum
    want = again.__class__(bytes(again))[layer].cksum
    return got == want


def check_vlan(name, inp, out):
    if Dot1Q in inp:
        if Dot1Q not in out:
            errors.append(name + ": reply to a tagged frame is untagged")
        else:
            expect(name + " vlan", out[Dot1Q].vlan, VLAN)
    elif Dot1Q in out:
        errors.append(name + ": reply to an untagged frame is tagged")


def check_reply(i, inp, out):
    name = "reply %d" % i
    expect(name + " eth src", out[Ether].src, OUR_MAC)
    check_vlan(name, inp, out)
    if ARP in inp:
        a, r = inp[ARP], out[ARP] if ARP in out else None
        if r is None:
            errors.append(name + ": not ARP")
            return
        expect(name + " op", r.op, 2)
        expect(name + " hwsrc", r.hwsrc, OUR_MAC)
        expect(name + " psrc", r.psrc, a.pdst)
        expect(name + " hwdst", r.hwdst, a.hwsrc)
        expect(name + " pdst", r.pdst, a.psrc)
        expect(name + " eth dst", out[Ether].dst, a.hwsrc)
        expect(name + " hw/proto len", (r.hwtype, r.ptype, r.hwlen, r.plen), (1, 0x0800, 6, 4))
        # Padded to the 60-byte Ethernet minimum (64 with the FCS), tag included.
        expect(name + " frame length", len(out), 60)
        return
    ns, ip = inp[ICMPv6ND_NS], inp[IPv6]
    if ICMPv6ND_NA not in out:
        errors.append(name + ": not an NA: " + out.summary())
        return
    na, oip = out[ICMPv6ND_NA], out[IPv6]
    dad = ip.src == "::"
    expect(name + " ip src", oip.src, ns.tgt)
    expect(name + " ip dst", oip.dst, "ff02::1" if dad else ip.src)
    expect(name + " hop limit", oip.hlim, 255)
    expect(name + " R/S/O", (na.R, na.S, na.O), (0, 0 if dad else 1, 1))
    expect(name + " target", na.tgt, ns.tgt)
    expect(name + " code", na.code, 0)
    if ICMPv6NDOptDstLLAddr not in out:
        errors.append(name + ": no target link-layer option")
    else:
        expect(name + " TLLA", out[ICMPv6NDOptDstLLAddr].lladdr, OUR_MAC)
    if dad:
        expect(name + " eth dst", out[Ether].dst, "33:33:00:00:00:01")
    else:
        lla = inp[ICMPv6NDOptSrcLLAddr].lladdr if ICMPv6NDOptSrcLLAddr in inp else inp[Ether].src
        expect(name + " eth dst", out[Ether].dst, lla)
    expect(name + " payload length", oip.plen, 32)
    if not icmpv6_checksum_ok(out, ICMPv6ND_NA):
        errors.append(name + ": bad ICMPv6 checksum")


def check_request(kind, out):
    name = "request " + kind
    expect(name + " eth src", out[Ether].src, OUR_MAC)
    tagged = kind.endswith("-vlan")
    if tagged:
        expect(name + " vlan", out[Dot1Q].vlan if Dot1Q in out else None, VLAN)
    elif Dot1Q in out:
        errors.append(name + ": tagged")
    base = kind.replace("-vlan", "")
    if base == "arp" or base == "arp-probe":
        r = out[ARP]
        expect(name + " op", r.op, 1)
        expect(name + " hwsrc", r.hwsrc, OUR_MAC)
        expect(name + " psrc", r.psrc, OUR_V4[0])
        expect(name + " pdst", r.pdst, PEER_V4)
        expect(name + " hwdst", r.hwdst, "00:00:00:00:00:00")
        expect(name + " eth dst", out[Ether].dst, PEER_MAC if base == "arp-probe" else BCAST)
        return
    ns, ip = out[ICMPv6ND_NS], out[IPv6]
    tgt = PEER_V6[1]
    probe = base == "ns-probe"
    expect(name + " target", ns.tgt, tgt)
    expect(name + " ip src", ip.src, OUR_V6[1])  # the source sharing the longest prefix
    expect(name + " ip dst", ip.dst, tgt if probe else snm(tgt))
    expect(name + " eth dst", out[Ether].dst, PEER_MAC if probe else snm_mac(tgt))
    expect(name + " hop limit", ip.hlim, 255)
    expect(name + " code/reserved", (ns.code, ns.res), (0, 0))
    expect(name + " SLLA", out[ICMPv6NDOptSrcLLAddr].lladdr if ICMPv6NDOptSrcLLAddr in out
           else None, OUR_MAC)
    if not icmpv6_checksum_ok(out, ICMPv6ND_NS):
        errors.append(name + ": bad ICMPv6 checksum")


def check(d):
    inputs = rdpcap(d + "/inputs.pcap")
    manifest = {}
    for line in open(d + "/manifest.txt"):
        i, e = line.split(None, 1)
        manifest[int(i)] = e.strip()
    replies = {}
    for line in open(d + "/replies.txt"):
        i, h = line.split()
        replies.setdefault(int(i), []).append(Ether(bytes.fromhex(h)))
    for i, inp in enumerate(inputs):
        got = replies.get(i, [])
        if manifest[i] == "reply":
            if len(got) != 1:
                errors.append("input %d (%s): %d replies, want 1" % (i, inp.summary(), len(got)))
                continue
            check_reply(i, inp, got[0])
        elif got:
            errors.append("input %d (%s): unexpected reply %s" % (i, inp.summary(), got[0].summary()))
    n = 0
    for line in open(d + "/requests.txt"):
        kind, h = line.split()
        check_request(kind, Ether(bytes.fromhex(h)))
        n += 1
    for e in errors:
        print("FAIL", e)
    print("%d inputs, %d replies, %d requests checked, %d errors" %
          (len(inputs), sum(len(v) for v in replies.values()), n, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("gen", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
