#include "cli/options.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tune/errors.hpp"

namespace tune::cli {

Log stderr_log() {
  return [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
}

CLI::Option* add_device_option(CLI::App& app, int& device) {
  return app.add_option("--device", device, "CUDA device ordinal")->capture_default_str();
}

void check_device_ordinal(int device) {
  if (device < 0) throw InputError(fmt::format("--device {}: expected a CUDA device ordinal, 0 or more", device));
}

CLI::Option* add_sanitize_option(CLI::App& app, SanitizeMode& mode, const std::string& description) {
  return app
      .add_option_function<std::string>(
          "--sanitize", [&mode](const std::string& text) { mode = sanitize_mode_from_string(text); }, description)
      ->check(CLI::IsMember(sanitize_mode_names()))
      ->default_str(to_string(mode));
}

std::string usage_error_line(const CLI::App* app, const CLI::Error& e) {
  std::string command = "tune";
  for (const CLI::App* a = app; a;) {  // the deepest subcommand given (tune export)
    const auto parsed = a->get_subcommands();
    a = parsed.empty() ? nullptr : parsed.front();
    if (!a) break;
    command += " " + a->get_name();
    const auto all = a->get_subcommands([](const CLI::App*) { return true; });
    if (a->get_require_subcommand_min() > 0 && a->get_subcommands().empty() && !all.empty()) {
      std::vector<std::string> names;
      for (const CLI::App* s : all) names.push_back(s->get_name());
      return fmt::format("tune: {} needs a subcommand: {} ({} {} --help)\n", a->get_name(), fmt::join(names, ", "), command,
                         names.front());
    }
  }
  return fmt::format("tune: {} ({} --help lists the options)\n", e.what(), command);
}

namespace {

// Digits after an optional sign (the first `sign` characters) without their leading zeros ("0" for
// all zeros), sign kept: CLI11 converts with base 0, so "010" would be octal 8 and "0x10" 16.
std::string decimal_digits(const std::string& v, std::size_t sign = 0) {
  const std::size_t first = v.find_first_not_of('0', sign);
  return v.substr(0, sign) + (first == std::string::npos ? std::string("0") : v.substr(first));
}

}  // namespace

CLI::Validator count_value() {
  return CLI::Validator(
      [](std::string& v) {
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
          return fmt::format("{} is not a count; give 1 or more, in decimal digits", v);
        // Past 2^64 - 1 the conversion saturated without a word: --max-space 10^23 enumerated
        // a space of 10^90 configurations.
        const std::string digits = decimal_digits(v);
        const std::string most = "18446744073709551615";
        if (digits.size() > most.size() || (digits.size() == most.size() && digits > most))
          return fmt::format("{} is too large; give at most {}", v, most);
        v = digits;
        return std::string();
      },
      "COUNT");
}

CLI::Validator finite_value() {
  return CLI::Validator(
      [](std::string& v) {
        double x = 0;
        return CLI::detail::lexical_cast(v, x) && std::isfinite(x) ? std::string()
                                                                   : fmt::format("{} is not a finite number", v);
      },
      "NUMBER");
}

CLI::Validator arch_value() {
  return CLI::Validator(
      [](std::string& v) {
        std::string digits = v;
        bool prefixed = false;
        for (const std::string prefix : {"sm_", "compute_", "sm"})
          if (digits.starts_with(prefix)) {
            digits.erase(0, prefix.size());
            prefixed = true;
            break;
          }
        const std::size_t first = !prefixed && digits.starts_with('-') ? 1 : 0;
        if (digits.size() <= first || digits.size() > first + 6 ||
            digits.find_first_not_of("0123456789", first) != std::string::npos)
          return fmt::format("{} is not a compute capability; give it as 90, sm_90 or sm90 (compute_90 also)", v);
        v = decimal_digits(digits, first);
        return std::string();
      },
      "CC");
}

void check_no_extras(const CLI::App& root, const CLI::App& sub) {
  if (sub.parsed() && !root.remaining().empty())
    throw InputError(fmt::format("tune {}: unexpected argument '{}' (tune {} --help lists its options)", sub.get_name(),
                                 root.remaining().front(), sub.get_name()));
}

std::set<std::string> long_option_names(const CLI::App& app) {
  std::set<std::string> out;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) out.insert(n);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    for (const std::string& n : long_option_names(*sub)) out.insert(n);
  return out;
}

void decimal_integers(CLI::App& app) {
  // CLI11 converts with base 0: "--jobs 010" was 8 jobs and "--budget 0x10" 16, without a word.
  const CLI::Validator decimal(
      [](std::string& v) {
        const std::size_t sign = !v.empty() && (v[0] == '-' || v[0] == '+') ? 1 : 0;
        if (sign == v.size() || v.find_first_not_of("0123456789", sign) != std::string::npos)
          return fmt::format("{} is not a decimal integer", v);
        v = decimal_digits(v, sign);
        return std::string();
      },
      "");
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    // A count (count_value) and a compute capability (arch_value: sm_90) read their own digits,
    // with their own messages.
    const bool own_digits = type.find(":COUNT") != std::string::npos || type.find(":CC") != std::string::npos;
    if ((type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) && !own_digits) o->transform(decimal);
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) decimal_integers(*sub);
}

void check_no_empty_values(const CLI::App& app) {
  std::vector<const CLI::App*> apps{&app};
  for (const CLI::App* sub : app.get_subcommands()) apps.push_back(sub);
  for (const CLI::App* a : apps)
    for (const CLI::Option* o : a->get_options())
      if (o->get_type_size() > 0)
        for (const std::string& v : o->results())
          if (v.empty())
            throw InputError(fmt::format("{} is given an empty value; give one, or leave the option out", o->get_name()));
}

}  // namespace tune::cli
