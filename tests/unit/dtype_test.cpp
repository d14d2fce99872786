// Element types: names, rounding and the bit-exact encodings (tune/dtype.hpp).
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "compile/kernel_params.hpp"
#include "tune/dtype.hpp"

namespace tune {
namespace {

TEST(DType, NamesRoundTripAndUnknownNamesAreRefused) {
  for (DType t : all_dtypes()) EXPECT_EQ(parse_dtype(dtype_name(t)), t) << dtype_name(t);
  EXPECT_FALSE(parse_dtype("bf16"));
  EXPECT_FALSE(parse_dtype("Float32"));
  EXPECT_FALSE(parse_dtype(""));
  EXPECT_EQ(dtype_choices(), "float16, bfloat16, float32, float64, int8, int32, int64, uint8, bool");
}

TEST(DType, BFloat16RoundsToNearestEvenWithoutDoubleRounding) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(round_to(DType::kBFloat16, 1.0 + std::ldexp(1.0, -8)), 1.0);
  // Just above the tie rounds up, even when float32 would round the double to the tie first.
  EXPECT_EQ(round_to(DType::kBFloat16, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to(DType::kBFloat16, 3.0 + std::ldexp(1.0, -7)), 3.0);  // 3 + half ulp (ulp 2^-6): to even
  EXPECT_TRUE(std::isinf(round_to(DType::kBFloat16, 1e39)));
  EXPECT_EQ(dtype_max(DType::kBFloat16), 3.3895313892515355e38);
  EXPECT_TRUE(std::isnan(round_to(DType::kBFloat16, std::nan(""))));
}

TEST(DType, Float16RoundsSubnormalsAndOverflow) {
  EXPECT_EQ(round_to(DType::kFloat16, 65504.0), 65504.0);
  EXPECT_EQ(round_to(DType::kFloat16, 65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(round_to(DType::kFloat16, 65520.0)));
  EXPECT_EQ(round_to(DType::kFloat16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(round_to(DType::kFloat16, std::ldexp(1.0, -25)), 0.0);                   // tie to even: 0
  EXPECT_EQ(round_to(DType::kFloat16, std::ldexp(3.0, -26)), std::ldexp(1.0, -24));  // above the tie
  EXPECT_EQ(round_to(DType::kFloat16, 1.0 + std::ldexp(1.0, -11)), 1.0);             // tie to even
  EXPECT_EQ(round_to(DType::kFloat16, -2.0 - std::ldexp(3.0, -11)), -2.0 - std::ldexp(1.0, -9));
}

TEST(DType, EveryEncodingRoundTripsItsRepresentableValues) {
  const double values[] = {0.0, 1.0, -1.0, 0.5, 100.0, -3.0, 7.0};
  for (DType t : all_dtypes()) {
    for (double v : values) {
      const double r = round_to(t, v);
      std::byte buf[8];
      encode(t, r, buf);
      EXPECT_EQ(decode(t, buf), r) << dtype_name(t) << " " << v;
    }
  }
  // Every one of the 65536 bfloat16 and float16 patterns that is not NaN decodes and re-encodes to itself.
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    for (std::uint32_t bits = 0; bits < 65536; ++bits) {
      std::byte in[2], out[2];
      const auto b = static_cast<std::uint16_t>(bits);
      std::memcpy(in, &b, 2);
      const double v = decode(t, in);
      if (std::isnan(v)) continue;
      encode(t, v, out);
      ASSERT_EQ(std::memcmp(in, out, 2), 0) << dtype_name(t) << " bits " << bits;
    }
  }
}

TEST(DType, IntegersTruncateAndBoolIsNonZero) {
  EXPECT_EQ(round_to(DType::kInt32, 2.7), 2.0);
  EXPECT_EQ(round_to(DType::kInt32, -2.7), -2.0);
  EXPECT_EQ(round_to(DType::kInt8, 200.0), -56.0);  // wraps as the device's byte would
  EXPECT_EQ(round_to(DType::kBool, 0.3), 1.0);
  EXPECT_EQ(round_to(DType::kBool, 0.0), 0.0);
  EXPECT_TRUE(representable(DType::kInt64, 4096.0));
  EXPECT_FALSE(representable(DType::kInt64, 0.5));
  const auto bytes = encode_all(DType::kInt64, std::vector<double>{1, -2, 1 << 30});
  EXPECT_EQ(bytes.size(), 24u);
  EXPECT_EQ(decode_all(DType::kInt64, bytes), (std::vector<double>{1, -2, 1 << 30}));
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  // A bool output's byte is read as it is: 2 (stored through unsigned char*) or the harness's 0xFF
  // fill is no bool, and must not read as true (it matched every true of a reference).
  for (const unsigned char byte : {0, 1, 2, 0xFF}) {
    const std::byte in{byte};
    EXPECT_EQ(decode(DType::kBool, &in), static_cast<double>(byte));
  }
  EXPECT_EQ(dtype_cuda_type(DType::kBFloat16), "__nv_bfloat16");
}

// A kernel parameter's type against the tensor it is passed (compile/kernel_params.hpp): only a
// floating pointee of another precision is flagged; raw access (integers, char, void) and vector
// types of the tensor's own precision are not.
TEST(DType, AKernelParameterOfAnotherFloatingTypeIsFlaggedRawAccessIsNot) {
  // void affine_kernel<64, 64, 128, 1>(float const*, __nv_bfloat16*), as NVRTC lowers it.
  const auto types = kernel_parameter_types("_Z13affine_kernelILi64ELi64ELi128ELi1EEvPKfP13__nv_bfloat16");
  ASSERT_EQ(types, (std::vector<std::string>{"float const*", "__nv_bfloat16*"}));
  EXPECT_TRUE(kernel_parameter_types("not a mangled name").empty());
  EXPECT_EQ(parameter_mismatch("float const*", DType::kBFloat16),
            "a float const* parameter reads a bfloat16 tensor as float32 numbers");
  EXPECT_NE(parameter_mismatch("double*", DType::kInt32), "");
  EXPECT_NE(parameter_mismatch("__half2 const*", DType::kBFloat16), "");
  for (const auto& [type, dtype] : std::vector<std::pair<std::string, DType>>{{"float4 const*", DType::kFloat32},
                                                                              {"__half2*", DType::kFloat16},
                                                                              {"__nv_bfloat162 const*", DType::kBFloat16},
                                                                              {"unsigned short const*", DType::kBFloat16},
                                                                              {"void*", DType::kFloat16},
                                                                              {"int const*", DType::kFloat32},
                                                                              {"float**", DType::kBFloat16},
                                                                              {"float", DType::kBFloat16}})
    EXPECT_EQ(parameter_mismatch(type, dtype), "") << type;
}

// Round 7: an argmax kernel written with `int* out` for its int64 output (or `long long* out` where
// the output's dtype was left at float32) wrote half the elements, or past the end, and compiled
// without a word; on a GPU every variant failed parity. A scalar integer of another size than the
// tensor's elements is flagged; one of the same size, bytes and vector loads stay raw access.
TEST(DType, AnIntegerParameterOfAnotherWidthThanTheTensorsElementsIsFlagged) {
  EXPECT_EQ(parameter_mismatch("int*", DType::kInt64),
            "its type int* reads 4-byte integers, the tensor's int64 elements are 8 bytes");
  for (const auto& [type, dtype] : std::vector<std::pair<std::string, DType>>{{"long long*", DType::kFloat32},
                                                                              {"unsigned int const*", DType::kInt64},
                                                                              {"short*", DType::kInt32},
                                                                              {"long*", DType::kInt32},
                                                                              {"unsigned long long*", DType::kUInt8},
                                                                              {"int const*", DType::kBool}})
    EXPECT_NE(parameter_mismatch(type, dtype), "") << type;
  for (const auto& [type, dtype] : std::vector<std::pair<std::string, DType>>{{"long long*", DType::kInt64},
                                                                              {"long const*", DType::kInt64},
                                                                              {"unsigned int*", DType::kInt32},
                                                                              {"int*", DType::kFloat32},
                                                                              {"unsigned short*", DType::kFloat16},
                                                                              {"unsigned char*", DType::kInt64},
                                                                              {"signed char*", DType::kInt8},
                                                                              {"bool*", DType::kUInt8},
                                                                              {"int4 const*", DType::kInt64},
                                                                              {"longlong2*", DType::kFloat32}})
    EXPECT_EQ(parameter_mismatch(type, dtype), "") << type;
}

}  // namespace
}  // namespace tune
