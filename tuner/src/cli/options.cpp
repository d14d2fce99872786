#include "cli/options.hpp"

#include <fmt/format.h>

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

CLI::Validator sanitize_modes() { return CLI::IsMember({"off", "winner", "finalists"}); }

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
