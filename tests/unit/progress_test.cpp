// A run's progress line (issue 22): elapsed time and an ETA, and on a terminal the variant's name
// cut so that the line fits its width.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "search/progress_log.hpp"
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

TEST(Progress, TheNameIsCutSoThatTheLineFitsTheWidth) {
  const std::string prefix = "[  3/12] compiled   0.6s  passed   ";                   // 35 columns
  const std::string name = "strategy=warp,mapping=tile,block=128,tile_i=4,tile_j=8";  // 54
  const std::string detail = "   (checked 3, passed 3, best 7.94 us)";                // 38
  const std::string tail = "  5s elapsed, eta 20s";                                   // 21
  const std::string whole = prefix + name + detail + tail;
  EXPECT_EQ(fit_line(prefix, name, detail, tail, 0), whole) << "no width: whole lines";
  EXPECT_EQ(fit_line(prefix, name, detail, tail, whole.size()), whole);
  // The name is cut first, to no fewer than 20 columns.
  EXPECT_EQ(fit_line(prefix, name, detail, tail, 130), prefix + name.substr(0, 33) + "..." + detail + tail);
  EXPECT_EQ(fit_line(prefix, name, detail, tail, 114), prefix + name.substr(0, 17) + "..." + detail + tail);
  // Then the detail goes, and the name takes what is left.
  EXPECT_EQ(fit_line(prefix, name, detail, tail, 113), prefix + name.substr(0, 54) + tail);
  EXPECT_EQ(fit_line(prefix, name, detail, tail, 80), prefix + name.substr(0, 21) + "..." + tail);
  for (std::size_t width = 60; width <= whole.size(); ++width) {
    const std::string line = fit_line(prefix, name, detail, tail, width);
    EXPECT_LE(line.size(), width);
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
    EXPECT_EQ(line.substr(line.size() - tail.size()), tail) << "the time is always there: " << line;
  }
  // Too narrow for even the counts and the time: the line is cut at the width.
  EXPECT_EQ(fit_line(prefix, name, detail, tail, 50), whole.substr(0, 50));
}

}  // namespace
}  // namespace tune
