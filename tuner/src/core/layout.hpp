#pragma once
// Where tune's own files are: the built-in problem folders (configs/, kernel_templates/) and the
// report scripts (report/). An installed or bundled <prefix>/bin/tune reads <prefix>/share/tune;
// a binary of the build tree reads the source tree it was built from. An installed tune never
// reads the build machine's source tree.
#include <filesystem>
#include <optional>

namespace tune {

// <prefix>/share/tune beside the running binary when it exists; else, for a binary under the
// build tree, the source tree; else none. Both hold configs/, kernel_templates/ and report/ at the
// same relative paths.
[[nodiscard]] std::optional<std::filesystem::path> own_data_dir();

}  // namespace tune
