#pragma once
// Reads a kernel template and the headers NVRTC may include, and makes what NVRTC compiles
// exactly what tune hashes: NVRTC gets no search directory (compile() passes -no-source-include),
// so every file it can read is one of these headers, and each is in the cache key and the run's
// identity. An #include that would reach another file is refused when the problem loads.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tune/space.hpp"

namespace tune {

// Throws (ConfigError, through the caller's prefix) with one line.
using SourceFail = std::function<void(const std::string&)>;

struct SourceFolders {
  std::filesystem::path base;                        // the problem file's folder
  std::string template_name;                         // relative to base
  std::vector<std::filesystem::path> template_dirs;  // where else the template may be
  std::vector<std::string> include_dirs;             // relative to base
};

// The template and every header of its folder and of include_dirs (at most 256 headers and
// 64 MiB per folder), a leading UTF-8 BOM removed, each #include checked and, where it names a
// header relative to the including file, rewritten to the name NVRTC knows that header by.
std::shared_ptr<KernelSources> load_kernel_sources(const SourceFolders& folders, const SourceFail& fail);

// Header `index`'s text for a compiler that looks beside the including file (nvcc, for `tune
// export torch`, which writes the headers under their names): each quoted #include of a header,
// which names it as NVRTC knows it, rewritten relative to this header's folder.
std::string header_for_nvcc(const KernelSources& sources, std::size_t index);

// The #include directives of `text`, for the check above (exposed for tests).
struct IncludeDirective {
  std::size_t line = 0;   // 1-based
  std::size_t begin = 0;  // offset of the opening " or < (or of the first character of a computed include)
  std::size_t end = 0;    // one past the closing " or >
  char delimiter = 0;     // '"', '<', or 0 for a computed include (#include MACRO)
  std::string name;       // between the delimiters; the rest of the line for a computed include
  // Why tune refuses the directive as written ("" for a plain #include): #include_next or #import,
  // or an #include spelled with %:, a comment or a line continuation before its file's name, which
  // a preprocessor reads as an #include and a plain scan would not.
  std::string refused;
};
std::vector<IncludeDirective> include_directives(const std::string& text);

}  // namespace tune
