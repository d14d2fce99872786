// NVRTC tier: compiles a representative subset of each problem's space for sm_90, no GPU needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"
#include "support/compile_all.hpp"
#include "support/sample.hpp"

namespace tune {
namespace {

void compile_subset(const std::string& problem, const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  const Space space = load_space(problem, std::nullopt);
  const Shape shape = resolve_shape(find_problem(problem), space, dims);
  const auto all = space.enumerate(shape, DeviceLimits::for_arch(90)).configs;
  auto subset = test::representatives(space, all);
  if (std::find(subset.begin(), subset.end(), space.baseline()) == subset.end()) subset.push_back(space.baseline());
  std::vector<Lowered> lowered;
  for (const auto& c : subset) lowered.push_back(space.lower(c, shape, DeviceLimits::for_arch(90)));
  const std::vector<CompileResult> results = test::compile_all(lowered, default_options(90));
  for (std::size_t i = 0; i < subset.size(); ++i) {
    const auto& r = results[i];
    const std::string name = space.name(subset[i]);
    ASSERT_TRUE(r.ok) << problem << " " << name << ":\n" << r.log;
    EXPECT_FALSE(r.cubin.empty());
    ASSERT_EQ(r.lowered_names.size(), lowered[i].launches.size());
    for (const auto& lowered_name : r.lowered_names) {
      auto it = r.resources.find(lowered_name);
      ASSERT_NE(it, r.resources.end()) << name << ": no ptxas report for " << lowered_name << "\n" << r.log;
      EXPECT_GT(it->second.registers, 0) << name;
    }
  }
  ::testing::Test::RecordProperty(problem + "_compiled", static_cast<int>(subset.size()));
  std::cout << problem << ": compiled " << subset.size() << " of " << all.size() << " variants\n";
}

// examples/ln_linear_gelu's tensor-core space (issue 36) at a ragged shape (M 1000, K 260, N 300: no
// tile divides it). The constraints refuse what does not divide, fit or fill; the mma path lowers
// to the LayerNorm and GEMM launches with the scratch xn (ln=separate) or to one launch on x
// (ln=fused); and the widest warp tiles at the deepest pipeline compile for sm_90 without spills.
TEST(Nvrtc, LnLinearGeluTensorCoreSpaceRefusesWhatDoesNotFitAndCompilesWithoutSpills) {
  const std::string dir = (std::filesystem::path(TUNE_REPO_DIR) / "examples" / "ln_linear_gelu").string();
  const Space space = load_space(dir, std::nullopt);
  const DeviceLimits limits = DeviceLimits::for_arch(90);
  const auto at = [&](std::int64_t m, std::int64_t k, std::int64_t n) {
    return resolve_shape(find_problem(dir), space, {{"M", m}, {"K", k}, {"N", n}});
  };
  const Shape shape = at(1000, 260, 300);
  const auto mma = [&](const nlohmann::ordered_json& edits) {
    nlohmann::ordered_json j = {{"bm", 64},  {"bn", 64},     {"tm", 1},        {"tn", 1},       {"vec", 1},
                                {"w_stage", "ldg"}, {"bk", 32}, {"algo", "mma"}, {"wm", 32},     {"wn", 32},
                                {"stages", 4}, {"group_m", 8}, {"ln", "separate"}};
    if (edits.is_object()) j.update(edits);  // {} is null
    return space.from_json(j);
  };
  EXPECT_EQ(space.violated_constraint(mma({}), shape, limits), "");
  EXPECT_EQ(space.violated_constraint(mma({{"bm", 128}, {"bn", 128}, {"wm", 64}, {"wn", 64}}), shape, limits),
            "algo == simt || wm * wn <= 2048");  // 64 x 64 warp tiles: 128 accumulators a thread
  EXPECT_EQ(space.violated_constraint(mma({{"bm", 128}}), shape, limits), "group_m == 1 || grid_m >= 2 * group_m");
  EXPECT_EQ(space.violated_constraint(mma({{"tm", 2}}), shape, limits),
            "algo == simt || (tm == 1 && tn == 1 && vec == 1 && w_stage == ldg)");
  EXPECT_NE(space.violated_constraint(mma({{"bm", 32}, {"wm", 64}}), shape, limits), "");  // the warp tile overhangs
  EXPECT_EQ(space.violated_constraint(mma({{"group_m", 1}}), at(1000, 64, 300), limits),
            "algo == simt || stages <= cdiv(K, bk)");  // 2 k-tiles cannot fill 4 stages
  nlohmann::ordered_json simt = space.to_json(space.baseline());
  EXPECT_EQ(simt.at("algo"), "simt");
  simt["ln"] = "fused";
  EXPECT_NE(space.violated_constraint(space.from_json(simt), shape, limits), "");  // mma knobs on the SIMT path

  const Lowered separate = space.lower(mma({}), shape, limits);
  ASSERT_EQ(separate.launches.size(), 2u);
  EXPECT_EQ(separate.launches[0].name_expression, "ln_rows_kernel<1000,260>");
  EXPECT_EQ(separate.launches[1].name_expression, "ln_linear_gelu_mma_kernel<1000,260,300,64,64,32,32,32,4,8,0>");
  EXPECT_EQ(separate.launches[1].grid[0], 16u * 5u);  // cdiv(1000, 64) x cdiv(300, 64) tiles
  EXPECT_EQ(separate.launches[1].dynamic_smem, 4u * 4u * 128u * 40u);  // stages (bm + bn) (bk + 8) floats
  ASSERT_EQ(separate.scratch.size(), 1u);
  EXPECT_EQ(separate.scratch[0].elements(), 1000 * 260);
  const Lowered fused = space.lower(mma({{"ln", "fused"}}), shape, limits);
  ASSERT_EQ(fused.launches.size(), 1u);
  EXPECT_EQ(fused.launches[0].args.front(), "x");
  EXPECT_TRUE(fused.scratch.empty());
  // + gamma and beta over cdiv(K, bk) bk columns, mean and rstd over bm rows.
  EXPECT_EQ(fused.launches[0].dynamic_smem, 4u * (4u * 128u * 40u + 2u * 288u + 2u * 64u));

  const std::vector<Config> widest = {mma({{"bm", 128}, {"wm", 64}, {"group_m", 1}}),
                                      mma({{"bn", 128}, {"wn", 64}, {"ln", "fused"}}),
                                      mma({{"bk", 64}, {"ln", "fused"}, {"group_m", 1}})};
  std::vector<Lowered> lowered;
  for (const Config& c : widest) {
    ASSERT_EQ(space.violated_constraint(c, shape, limits), "") << space.name(c);
    lowered.push_back(space.lower(c, shape, limits));
  }
  const std::vector<CompileResult> results = test::compile_all(lowered, default_options(90));
  for (std::size_t i = 0; i < widest.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << space.name(widest[i]) << ":\n" << results[i].log;
    for (const auto& name : results[i].lowered_names) {
      const auto it = results[i].resources.find(name);
      ASSERT_NE(it, results[i].resources.end()) << name << "\n" << results[i].log;
      EXPECT_EQ(it->second.spill_store_bytes, 0) << space.name(widest[i]) << " " << name;
    }
  }
}

TEST(Nvrtc, ContactRepresentativeSubsetCompilesForSm90) { compile_subset("contact", {{"B", 4}, {"N", 64}}); }

TEST(Nvrtc, SceneGraphRepresentativeSubsetCompilesForSm90) { compile_subset("scene_graph", {{"B", 4}, {"N", 24}}); }

// sg_cluster does not check its dynamic shared memory at run time (the check cost a constant-cache
// miss before the first load), so the config's cl_smem must be exactly the kernel's layout size.
// The branches of outbfly and attnquad that the B4 N24 subset above never takes: outbfly keeps
// 8 outputs per warp while 8 cdiv(D, 32) weights fit a lane's registers, else 4 (D = 256); attnquad
// ends with a transposed butterfly while a column quarter has at most 8 columns, else with a
// plain one (64-wide heads). For each, the first valid cluster variant with both and overlap
// compiles, and the ptxas report says it does not spill.
TEST(Nvrtc, SceneGraphOutbflyAndAttnquadCompileAtWideShapes) {
  const Space space = load_space("scene_graph", std::nullopt);
  const std::vector<std::vector<std::pair<std::string, std::int64_t>>> shapes = {
      {{"B", 2}, {"N", 16}, {"D", 256}, {"heads", 8}, {"P", 16}},   // 4 outputs per warp
      {{"B", 2}, {"N", 16}, {"D", 128}, {"heads", 2}, {"P", 16}}};  // 16 columns per quarter
  for (const auto& dims : shapes) {
    const Shape shape = resolve_shape(find_problem("scene_graph"), space, dims);
    std::optional<Config> pick;
    for (const auto& c : space.enumerate(shape, DeviceLimits::for_arch(90)).configs) {
      if (space.numeric(c, "outbfly") == 1 && space.numeric(c, "attnquad") == 1 && space.numeric(c, "overlap") == 1) {
        pick = c;
        break;
      }
    }
    ASSERT_TRUE(pick.has_value()) << "no cluster variant with outbfly, attnquad and overlap at D " << dims[2].second;
    const Lowered lowered = space.lower(*pick, shape, DeviceLimits::for_arch(90));
    ASSERT_EQ(lowered.launches.size(), 1u);
    EXPECT_NE(lowered.launches.front().name_expression.find(",2,2>"), std::string::npos)
        << lowered.launches.front().name_expression;  // OUT = 2, ATTN = 2
    const CompileResult r = compile(compile_request(lowered, default_options(90)));
    ASSERT_TRUE(r.ok) << space.name(*pick) << ":\n" << r.log;
    const auto it = r.resources.find(r.lowered_names.front());
    ASSERT_NE(it, r.resources.end()) << r.log;
    EXPECT_EQ(it->second.spill_store_bytes, 0) << space.name(*pick) << ":\n" << r.log;
  }
}

// For every cluster variant of several shapes, a static_assert in one NVRTC compile: no GPU.
TEST(Nvrtc, SceneGraphClusterSharedMemoryIsTheKernelLayoutSize) {
  const Space space = load_space("scene_graph", std::nullopt);
  const std::vector<std::vector<std::pair<std::string, std::int64_t>>> shapes = {
      {{"B", 4}, {"N", 24}},
      {{"B", 3}, {"N", 13}},
      {{"B", 2}, {"N", 6}, {"D", 16}, {"heads", 2}, {"P", 4}},
      {{"B", 1}, {"N", 12}, {"D", 32}, {"heads", 4}, {"P", 8}},
      {{"B", 2}, {"N", 5}, {"D", 16}, {"heads", 2}, {"P", 8}},
      {{"B", 2}, {"N", 40}, {"D", 64}, {"heads", 2}, {"P", 12}}};
  std::string source = space.sources()->main + "\n";
  std::set<std::string> checks;
  for (const auto& dims : shapes) {
    const Shape shape = resolve_shape(find_problem("scene_graph"), space, dims);
    for (const auto& c : space.enumerate(shape, DeviceLimits::for_arch(90)).configs) {
      const KernelLaunch k = space.lower(c, shape, DeviceLimits::for_arch(90)).launches.front();
      if (k.kernel != "sg_cluster") continue;
      // sg_cluster<B, N, D, H, P, R, BLOCK, BULK, KSPLIT, ...>: the layout's N, D, H, P, R, KSPLIT
      std::vector<std::string> a;
      std::string e = k.name_expression.substr(k.name_expression.find('<') + 1);
      for (std::size_t at = 0; at < e.size();) {
        const std::size_t end = e.find_first_of(",>", at);
        a.push_back(e.substr(at, end - at));
        at = end + 1;
      }
      ASSERT_GE(a.size(), 9u) << k.name_expression;
      checks.insert(fmt::format("static_assert(tune_kernels::SgClusterLayout<{}, {}, {}, {}, {}, {}>::kBytes == {}u, "
                                "\"cl_smem of {}\");\n",
                                a[1], a[2], a[3], a[4], a[5], a[8], k.dynamic_smem, k.name_expression));
    }
  }
  ASSERT_GT(checks.size(), 10u);
  for (const auto& line : checks) source += line;
  const CompileResult r =
      compile(CompileRequest{source, "sg_cluster_layout_check.cu", {}, default_options(90), space.sources()->headers});
  EXPECT_TRUE(r.ok) << r.log;
}

TEST(Nvrtc, ACompileErrorIsAResultWithItsLog) {
  CompileRequest req{"__global__ void k() { this is not cuda; }", "broken.cu", {}, default_options(90)};
  const CompileResult r = compile(req);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
}

TEST(Nvrtc, PtxasReportIsParsed) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1kv\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 360 bytes cmem[0]\n";
  const auto r = parse_ptxas_report(log);
  ASSERT_EQ(r.count("_Z1kv"), 1u);
  const Resources& k = r.at("_Z1kv");
  EXPECT_EQ(k.registers, 40);
  EXPECT_EQ(k.spill_store_bytes, 8);
  EXPECT_EQ(k.spill_load_bytes, 4);
  EXPECT_EQ(k.stack_frame_bytes, 16);
  EXPECT_EQ(k.static_smem_bytes, 2048);
  EXPECT_EQ(k.barriers, 1);
}

// Issue 35: NVRTC of CUDA 13 has no <cuda_bf16.h>; tune passes the toolkit's (with_cuda_headers).
TEST(Nvrtc, Bfloat16HeadersAreGivenToNvrtc) {
  const std::string source = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
                             "template <typename T> __global__ void k(T* out) { out[0] = __float2bfloat16(1.5f) + T(out[1]); }\n";
  EXPECT_TRUE(with_cuda_headers("__global__ void k() {}", {}).empty());
  const auto headers = with_cuda_headers(source, {});
  ASSERT_EQ(headers.size(), 4u);
  CompileRequest req{source, "bf16.cu", {"k<__nv_bfloat16>"}, default_options(90), headers};
  const CompileResult r = compile(req);
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_NE(CompileCache::key(req, "v"), CompileCache::key(CompileRequest{source, "bf16.cu", {"k<float>"}, default_options(90), headers}, "v"));
}

}  // namespace
}  // namespace tune
