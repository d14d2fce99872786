// How long a run's steps take, as its progress lines say it (issue 22).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "tune/tune.hpp"

namespace tune {
namespace {

TEST(Progress, DurationsReadAsSecondsMinutesAndHours) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3 * 3600 + 125), "3h02m");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "?");
}

}  // namespace
}  // namespace tune
