// The run journal: one fsync'ed JSON line per record, an identity line first, torn lines dropped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tune/errors.hpp"
#include "tune/journal.hpp"

namespace tune {
namespace {

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune-journal-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

VariantRecord record(const std::string& name, double median) {
  VariantRecord r;
  r.name = name;
  r.params = {{"block", 64}};
  r.status = Status::kPassed;
  r.timing = TimingRecord{};
  r.timing->median_us = median;
  return r;
}

const nlohmann::ordered_json kIdentity = {{"tool_version", "1.0"}, {"shape", "B1_N8"}, {"seed", 42}};

TEST(Journal, SitsBesideTheResults) {
  EXPECT_EQ(Journal::path_for("results/h200/contact/B4_N64_C64_H32.json"),
            std::filesystem::path("results/h200/contact/B4_N64_C64_H32.journal.jsonl"));
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
  EXPECT_EQ(entries[1].record.name, "b");
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
}

TEST(Journal, TheContentHashSeesEveryText) {
  EXPECT_EQ(content_hash({"a", "b"}), content_hash({"a", "b"}));
  EXPECT_NE(content_hash({"a", "b"}), content_hash({"ab", ""}));
  EXPECT_EQ(content_hash({"x"}).size(), 16u);
}

}  // namespace
}  // namespace tune
