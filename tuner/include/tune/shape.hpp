#pragma once
// A problem shape: named integer dimensions in the problem's own order (B, N, C, H, ...).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tune {

class Shape {
 public:
  Shape() = default;
  explicit Shape(std::vector<std::pair<std::string, std::int64_t>> dims) : dims_(std::move(dims)) {}

  // Throws InputError naming the dimension when it is absent.
  [[nodiscard]] std::int64_t at(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const;
  void set(std::string_view name, std::int64_t value);
  [[nodiscard]] const std::vector<std::pair<std::string, std::int64_t>>& dims() const { return dims_; }
  // "B4_N64_C64_H32": the file stem of the shape's results.
  [[nodiscard]] std::string tag() const;
  // "B=4 N=64 C=64 H=32": for messages.
  [[nodiscard]] std::string describe() const;
  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::pair<std::string, std::int64_t>> dims_;
};

}  // namespace tune
