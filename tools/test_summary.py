#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts the meson test programs of one or more builds: `tools/run test`'s
summary. Reads BUILD/meson-logs/testlog.json of each build and prints one line
per test program that did not simply pass (and why), then, last,

    N passed, N failed, N skipped

Exit status 1 if anything failed, else 0.

What counts as skipped (a test program that did not fully run):
  - meson says SKIP (the program exited 77);
  - a GoogleTest program that meson calls OK, but whose output shows
    `[  SKIPPED ]` cases (GTEST_SKIP), `YOU HAVE N DISABLED TESTS` (DISABLED_
    cases never run), or `0 tests from 0 test suites ran` (nothing ran).

The skip rule (README, "Set-up"): with CI=true (also 1/yes) in the
environment, a skip is a FAILURE unless the case itself says, when it skips,
why it cannot run on such a machine, with a line that starts with

    SKIP-ALLOWED: <reason>

in its own output: for a program that exits 77, anywhere in its output; for a
GoogleTest case, in its skip message (ROCE_SKIP_ALLOWED(reason) in
tests/support/test_support.h), i.e. between its `[ RUN      ]` and
`[  SKIPPED ]` lines. Every skipped case of a program must carry one for the
program to count as skipped rather than failed. DISABLED_ cases and programs
that ran no case cannot carry one: under CI=true they always fail. Outside CI
every skip counts as skipped, with its reason printed.

A meson test that exited non-zero without a failed test in its log (meson
itself failed, e.g. a bad test name) is one failure: pass --meson-exit
BUILD=RC for each `meson test` run.

Usage: test_summary.py [--ci|--no-ci] [--meson-exit BUILD=RC ...] BUILD...
"""
import argparse
import json
import os
import re
import sys

ALLOW_RE = re.compile(r"^[ \t]*SKIP-ALLOWED:[ \t]*(\S.*?)\s*$", re.M)
GTEST_RE = re.compile(r"^\[==========\] Running \d+ tests? from ", re.M)
RUN_RE = re.compile(r"^\[ RUN      \] (\S+)$", re.M)
SKIPPED_CASE_RE = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)$", re.M)
SKIPPED_LISTED_RE = re.compile(r"^\[  SKIPPED \] (\S+)$", re.M)
SKIPPED_COUNT_RE = re.compile(r"^\[  SKIPPED \] (\d+) tests?, listed below:$", re.M)
DISABLED_CASE_RE = re.compile(r"^\[ DISABLED \] (\S+)$", re.M)
DISABLED_COUNT_RE = re.compile(r"^\s*YOU HAVE (\d+) DISABLED TESTS?\s*$", re.M)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
NONE_RAN_RE = re.compile(r"^\[==========\] 0 tests from 0 test suites? ran\.", re.M)
SKIP_REASON_RE = re.compile(r"\bSKIP(?:PED)?:[ \t]*(\S.*?)\s*$", re.M)
PASS_RESULTS = ("OK", "EXPECTEDFAIL")


def ci_from_env():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


class Skip:
    """One thing that did not run: `what` (a gtest case or the program),
    `reason` (as printed), `allowed` (the SKIP-ALLOWED reason, or None)."""

    def __init__(self, what, reason, allowed):
        self.what, self.reason, self.allowed = what, reason, allowed

    def describe(self):
        if self.allowed:
            return f"{self.what}: SKIP-ALLOWED: {self.allowed}"
        return f"{self.what}: {self.reason or 'no reason printed'}"


def gtest_skip_reason(block):
    """The message of a GTEST_SKIP: the lines after 'FILE:LINE: Skipped'."""
    lines = block.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            msg = []
            for l in lines[i + 1:]:
                if not l.strip() or l.startswith("[  SKIPPED ]"):
                    break
                msg.append(l.strip())
            return " / ".join(msg)
    return ""


def gtest_skips(out):
    """Skips in a GoogleTest program's output (empty if it is no gtest output)."""
    if not GTEST_RE.search(out):
        return []
    skips = []
    names = list(dict.fromkeys(SKIPPED_CASE_RE.findall(out) + SKIPPED_LISTED_RE.findall(out)))
    for name in names:
        end = None
        for m in SKIPPED_CASE_RE.finditer(out):
            if m.group(1) == name:
                end = m.start()
                break
        start = None
        if end is not None:
            for m in RUN_RE.finditer(out, 0, end):
                if m.group(1) == name:
                    start = m.end()  # the last RUN of this case before its SKIPPED line
        block = out[start:end] if start is not None else ""
        allowed = ALLOW_RE.search(block)
        skips.append(Skip(name, gtest_skip_reason(block), allowed.group(1) if allowed else None))
    listed = sum(int(n) for n in SKIPPED_COUNT_RE.findall(out))
    if listed > len(names):  # counted by gtest but not named in a form we read
        skips.append(Skip(f"{listed - len(names)} more case(s)", "gtest counted them as skipped", None))
    disabled = list(dict.fromkeys(DISABLED_CASE_RE.findall(out)))
    for name in disabled:
        skips.append(Skip(name, "DISABLED_: never runs, and carries no reason (skip at run time "
                          "with ROCE_SKIP_ALLOWED instead)", None))
    counted = max([int(n) for n in DISABLED_COUNT_RE.findall(out)] + [0])
    if counted > len(disabled):
        skips.append(Skip(f"{counted - len(disabled)} more DISABLED_ case(s)", "never run", None))
    if NONE_RAN_RE.search(out):
        skips.append(Skip("the program", "ran no test case", None))
    return skips


def program_skip(out, returncode):
    """A program meson calls SKIP (exit 77): its reason and allowance."""
    allowed = ALLOW_RE.search(out)
    m = SKIP_REASON_RE.search(out)  # e.g. interop.py's '[12:00:00] SKIP: not root'
    reason = m.group(1) if m else ""
    return Skip("the program", reason or f"exited {returncode}", allowed.group(1) if allowed else None)


def classify(rec, ci):
    """('passed'|'failed'|'skipped', note) for one testlog.json record."""
    res = rec.get("result")
    out = ANSI_RE.sub("", (rec.get("stdout") or "") + (rec.get("stderr") or ""))
    if res in PASS_RESULTS:
        skips = gtest_skips(out)
    elif res == "SKIP":
        skips = [program_skip(out, rec.get("returncode"))]
    else:
        last = [l.strip() for l in out.splitlines() if l.strip()][-1:]
        return "failed", f"{res} (exit {rec.get('returncode')})" + (f": {last[0][:200]}" if last else "")
    if not skips:
        return "passed", ""
    text = "; ".join(s.describe() for s in skips)
    bad = [s for s in skips if not s.allowed]
    if ci and bad:
        return "failed", (f"skipped under CI=true without SKIP-ALLOWED ({len(bad)} of {len(skips)}): {text}")
    return "skipped", text


def read_log(build):
    path = os.path.join(build, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        return None
    recs = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.strip():
                recs.append(json.loads(line))
    return recs


def short_name(name):
    """'soft-rnic:unit+port / port_kernel' -> 'port_kernel'."""
    return name.rpartition(" / ")[2] if name else "?"


def summarize(builds, ci, meson_exit=None, out=None):
    """Prints the notes and the summary line; returns (passed, failed, skipped)."""
    out = out or sys.stdout
    meson_exit = meson_exit or {}
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for build in builds:
        label = os.path.basename(os.path.normpath(build))
        recs = read_log(build)
        if recs is None:
            counts["failed"] += 1
            print(f"FAILED  {label}: no meson-logs/testlog.json (meson test did not run)", file=out)
            continue
        failed_here = 0
        for rec in recs:
            kind, note = classify(rec, ci)
            counts[kind] += 1
            failed_here += kind == "failed"
            if kind == "failed":
                print(f"FAILED  {label}/{short_name(rec.get('name'))}: {note}", file=out)
            elif kind == "skipped":
                print(f"skipped {label}/{short_name(rec.get('name'))}: {note}", file=out)
        rc = meson_exit.get(label, 0)
        if rc and not failed_here:
            counts["failed"] += 1
            print(f"FAILED  {label}: meson test exited {rc} with no failed test in its log", file=out)
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped", file=out)
    return counts["passed"], counts["failed"], counts["skipped"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--ci", dest="ci", action="store_true", default=None, help="apply the CI skip rule")
    g.add_argument("--no-ci", dest="ci", action="store_false", help="do not (default: CI from the environment)")
    ap.add_argument("--meson-exit", action="append", default=[], metavar="BUILD=RC")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args(argv)
    ci = ci_from_env() if a.ci is None else a.ci
    meson_exit = {}
    for kv in a.meson_exit:
        k, _, v = kv.partition("=")
        meson_exit[os.path.basename(os.path.normpath(k))] = int(v or 0)
    _, failed, _ = summarize(a.builds, ci, meson_exit)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
