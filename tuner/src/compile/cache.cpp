// Header-only use of xxHash (libxxhash-dev): nothing to link.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/compile_cache.hpp"
#include "tune/io.hpp"

namespace tune {

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) unusable_ = fmt::format("cannot create the folder: {}", folder_error(dir_, ec));
  // Its writers take no lock (concurrent runs share it): what a killed one left goes by age and pid.
  if (!ec) remove_stale_temporaries_once(dir_);
}

std::filesystem::path CompileCache::default_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "tune";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "tune";
  return std::filesystem::temp_directory_path() / "tune-cache";
}

std::string cache_key(const std::vector<std::string>& fields) {
  std::string blob;
  for (const auto& s : fields) blob += std::to_string(s.size()) + ':' + s;
  const XXH128_hash_t h = XXH3_128bits(blob.data(), blob.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string CompileCache::key(const CompileRequest& request, const std::string& nvrtc_version) {
  // v3: compile() passes -no-source-include; a v2 entry may hold a kernel that read the file system.
  std::vector<std::string> fields{"tune-compile-cache-v3", nvrtc_version, request.source,
                                  std::to_string(request.headers.size())};
  for (const auto& [name, text] : request.headers) {
    fields.push_back(name);
    fields.push_back(text);
  }
  fields.push_back(std::to_string(request.name_expressions.size()));
  for (const auto& e : request.name_expressions) fields.push_back(e);
  fields.push_back(std::to_string(request.options.size()));
  for (const auto& o : request.options) fields.push_back(o);
  return cache_key(fields);
}

std::string CompileCache::content_hash(const std::vector<char>& cubin) {
  return fmt::format("{:016x}", XXH3_64bits(cubin.data(), cubin.size()));
}

std::optional<CompileResult> CompileCache::load(const std::string& key) const {
  if (!unusable_.empty()) return std::nullopt;
  std::ifstream meta_in(dir_ / (key + ".json"));
  std::ifstream cubin_in(dir_ / (key + ".cubin"), std::ios::binary);
  if (!meta_in || !cubin_in) return std::nullopt;
  try {
    const auto meta = nlohmann::json::parse(meta_in);
    CompileResult r;
    r.cubin.assign(std::istreambuf_iterator<char>(cubin_in), std::istreambuf_iterator<char>());
    if (r.cubin.size() != meta.at("cubin_bytes").get<std::size_t>()) return std::nullopt;  // torn write
    // Same length, other bytes (a flipped bit, another writer's file): a miss, compiled again and
    // overwritten. An entry without the hash (an older tune's) is a miss too.
    if (meta.at("cubin_xxh3_64").get<std::string>() != content_hash(r.cubin)) return std::nullopt;
    // Another entry's files under this key (swapped, copied over): its kernel would run under this
    // request's names. A miss, as is an entry without the key (an older tune's).
    if (meta.at("key").get<std::string>() != key) return std::nullopt;
    r.log = meta.at("log").get<std::string>();
    r.lowered_names = meta.at("lowered_names").get<std::vector<std::string>>();
    r.resources = parse_ptxas_report(r.log);
    r.ok = true;
    return r;
  } catch (const std::exception&) {
    // A damaged entry (its metadata no JSON, a field missing) or one that cannot be read (its
    // CUBIN a folder, an I/O error) is a miss; the store that follows replaces it where it can.
    return std::nullopt;
  }
}

namespace {

// The compiles under way in this process, by cache entry: a second request for an entry being
// compiled (a sweep compiling a later shape's baseline ahead while that shape's run compiles it
// too) waits for the first one's result instead of compiling it again.
class InFlight {
 public:
  static InFlight& shared() {
    static InFlight f;
    return f;
  }
  // The compile of `entry` already under way, else an invalid future (the caller compiles it and
  // must call finish).
  std::shared_future<CompileResult> join(const std::string& entry, std::promise<CompileResult>& mine) {
    const std::lock_guard lock(mutex_);
    if (const auto it = running_.find(entry); it != running_.end()) return it->second;
    running_.emplace(entry, mine.get_future().share());
    return {};
  }
  void finish(const std::string& entry) {
    const std::lock_guard lock(mutex_);
    running_.erase(entry);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_future<CompileResult>> running_;
};

}  // namespace

CompileResult CompileCache::get_or_compile(const CompileRequest& request, const std::string& nvrtc_version, bool* cached,
                                           std::string* store_failure,
                                           const std::function<CompileResult(const CompileRequest&)>& compiler) const {
  const std::string k = key(request, nvrtc_version);
  store_failure->clear();
  if (auto hit = load(k)) {
    *cached = true;
    return std::move(*hit);
  }
  const std::string entry = (dir_ / k).string();
  std::promise<CompileResult> mine;
  if (const std::shared_future<CompileResult> theirs = InFlight::shared().join(entry, mine); theirs.valid()) {
    CompileResult r = theirs.get();  // rethrows what the other compile threw
    *cached = true;                  // nothing compiled here, as for an entry read from the cache
    r.seconds = 0;
    return r;
  }
  *cached = false;
  try {
    CompileResult r = compiler(request);
    *store_failure = store(k, r);  // before finish: a request after it finds the entry stored
    mine.set_value(r);
    InFlight::shared().finish(entry);
    return r;
  } catch (...) {
    mine.set_exception(std::current_exception());
    InFlight::shared().finish(entry);
    throw;
  }
}

std::string CompileCache::store(const std::string& key, const CompileResult& result) const {
  if (!result.ok) return {};
  if (!unusable_.empty()) return unusable_;
  try {
    // The CUBIN first, the metadata (which says how long the CUBIN is and its hash) last: a reader
    // that finds the metadata finds a whole CUBIN.
    write_file_atomic(dir_ / (key + ".cubin"), std::string(result.cubin.begin(), result.cubin.end()));
    const nlohmann::json meta{{"key", key},
                              {"cubin_bytes", result.cubin.size()},
                              {"cubin_xxh3_64", content_hash(result.cubin)},
                              {"log", result.log},
                              {"lowered_names", result.lowered_names},
                              {"compile_seconds", result.seconds}};
    write_file_atomic(dir_ / (key + ".json"), meta.dump());
    return {};
  } catch (const std::exception& e) {  // read-only, full, gone: the compile itself stands
    return e.what();
  }
}

}  // namespace tune
