#pragma once
// Gate verdicts on disk (issue 37), beside the compile cache (its folder `verdicts/`): a finalist's
// output checks (further inputs, determinism) and each sanitizer tool's findings, keyed by
// everything that decides them, so a kernel already gated at this shape on these inputs is not
// gated again. A verdict is never reused for other bytes, launches, shape, inputs or sanitizer.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"

namespace tune {

class VerdictCache {
 public:
  // Creates the directory when needed; throws InputError when it cannot.
  explicit VerdictCache(std::filesystem::path dir);
  // The verdicts' folder inside a compile cache's.
  static std::filesystem::path beside(const std::filesystem::path& compile_cache_dir) {
    return compile_cache_dir / "verdicts";
  }
  // What of a variant decides its verdicts: the CUBIN's bytes (length and XXH3-64), and every
  // launch's name expression, grid, block, dynamic shared memory and arguments, and the scratch.
  static std::vector<std::string> variant_fields(const CompileResult& compiled, const Lowered& lowered);
  // 32 hex digits: the check ("outputs" or a tool), the variant's fields and the check's context
  // (shape, the inputs' identity, the sanitizer's version and options, ...).
  static std::string key(const std::string& check, const std::vector<std::string>& variant,
                         const std::vector<std::string>& context);

  // The entry stored under key, else nullopt: a missing, damaged, oversized or other key's file is
  // a miss (read through the one bounded JSON reader).
  [[nodiscard]] std::optional<nlohmann::ordered_json> load(const std::string& key) const;
  // Never throws: returns why the entry could not be written, else empty (as CompileCache::store).
  [[nodiscard]] std::string store(const std::string& key, const nlohmann::ordered_json& entry) const;
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// Whether a problem's reference.py was seen to return the same output twice for one input
// (Problem::check_reference_repeats), kept in the verdict cache under the reference's identity
// (its bytes, the modules beside it, the backend and the interpreter) and the problem file: the
// second run of the reference is paid once, not by every tune of every shape.
class ReferenceRepeatMemo {
 public:
  // nullopt: no cache (--no-cache, or a folder that cannot be made): check every time.
  // `identity`: Problem::reference_identity, as the run recorded it (empty: no memo).
  static std::optional<ReferenceRepeatMemo> open(const std::filesystem::path& verdict_dir, const Problem& problem,
                                                 const std::string& identity);
  [[nodiscard]] bool known() const;
  void remember() const;  // never throws: a memo not stored is checked again next time

 private:
  ReferenceRepeatMemo(VerdictCache cache, std::string key) : cache_(std::move(cache)), key_(std::move(key)) {}
  VerdictCache cache_;
  std::string key_;
};

}  // namespace tune
