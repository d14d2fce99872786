#pragma once
// --sanitize: which finalists the correctness gate (tune/gate.hpp) runs under compute-sanitizer.
// Apart from the gate so that the options that carry it (TuneOptions, VerifyOptions, CheckOptions)
// and the command line that parses it need nothing else of the gate.
#include <string>
#include <vector>

namespace tune {

// The output checks run on every finalist whatever this says.
enum class SanitizeMode { kOff, kWinner, kFinalists };
// Throws InputError naming the choices.
SanitizeMode sanitize_mode_from_string(const std::string& text);
std::string to_string(SanitizeMode mode);
std::vector<std::string> sanitize_mode_names();  // in table order: --sanitize's choices

}  // namespace tune
