#include "space/kernel_scan.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace tune {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::optional<int> count_in(const std::string& text, const std::string& kernel) {
  for (std::size_t g = text.find("__global__"); g != std::string::npos; g = text.find("__global__", g + 1)) {
    if ((g > 0 && ident_char(text[g - 1])) || (g + 10 < text.size() && ident_char(text[g + 10]))) continue;
    // The declaration runs to its body or its semicolon.
    const std::size_t end = text.find_first_of("{;", g);
    for (std::size_t at = text.find(kernel, g); at != std::string::npos && at < end; at = text.find(kernel, at + 1)) {
      if ((at > 0 && ident_char(text[at - 1])) || ident_char(text[at + kernel.size()])) continue;
      std::size_t open = at + kernel.size();
      while (open < text.size() && std::isspace(static_cast<unsigned char>(text[open]))) ++open;
      if (open >= text.size() || text[open] != '(') continue;
      int depth = 0, commas = 0;
      bool any = false;
      for (std::size_t i = open + 1; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '(' || c == '<' || c == '[' || c == '{')
          ++depth;
        else if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0)
          --depth;
        else if (c == ')') {
          const std::string inside = text.substr(open + 1, i - open - 1);
          const auto first = inside.find_first_not_of(" \t\r\n");
          if (!any || (first != std::string::npos && inside.compare(first, 4, "void") == 0 &&
                       inside.find_first_not_of(" \t\r\n", first + 4) == std::string::npos))
            return 0;
          // One bare name is no parameter (a type and a name): a macro that holds the list, which a
          // load cannot count (kUncounted).
          const auto last = inside.find_last_not_of(" \t\r\n");
          if (commas == 0 && std::all_of(inside.begin() + static_cast<std::ptrdiff_t>(first),
                                         inside.begin() + static_cast<std::ptrdiff_t>(last) + 1, ident_char))
            return kUncounted;
          return commas + 1;
        } else if (c == ',' && depth == 0)
          ++commas;
        if (!std::isspace(static_cast<unsigned char>(c))) any = true;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string strip_comments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  // Whole runs of ordinary characters at a time: this runs on every load of a space.
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
      out += ' ';
    } else if (text.compare(i, 2, "/*") == 0) {
      const auto end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 2;
      out += ' ';
    } else if (text[i] == '"' || text[i] == '\'') {
      const char q = text[i++];
      while (i < text.size() && text[i] != q && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
      ++i;
      out += ' ';
    } else {
      const auto next = text.find_first_of("/\"'", i + 1);
      const std::size_t end = next == std::string::npos ? text.size() : next;
      out.append(text, i, end - i);
      i = end;
    }
  }
  return out;
}

// The text without its `#if 0` blocks (up to their #else or #endif, nested #if counted): a kernel
// declared there is not the one compiled.
static std::string without_if0(const std::string& text) {
  std::string out;
  int skipping = 0;  // depth within an #if 0 block; 0: not in one
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t eol = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, eol - at);
    const std::size_t first = line.find_first_not_of(" \t\r");
    const bool hash = first != std::string_view::npos && line[first] == '#';
    std::string directive;  // a directive's text without blanks: "#if 0" is "#if0"
    if (hash)
      for (const char c : line)
        if (!std::isspace(static_cast<unsigned char>(c))) directive += c;
    if (skipping == 0 && hash && directive == "#if0") {
      skipping = 1;
    } else if (skipping > 0 && hash) {
      if (directive.starts_with("#if"))
        ++skipping;
      else if (directive.starts_with("#endif"))
        --skipping;
      else if (skipping == 1 && (directive.starts_with("#else") || directive.starts_with("#elif")))
        skipping = 0;
    } else if (skipping == 0) {
      out += line;
    }
    out += '\n';
    at = eol + 1;
  }
  return out;
}

std::vector<std::string> stripped_sources(const KernelSources& sources) {
  std::vector<std::string> out{without_if0(strip_comments(sources.main))};
  for (const auto& [name, text] : sources.headers) out.push_back(without_if0(strip_comments(text)));
  return out;
}

std::optional<int> kernel_parameter_count(const std::vector<std::string>& stripped, const std::string& kernel) {
  for (const auto& text : stripped)
    if (auto n = count_in(text, kernel)) return n;
  return std::nullopt;
}

}  // namespace tune
