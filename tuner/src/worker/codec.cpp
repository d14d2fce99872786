// The worker's wire format: one JSON object per line each way (see tune/worker_protocol.hpp).
#include "worker/codec.hpp"

#include <cstdlib>

namespace tune {

using Json = nlohmann::ordered_json;

const char* worker_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

Json lowered_json(const Lowered& l) {
  Json launches = Json::array();
  for (const auto& k : l.launches)
    launches.push_back({{"kernel", k.kernel},
                        {"name_expression", k.name_expression},
                        {"grid", k.grid},
                        {"block", k.block},
                        {"dynamic_smem", k.dynamic_smem},
                        {"args", k.args}});
  Json scratch = Json::array();
  for (const auto& t : l.scratch) scratch.push_back({{"name", t.name}, {"shape", t.shape}});
  return {{"template_name", l.template_name}, {"launches", launches}, {"scratch", scratch}};
}

Lowered lowered_from(const Json& j) {
  Lowered l;
  l.template_name = j.at("template_name").get<std::string>();
  for (const auto& k : j.at("launches"))
    l.launches.push_back({k.at("kernel").get<std::string>(), k.at("name_expression").get<std::string>(),
                          k.at("grid").get<std::array<unsigned, 3>>(), k.at("block").get<std::array<unsigned, 3>>(),
                          k.at("dynamic_smem").get<unsigned>(), k.at("args").get<std::vector<std::string>>()});
  for (const auto& t : j.at("scratch"))
    l.scratch.push_back({t.at("name").get<std::string>(), t.at("shape").get<std::vector<std::int64_t>>()});
  return l;
}

Json options_json(const DeviceRunner::Options& o) {
  return {{"profile", o.rule.profile},
          {"warmup_launches", o.warmup_launches},
          {"batch_launches", o.batch_launches},
          {"check_parity", o.check_parity}};
}

DeviceRunner::Options options_from(const Json& j) {
  DeviceRunner::Options o;
  const auto profile = j.at("profile").get<std::string>();
  o.rule = profile == "strict" ? StopRule::strict() : profile == "screen" ? StopRule::screen() : StopRule::search();
  o.warmup_launches = j.at("warmup_launches").get<int>();
  o.batch_launches = j.at("batch_launches").get<int>();
  o.check_parity = j.at("check_parity").get<bool>();
  return o;
}

}  // namespace tune
