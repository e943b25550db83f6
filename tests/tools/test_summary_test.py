#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/test_summary.py (the `N passed, N failed, N skipped` line of
`tools/run test`) on made-up meson test logs: GoogleTest programs with skipped,
allowed-skipped and DISABLED_ cases or none run, programs that exit 77 with
and without SKIP-ALLOWED, failures, a missing log; with and without CI."""
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

SRC = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
# build/tests/tools/skip_rule_sample (meson passes it; required, so that the
# real-output half never goes missing quietly)
SAMPLE = sys.argv.pop(1) if len(sys.argv) > 1 else None
spec = importlib.util.spec_from_file_location("test_summary", os.path.join(SRC, "tools", "test_summary.py"))
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)

HEAD = "Running main() from gtest_main.cc\n[==========] Running 3 tests from 1 test suite.\n"
PASS = HEAD + """[ RUN      ] A.Pass
[       OK ] A.Pass (0 ms)
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 1 test.
"""
SKIP = HEAD + """[ RUN      ] A.Pass
[       OK ] A.Pass (0 ms)
[ RUN      ] A.Skip
t.cc:3: Skipped
needs root (x)

[  SKIPPED ] A.Skip (0 ms)
[==========] 2 tests from 1 test suite ran. (0 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] A.Skip
"""
ALLOWED = HEAD + """[ RUN      ] A.Pass
[       OK ] A.Pass (0 ms)
[ RUN      ] A.SkipAllowed
t.cc:4: Skipped
SKIP-ALLOWED: no mlx5 NIC here

[  SKIPPED ] A.SkipAllowed (0 ms)
[==========] 2 tests from 1 test suite ran. (0 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] A.SkipAllowed
"""
# One allowed, one not: the allowance of one case does not cover the other.
MIXED = HEAD + """[ RUN      ] A.Skip
t.cc:3: Skipped
needs root (x)

[  SKIPPED ] A.Skip (0 ms)
[ RUN      ] A.SkipAllowed
t.cc:4: Skipped
SKIP-ALLOWED: no mlx5 NIC here

[  SKIPPED ] A.SkipAllowed (0 ms)
[==========] 2 tests from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] A.Skip
[  SKIPPED ] A.SkipAllowed
"""
DISABLED = HEAD + """[ RUN      ] A.Pass
[       OK ] A.Pass (0 ms)
[ DISABLED ] A.DISABLED_Off
[==========] 1 test from 1 test suite ran. (0 ms total)
[  PASSED  ] 1 test.

  YOU HAVE 1 DISABLED TEST

"""
NONE = """Running main() from gtest_main.cc
Note: Google Test filter = Nope
[==========] Running 0 tests from 0 test suites.
[==========] 0 tests from 0 test suites ran. (0 ms total)
[  PASSED  ] 0 tests.
"""
INTEROP_SKIP = "[04:00:00] SKIP: not root\n[04:00:00] problem: skipped: not root\n[04:00:00] SKIP x ()\n"


def rec(name, result, out="", rc=0):
    return {"name": name, "result": result, "stdout": out, "returncode": rc}


class Summary(unittest.TestCase):
    def classify(self, result, out, ci, rc=0):
        return ts.classify(rec("t", result, out, rc), ci)[0]

    def test_gtest(self):
        for ci in (False, True):
            self.assertEqual(self.classify("OK", PASS, ci), "passed")
            self.assertEqual(self.classify("OK", ALLOWED, ci), "skipped")
        self.assertEqual(self.classify("OK", SKIP, False), "skipped")
        self.assertEqual(self.classify("OK", SKIP, True), "failed")
        self.assertEqual(self.classify("OK", MIXED, False), "skipped")
        self.assertEqual(self.classify("OK", MIXED, True), "failed")
        self.assertEqual(self.classify("OK", DISABLED, False), "skipped")
        self.assertEqual(self.classify("OK", DISABLED, True), "failed")
        self.assertEqual(self.classify("OK", NONE, False), "skipped")
        self.assertEqual(self.classify("OK", NONE, True), "failed")
        self.assertEqual(self.classify("FAIL", PASS, False), "failed")
        # colored output reads the same
        colored = SKIP.replace("[  SKIPPED ] A.Skip (0 ms)", "\x1b[0;33m[  SKIPPED ] \x1b[mA.Skip (0 ms)")
        self.assertEqual(self.classify("OK", colored, True), "failed")

    def test_reasons(self):
        _, note = ts.classify(rec("t", "OK", MIXED), True)
        self.assertIn("A.Skip: needs root (x)", note)
        self.assertIn("A.SkipAllowed: SKIP-ALLOWED: no mlx5 NIC here", note)
        self.assertIn("(1 of 2)", note)
        _, note = ts.classify(rec("t", "SKIP", INTEROP_SKIP, 77), False)
        self.assertEqual(note, "the program: not root")

    def test_exit_77(self):
        self.assertEqual(self.classify("SKIP", INTEROP_SKIP, False, 77), "skipped")
        self.assertEqual(self.classify("SKIP", INTEROP_SKIP, True, 77), "failed")
        allowed = "SKIP-ALLOWED: needs an mlx5 NIC (none on this machine)\n"
        self.assertEqual(self.classify("SKIP", allowed, True, 77), "skipped")
        # the marker must start a line
        self.assertEqual(self.classify("SKIP", "x SKIP-ALLOWED: y\n", True, 77), "failed")
        self.assertEqual(self.classify("SKIP", "SKIP-ALLOWED:\n", True, 77), "failed")  # no reason

    def test_other_results(self):
        for r in ("TIMEOUT", "ERROR", "UNEXPECTEDPASS", "INTERRUPT"):
            self.assertEqual(self.classify(r, "", False), "failed")
        self.assertEqual(self.classify("EXPECTEDFAIL", "", True), "passed")
        # not gtest output: '[  SKIPPED ]' in a shell test's output means nothing
        self.assertEqual(self.classify("OK", "[  SKIPPED ] x (1 ms)\n", True), "passed")

    def test_summary_line(self):
        with tempfile.TemporaryDirectory() as d:
            for b, recs in (("build", [rec("a", "OK", PASS), rec("b", "OK", SKIP), rec("c", "SKIP", INTEROP_SKIP, 77),
                                       rec("d", "FAIL")]),
                            ("build-asan", [rec("a", "OK", PASS), rec("e", "OK", ALLOWED)])):
                os.makedirs(os.path.join(d, b, "meson-logs"))
                with open(os.path.join(d, b, "meson-logs", "testlog.json"), "w") as f:
                    for r in recs:
                        f.write(json.dumps(r) + "\n")
            builds = [os.path.join(d, "build"), os.path.join(d, "build-asan")]
            out = io.StringIO()
            self.assertEqual(ts.summarize(builds, False, out=out), (2, 1, 3))
            self.assertEqual(out.getvalue().splitlines()[-1], "2 passed, 1 failed, 3 skipped")
            out = io.StringIO()
            self.assertEqual(ts.summarize(builds, True, out=out), (2, 3, 1))
            self.assertEqual(out.getvalue().splitlines()[-1], "2 passed, 3 failed, 1 skipped")
            self.assertIn("FAILED  build/b: skipped under CI=true", out.getvalue())
            recs = [rec("soft-rnic:unit+port / port_kernel", "OK", SKIP)]
            with open(os.path.join(d, "build", "meson-logs", "testlog.json"), "w") as f:
                f.write(json.dumps(recs[0]) + "\n")
            out = io.StringIO()
            ts.summarize(builds[:1], False, out=out)
            self.assertEqual(out.getvalue().splitlines()[0], "skipped build/port_kernel: A.Skip: needs root (x)")
            # meson failed without a failed test in the log: one failure
            out = io.StringIO()
            self.assertEqual(ts.summarize(builds[1:], False, {"build-asan": 1}, out=out), (1, 1, 1))
            # no log at all: one failure
            out = io.StringIO()
            self.assertEqual(ts.summarize([os.path.join(d, "nope")], False, out=out), (0, 1, 0))
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(ts.main(["--no-ci", builds[1]]), 0)
                self.assertEqual(ts.main(["--ci", builds[0]]), 1)


class RealGtestOutput(unittest.TestCase):
    """The rule on what GoogleTest 1.12 and ROCE_SKIP_ALLOWED really print."""

    def classify(self, gtest_filter, ci):
        self.assertIsNotNone(SAMPLE, "usage: test_summary_test.py SOURCE_DIR PATH/skip_rule_sample")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GTEST_")}
        p = subprocess.run([SAMPLE, "--gtest_filter=" + gtest_filter], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return ts.classify(rec("sample", "OK", p.stdout), ci)

    def test_sample(self):
        for ci in (False, True):
            self.assertEqual(self.classify("Sample.Runs", ci)[0], "passed")
            self.assertEqual(self.classify("Sample.Runs:Sample.AllowedSkip", ci),
                             ("skipped", "Sample.AllowedSkip: SKIP-ALLOWED: needs an mlx5 NIC (sample)"))
        self.assertEqual(self.classify("Sample.PlainSkip", False), ("skipped", "Sample.PlainSkip: needs root (sample)"))
        self.assertEqual(self.classify("Sample.PlainSkip", True)[0], "failed")
        self.assertEqual(self.classify("Sample.*Skip", True)[0], "failed")  # one allowed, one not
        self.assertEqual(self.classify("Sample.*Skip", False)[0], "skipped")
        self.assertEqual(self.classify("Sample.Runs:Sample.DISABLED_Off", True)[0], "failed")
        self.assertEqual(self.classify("Sample.Runs:Sample.DISABLED_Off", False)[0], "skipped")
        self.assertEqual(self.classify("Nothing.Matches", True), ("failed", "skipped under CI=true without "
                         "SKIP-ALLOWED (1 of 1): the program: ran no test case"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
