#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Layers only look down (README, docs/design.md): stack/ includes nothing of nd2api/ or
tools/; libnd2's sources (nd2api/src, nd2api/include) include nothing of tools/; wire/, rc/,
mem/, cm/ and neighbor/ include no DPDK header and no clock (they run on the simulated link).

Each rule is first tried on a made-up include that breaks it (the scan must see it), then on
every C/C++ file of the tree.

    layers_test.py SOURCE_DIR
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
PURE = ("stack/wire/", "stack/rc/", "stack/mem/", "stack/cm/", "stack/neighbor/")
RULES = [
    # (files the rule covers, include that is forbidden, why)
    (lambda f: f.startswith("stack/"), lambda i: i.startswith(("nd2api/", "tools/")),
     "stack/ looks up into nd2api/ or tools/"),
    (lambda f: f.startswith("nd2api/"), lambda i: i.startswith("tools/"), "libnd2 depends on tools/"),
    (lambda f: f.startswith(PURE), lambda i: i.startswith("rte_") or i in ("chrono", "ctime", "time.h", "sys/time.h"),
     "a protocol core includes DPDK or a clock"),
]


def violations(path, text):
    out = []
    for covers, forbidden, why in RULES:
        if not covers(path):
            continue
        for inc in INCLUDE.findall(text):
            if forbidden(inc):
                out.append(f"{path}: #include {inc}: {why}")
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    planted = [("stack/engine/x.cc", '#include "tools/lib/samples.h"\n'),
               ("stack/port/x.h", '#include "nd2api/src/nd2.h"\n'),
               ("nd2api/src/x.cc", '#include "tools/lib/samples.h"\n'),
               ("stack/rc/x.cc", "#include <rte_mbuf.h>\n"),
               ("stack/wire/x.cc", "#include <chrono>\n")]
    for path, text in planted:
        if not violations(path, text):
            print(f"FAIL: the scan misses {text.strip()} in {path}")
            return 1
    if violations("stack/engine/x.cc", '#include "stack/rc/qp.h"\n#include <rte_mbuf.h>\n'):
        print("FAIL: the scan refuses a legal include")
        return 1
    found, n = [], 0
    for top in ("stack", "nd2api"):
        for d, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                if f.endswith((".cc", ".h", ".c")):
                    p = os.path.join(d, f)
                    rel = os.path.relpath(p, src)
                    with open(p, errors="replace") as fh:
                        found += violations(rel, fh.read())
                    n += 1
    for v in found:
        print(f"FAIL {v}")
    print(f"{n} files of stack/ and nd2api/ scanned, {len(found)} includes against the layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
