// Element types (tune/dtype.hpp): names, sizes and the bit-exact encodings of each.
#include "tune/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tune {
namespace {

struct Info {
  DType type;
  std::string_view name, cuda, torch, npy;
  std::size_t size;
};

constexpr std::array<Info, 9> kInfo{{
    {DType::kFloat16, "float16", "__half", "at::kHalf", "<f2", 2},
    {DType::kBFloat16, "bfloat16", "__nv_bfloat16", "at::kBFloat16", "<f4", 2},
    {DType::kFloat32, "float32", "float", "at::kFloat", "<f4", 4},
    {DType::kFloat64, "float64", "double", "at::kDouble", "<f8", 8},
    {DType::kInt8, "int8", "signed char", "at::kChar", "|i1", 1},
    {DType::kInt32, "int32", "int", "at::kInt", "<i4", 4},
    {DType::kInt64, "int64", "long long", "at::kLong", "<i8", 8},
    {DType::kUInt8, "uint8", "unsigned char", "at::kByte", "|u1", 1},
    {DType::kBool, "bool", "bool", "at::kBool", "|b1", 1},
}};
constexpr std::array<DType, 9> kAll{DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,
                                    DType::kInt32,   DType::kInt64,    DType::kUInt8,   DType::kBool};

const Info& info(DType t) { return kInfo.at(static_cast<std::size_t>(t)); }

// Round a float32 to the nearest bfloat16 (ties to even); NaN stays a quiet NaN.
std::uint16_t bf16_bits(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  const std::uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}
float bf16_value(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// A double to the nearest IEEE binary16 (ties to even), from the double directly (no double
// rounding through float32); overflow gives +-inf.
std::uint16_t f16_bits(double v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7E00;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7C00;                      // 65504 + half an ulp rounds to inf
  if (a < std::ldexp(1.0, -14)) {                              // subnormal: multiples of 2^-24
    const double q = std::nearbyint(a * std::ldexp(1.0, 24));  // ties to even (default mode)
    return sign | static_cast<std::uint16_t>(q);
  }
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: scale to [1024, 2048)
  double q = std::nearbyint(m * 2048.0);
  if (q == 2048.0) {
    q = 1024.0;
    ++e;
  }
  const int exp_field = e - 1 + 15;
  if (exp_field >= 31) return sign | 0x7C00;
  return sign | static_cast<std::uint16_t>((exp_field << 10) | (static_cast<int>(q) - 1024));
}
double f16_value(std::uint16_t h) {
  const bool neg = (h & 0x8000) != 0;
  const int exp_field = (h >> 10) & 0x1F;
  const int frac = h & 0x3FF;
  double v = 0;
  if (exp_field == 0)
    v = std::ldexp(frac, -24);
  else if (exp_field == 31)
    v = frac ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(1024 + frac, exp_field - 25);
  return neg ? -v : v;
}

// A double to bfloat16 without double rounding: via float32 with round-to-odd.
std::uint16_t bf16_bits_from_double(double v) {
  float f = static_cast<float>(v);
  if (std::isfinite(v) && std::isfinite(f) && static_cast<double>(f) != v) {
    auto u = std::bit_cast<std::uint32_t>(f);
    // Make the float32 round-to-odd: truncate toward zero, then set the last bit.
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) --u;
    u |= 1;
    f = std::bit_cast<float>(u);
  }
  return bf16_bits(f);
}

template <typename I>
double wrap_int(double v) {
  if (!std::isfinite(v)) return 0;
  const double t = std::trunc(v);
  if (t >= static_cast<double>(std::numeric_limits<I>::min()) && t <= static_cast<double>(std::numeric_limits<I>::max()))
    return t;
  // Out of range: the two's-complement wrap of the value's low bits, as the device would see them.
  const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(std::fmod(t, 18446744073709551616.0)));
  return static_cast<double>(static_cast<I>(bits));
}

template <typename T>
void put(T x, std::byte* out) {
  std::memcpy(out, &x, sizeof x);
}
template <typename T>
T get(const std::byte* in) {
  T x;
  std::memcpy(&x, in, sizeof x);
  return x;
}

}  // namespace

std::span<const DType> all_dtypes() { return kAll; }
std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const Info& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

std::string dtype_choices() {
  std::vector<std::string_view> names;
  for (const Info& i : kInfo) names.push_back(i.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::size_t dtype_size(DType t) { return info(t).size; }
bool is_floating(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 || t == DType::kFloat64;
}
bool is_low_precision(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }
std::string_view dtype_cuda_type(DType t) { return info(t).cuda; }
std::string_view dtype_torch_scalar(DType t) { return info(t).torch; }
std::string_view dtype_npy_descr(DType t) { return info(t).npy; }

double dtype_max(DType t) {
  switch (t) {
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return bf16_value(0x7F7F);
    case DType::kFloat32:
      return std::numeric_limits<float>::max();
    case DType::kFloat64:
      return std::numeric_limits<double>::max();
    case DType::kInt8:
      return 127;
    case DType::kInt32:
      return std::numeric_limits<std::int32_t>::max();
    case DType::kInt64:
      return 9007199254740992.0;  // 2^53: host data holds int64 as doubles
    case DType::kUInt8:
      return 255;
    case DType::kBool:
      return 1;
  }
  return 0;
}

double dtype_lowest(DType t) {
  switch (t) {
    case DType::kInt8:
      return -128;
    case DType::kInt32:
      return std::numeric_limits<std::int32_t>::min();
    case DType::kInt64:
      return -9007199254740992.0;
    case DType::kUInt8:
    case DType::kBool:
      return 0;
    default:
      return -dtype_max(t);
  }
}

double dtype_min_normal(DType t) {
  switch (t) {
    case DType::kFloat16:
      return std::ldexp(1.0, -14);
    case DType::kBFloat16:
    case DType::kFloat32:
      return std::ldexp(1.0, -126);
    case DType::kFloat64:
      return std::numeric_limits<double>::min();
    default:
      return 0;
  }
}

double dtype_epsilon(DType t) {
  switch (t) {
    case DType::kFloat16:
      return std::ldexp(1.0, -10);
    case DType::kBFloat16:
      return std::ldexp(1.0, -7);
    case DType::kFloat32:
      return std::ldexp(1.0, -23);
    case DType::kFloat64:
      return std::ldexp(1.0, -52);
    default:
      return 0;
  }
}

double round_to(DType t, double v) {
  switch (t) {
    case DType::kFloat16:
      return f16_value(f16_bits(v));
    case DType::kBFloat16:
      return bf16_value(bf16_bits_from_double(v));
    case DType::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    case DType::kFloat64:
      return v;
    case DType::kInt8:
      return wrap_int<std::int8_t>(v);
    case DType::kInt32:
      return wrap_int<std::int32_t>(v);
    case DType::kInt64:
      return std::isfinite(v) ? std::trunc(v) : 0;
    case DType::kUInt8:
      return wrap_int<std::uint8_t>(v);
    case DType::kBool:
      return v != 0 ? 1 : 0;
  }
  return v;
}

bool representable(DType t, double v) {
  // int64's range ends one below 2^63, which a double reads 9223372036854775807 as (rounding up).
  if (t == DType::kInt64 && !(v >= -0x1p63 && v < 0x1p63)) return false;
  return std::isfinite(v) && round_to(t, v) == v;
}

bool held_exactly(DType t, double v) {
  return representable(t, v) && (is_floating(t) || (v >= dtype_lowest(t) && v <= dtype_max(t)));
}

void encode(DType t, double v, std::byte* out) {
  switch (t) {
    case DType::kFloat16:
      put(f16_bits(v), out);
      break;
    case DType::kBFloat16:
      put(bf16_bits_from_double(v), out);
      break;
    case DType::kFloat32:
      put(static_cast<float>(v), out);
      break;
    case DType::kFloat64:
      put(v, out);
      break;
    case DType::kInt8:
      put(static_cast<std::int8_t>(round_to(t, v)), out);
      break;
    case DType::kInt32:
      put(static_cast<std::int32_t>(round_to(t, v)), out);
      break;
    case DType::kInt64:
      put(static_cast<std::int64_t>(round_to(t, v)), out);
      break;
    case DType::kUInt8:
      put(static_cast<std::uint8_t>(round_to(t, v)), out);
      break;
    case DType::kBool:
      put(static_cast<std::uint8_t>(v != 0 ? 1 : 0), out);
      break;
  }
}

double decode(DType t, const std::byte* in) {
  switch (t) {
    case DType::kFloat16:
      return f16_value(get<std::uint16_t>(in));
    case DType::kBFloat16:
      return bf16_value(get<std::uint16_t>(in));
    case DType::kFloat32:
      return get<float>(in);
    case DType::kFloat64:
      return get<double>(in);
    case DType::kInt8:
      return get<std::int8_t>(in);
    case DType::kInt32:
      return get<std::int32_t>(in);
    case DType::kInt64:
      return static_cast<double>(get<std::int64_t>(in));
    case DType::kUInt8:
      return get<std::uint8_t>(in);
    case DType::kBool:
      // The byte as it is: a bool holds 0 or 1, and another byte (the harness's 0xFF fill, a 2
      // stored through unsigned char*) is no value PyTorch's bool holds, so it matches no reference.
      return get<std::uint8_t>(in);
  }
  return 0;
}

std::vector<std::byte> encode_all(DType t, std::span<const double> values) {
  const std::size_t n = dtype_size(t);
  std::vector<std::byte> out(values.size() * n);
  for (std::size_t i = 0; i < values.size(); ++i) encode(t, values[i], out.data() + i * n);
  return out;
}

std::vector<double> decode_all(DType t, std::span<const std::byte> bytes) {
  const std::size_t n = dtype_size(t);
  std::vector<double> out(bytes.size() / n);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = decode(t, bytes.data() + i * n);
  return out;
}

}  // namespace tune
