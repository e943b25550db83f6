#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The rxe side of the RDMA Write/Read interop cases: a pyverbs RC peer.

Runs in an rxe-peer guest (Debian's python3-pyverbs on kernel Soft-RoCE) as a
TCP server; `build/tools/rc-rdma` (our stack) connects and drives the steps.
The protocol is ours, one text line per message (see tools/rc_rdma.cc):

  client: QP <qpn> <psn> <gid32hex> <vaddr> <rkey> <len>
  server: QP <qpn> <psn> <gid32hex> <vaddr> <rkey> <len>   (after its RTR/RTS)
  client: CHECK <seed>        -> server checks its MR holds Pattern(seed): OK | BAD <why>
  client: WRITE_READ <seed>   -> server RDMA-Writes Pattern(seed) into the client's MR,
                                 RDMA-Reads it back and compares: OK | BAD <why>
  client: BAD_WRITE <seed>    -> server RDMA-Writes with a wrong rkey, expects
                                 IBV_WC_REM_ACCESS_ERR: OK | BAD <why>
  client: BYE                 -> server exits 0

Exit status 0 only if every step said OK.
"""
import argparse
import socket
import sys

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

MTU_ENUM = {256: e.IBV_MTU_256, 512: e.IBV_MTU_512, 1024: e.IBV_MTU_1024,
            2048: e.IBV_MTU_2048, 4096: e.IBV_MTU_4096}


def pattern(seed, n):
    """Byte i = (seed + 7*i + (i >> 8)) mod 256; rc-rdma computes the same."""
    base = bytes((seed + 7 * j) & 0xFF for j in range(256))
    out = bytearray()
    for hi in range((n + 255) // 256):  # block hi: base shifted by 7*256*hi + hi = hi (mod 256)
        out += base.translate(bytes((x + hi) & 0xFF for x in range(256)))
    return bytes(out[:n])


def gid_hex(gid):
    return str(gid).replace(":", "")


def hex_to_gid(h):
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


class Peer:
    def __init__(self, dev, gid_index, size, mtu):
        self.ctx = Context(name=dev)
        self.pd = PD(self.ctx)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        self.mr = MR(self.pd, size, access)        # the target of the client's Write/Read
        self.src = MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE)
        self.back = MR(self.pd, size, e.IBV_ACCESS_LOCAL_WRITE)
        self.size = size
        self.mtu = mtu
        self.gid_index = gid_index
        self.cq = CQ(self.ctx, 64)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.gid = self.ctx.query_gid(1, gid_index)
        self.psn = 0x1234 + (self.qp.qp_num * 77) % 0xFFFF

    def connect(self, qpn, psn, gid):
        a = QPAttr()
        a.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
                             e.IBV_ACCESS_REMOTE_READ)
        a.pkey_index = 0
        a.port_num = 1
        self.qp.to_init(a)
        gr = GlobalRoute(dgid=GID(hex_to_gid(gid)), sgid_index=self.gid_index)
        gr.hop_limit = 64
        a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
        a.path_mtu = MTU_ENUM[self.mtu]
        a.dest_qp_num = qpn
        a.rq_psn = psn
        a.max_dest_rd_atomic = 4
        a.min_rnr_timer = 12
        self.qp.to_rtr(a)
        a.sq_psn = self.psn
        a.timeout = 14
        a.retry_cnt = 7
        a.rnr_retry = 7
        a.max_rd_atomic = 4
        self.qp.to_rts(a)

    def rdma(self, opcode, mr, remote_addr, rkey, wr_id):
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1,
                    sg=[SGE(mr.buf, self.size, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, remote_addr)
        self.qp.post_send(wr)
        while True:
            n, wcs = self.cq.poll()
            if n:
                return wcs[0].status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", default="rxe0")
    ap.add_argument("--gid-index", type=int, default=1)
    ap.add_argument("--port", type=int, default=18516)
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--mtu", type=int, default=1024)
    args = ap.parse_args()

    peer = Peer(args.dev, args.gid_index, args.size, args.mtu)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", args.port))
    ls.listen(1)
    print(f"rdma-peer: listening on {args.port}, qpn 0x{peer.qp.qp_num:06x}", flush=True)
    conn, _ = ls.accept()
    ls.close()
    f = conn.makefile("rw", newline="\n")

    def reply(s):
        print(f"rdma-peer: {s}", flush=True)
        f.write(s + "\n")
        f.flush()

    fields = f.readline().split()
    if len(fields) != 7 or fields[0] != "QP":
        reply("BAD expected QP line")
        return 1
    qpn, psn = int(fields[1], 16), int(fields[2], 16)
    rgid, raddr, rkey, rlen = fields[3], int(fields[4], 16), int(fields[5], 16), int(fields[6])
    if rlen < args.size:
        reply(f"BAD peer region {rlen} < {args.size}")
        return 1
    peer.connect(qpn, psn, rgid)
    f.write(f"QP {peer.qp.qp_num:06x} {peer.psn:06x} {gid_hex(peer.gid)} "
            f"{peer.mr.buf:016x} {peer.mr.rkey:08x} {args.size}\n")
    f.flush()
    failures = 0
    while True:
        line = f.readline()
        if not line:
            reply("BAD connection closed before BYE")
            return 1
        cmd = line.split()
        if cmd[0] == "BYE":
            break
        seed = int(cmd[1]) if len(cmd) > 1 else 0
        want = pattern(seed, args.size)
        if cmd[0] == "CHECK":
            got = peer.mr.read(args.size, 0)
            if got == want:
                reply("OK")
            else:
                first = next(i for i in range(args.size) if got[i] != want[i])
                reply(f"BAD MR differs from pattern {seed} first at byte {first}")
                failures += 1
        elif cmd[0] == "WRITE_READ":
            peer.src.write(want, args.size, 0)
            peer.back.write(bytes(args.size), args.size, 0)
            st = peer.rdma(e.IBV_WR_RDMA_WRITE, peer.src, raddr, rkey, 1)
            if st != e.IBV_WC_SUCCESS:
                reply(f"BAD RDMA Write status {st}")
                failures += 1
                continue
            st = peer.rdma(e.IBV_WR_RDMA_READ, peer.back, raddr, rkey, 2)
            if st != e.IBV_WC_SUCCESS:
                reply(f"BAD RDMA Read status {st}")
                failures += 1
            elif peer.back.read(args.size, 0) != want:
                reply("BAD RDMA Read returned other bytes")
                failures += 1
            else:
                reply("OK")
        elif cmd[0] == "BAD_WRITE":
            peer.src.write(pattern(seed, args.size), args.size, 0)
            st = peer.rdma(e.IBV_WR_RDMA_WRITE, peer.src, raddr, rkey ^ 0x80, 3)
            if st == e.IBV_WC_REM_ACCESS_ERR:
                reply("OK")
            else:
                reply(f"BAD RDMA Write with a wrong rkey: status {st}, want "
                      f"{e.IBV_WC_REM_ACCESS_ERR} (IBV_WC_REM_ACCESS_ERR)")
                failures += 1
        else:
            reply(f"BAD unknown command {cmd[0]}")
            failures += 1
    conn.close()
    print(f"rdma-peer: done, {failures} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
