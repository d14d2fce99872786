#pragma once
// The run journal: every finalized variant record appended as one JSON line, flushed and
// fsync'ed, beside the results JSON (<shape>.journal.jsonl). Its first line identifies the run, so
// --resume continues only the run it belongs to.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/hash.hpp"
#include "tune/record.hpp"

namespace tune {

class Journal {
 public:
  struct Entry {
    std::string stage;  // "search" (the first pass) or "halving" (the second pass of --search halving)
    VariantRecord record;
  };

  // results/<gpu>/<problem>/<shape>.journal.jsonl for results/<gpu>/<problem>/<shape>.json.
  static std::filesystem::path path_for(const std::filesystem::path& json_path);
  // A new journal (any old one replaced) whose first line is the identity. Throws InputError.
  static Journal create(const std::filesystem::path& path, const nlohmann::ordered_json& identity);
  // The entries of an existing journal, after checking its identity against this run's: throws
  // InputError naming the first field that differs. A torn last line (kill -9) is dropped.
  static std::vector<Entry> read(const std::filesystem::path& path, const nlohmann::ordered_json& identity);
  // No line of it is whole JSON: a journal cut short as it was created (kill -9 or a power cut
  // before its identity line reached the disk), which holds nothing measured. Throws InputError
  // when it cannot be read.
  static bool holds_nothing(const std::filesystem::path& path);
  // Reopens an existing journal for appending.
  static Journal append_to(const std::filesystem::path& path);

  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  // One line, written, flushed and fsync'ed before it returns. Throws InputError on failure.
  void append(const std::string& stage, const VariantRecord& record);
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  Journal(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  void write_line(const std::string& line);
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace tune
