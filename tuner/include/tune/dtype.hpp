#pragma once
// Element types of a problem's tensors (issue 35), named as PyTorch spells them. Host data holds
// every element as a double (exact for each of them; int64 within +-2^53); a tensor is encoded in
// its dtype only at the device boundary, in the golden files and in the reference protocol.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tune {

enum class DType : std::uint8_t { kFloat16, kBFloat16, kFloat32, kFloat64, kInt8, kInt32, kInt64, kUInt8, kBool };

// Every dtype, in the order above (the order of the docs' table).
[[nodiscard]] std::span<const DType> all_dtypes();
// "bfloat16": PyTorch's name (torch.bfloat16).
[[nodiscard]] std::string_view dtype_name(DType t);
// Exactly one of the names above; nullopt otherwise (callers refuse in one line naming the choices).
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view name);
// "float16, bfloat16, float32, float64, int8, int32, int64, uint8, bool": for messages.
[[nodiscard]] std::string dtype_choices();
[[nodiscard]] std::size_t dtype_size(DType t);
[[nodiscard]] bool is_floating(DType t);  // float16, bfloat16, float32, float64
// bfloat16 and float16: compared by the low-precision parity rules (docs/problem-format.md).
[[nodiscard]] bool is_low_precision(DType t);
// The type a kernel template receives for it: "__half", "__nv_bfloat16", "float", "double",
// "signed char", "int", "long long", "unsigned char", "bool". Low-precision types need
// <cuda_fp16.h> / <cuda_bf16.h>, which NVRTC provides.
[[nodiscard]] std::string_view dtype_cuda_type(DType t);
// The dtype as a PyTorch extension checks it (`at::ScalarType`): "at::kHalf", "at::kBFloat16",
// "at::kFloat", "at::kDouble", "at::kChar", "at::kInt", "at::kLong", "at::kByte", "at::kBool".
[[nodiscard]] std::string_view dtype_torch_scalar(DType t);
// NumPy's array-protocol string for .npy files: "<f2", "<f4", "<f8", "|i1", "<i4", "<i8", "|u1",
// "|b1"; bfloat16 has none (NumPy lacks the type) and is written as "<f4", which holds it exactly.
[[nodiscard]] std::string_view dtype_npy_descr(DType t);
// The largest finite value and the smallest positive normal (floating) or the range (integers).
[[nodiscard]] double dtype_max(DType t);
[[nodiscard]] double dtype_lowest(DType t);
[[nodiscard]] double dtype_min_normal(DType t);  // 0 for integers and bool
// Machine epsilon (2^-mantissa bits); 0 for integers and bool.
[[nodiscard]] double dtype_epsilon(DType t);

// `v` as the dtype holds it: round to nearest even for floating types (overflow gives +-inf,
// NaN stays NaN); integers and bool: truncated toward zero and wrapped as a C++ cast of an
// in-range value; bool: v != 0. Callers check ranges before rounding where a wrap would be wrong.
[[nodiscard]] double round_to(DType t, double v);
// Whether round_to(t, v) == v for a finite v (the value is representable).
[[nodiscard]] bool representable(DType t, double v);
// Whether host data (doubles) holds `v` as a value of the dtype with nothing lost: representable and,
// for an integer dtype, within [dtype_lowest, dtype_max]. int64 stops at +-2^53, where doubles stop
// holding every integer: 2^53 + 1 written in a problem file or a golden would become 2^53 unseen.
[[nodiscard]] bool held_exactly(DType t, double v);

// Encoding of one element (little-endian, dtype_size(t) bytes) and back. A bool decodes to its
// byte's value: 0 and 1 are false and true, any other byte is no bool and stays itself.
void encode(DType t, double v, std::byte* out);
[[nodiscard]] double decode(DType t, const std::byte* in);
// A whole tensor: values -> bytes, bytes -> values.
[[nodiscard]] std::vector<std::byte> encode_all(DType t, std::span<const double> values);
[[nodiscard]] std::vector<double> decode_all(DType t, std::span<const std::byte> bytes);

}  // namespace tune
