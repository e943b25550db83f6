#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The commit-message rule (issue 42) on every commit after the history it froze.

A commit's message is a subject of at most 72 characters in the project's `area: what` form
(area: lower-case words, slashes, dots, dashes; several areas joined by ", "), a blank line,
and a wrapped body with the why and the figures: body lines at most 76 characters, except
lines that are indented (commands, tables) or carry a URL. The history before BASE (the last
commit before the rule) stays as it is.

First the rule itself on made-up messages (good ones pass, each kind of bad one fails), then
every commit in BASE..HEAD of the checkout. Outside a git checkout (a release tarball) there
is no history to check: an allowed skip.

    commits_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

BASE = "16b14b6"  # engine: check address changes only on kernel-identity ports
SUBJECT = re.compile(r"^[a-z0-9][a-z0-9_./+-]*(, [a-z0-9][a-z0-9_./+-]*)*: \S.*$")


def problems(msg):
    lines = msg.rstrip("\n").split("\n")
    out = []
    subject = lines[0]
    if len(subject) > 72:
        out.append(f"subject is {len(subject)} characters (at most 72)")
    if not SUBJECT.match(subject):
        out.append("subject is not 'area: what'")
    if len(lines) < 3 or lines[1].strip() != "" or not any(l.strip() for l in lines[2:]):
        out.append("no body after a blank line")
    for i, l in enumerate(lines[2:], 3):
        if len(l) > 76 and not l.startswith((" ", "\t")) and "://" not in l:
            out.append(f"body line {i} is {len(l)} characters (wrap at 72-76)")
    return out


def self_test():
    good = [
        "engine: poll every RX queue of an af_xdp port\n\nThe PMD gives one socket a queue.\n",
        "port, engine: count drops per cause\n\nWhy.\n\n    a command line that is long " + "x" * 80 + "\n",
        "docs: move the benchmarks out of the README\n\nSee https://example.org/" + "y" * 80 + "\n",
    ]
    bad = [
        ("x" * 30 + ": " + "y" * 50 + "\n\nbody\n", "subject is"),
        ("Engine: poll\n\nbody\n", "not 'area: what'"),
        ("poll every queue\n\nbody\n", "not 'area: what'"),
        ("engine: poll\n", "no body"),
        ("engine: poll\nbody right after\n", "no body"),
        ("engine: poll\n\n" + "z " * 50 + "\n", "body line 3"),
    ]
    for m in good:
        if problems(m):
            return f"self-test: a good message was refused: {problems(m)}\n{m}"
    for m, want in bad:
        p = problems(m)
        if not any(want in x for x in p):
            return f"self-test: a bad message was not refused for '{want}': {p}\n{m}"
    return None


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    err = self_test()
    if err:
        print(f"FAIL: {err}")
        return 1
    print("the rule: good messages pass, each bad kind is refused")
    git = ["git", "-C", src]
    if subprocess.run(git + ["rev-parse", "--git-dir"], capture_output=True).returncode != 0:
        print("SKIP-ALLOWED: not a git checkout (no history to check)")
        return 77
    if subprocess.run(git + ["cat-file", "-e", BASE + "^{commit}"], capture_output=True).returncode != 0:
        print(f"FAIL: commit {BASE} (where the rule starts) is not in this checkout: a shallow clone? "
              "(git fetch --unshallow)")
        return 1
    revs = subprocess.run(git + ["rev-list", "--no-merges", f"{BASE}..HEAD"], capture_output=True, text=True,
                          check=True).stdout.split()
    failed = 0
    for r in revs:
        msg = subprocess.run(git + ["log", "-1", "--format=%B", r], capture_output=True, text=True,
                             check=True).stdout
        p = problems(msg)
        if p:
            failed += 1
            print(f"FAIL {r[:10]} {msg.splitlines()[0][:80]!r}: {'; '.join(p)}")
    print(f"{len(revs)} commits after {BASE} checked, {failed} with a bad message")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
