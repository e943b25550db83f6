#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel traffic beside RoCE on one address (af_xdp interop cases).

An adapter on net_af_xdp shares its interface and addresses with the kernel:
only RoCEv2 reaches it, everything else must still reach the kernel. This
script proves that while a RoCE tool runs:

  sink [--port P]            (in the guest) accept TCP streams; for each, read
                             to EOF and answer the SHA-256 of what came
  around --peer IP [--port P] [--bytes N] -- CMD...
                             (on the host) run CMD while a TCP stream of N
                             bytes goes to the guest's sink and ICMP echoes
                             go to IP every 0.2 s; exit non-zero if CMD
                             failed, the digest differs, or fewer than 90% of
                             the echoes (after the first answered one) came
                             back

Python 3 stdlib only (it is given to the guest inline, like rdma_peer.py).
"""
import argparse
import hashlib
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time


def sink(a):
    fam = socket.AF_INET6 if a.ipv6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::" if a.ipv6 else "0.0.0.0", a.port))
    s.listen(4)
    while True:
        c, _ = s.accept()
        h = hashlib.sha256()
        n = 0
        while True:
            b = c.recv(65536)
            if not b:
                break
            h.update(b)
            n += len(b)
        c.sendall(f"{n} {h.hexdigest()}\n".encode())
        c.close()


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


class Pinger(threading.Thread):
    def __init__(self, peer, scope):
        super().__init__(daemon=True)
        self.v6 = ":" in peer
        self.peer = (peer, 0, 0, scope) if self.v6 else (peer, 0)
        self.sent = self.got = 0
        self.first_ok = None
        self.stop = threading.Event()

    def run(self):
        if self.v6:
            s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        s.settimeout(0.2)
        ident = os.getpid() & 0xFFFF
        seq = 0
        while not self.stop.is_set():
            seq = (seq + 1) & 0xFFFF
            sent_at = time.time()
            t = 128 if self.v6 else 8
            body = struct.pack("!d", time.time()) + b"soft-rnic" * 4
            hdr = struct.pack("!BBHHH", t, 0, 0, ident, seq)
            pkt = hdr if self.v6 else struct.pack("!BBHHH", t, 0, checksum(hdr + body), ident, seq)
            s.sendto(pkt + body, self.peer)  # the kernel fills the ICMPv6 checksum
            self.sent += 1
            end = time.time() + 0.2
            while time.time() < end:
                try:
                    r, _ = s.recvfrom(2048)
                except socket.timeout:
                    break
                icmp = r if self.v6 else r[(r[0] & 0xF) * 4:]
                want = 129 if self.v6 else 0
                if len(icmp) >= 8 and icmp[0] == want and struct.unpack("!HH", icmp[4:8]) == (ident, seq):
                    self.got += 1
                    if self.first_ok is None:
                        self.first_ok = self.sent
                    break
            self.stop.wait(max(0.0, sent_at + 0.2 - time.time()))  # one echo every 0.2 s

    def ok(self):
        if self.first_ok is None:
            return False
        counted = self.sent - self.first_ok + 1
        return self.got >= 0.9 * counted


def stream(peer, port, nbytes, scope, result):
    try:
        rnd = random.Random(4791)
        h = hashlib.sha256()
        fam = socket.AF_INET6 if ":" in peer else socket.AF_INET
        addr = (peer, port, 0, scope) if fam == socket.AF_INET6 else (peer, port)
        deadline = time.time() + 30
        while True:  # the guest's sink may still be starting
            s = socket.socket(fam, socket.SOCK_STREAM)
            try:
                s.connect(addr)
                break
            except OSError:
                s.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        left = nbytes
        while left:
            b = rnd.randbytes(min(left, 65536))
            h.update(b)
            s.sendall(b)
            left -= len(b)
            time.sleep(0.002)  # spread over the RoCE run
        s.shutdown(socket.SHUT_WR)
        reply = b""
        while not reply.endswith(b"\n"):
            b = s.recv(256)
            if not b:
                break
            reply += b
        want = f"{nbytes} {h.hexdigest()}"
        result.append(reply.decode().strip() == want)
        if reply.decode().strip() != want:
            print(f"kernel_traffic: TCP digest mismatch: got {reply!r}, want {want}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 (reported as a failure)
        print(f"kernel_traffic: TCP stream failed: {e}", file=sys.stderr)
        result.append(False)


def around(a):
    scope = socket.if_nametoindex(a.dev) if a.dev else 0
    pinger = Pinger(a.peer, scope)
    pinger.start()
    tcp = []
    t = threading.Thread(target=stream, args=(a.peer, a.port, a.bytes, scope, tcp), daemon=True)
    t.start()
    rc = subprocess.call(a.cmd)
    t.join(60)
    time.sleep(0.5)
    pinger.stop.set()
    pinger.join(2)
    ok_tcp = bool(tcp) and tcp[0]
    print(f"kernel_traffic: command exit {rc}; TCP {a.bytes} bytes {'intact' if ok_tcp else 'FAILED'}; "
          f"ICMP {pinger.got}/{pinger.sent} echoes answered", file=sys.stderr)
    if rc != 0:
        return rc
    return 0 if ok_tcp and pinger.ok() else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("sink")
    s.add_argument("--port", type=int, default=5201)
    s.add_argument("--ipv6", action="store_true")
    r = sub.add_parser("around")
    r.add_argument("--peer", required=True)
    r.add_argument("--port", type=int, default=5201)
    r.add_argument("--bytes", type=int, default=8 << 20)
    r.add_argument("--dev", default="", help="interface for a link-local peer")
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.mode == "sink":
        sink(a)
        return 0
    if a.cmd and a.cmd[0] == "--":
        a.cmd = a.cmd[1:]
    if not a.cmd:
        ap.error("around needs -- CMD")
    return around(a)


if __name__ == "__main__":
    sys.exit(main())
