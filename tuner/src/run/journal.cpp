// The run journal (tune/journal.hpp): JSON Lines, one fsync per record.

#include "tune/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/json_file.hpp"
#include "tune/errors.hpp"

namespace tune {

using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kKind = "tune.journal";

std::string brief(const Json& v) {
  if (!v.is_string()) return json_file::brief(v, 80);
  const std::string& s = v.get_ref<const std::string&>();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

void check_identity(const std::filesystem::path& path, const Json& first, const Json& identity) {
  if (!first.is_object() || first.value("kind", Json()) != kKind || !first.contains("identity") ||
      !first.at("identity").is_object())
    throw InputError(fmt::format("{}: not a tune journal; remove it or run without --resume", path.string()));
  if (const Json version = first.value("schema_version", Json()); version != 1)
    throw InputError(
        fmt::format("{}: a journal of schema_version {}, which this tune does not read (it writes 1); run "
                    "without --resume to start over",
                    path.string(), brief(version)));
  const Json& theirs = first.at("identity");
  for (const auto& [key, mine] : identity.items()) {
    // The strict re-measure of the finalists and the torch comparison are redone on resume, so a
    // journal's records serve any --top and --torch (a complete result of another is still no result
    // of this run: finished_earlier).
    if (key == "top" || key == "torch") continue;
    const Json other = theirs.contains(key) ? theirs.at(key) : Json(nullptr);
    if (other != mine)
      throw InputError(fmt::format("cannot --resume {}: its {} is {}, this run's is {}; run without --resume to start over",
                                   path.string(), key, brief(other), brief(mine)));
  }
}

}  // namespace

std::filesystem::path Journal::path_for(const std::filesystem::path& json_path) {
  auto p = json_path;
  p.replace_extension(".journal.jsonl");
  return p;
}

Journal Journal::create(const std::filesystem::path& path, const Json& identity) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(fmt::format("cannot write the journal {} ({})", path.string(), std::strerror(errno)));
  Journal j(path, fd);
  j.write_line(Json{{"kind", kKind}, {"schema_version", 1}, {"identity", identity}}.dump());
  return j;
}

Journal Journal::append_to(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("cannot append to the journal {} ({})", path.string(), std::strerror(errno)));
  // A torn last line (the process died mid-write) gets its newline, so the next record starts clean.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (in.tellg() > 0) {
    in.seekg(-1, std::ios::end);
    if (in.get() != '\n' && ::write(fd, "\n", 1) != 1)
      throw InputError(fmt::format("cannot append to the journal {}", path.string()));
  }
  return Journal(path, fd);
}

std::vector<Journal::Entry> Journal::read(const std::filesystem::path& path, const Json& identity) {
  if (!std::ifstream(path)) throw InputError(fmt::format("cannot read the journal {}", path.string()));
  std::istringstream in(json_file::read_text(path));  // bounded in size
  std::string line;
  std::vector<Entry> out;
  bool first = true;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    Json j;
    try {
      j = json_file::parse_line(line, fmt::format("{}: line {}", path.string(), number));  // bounded in depth
    } catch (const Json::parse_error&) {
      continue;  // a line torn by a kill: that record was not finalized
    }
    if (first) {
      check_identity(path, j, identity);
      first = false;
      continue;
    }
    // The records a resumed run takes pass the validation of a results file's records.
    const std::string remedy = "remove that line (its variant is measured again), or run without --resume";
    try {
      if (!j.is_object() || !j.contains("stage") || !j.at("stage").is_string() || !j.contains("record"))
        throw InputError(fmt::format("not a journal record (stage and record); {}", remedy));
      validate_variant_json(j.at("record"), "record", remedy);
      out.push_back({j.at("stage").get<std::string>(), variant_from_json(j.at("record"))});
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: line {}: {}", path.string(), number, e.what()));
    }
  }
  if (first) throw InputError(fmt::format("{}: an empty journal; run without --resume", path.string()));
  return out;
}

bool Journal::holds_nothing(const std::filesystem::path& path) {
  if (!std::ifstream(path)) throw InputError(fmt::format("cannot read the journal {}", path.string()));
  std::istringstream in(json_file::read_text(path));  // bounded in size
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      (void)json_file::parse_line(line, fmt::format("{}: line {}", path.string(), number));
      return false;
    } catch (const Json::parse_error&) {}
  }
  return true;
}

Journal::Journal(Journal&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

Journal& Journal::operator=(Journal&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const std::string& stage, const VariantRecord& record) {
  write_line(Json{{"stage", stage}, {"record", to_json(record)}}.dump());
}

void Journal::write_line(const std::string& line) {
  const std::string text = line + "\n";
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(fmt::format("writing the journal {} failed ({})", path_.string(), std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0 && errno != EINVAL)
    throw InputError(fmt::format("fsync of the journal {} failed ({})", path_.string(), std::strerror(errno)));
}

}  // namespace tune
