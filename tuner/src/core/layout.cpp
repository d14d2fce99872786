#include "core/layout.hpp"

#include <algorithm>

namespace tune {
namespace {

std::filesystem::path canonical_or_empty(const std::filesystem::path& p) {
  std::error_code ec;
  auto c = std::filesystem::weakly_canonical(p, ec);
  return ec ? std::filesystem::path() : c;
}

bool is_under(const std::filesystem::path& path, const std::filesystem::path& dir) {
  if (path.empty() || dir.empty()) return false;
  return std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end();
}

}  // namespace

std::optional<std::filesystem::path> own_data_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  // Installed (and bundled): <prefix>/bin/tune beside <prefix>/share/tune.
  if (const auto share = exe.parent_path().parent_path() / "share" / "tune"; std::filesystem::is_directory(share, ec))
    return share;
  // A build tree (tune, the test binaries): the source tree, for no binary outside that build tree.
  if (is_under(canonical_or_empty(exe), canonical_or_empty(TUNE_BUILD_DIR)) &&
      std::filesystem::is_directory(TUNE_SOURCE_DIR, ec))
    return std::filesystem::path(TUNE_SOURCE_DIR);
  return std::nullopt;
}

}  // namespace tune
