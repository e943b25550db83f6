// SPDX-License-Identifier: MIT
// Not a test of its own (no meson test() runs it): sample GoogleTest cases
// that test_summary_test.py runs one filter at a time, so that the skip rule
// (tools/test_summary.py) is checked against real GoogleTest output and the
// real ROCE_SKIP_ALLOWED.
#include <gtest/gtest.h>

#include "tests/support/test_support.h"

TEST(Sample, Runs) { EXPECT_EQ(1 + 1, 2); }

TEST(Sample, PlainSkip) { GTEST_SKIP() << "needs root (sample)"; }

TEST(Sample, AllowedSkip) { ROCE_SKIP_ALLOWED("needs an mlx5 NIC (sample)"); }

TEST(Sample, DISABLED_Off) {}
