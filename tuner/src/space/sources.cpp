#include "space/sources.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "tune/compile.hpp"
#include "tune/errors.hpp"
#include "tune/space.hpp"

namespace tune {

// A lowered variant as NVRTC compiles it (tune/space.hpp).
CompileRequest compile_request(const Lowered& lowered, std::vector<std::string> options) {
  if (!lowered.sources) throw InputError("the search space was read without its template files; load it from a file");
  CompileRequest req{lowered.sources->main,
                     lowered.template_name,
                     {},
                     std::move(options),
                     with_cuda_headers(lowered.sources->main, lowered.sources->headers)};
  for (const auto& k : lowered.launches) req.name_expressions.push_back(k.name_expression);
  return req;
}
namespace {

namespace fs = std::filesystem;

// Per folder: a template's folder is read whole, so a folder such as / or $HOME is refused
// rather than walked.
constexpr std::size_t kMaxHeaders = 256;
constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxEntries = 20000;

bool is_header(const fs::path& p) {
  const auto e = p.extension().string();
  return e == ".cuh" || e == ".h" || e == ".hpp" || e == ".inc" || e == ".cu";
}

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : c;
}

bool inside(const fs::path& real, const std::vector<fs::path>& allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const fs::path& root) {
    const fs::path rel = real.lexically_relative(root);
    return !rel.empty() && *rel.begin() != "..";
  });
}

// A source as NVRTC must get it: a leading UTF-8 byte-order mark removed (NVRTC takes it for a
// token). NVRTC ends a text at a 0xFF byte (its end-of-file mark) and nvrtcCreateProgram at a NUL,
// so either would compile a silently shortened file: refused with where it is.
std::string read_source(const fs::path& p, const SourceFail& fail) {
  std::ifstream f(p, std::ios::binary);
  if (!f) fail(fmt::format("{} cannot be read; check its permissions", p.string()));
  std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  const std::size_t bad = text.find_first_of(std::string_view("\0\xFF", 2));
  if (bad != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    const std::size_t line_start = bad == 0 ? 0 : text.rfind('\n', bad - 1) + 1;  // npos + 1 == 0
    fail(fmt::format("{}:{}:{}: byte 0x{:02X}: NVRTC stops reading the file there; remove it (UTF-8 text has no such byte)",
                     p.string(), line, bad - line_start + 1, static_cast<unsigned char>(text[bad])));
  }
  return text;
}

// Why a file an #include may name is not among the headers (symlinks out, unreadable, shadowed).
using NotPassed = std::map<fs::path, std::string>;

// The header files under `root`, sorted. A symlink is one when it resolves to a file inside the
// allowed folders; unreadable folders and files are skipped.
std::vector<fs::path> headers_under(const fs::path& root, const std::vector<fs::path>& allowed, NotPassed* not_passed,
                                    const SourceFail& fail) {
  auto too_big = [&] {
    fail(
        fmt::format("the folder {} holds more than {} headers, {} entries or 64 MiB; give the kernel a folder of its own "
                    "and list only the folders it includes from in 'include_dirs'",
                    root.string(), kMaxHeaders, kMaxEntries));
  };
  std::vector<fs::path> found;
  std::size_t entries = 0;
  std::error_code ec;
  using It = fs::recursive_directory_iterator;
  for (It it(root, fs::directory_options::skip_permission_denied, ec); !ec && it != It(); it.increment(ec)) {
    if (++entries > kMaxEntries) too_big();
    const fs::path& p = it->path();
    std::error_code e;
    if (!is_header(p) || !it->is_regular_file(e)) continue;  // follows a symlink
    const fs::path shown = p.lexically_relative(root);
    if (it->is_symlink(e) && !inside(canonical_or_self(p), allowed)) {
      (*not_passed)[p.lexically_normal()] = fmt::format(
          "{} is a symlink to {}, outside the template's folder and include_dirs; not passed to NVRTC (copy the file in, "
          "or add its folder to 'include_dirs')",
          shown.generic_string(), canonical_or_self(p).string());
      continue;
    }
    if (!std::ifstream(p)) {
      (*not_passed)[p.lexically_normal()] = shown.generic_string() + " cannot be read; check its permissions";
      continue;
    }
    found.push_back(p);
    if (found.size() > kMaxHeaders) too_big();
  }
  if (ec) fail(fmt::format("cannot read the folder {} ({})", root.string(), ec.message()));
  std::sort(found.begin(), found.end());
  return found;
}

fs::path find_template(const SourceFolders& f, const SourceFail& fail) {
  std::error_code ec;
  std::vector<fs::path> tried{f.base / f.template_name};
  for (const auto& d : f.template_dirs) tried.push_back(d / fs::path(f.template_name).filename());
  for (const auto& t : tried)
    if (fs::is_regular_file(t, ec)) return canonical_or_self(t);
  std::vector<std::string> names;
  for (const auto& t : tried) names.push_back(t.string());
  fail(fmt::format("'template': {} not found (looked for {})", f.template_name, fmt::join(names, ", ")));
  return {};
}

struct IncludeContext {
  std::vector<fs::path> roots;              // the template's folder, then include_dirs
  std::vector<fs::path> allowed;            // the same, canonical
  std::map<fs::path, std::string> by_path;  // canonical path -> the header's name for NVRTC
  NotPassed not_passed;
  const SourceFail* fail = nullptr;
};

// The name NVRTC knows the included file by, looked up as a C preprocessor does (a quoted name
// beside the including file first, then in each folder); nullopt when no such file exists (one
// of NVRTC's own headers, or an error NVRTC reports: it has no directory to read from).
std::optional<std::string> include_target(const IncludeDirective& d, const fs::path& including, const std::string& where,
                                          const IncludeContext& c) {
  const SourceFail& fail = *c.fail;
  if (!d.refused.empty()) fail(fmt::format("{}: {}", where, d.refused));
  const std::string outside =
      "outside the template's folder and include_dirs; NVRTC is given only those folders' headers: add "
      "its folder to 'include_dirs' in the problem file and include it by its name there";
  if (d.delimiter == 0)
    fail(fmt::format("{}: '#include {}' names no file; write the file's name in quotes, so tune can check what NVRTC reads",
                     where, d.name));
  if (fs::path(d.name).is_absolute()) fail(fmt::format("{}: #include \"{}\" is {}", where, d.name, outside));
  std::vector<fs::path> candidates;
  if (d.delimiter == '"') candidates.push_back(including.parent_path() / d.name);
  for (const auto& r : c.roots) candidates.push_back(r / d.name);
  for (const auto& candidate : candidates) {
    const fs::path p = candidate.lexically_normal();
    if (const auto np = c.not_passed.find(p); np != c.not_passed.end())
      fail(fmt::format("{}: #include \"{}\": {}", where, d.name, np->second));
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    const fs::path real = canonical_or_self(p);
    if (const auto h = c.by_path.find(real); h != c.by_path.end()) return h->second;
    if (!inside(real, c.allowed))
      fail(fmt::format("{}: #include \"{}\" reads {}, {}", where, d.name, real.string(), outside));
    fail(
        fmt::format("{}: #include \"{}\" reads {}, which is not passed to NVRTC (only .cuh, .h, .hpp, .inc and .cu files "
                    "are); rename it",
                    where, d.name, real.string()));
  }
  return std::nullopt;
}

// Checks every #include of the sources (see include_target) and rewrites one that names a header
// relative to the including file to the header's name, so NVRTC, which matches names literally,
// reads the file a C preprocessor would.
void resolve_includes(KernelSources& s, IncludeContext& c) {
  for (std::size_t i = 0; i < s.headers.size(); ++i)
    c.by_path.emplace(canonical_or_self(s.files[i + 1]), s.headers[i].first);
  for (std::size_t i = 0; i <= s.headers.size(); ++i) {
    std::string& text = i == 0 ? s.main : s.headers[i - 1].second;
    const std::vector<IncludeDirective> directives = include_directives(text);
    for (auto d = directives.rbegin(); d != directives.rend(); ++d) {  // from the end: earlier offsets stay
      const auto target = include_target(*d, s.files[i], fmt::format("{}:{}", s.files[i].string(), d->line), c);
      if (target && *target != d->name) text.replace(d->begin + 1, d->end - d->begin - 2, *target);
    }
  }
}

// The directive's name as a preprocessor reads it from `at` (just past `#` or `%:`): line
// continuations spliced and comments skipped; whether either came before the name.
std::pair<std::string, bool> logical_directive_name(const std::string& t, std::size_t j) {
  std::string name;
  bool odd = false;
  while (j < t.size()) {
    if (t[j] == '\\' && (t.compare(j + 1, 1, "\n") == 0 || t.compare(j + 1, 2, "\r\n") == 0)) {
      j += t[j + 1] == '\r' ? 3 : 2;
      odd = true;
    } else if (t.compare(j, 2, "/*") == 0) {
      j = std::min(t.find("*/", j + 2), t.size() - 2) + 2;
      odd = true;
      if (!name.empty()) break;
    } else if (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_') {
      name += t[j++];
    } else if (name.empty() && (t[j] == ' ' || t[j] == '\t')) {
      ++j;
    } else {
      break;
    }
  }
  return {name, odd};
}

// `#` (or `%:`, `digraph`) at `at` begins a directive; an #include's name and where it is, if it
// is one (IncludeDirective::refused says why one is not taken as written).
std::optional<IncludeDirective> directive_at(const std::string& t, std::size_t at, std::size_t line, bool digraph) {
  auto skip_blanks = [&](std::size_t j) {
    while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
    return j;
  };
  const std::size_t after = at + (digraph ? 2 : 1);
  const auto [word, odd] = logical_directive_name(t, after);
  if (word != "include" && word != "include_next" && word != "import") return std::nullopt;
  const std::size_t eol = std::min(t.find('\n', after), t.size());
  if (word != "include")
    return IncludeDirective{line,
                            after,
                            eol,
                            0,
                            word,
                            fmt::format("#{} is not taken in a kernel template (NVRTC is given the problem's headers by "
                                        "name); write it as #include \"file\"",
                                        word)};
  if (digraph || odd)
    return IncludeDirective{line,
                            after,
                            eol,
                            0,
                            word,
                            "an #include written with %:, a comment or a line continuation before its file's name; "
                            "write it as #include \"file\" on one line, so tune can check what NVRTC reads"};
  std::size_t j = skip_blanks(after) + 7;
  j = skip_blanks(j);
  IncludeDirective d{line, j, eol, 0, {}, {}};
  if (j < eol && (t[j] == '"' || t[j] == '<')) {
    const std::size_t close = t.find(t[j] == '"' ? '"' : '>', j + 1);
    if (close < eol) {
      d.delimiter = t[j];
      d.end = close + 1;
      d.name = t.substr(j + 1, close - j - 1);
      return d;
    }
  }
  d.name = t.substr(j, eol - j);
  while (!d.name.empty() && std::isspace(static_cast<unsigned char>(d.name.back()))) d.name.pop_back();
  return d;
}

}  // namespace

std::vector<IncludeDirective> include_directives(const std::string& t) {
  std::vector<IncludeDirective> out;
  std::size_t line = 1;
  bool line_start = true;  // nothing but blanks and comments before, on this line
  for (std::size_t i = 0; i < t.size();) {
    const char c = t[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      ++i;
    } else if (t.compare(i, 2, "//") == 0) {
      i = std::min(t.find('\n', i), t.size());
    } else if (t.compare(i, 2, "/*") == 0) {
      const std::size_t stop = std::min(t.find("*/", i + 2), t.size() - 2) + 2;
      line += static_cast<std::size_t>(
          std::count(t.begin() + static_cast<std::ptrdiff_t>(i), t.begin() + static_cast<std::ptrdiff_t>(stop), '\n'));
      i = stop;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if ((c == '#' || t.compare(i, 2, "%:") == 0) && line_start) {
      line_start = false;
      const auto d = directive_at(t, i, line, c == '%');
      if (d) out.push_back(*d);
      i = d ? d->end : i + 1;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < t.size() && t[i] != c && t[i] != '\n') i += t[i] == '\\' ? 2 : 1;
      if (i < t.size() && t[i] == c) ++i;
      line_start = false;
    } else {
      line_start = false;
      ++i;
    }
  }
  return out;
}

std::string header_for_nvcc(const KernelSources& sources, std::size_t index) {
  const auto& [name, original] = sources.headers.at(index);
  const fs::path dir = fs::path(name).parent_path();
  std::string text = original;
  if (dir.empty()) return text;
  const std::vector<IncludeDirective> directives = include_directives(text);
  for (auto d = directives.rbegin(); d != directives.rend(); ++d) {
    const bool header =
        std::any_of(sources.headers.begin(), sources.headers.end(), [&](const auto& h) { return h.first == d->name; });
    if (d->delimiter == '"' && header)
      text.replace(d->begin + 1, d->end - d->begin - 2, fs::path(d->name).lexically_relative(dir).generic_string());
  }
  return text;
}

std::shared_ptr<KernelSources> load_kernel_sources(const SourceFolders& f, const SourceFail& fail) {
  const fs::path main = find_template(f, fail);
  IncludeContext c;
  c.fail = &fail;
  c.roots.push_back(main.parent_path());
  for (const auto& d : f.include_dirs) {
    std::error_code ec;
    const fs::path root = (f.base / d).lexically_normal();
    if (!fs::is_directory(root, ec)) fail(fmt::format("'include_dirs': {} is not a folder", root.string()));
    c.roots.push_back(root);
  }
  for (const auto& r : c.roots) c.allowed.push_back(canonical_or_self(r));
  auto out = std::make_shared<KernelSources>();
  out->main_name = main.filename().string();
  out->main = read_source(main, fail);
  out->files.push_back(main);
  std::size_t bytes = out->main.size();
  for (const auto& root : c.roots) {
    for (const auto& file : headers_under(root, c.allowed, &c.not_passed, fail)) {
      const std::string name = file.lexically_relative(root).generic_string();
      if (canonical_or_self(file) == main) continue;
      if (std::any_of(out->headers.begin(), out->headers.end(), [&](const auto& h) { return h.first == name; })) {
        c.not_passed[file.lexically_normal()] =
            fmt::format("{} is shadowed by the header of that name in an earlier folder", name);
        continue;
      }
      out->headers.emplace_back(name, read_source(file, fail));
      out->files.push_back(file);
      bytes += out->headers.back().second.size();
      if (bytes > kMaxBytes)
        fail(fmt::format(
            "the folder {} holds more than {} headers, {} entries or 64 MiB; give the kernel a folder of its own",
            root.string(), kMaxHeaders, kMaxEntries));
    }
  }
  resolve_includes(*out, c);
  return out;
}

}  // namespace tune
