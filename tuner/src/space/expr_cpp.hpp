#pragma once
// A space expression (muParser syntax, as the configs write them) as a constexpr C++ expression
// of doubles, evaluated the way muParser evaluates it: the generated headers compute a
// configuration's geometry for any shape with the same numbers tune's lowering gets.
#include <functional>
#include <optional>
#include <string>

namespace tune::space {

// The C++ prelude the translated expressions call (namespace `detail` of the generated header):
// cdiv, floor, ceil, the integer remainder, logical not, min/max, ispow2 and power, as muParser
// and tune's expression functions define them. Includes nothing.
std::string cpp_expression_prelude();

// `resolve(name)` gives the C++ text of a name (a variable or a constant), or nothing for an
// unknown name. Throws std::invalid_argument naming what cannot be translated (a syntax error, an
// unknown name, a function with no constexpr translation).
std::string expression_to_cpp(const std::string& text,
                              const std::function<std::optional<std::string>(const std::string&)>& resolve);

}  // namespace tune::space
