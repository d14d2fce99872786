// The contact kernels run on the CPU (emulated CUDA, contact_kernels.cpp): tune lowers each
// configuration (template arguments, grid, block, dynamic shared memory from configs/contact/problem.json),
// the emulated kernel runs on the problem's parity inputs, and the output must meet the parity rule
// against the float64 reference, stay exactly symmetric, and leave the shared memory past the
// launch's size untouched. This checks the tensor-core arithmetic (3xTF32 splits, TF32 rounding,
// fragment layouts), the cp.async group waits, the LayerNorm folding and every mapping without a
// GPU; a mismatch between the config's template arguments and the template fails the lookup.
// T = bfloat16 (issue 35): every strategy on bfloat16 inputs against the float64 reference of
// those inputs, the bfloat16 MMAs emulated per the PTX ISA's m16n8k16 fragment layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/contact_kernels.hpp"
#include "problem/init.hpp"
#include "tune/dtype.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"

namespace tune {
namespace {

using Json = nlohmann::ordered_json;

struct Case {
  Shape shape;
  Json params;
};

Json params(const char* strategy, const char* mapping, int block, int ti, int tj, bool smem_w, int pairs, bool sym,
            bool async, int nsplit, const char* precision, const char* ln, bool persist) {
  return Json{{"strategy", strategy},
              {"mapping", mapping},
              {"block", block},
              {"tile_i", ti},
              {"tile_j", tj},
              {"stage_t", std::string(mapping) != "linear"},
              {"smem_w", smem_w},
              {"pairs", pairs},
              {"sym", sym},
              {"async_copy", async},
              {"nsplit", nsplit},
              {"precision", precision},
              {"ln", ln},
              {"persist", persist}};
}

// The configurations contact_kernels.cpp instantiates, for both shapes (plus two for the first).
std::vector<Json> common_configs() {
  return {params("thread", "linear", 128, 1, 1, true, 1, false, false, 1, "tf32x3", "group", false),
          params("thread", "tile", 64, 8, 8, true, 1, true, true, 1, "tf32x3", "group", false),
          params("warp", "tile", 128, 4, 8, true, 1, false, true, 1, "tf32x3", "group", false),
          params("mma", "tile", 128, 8, 8, true, 1, true, true, 1, "tf32x3", "group", false),
          params("mma", "tile", 128, 8, 8, true, 1, true, true, 1, "tf32", "row", false),
          params("mma", "tile", 64, 4, 8, true, 1, false, true, 1, "tf32x3", "group", false),
          params("mma", "warp_tile", 64, 4, 4, true, 1, true, true, 1, "tf32", "row", false),
          params("mma", "warp_tile", 64, 4, 4, true, 2, true, true, 1, "tf32x3", "row", true),
          params("mma", "warp_tile", 32, 8, 8, true, 1, true, true, 1, "tf32", "group", true)};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const Shape a({{"B", 2}, {"N", 13}, {"C", 24}, {"H", 16}}), b({{"B", 1}, {"N", 9}, {"C", 40}, {"H", 36}});
  for (const Json& p : common_configs()) out.push_back({a, p});
  out.push_back({a, params("mma", "tile", 256, 8, 8, true, 1, true, false, 2, "tf32x3", "group", false)});
  out.push_back({a, params("mma", "warp_tile", 32, 4, 4, false, 2, true, true, 1, "tf32x3", "group", false)});
  for (const Json& p : common_configs()) out.push_back({b, p});
  return out;
}

// Runs the lowered launch with `grid` blocks on `data`; checks parity against `ref`, symmetry and
// the shared memory.
void check_run(const Case& c, const ProblemData& data, const std::vector<double>& ref, const KernelLaunch& launch,
               unsigned grid, const std::string& what) {
  // The float32 kernels take float32 buffers: the data's values, which float32 holds exactly.
  std::vector<std::vector<float>> buffers;
  std::vector<const void*> args;
  for (std::size_t k = 0; k + 1 < launch.args.size(); ++k) {
    const std::vector<double>& values = data.get(launch.args[k]).data;
    buffers.emplace_back(values.begin(), values.end());
  }
  for (const auto& b : buffers) args.push_back(b.data());
  ASSERT_EQ(launch.args.back(), "out");
  std::vector<float> out(ref.size(), std::nanf(""));
  std::vector<float> smem_after;
  ASSERT_TRUE(emu::run_contact(launch.name_expression, grid, launch.block[0], args.data(), out.data(), smem_after,
                               launch.dynamic_smem / 4))
      << what << ": no emulated kernel " << launch.name_expression << " (contact_kernels.cpp lists them)";
  for (float v : smem_after)
    ASSERT_EQ(v, 1.0e30f) << what << ": wrote shared memory past " << launch.dynamic_smem << " bytes";
  const std::int64_t B = c.shape.at("B"), N = c.shape.at("N");
  double worst = 0;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const double err = std::fabs(static_cast<double>(out[e]) - ref[e]);
    ASSERT_TRUE(err <= 1e-4 + 1e-4 * std::fabs(ref[e]))
        << what << ": element " << e << " is " << out[e] << ", reference " << ref[e];
    worst = std::max(worst, err);
  }
  for (std::int64_t bb = 0; bb < B; ++bb)
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t j = 0; j < N; ++j)
        ASSERT_EQ(std::memcmp(&out[(bb * N + i) * N + j], &out[(bb * N + j) * N + i], sizeof(float)), 0)
            << what << ": out[" << i << "," << j << "] != out[" << j << "," << i << "]";
  ::testing::Test::RecordProperty(what, std::to_string(worst));
}

TEST(ContactEmulation, EveryMappingAndPrecisionMeetsParityOnTheCpu) {
  const Space space = Space::load(std::filesystem::path(TUNE_SOURCE_DIR) / "configs" / "contact" / "problem.json");
  const Problem& problem = find_problem("contact");
  int persisted = 0;
  for (const Case& c : cases()) {
    const ProblemData data = problem.make_data(c.shape, 7, DataPurpose::kParity);
    const std::vector<double> ref = problem.reference(c.shape, data).values();
    const Config config = space.from_json(c.params);
    const std::string what = space.name(config) + " at N=" + std::to_string(c.shape.at("N"));
    ASSERT_EQ(space.violated_constraint(config, c.shape, DeviceLimits::for_arch(90)), "") << what;
    const Lowered lowered = space.lower(config, c.shape, DeviceLimits::for_arch(90));
    ASSERT_EQ(lowered.launches.size(), 1u);
    const KernelLaunch& launch = lowered.launches[0];
    check_run(c, data, ref, launch, launch.grid[0], what);
    if (c.params["persist"].get<bool>()) {  // one block takes every tile: the ring of buffers turns over
      check_run(c, data, ref, launch, 1, what + " (grid 1)");
      ++persisted;
    }
  }
  EXPECT_EQ(persisted, 4);
}

// The shape and seed of the device tier's odd-shape test (B3 N37, seed 2026): there every strategy
// gave out[2,36,36] 0.0281 off, the output of a constant row, because the runner launched before
// the upload's last bytes had landed (tests/fake_driver). The kernels themselves meet parity on
// those inputs, ragged tiles and clamped slots included.
TEST(ContactEmulation, TheDeviceTestsOddShapeAndSeedMeetParityOnTheCpu) {
  const Space space = Space::load(std::filesystem::path(TUNE_SOURCE_DIR) / "configs" / "contact" / "problem.json");
  const Problem& problem = find_problem("contact");
  const Shape shape({{"B", 3}, {"N", 37}, {"C", 64}, {"H", 32}});
  const ProblemData data = problem.make_data(shape, 2026, DataPurpose::kParity);
  const std::vector<double> ref = problem.reference(shape, data).values();
  for (const Json& p : {params("warp", "tile", 64, 2, 4, false, 1, false, true, 1, "tf32x3", "group", false),
                        params("thread", "tile", 64, 8, 8, false, 1, true, true, 1, "tf32x3", "group", false),
                        params("mma", "tile", 128, 8, 8, true, 1, true, true, 1, "tf32x3", "group", false)}) {
    const Config config = space.from_json(p);
    const std::string what = space.name(config) + " at B3 N37";
    ASSERT_EQ(space.violated_constraint(config, shape, DeviceLimits::for_arch(90)), "") << what;
    const Lowered lowered = space.lower(config, shape, DeviceLimits::for_arch(90));
    check_run({shape, p}, data, ref, lowered.launches.at(0), lowered.launches.at(0).grid[0], what);
  }
}

// ---- T = bfloat16: no problem.json in the loop (the kernels, their own shared-memory size, and
// the float64 reference of bfloat16-rounded inputs), so it checks the arithmetic alone.

struct Bf16Config {
  int strategy, mapping, block, tile_i, tile_j, stage_t, smem_w, pairs, sym, async, nsplit, precision, ln, persist;
};

std::int64_t cdiv64(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// configs/contact/problem.json's grid (a persistent warp_tile grid: one tile per warp).
unsigned bf16_grid(const Bf16Config& k, std::int64_t B, std::int64_t N) {
  const std::int64_t warps = k.block / 32, tiles_i = cdiv64(N, k.tile_i), tiles_j = cdiv64(N, k.tile_j);
  const std::int64_t sym_tiles = B * tiles_i * (tiles_i + 1) / 2;
  const std::int64_t workers = (k.strategy == 0 ? k.block : (k.strategy == 2 ? warps / k.nsplit : warps)) * k.pairs;
  if (k.mapping == 0) return static_cast<unsigned>(cdiv64(B * N * N, workers));
  if (k.mapping == 2) return static_cast<unsigned>(cdiv64(sym_tiles, k.persist ? warps : warps * k.pairs));
  return static_cast<unsigned>(k.sym ? sym_tiles : B * tiles_i * tiles_j);
}

// Seeded draws like the problem's inits (normal rows, LayerNorm affine near 1 and 0, nn.Linear's
// uniform), rounded to bfloat16.
HostTensor bf16_tensor(std::mt19937& rng, const char* name, std::vector<std::int64_t> shape, int kind, double fan_in) {
  HostTensor t;
  t.spec.name = name;
  t.spec.shape = std::move(shape);
  t.spec.dtype = DType::kBFloat16;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0 / std::sqrt(fan_in), 1.0 / std::sqrt(fan_in));
  std::vector<double> v(static_cast<std::size_t>(t.spec.elements()));
  for (double& x : v)
    x = round_to(DType::kBFloat16, kind == 0   ? normal(rng)
                                   : kind == 1 ? 1.0 + 0.1 * normal(rng)
                                   : kind == 2 ? 0.1 * normal(rng)
                                               : uniform(rng));
  t.data.assign(v.begin(), v.end());
  return t;
}

std::vector<std::uint16_t> bf16_bits(const HostTensor& t) {
  std::vector<std::uint16_t> bits(t.data.size());
  for (std::size_t e = 0; e < bits.size(); ++e) {
    std::byte b[2];
    encode(DType::kBFloat16, t.data[e], b);
    std::memcpy(&bits[e], b, 2);
  }
  return bits;
}

void check_bf16(std::int64_t B, std::int64_t N, std::int64_t C, std::int64_t H, const Bf16Config& k) {
  std::ostringstream name;
  name << "contact_kernel<__nv_bfloat16," << B << ',' << N << ',' << C << ',' << H << ',' << k.strategy << ',' << k.mapping
       << ',' << k.block << ',' << k.tile_i << ',' << k.tile_j << ',' << k.stage_t << ',' << k.smem_w << ',' << k.pairs
       << ',' << k.sym << ',' << k.async << ',' << k.nsplit << ',' << k.precision << ',' << k.ln << ',' << k.persist << '>';
  const std::string what = name.str();
  std::mt19937 rng(static_cast<unsigned>(35 + N + C));
  ProblemData data;
  const double c = static_cast<double>(C), h = static_cast<double>(H);
  data.params = {bf16_tensor(rng, "layer_norm.weight", {C}, 1, 1), bf16_tensor(rng, "layer_norm.bias", {C}, 2, 1),
                 bf16_tensor(rng, "mlp.0.weight", {H, C}, 3, c),   bf16_tensor(rng, "mlp.0.bias", {H}, 3, c),
                 bf16_tensor(rng, "mlp.2.weight", {H, H}, 3, h),   bf16_tensor(rng, "mlp.2.bias", {H}, 3, h),
                 bf16_tensor(rng, "mlp.4.weight", {1, H}, 3, h),   bf16_tensor(rng, "mlp.4.bias", {1}, 3, h)};
  data.inputs = {bf16_tensor(rng, "pair_repr", {B, N, N, C}, 0, 1)};
  const Shape shape({{"B", B}, {"N", N}, {"C", C}, {"H", H}});
  const std::vector<double> ref = contact_reference(shape, data);

  std::vector<std::vector<std::uint16_t>> bits{bf16_bits(data.inputs[0])};
  for (const HostTensor& p : data.params) bits.push_back(bf16_bits(p));
  std::vector<const void*> args;
  for (const auto& b : bits) args.push_back(b.data());
  std::vector<std::uint16_t> out(ref.size(), 0x7fc0);  // NaN: an element never written fails
  std::vector<float> smem_after;
  const int smem = emu::contact_smem_bytes(what);
  ASSERT_GE(smem, 0) << "no emulated kernel " << what << " (contact_kernels.cpp lists them)";
  ASSERT_TRUE(emu::run_contact(what, bf16_grid(k, B, N), static_cast<unsigned>(k.block), args.data(), out.data(), smem_after,
                               static_cast<std::size_t>(smem) / 4));
  for (float v : smem_after) ASSERT_EQ(v, 1.0e30f) << what << ": wrote shared memory past " << smem << " bytes";
  double worst = 0;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    std::byte b[2];
    std::memcpy(b, &out[e], 2);
    const double got = decode(DType::kBFloat16, b);
    const double err = std::fabs(got - ref[e]);
    // The contract's bfloat16 tolerance (atol 1e-5, rtol 1.6e-2): rounding s, the hidden activation
    // (MMAs) and the output to bfloat16 stays well inside it.
    ASSERT_TRUE(err <= 1e-5 + 1.6e-2 * std::fabs(ref[e]))
        << what << ": element " << e << " is " << got << ", reference " << ref[e];
    worst = std::max(worst, err);
  }
  for (std::int64_t bb = 0; bb < B; ++bb)
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t j = 0; j < N; ++j)
        ASSERT_EQ(out[(bb * N + i) * N + j], out[(bb * N + j) * N + i])
            << what << ": out[" << i << "," << j << "] != out[" << j << "," << i << "]";
  ::testing::Test::RecordProperty(what, std::to_string(worst));
}

// The configurations contact_kernels.cpp instantiates for T = bfloat16.
const std::vector<Bf16Config> kBf16Plain = {{0, 0, 128, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0},
                                            {0, 1, 64, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0},
                                            {1, 1, 128, 4, 8, 1, 1, 1, 0, 1, 1, 0, 0, 0}};
const std::vector<Bf16Config> kBf16Mma = {{2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 2, 0, 0},
                                          {2, 1, 128, 8, 8, 1, 1, 1, 1, 1, 1, 2, 1, 0},
                                          {2, 1, 64, 4, 8, 1, 1, 1, 0, 0, 1, 2, 0, 0},
                                          {2, 2, 64, 4, 4, 1, 1, 2, 1, 1, 1, 2, 1, 1}};

TEST(ContactEmulation, Bfloat16ThreadAndWarpStrategiesMeetTheBfloat16ToleranceOnTheCpu) {
  for (const auto& k : kBf16Plain) {
    check_bf16(2, 13, 32, 16, k);
    check_bf16(1, 9, 48, 36, k);
    check_bf16(2, 13, 24, 16, k);
  }
  // A warp per pair, rows and weights from global memory (one shape: a block per four pairs).
  check_bf16(1, 9, 48, 36, {1, 0, 128, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0});
}

TEST(ContactEmulation, Bfloat16MmaStrategyMeetsTheBfloat16ToleranceOnTheCpu) {
  for (const auto& k : kBf16Mma) {
    check_bf16(2, 13, 32, 16, k);
    check_bf16(1, 9, 48, 36, k);
  }
  check_bf16(2, 13, 32, 16, {2, 2, 32, 4, 4, 1, 0, 2, 1, 1, 1, 2, 0, 1});  // weights from global memory
}

}  // namespace
}  // namespace tune
