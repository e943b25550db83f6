#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A kernel rdma_cm peer (pyverbs, in an rxe-peer guest) for the cases rping
cannot play: a listener that rejects every connection request with private
data, so our client must report REJ reason 28 (consumer defined) and the
exact bytes.

    rdmacm_peer.py reject --addr 198.18.0.2 [--port 7174] [--count 1] [--private TEXT]

Exits 0 after rejecting --count requests. Prints one line per request.
"""
import argparse
import sys

from pyverbs.cmid import CMID, AddrInfo
import pyverbs.cm_enums as ce


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["reject"])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", default="7174")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--private", default="no thanks: rejected by rdmacm_peer.py")
    a = ap.parse_args()
    info = AddrInfo(src=a.addr, src_service=a.port, port_space=ce.RDMA_PS_TCP, flags=ce.RAI_PASSIVE)
    listener = CMID(creator=info)
    listener.listen(backlog=4)
    print(f"rdmacm_peer: listening on {a.addr}:{a.port}", flush=True)
    data = a.private.encode()
    for i in range(a.count):
        req = listener.get_request()
        try:  # the keyword differs between pyverbs versions
            req.reject(private_data=data)
        except TypeError:
            req.reject(data, len(data))
        print(f"rdmacm_peer: rejected request {i + 1} with {len(data)} bytes of private data", flush=True)
        req.close()
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
