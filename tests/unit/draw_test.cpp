// Issue 37: the data are drawn in parallel chunks, bit for bit as the serial draw drew them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include "problem/init.hpp"
#include "tune/problem.hpp"
#include "tune/rng.hpp"

namespace tune {
namespace {

// FNV-1a over the bits of every value, parameters then inputs, each tensor's name first.
std::uint64_t data_hash(const ProblemData& d) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  for (const auto* list : {&d.params, &d.inputs})
    for (const HostTensor& t : *list) {
      for (const char c : t.spec.name) mix(static_cast<unsigned char>(c));
      mix(t.data.size());
      for (const double v : t.data) mix(std::bit_cast<std::uint64_t>(v));
    }
  return h;
}

// Every init kind, with sizes that leave a Box-Muller spare across tensors and chunks, and an edit.
std::filesystem::path every_kind_folder() {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_draw_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "reference.py") << "def reference(shape, params, inputs):\n    raise NotImplementedError\n";
  std::ofstream(dir / "problem.json") << R"({"problem": "kinds", "reference": {"python": "reference.py"},
    "shape": {"dims": ["N"]},
    "tensors": [
      {"name": "g", "role": "parameter", "shape": ["N"], "init": "layernorm_weight"},
      {"name": "b", "role": "parameter", "shape": ["N"], "init": "layernorm_bias"},
      {"name": "w", "role": "parameter", "shape": ["N", "3"], "init": {"kind": "linear", "fan_in": "N"}},
      {"name": "n", "role": "input", "shape": ["N", "5"], "init": {"kind": "normal", "mean": 0.5, "std": 2}},
      {"name": "u", "role": "input", "shape": ["N"], "init": {"kind": "uniform", "low": -3, "high": 4}},
      {"name": "k", "role": "input", "shape": ["2"], "init": {"kind": "constant", "value": 0.3}},
      {"name": "m", "role": "input", "shape": ["N"], "init": {"kind": "bernoulli", "p": 0.25}},
      {"name": "i", "role": "input", "shape": ["N"], "dtype": "int32", "init": {"kind": "index", "high": "N"}},
      {"name": "j", "role": "input", "shape": ["N"], "dtype": "int32", "init": {"kind": "integers", "low": -5, "high": 9}},
      {"name": "z", "role": "input", "shape": ["N", "7"], "init": "normal"},
      {"name": "out", "role": "output", "shape": ["N"]}],
    "edits": [{"tensor": "z", "for": {"r": "N"}, "index": ["r", "0"], "value": "r", "purpose": "parity"}]})";
  return dir / "problem.json";
}

// Hashes of the data the serial draw drew before issue 37 (computed at aa7f216, before the draw was
// parallel): the committed goldens and every result of record depend on these values.
TEST(Draw, Issue37_TheDrawnDataAreBitForBitThoseOfTheSerialDraw) {
  const auto kinds = Problem::load(every_kind_folder());
  const std::vector<std::uint64_t> pinned = {0xf59122ddfebe79b6, 0x984b2778972606e2, 0xaed7ced6e4d110e7, 0x6f9fd31c5a6f2108,
                                             0x2bd6c9dc5849534a, 0x89a6e7e0c71450ff, 0xbcf3f6093f3e8e49, 0x00bfac2d061ae7bf};
  std::size_t at = 0;
  for (const std::int64_t n : {1, 7, 333, 100001})  // 100001: several chunks, odd sizes (a spare across them)
    for (const DataPurpose purpose : {DataPurpose::kParity, DataPurpose::kTiming})
      EXPECT_EQ(data_hash(kinds->make_data(Shape({{"N", n}}), 42, purpose)), pinned[at++]) << "N=" << n;
  const Shape contact({{"B", 1}, {"N", 129}, {"C", 64}, {"H", 8}});  // 1.06 M values: several chunks
  EXPECT_EQ(data_hash(find_problem("contact").make_data(contact, 7, DataPurpose::kParity)), 0x64129b2b6f0ac5b2u);
  const Shape sg({{"B", 3}, {"N", 17}, {"D", 32}, {"heads", 2}, {"P", 4}});
  EXPECT_EQ(data_hash(find_problem("scene_graph").make_data(sg, 12, DataPurpose::kParity)), 0xfa60161c89677a91u);
}

// The chunked parallel draw against one generator drawn serially, at chunk sizes that cut the
// tensors anywhere (a Box-Muller pair split across two chunks, a spare carried across tensors).
TEST(Draw, Issue37_ParallelChunksDrawWhatTheSerialDrawDraws) {
  using Kind = init::Draw::Kind;
  const std::vector<init::Draw> draws = {{Kind::kNormal, DType::kFloat32, 0.5, 2},
                                         {Kind::kUniform, DType::kFloat16, -3, 4},
                                         init::layernorm_weight_draw(DType::kBFloat16),
                                         {Kind::kConstant, DType::kFloat32, 0.3},
                                         init::layernorm_bias_draw(DType::kFloat32),
                                         {Kind::kIndex, DType::kInt32, 17},
                                         {Kind::kIntegers, DType::kInt32, -5, 9},
                                         {Kind::kBernoulli, DType::kFloat32, 0.25},
                                         {Kind::kNormal, DType::kFloat32, 0, 1}};
  const std::vector<std::size_t> sizes = {1001, 37, 513, 4, 9, 200, 77, 301, 1999};
  std::vector<std::vector<double>> serial(draws.size());
  Rng rng(1234);
  for (std::size_t t = 0; t < draws.size(); ++t) {
    serial[t].resize(sizes[t]);
    init::fill(draws[t], rng, serial[t]);
  }
  for (const std::int64_t chunk : {1, 2, 3, 7, 64, 1000, 1 << 20}) {
    std::vector<std::vector<double>> parallel(draws.size());
    std::vector<std::span<double>> out;
    for (std::size_t t = 0; t < draws.size(); ++t) {
      parallel[t].assign(sizes[t], -1);
      out.emplace_back(parallel[t]);
    }
    init::fill_all(1234, draws, out, chunk);
    for (std::size_t t = 0; t < draws.size(); ++t)
      for (std::size_t i = 0; i < sizes[t]; ++i)
        ASSERT_EQ(std::bit_cast<std::uint64_t>(parallel[t][i]), std::bit_cast<std::uint64_t>(serial[t][i]))
            << "chunk " << chunk << ", tensor " << t << ", value " << i;
  }
}

// skip() leaves the generator where fill() leaves it, from any start (with or without a spare).
TEST(Draw, Issue37_SkippingAdvancesTheGeneratorAsDrawingDoes) {
  const init::Draw normal{init::Draw::Kind::kNormal, DType::kFloat32, 0, 1};
  const init::Draw uniform{init::Draw::Kind::kUniform, DType::kFloat32, 0, 1};
  for (const std::int64_t lead : {0, 1, 2, 3})
    for (const std::int64_t n : {0, 1, 2, 5, 10})
      for (const init::Draw& d : {normal, uniform}) {
        Rng a(99), b(99);
        std::vector<double> head(static_cast<std::size_t>(lead)), body(static_cast<std::size_t>(n));
        init::fill(normal, a, head);
        init::fill(normal, b, head);
        init::fill(d, a, body);
        init::skip(d, b, n);
        EXPECT_EQ(a.normal(), b.normal()) << lead << " " << n;
        EXPECT_EQ(a.uniform01(), b.uniform01()) << lead << " " << n;
      }
}

}  // namespace
}  // namespace tune
