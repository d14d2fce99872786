// The run journal: one fsync'ed JSON line per record, an identity line first, torn lines dropped.
// Also the worker protocol's pipe reader and its deadlines (a passed deadline is expired).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <thread>

#include <unistd.h>

#include "support/fixture_run.hpp"
#include "tune/errors.hpp"
#include "tune/journal.hpp"
#include "tune/worker_client.hpp"

namespace tune {
namespace {

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune-journal-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

// A passed record of the one parameter v (its name is its parameters', "v=a").
VariantRecord record(const std::string& v, double median) {
  VariantRecord r;
  r.name = "v=" + v;
  r.params = {{"v", v}};
  r.status = Status::kPassed;
  r.parity = ParityRecord{};
  r.parity->elements = 8;
  r.timing = TimingRecord{};
  r.timing->samples = 10;
  set_median(*r.timing, median);
  return r;
}

const nlohmann::ordered_json kIdentity = {{"tool_version", "1.0"}, {"shape", "B1_N8"}, {"seed", 42}};

TEST(Journal, SitsBesideTheResults) {
  EXPECT_EQ(Journal::path_for("results/h200/contact/B4_N64_C64_H32.json"),
            std::filesystem::path("results/h200/contact/B4_N64_C64_H32.journal.jsonl"));
}

// A record nested 100 000 deep crashed --resume with SIGSEGV (a recursive dump of the value): the
// line is refused in one line that names the journal and the line (issue 34, #19).
TEST(Journal, ALineNestedTooDeepIsRefusedNamingTheLine) {
  const auto path = scratch("deep.journal.jsonl");
  {
    Journal j = Journal::create(path, kIdentity);
    j.append("search", record("a", 10));
  }
  std::ofstream(path, std::ios::app) << R"({"stage": "search", "record": )" << std::string(100000, '[')
                                     << std::string(100000, ']') << "}\n";
  try {
    (void)Journal::read(path, kIdentity);
    FAIL() << "read a journal line nested 100000 deep";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": line 3: JSON nested deeper than 512 levels"), std::string::npos)
        << e.what();
  }
}

TEST(Journal, RecordsRoundTripAndATornLastLineIsDropped) {
  const auto path = scratch("torn.journal.jsonl");
  {
    Journal j = Journal::create(path, kIdentity);
    j.append("search", record("a", 10));
    j.append("search", record("b", 20));
  }
  std::ofstream(path, std::ios::app) << R"({"stage": "search", "record": {"name": "c", "par)";  // killed mid-write
  auto entries = Journal::read(path, kIdentity);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].record.name, "v=b");
  EXPECT_EQ(entries[1].record.timing->median_us, 20);
  {
    Journal j = Journal::append_to(path);  // a resumed run goes on after the torn line
    j.append("halving", record("a", 11));
  }
  entries = Journal::read(path, kIdentity);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[2].stage, "halving");
  EXPECT_EQ(entries[2].record.timing->median_us, 11);
}

TEST(Journal, AnotherRunsJournalIsRefusedNamingTheField) {
  const auto path = scratch("other.journal.jsonl");
  Journal::create(path, kIdentity);
  auto other = kIdentity;
  other["seed"] = 7;
  try {
    Journal::read(path, other);
    FAIL() << "a journal of another seed must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its seed is 42, this run's is 7"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "not a journal\n";
  EXPECT_THROW(Journal::read(path, kIdentity), InputError);
  // A journal of another format version (adversarial round 4: read as this one's).
  std::ofstream(path)
      << nlohmann::ordered_json{{"kind", "tune.journal"}, {"schema_version", 2}, {"identity", kIdentity}}.dump() << "\n";
  try {
    Journal::read(path, kIdentity);
    FAIL() << "a journal of schema_version 2 must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a journal of schema_version 2, which this tune does not read"), std::string::npos)
        << e.what();
  }
}

TEST(Journal, TheContentHashSeesEveryText) {
  EXPECT_EQ(content_hash({"a", "b"}), content_hash({"a", "b"}));
  EXPECT_NE(content_hash({"a", "b"}), content_hash({"ab", ""}));
  EXPECT_EQ(content_hash({"x"}).size(), 16u);
}

// A deadline that has passed, by a little or a lot, or that was computed as zero, negative or NaN,
// is expired: the read fails at once with *timed_out set. (A negative time left once meant "wait
// forever" to the reader.)
TEST(PipeReader, ADeadlineThatHasPassedTimesOutAtOnceAndNeverWaitsForever) {
  using namespace std::chrono_literals;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  PipeReader reader(fds[0]);
  // Reads on another thread; should the read block, closing the writing end ends it (end of file,
  // not a timeout) and the test fails instead of hanging.
  auto read_line = [&](PipeReader::Clock::time_point deadline) {
    auto f = std::async(std::launch::async, [&] {
      bool timed_out = false;
      auto l = reader.line(deadline, &timed_out);
      return std::pair(l, timed_out);
    });
    if (f.wait_for(5s) != std::future_status::ready) {
      ADD_FAILURE() << "the read blocked past its deadline";
      close(fds[1]);
      fds[1] = -1;
    }
    return f.get();
  };
  for (const double seconds : {-1.0, -1e9, 0.0, std::nan(""), -std::numeric_limits<double>::infinity()}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto [l, timed_out] = read_line(deadline_after(seconds));
    EXPECT_FALSE(l.has_value()) << seconds;
    EXPECT_TRUE(timed_out) << seconds;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << seconds;
    if (fds[1] < 0) return;
  }
  // The pattern of WorkerProcess::receive: one deadline for every line of a reply. A line in time
  // is read; once the deadline passes between two lines, the next read is a timeout.
  const auto deadline = deadline_after(0.2);
  ASSERT_EQ(write(fds[1], "phase\n", 6), 6);
  const auto [first, first_timed_out] = read_line(deadline);
  EXPECT_EQ(first, "phase");
  EXPECT_FALSE(first_timed_out);
  std::this_thread::sleep_for(300ms);
  const auto [second, second_timed_out] = read_line(deadline);
  EXPECT_FALSE(second.has_value());
  EXPECT_TRUE(second_timed_out);
  if (fds[1] < 0) return;
  // A deadline beyond the clock's range is the far future, not an overflow into the past.
  ASSERT_EQ(write(fds[1], "reply\n", 6), 6);
  const auto [far, far_timed_out] = read_line(deadline_after(1e300));
  EXPECT_EQ(far, "reply");
  EXPECT_FALSE(far_timed_out);
  EXPECT_GT(deadline_after(std::numeric_limits<double>::infinity()), std::chrono::steady_clock::now() + 24h);
  close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
}

}  // namespace
}  // namespace tune
