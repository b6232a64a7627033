// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EXPECT_RC / ASSERT_RC (and _OK): a libfabric call returned the code expected, or the
// failure names both codes with their fi_strerror text. They accept << like any gtest
// assertion.
#pragma once

#include <gtest/gtest.h>

#include "rc.hpp"

namespace softnic_test {

template <typename E, typename A>
::testing::AssertionResult rc_eq(const char *expected_text, const char *actual_text, E expected,
                                 A actual) {
    const long e = static_cast<long>(expected), a = static_cast<long>(actual);
    if (e == a) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << actual_text << " returned " << rc_str(a)
                                         << ", expected " << expected_text << " = " << rc_str(e);
}

}  // namespace softnic_test

#define EXPECT_RC(expected, expr) EXPECT_PRED_FORMAT2(::softnic_test::rc_eq, expected, expr)
#define ASSERT_RC(expected, expr) ASSERT_PRED_FORMAT2(::softnic_test::rc_eq, expected, expr)
#define EXPECT_OK(expr) EXPECT_RC(0, expr)
#define ASSERT_OK(expr) ASSERT_RC(0, expr)
