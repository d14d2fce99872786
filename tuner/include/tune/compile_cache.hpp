#pragma once
// A persistent cache of compiled variants on disk, keyed by everything that decides the CUBIN:
// the template source, the name expressions, the options (arch included) and the NVRTC version.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tune/compile.hpp"

namespace tune {

// 32 hex digits (XXH3-128) of the fields, each length-prefixed so no two different lists serialise
// alike: the key of a compile cache entry, and of a gate verdict (tune/verdict_cache.hpp).
std::string cache_key(const std::vector<std::string>& fields);

class CompileCache {
 public:
  // Creates the directory when needed. One that cannot be made (a read-only $HOME, a link to
  // nothing) leaves a cache that finds nothing and whose store says why: a cache is never a reason
  // for a run, tune check or an export to stop.
  explicit CompileCache(std::filesystem::path dir);
  // $XDG_CACHE_HOME/tune, else ~/.cache/tune, else a folder in the temporary directory.
  static std::filesystem::path default_dir();
  // 32 hex digits (XXH3-128) of the request and the NVRTC version.
  static std::string key(const CompileRequest& request, const std::string& nvrtc_version);

  // A hit carries the CUBIN, log, lowered names and resources; seconds is 0. An entry whose CUBIN
  // differs from its metadata (length or XXH3-64 content hash), whose metadata names another key
  // (files swapped or copied between entries) or none, or that cannot be read, is a miss.
  [[nodiscard]] std::optional<CompileResult> load(const std::string& key) const;
  // Stores successful compiles only (a failure is cheap to reproduce and may be transient). Never
  // throws: returns why the entry could not be written (a read-only or full cache), else empty.
  // A cache that cannot be written costs the next run its compiles, never this run's results.
  [[nodiscard]] std::string store(const std::string& key, const CompileResult& result) const;
  // The entry for `request` when there is one (*cached = true), else `compiler(request)`, stored
  // when it succeeded; a store that fails leaves its reason in *store_failure (else it is empty).
  // One compile per entry at a time in a process: a request for an entry another thread is
  // compiling waits for that compile and gets its result (*cached = true, seconds 0).
  [[nodiscard]] CompileResult get_or_compile(
      const CompileRequest& request, const std::string& nvrtc_version, bool* cached, std::string* store_failure,
      const std::function<CompileResult(const CompileRequest&)>& compiler = [](const CompileRequest& r) {
        return compile(r);
      }) const;
  // 16 hex digits: XXH3-64 of the CUBIN, kept in the entry's metadata and checked on load.
  static std::string content_hash(const std::vector<char>& cubin);
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string unusable_;  // why the folder could not be made, else empty
};

}  // namespace tune
