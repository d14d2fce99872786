#pragma once
// The worker's wire format (see tune/worker_protocol.hpp): what a request carries, as JSON, both ways.
#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/measure.hpp"

namespace tune {

// An environment variable's value, or nullptr when it is unset or empty.
const char* worker_env(const char* name);

nlohmann::ordered_json lowered_json(const Lowered& l);
Lowered lowered_from(const nlohmann::ordered_json& j);

nlohmann::ordered_json options_json(const DeviceRunner::Options& o);
DeviceRunner::Options options_from(const nlohmann::ordered_json& j);

}  // namespace tune
