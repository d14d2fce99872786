#pragma once
// An enum's names as one table of {value, name} pairs, read both ways: each enum's to_string and
// from_string are lookups in its table (the CUTLASS profiler's enumerated_types.h does the same).
#include <optional>
#include <string_view>
#include <utility>

namespace tune {

template <typename E>
using EnumName = std::pair<E, const char*>;

template <typename E, std::size_t N>
[[nodiscard]] constexpr std::optional<std::string_view> enum_name(const EnumName<E> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return std::nullopt;
}

template <typename E, std::size_t N>
[[nodiscard]] constexpr std::optional<E> enum_value(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace tune
