#pragma once
// Every JSON file tune reads (results, journals, goldens, sweep files, problem and space files)
// through one bounded reader: a gzip bomb, /dev/zero or a value nested 100 000 deep is refused in
// one line naming the file (exit 2), instead of exhausting memory or the stack (issue 34, #18, #19).
#include <cstddef>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace tune::json_file {

// The most bytes a JSON file may hold, decompressed: results of record are megabytes.
inline constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
// The deepest nesting of arrays and objects taken: tune's own files nest under 10 levels.
inline constexpr int kMaxDepth = 512;

// The file's bytes (a gzip file decompressed), at most kMaxBytes. Throws InputError "<file>: ...".
std::string read_text(const std::filesystem::path& file);
// `text` parsed, nesting deeper than kMaxDepth refused. Throws InputError "<name>: not valid JSON (...)".
nlohmann::ordered_json parse(const std::string& text, const std::string& name);
// parse(), but a syntax error throws nlohmann's parse_error: a journal passes over a line a kill tore.
nlohmann::ordered_json parse_line(const std::string& text, const std::string& name);
// read_text, then parse.
nlohmann::ordered_json read(const std::filesystem::path& file);

// At most `max` characters of v's JSON text for a message, without writing out all of it.
std::string brief(const nlohmann::ordered_json& v, std::size_t max = 60);

// Whether `s` is UTF-8 text, as every JSON string tune writes must be (a path, an argument).
bool is_utf8(const std::string& s);
// `s` for a message: each byte that is not UTF-8 written as U+FFFD (readers decode tune's lines as UTF-8).
std::string printable(const std::string& s);

}  // namespace tune::json_file
