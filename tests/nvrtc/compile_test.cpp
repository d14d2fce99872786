// NVRTC tier: compiles a representative subset of each problem's space for sm_90, no GPU needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/compile_all.hpp"
#include "support/sample.hpp"
#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/problem.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

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
// (ln=fused); and the widest warp tiles at the deepest pipeline compile for sm_90 without spills,
// with 3xTF32 and with the bf16 correction (corr=bf16).
TEST(Nvrtc, LnLinearGeluTensorCoreSpaceRefusesWhatDoesNotFitAndCompilesWithoutSpills) {
  const std::string dir = (std::filesystem::path(TUNE_REPO_DIR) / "examples" / "ln_linear_gelu").string();
  const Space space = load_space(dir, std::nullopt);
  const DeviceLimits limits = DeviceLimits::for_arch(90);
  const auto at = [&](std::int64_t m, std::int64_t k, std::int64_t n) {
    return resolve_shape(find_problem(dir), space, {{"M", m}, {"K", k}, {"N", n}});
  };
  const Shape shape = at(1000, 260, 300);
  const auto mma = [&](const nlohmann::ordered_json& edits) {
    nlohmann::ordered_json j = {{"bm", 64},         {"bn", 64},     {"tm", 1},         {"tn", 1},  {"vec", 1},
                                {"w_stage", "ldg"}, {"bk", 32},     {"algo", "mma"},   {"wm", 32}, {"wn", 32},
                                {"stages", 4},      {"group_m", 8}, {"ln", "separate"}};
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
  EXPECT_EQ(separate.launches[1].grid[0], 16u * 5u);                   // cdiv(1000, 64) x cdiv(300, 64) tiles
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
                                      mma({{"bk", 64}, {"ln", "fused"}, {"group_m", 1}}),
                                      mma({{"bm", 128}, {"wm", 64}, {"group_m", 1}, {"corr", "bf16"}}),
                                      mma({{"bn", 128}, {"wn", 64}, {"ln", "fused"}, {"corr", "bf16"}})};
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

// examples/ln_linear_gelu's split-K and 16-wide warp tiles (issue 36) at ragged shapes (M 1000,
// K 260: 17 k-tiles of 16, N 300 and odd N 301): the split GEMM, the epilogue (float4 and scalar) and
// the narrowest warp tiles compile for sm_90 without spills; so does the split GEMM with ln fused,
// which the constraints leave out of the space (the launch is there for a space that allows it).
TEST(Nvrtc, LnLinearGeluSplitKAndNarrowWarpTilesCompileWithoutSpills) {
  const std::string dir = (std::filesystem::path(TUNE_REPO_DIR) / "examples" / "ln_linear_gelu").string();
  const Space space = load_space(dir, std::nullopt);
  const DeviceLimits limits = DeviceLimits::for_arch(90);
  const auto at = [&](std::int64_t n) {
    return resolve_shape(find_problem(dir), space, {{"M", 1000}, {"K", 260}, {"N", n}});
  };
  const auto mma = [&](const nlohmann::ordered_json& edits) {
    nlohmann::ordered_json j = space.to_json(space.baseline());
    j.update({{"bm", 64}, {"bn", 64}, {"bk", 16}, {"algo", "mma"}, {"stages", 4}, {"group_m", 8}, {"split_k", 2}});
    j.update(edits);
    return space.from_json(j);
  };
  struct Case {
    Config config;
    Shape shape;
    bool valid;
  };
  const std::vector<Case> cases = {{mma({{"split_k", 2}}), at(300), true},
                                   {mma({{"split_k", 4}, {"bm", 128}, {"wm", 64}, {"group_m", 1}}), at(300), true},
                                   {mma({{"bm", 32}, {"wm", 16}, {"wn", 16}, {"stages", 3}}), at(301), true},
                                   {mma({{"wm", 16}, {"wn", 32}, {"split_k", 1}}), at(301), true},
                                   {mma({{"ln", "fused"}, {"wn", 64}}), at(301), false}};
  std::vector<Lowered> lowered;
  for (const Case& c : cases) {
    EXPECT_EQ(space.violated_constraint(c.config, c.shape, limits).empty(), c.valid) << space.name(c.config);
    lowered.push_back(space.lower(c.config, c.shape, limits));
  }
  const std::vector<CompileResult> results = test::compile_all(lowered, default_options(90));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string name = space.name(cases[i].config);
    ASSERT_TRUE(results[i].ok) << name << ":\n" << results[i].log;
    ASSERT_EQ(results[i].lowered_names.size(), lowered[i].launches.size()) << name;
    for (const auto& lowered_name : results[i].lowered_names) {
      const auto it = results[i].resources.find(lowered_name);
      ASSERT_NE(it, results[i].resources.end()) << lowered_name << "\n" << results[i].log;
      EXPECT_EQ(it->second.spill_store_bytes, 0) << name << " " << lowered_name;
    }
  }
  EXPECT_EQ(lowered[0].launches.back().name_expression, "ln_linear_gelu_splitk_epilogue<1000,300,2>");
  EXPECT_EQ(lowered[4].launches.size(), 2u);  // fused: the split GEMM on x, then the epilogue
  EXPECT_EQ(lowered[4].launches[0].args.front(), "x");
}

TEST(Nvrtc, ContactRepresentativeSubsetCompilesForSm90) { compile_subset("contact", {{"B", 4}, {"N", 64}}); }

TEST(Nvrtc, SceneGraphRepresentativeSubsetCompilesForSm90) { compile_subset("scene_graph", {{"B", 4}, {"N", 24}}); }

// sg_cluster does not check its dynamic shared memory at run time (the check cost a constant-cache
// miss before the first load), so the config's cl_smem must be exactly the kernel's layout size.
// The branches of out butterfly and attention quad that the B4 N24 subset above never takes: the
// first keeps 8 outputs per warp while 8 cdiv(D, 32) weights fit a lane's registers, else 4
// (D = 256); the second ends with a transposed butterfly while a column quarter has at most 8
// columns, else with a plain one (64-wide heads). For each, the first valid cluster variant with
// both and overlap compiles, and the ptxas report says it does not spill.
TEST(Nvrtc, SceneGraphOutButterflyAndAttentionQuadCompileAtWideShapes) {
  const Space space = load_space("scene_graph", std::nullopt);
  const std::vector<std::vector<std::pair<std::string, std::int64_t>>> shapes =
      {{{"B", 2}, {"N", 16}, {"D", 256}, {"heads", 8}, {"P", 16}},   // 4 outputs per warp
       {{"B", 2}, {"N", 16}, {"D", 128}, {"heads", 2}, {"P", 16}}};  // 16 columns per quarter
  for (const auto& dims : shapes) {
    const Shape shape = resolve_shape(find_problem("scene_graph"), space, dims);
    std::optional<Config> pick;
    for (const auto& c : space.enumerate(shape, DeviceLimits::for_arch(90)).configs) {
      const auto json = space.to_json(c);
      if (json.at("out") == "butterfly" && json.at("attention") == "quad" && json.at("overlap") == true) {
        pick = c;
        break;
      }
    }
    ASSERT_TRUE(pick.has_value()) << "no cluster variant with out butterfly, attention quad and overlap at D "
                                  << dims[2].second;
    const Lowered lowered = space.lower(*pick, shape, DeviceLimits::for_arch(90));
    ASSERT_EQ(lowered.launches.size(), 1u);
    EXPECT_NE(lowered.launches.front().name_expression.find(",2,1>"), std::string::npos)
        << lowered.launches.front().name_expression;  // OUT = 2, ATTN = 1
    const CompileResult r = compile(compile_request(lowered, default_options(90)));
    ASSERT_TRUE(r.ok) << space.name(*pick) << ":\n" << r.log;
    const auto it = r.resources.find(r.lowered_names.front());
    ASSERT_NE(it, r.resources.end()) << r.log;
    EXPECT_EQ(it->second.spill_store_bytes, 0) << space.name(*pick) << ":\n" << r.log;
  }
}

// The shapes whose cluster variants the static_assert checks below take: the shape of record,
// odd N, narrow heads, P % 8 != 0, and N past attention quad's 64.
const std::vector<std::vector<std::pair<std::string, std::int64_t>>>& cluster_check_shapes() {
  static const std::vector<std::vector<std::pair<std::string, std::int64_t>>> shapes =
      {{{"B", 4}, {"N", 24}},
       {{"B", 3}, {"N", 13}},
       {{"B", 2}, {"N", 6}, {"D", 16}, {"heads", 2}, {"P", 4}},
       {{"B", 1}, {"N", 12}, {"D", 32}, {"heads", 4}, {"P", 8}},
       {{"B", 2}, {"N", 5}, {"D", 16}, {"heads", 2}, {"P", 8}},
       {{"B", 2}, {"N", 40}, {"D", 64}, {"heads", 2}, {"P", 12}}};
  return shapes;
}

// sg_cluster<B, N, D, H, P, R, BLOCK, BULK, KSPLIT, ASYNC, NTILE, OVERLAP, OUT, ATTN>: its arguments.
std::vector<std::string> cluster_args(const KernelLaunch& k) {
  std::vector<std::string> a;
  const std::string e = k.name_expression.substr(k.name_expression.find('<') + 1);
  for (std::size_t at = 0; at < e.size();) {
    const std::size_t end = e.find_first_of(",>", at);
    a.push_back(e.substr(at, end - at));
    at = end + 1;
  }
  return a;
}

// One line per valid cluster variant of the shapes above, made by `line` from its launch and
// arguments (one line per distinct text).
std::set<std::string> cluster_lines(
    const Space& space, const std::function<std::string(const KernelLaunch&, const std::vector<std::string>&)>& line) {
  std::set<std::string> out;
  for (const auto& dims : cluster_check_shapes()) {
    const Shape shape = resolve_shape(find_problem("scene_graph"), space, dims);
    for (const auto& c : space.enumerate(shape, DeviceLimits::for_arch(90)).configs) {
      const KernelLaunch k = space.lower(c, shape, DeviceLimits::for_arch(90)).launches.front();
      if (k.kernel != "sg_cluster") continue;
      const std::vector<std::string> a = cluster_args(k);
      EXPECT_EQ(a.size(), 14u) << k.name_expression;
      if (a.size() == 14u) out.insert(line(k, a));
    }
  }
  return out;
}

// The template source with these lines after it, compiled by NVRTC (no kernel instantiated) in
// programs of at most 200 lines: NVRTC's time grows faster than the lines (944 plans in one
// program took 16 times as long as 200). The first program that fails, else the last.
CompileResult compile_checks(const Space& space, const std::set<std::string>& lines, const std::string& name) {
  constexpr std::size_t kLinesPerProgram = 200;
  CompileResult r;
  auto it = lines.begin();
  do {
    std::string source = space.sources()->main + "\n";
    for (std::size_t n = 0; n < kLinesPerProgram && it != lines.end(); ++n, ++it) source += *it;
    r = compile(CompileRequest{source, name, {}, default_options(90), space.sources()->headers});
  } while (r.ok && it != lines.end());
  return r;
}

// For every cluster variant of several shapes, a static_assert compiled by NVRTC: no GPU.
TEST(Nvrtc, SceneGraphClusterSharedMemoryIsTheKernelLayoutSize) {
  const Space space = load_space("scene_graph", std::nullopt);
  const std::set<std::string> checks = cluster_lines(space, [](const KernelLaunch& k, const std::vector<std::string>& a) {
    // the layout's N, D, H, P, R, KSPLIT
    return fmt::format(
        "static_assert(tune_kernels::SgClusterLayout<{}, {}, {}, {}, {}, {}>::kBytes == {}u, "
        "\"cl_smem of {}\");\n",
        a[1], a[2], a[3], a[4], a[5], a[8], k.dynamic_smem, k.name_expression);
  });
  ASSERT_GT(checks.size(), 10u);
  const CompileResult r = compile_checks(space, checks, "sg_cluster_layout_check.cu");
  EXPECT_TRUE(r.ok) << r.log;
}

// SgClusterPlan<N, D, H, P, R, BLOCK, BULK, KSPLIT, ASYNC, NTILE, OVERLAP, OUT, ATTN> of these
// arguments, explicitly instantiated: its static_asserts are checked.
std::string plan_of(const std::vector<std::string>& a) {
  return fmt::format("template struct tune_kernels::SgClusterPlan<{}>;\n",
                     fmt::join(std::vector<std::string>(a.begin() + 1, a.end()), ", "));
}

// sg_cluster refuses at compile time what the constraints of out, attention and overlap refuse,
// instead of running another variant under the name (issue 38): the plan of every valid cluster
// variant of several shapes compiles (NVRTC, no GPU), and a variant that one of those
// constraints refuses, lowered all the same, does not, with the static_assert's words.
TEST(Nvrtc, SceneGraphClusterRefusesWhatTheSpaceRefuses) {
  const Space space = load_space("scene_graph", std::nullopt);
  const std::set<std::string> plans =
      cluster_lines(space, [](const KernelLaunch&, const std::vector<std::string>& a) { return plan_of(a); });
  ASSERT_GT(plans.size(), 100u);
  const CompileResult all = compile_checks(space, plans, "sg_cluster_plan_check.cu");
  EXPECT_TRUE(all.ok) << all.log;

  struct Refused {
    std::vector<std::pair<std::string, std::int64_t>> dims;
    nlohmann::ordered_json knobs;
    std::string constraint, assertion;
  };
  const std::vector<Refused> refused =
      {{{{"B", 4}, {"N", 24}}, {{"block", 256}, {"overlap", true}}, "!overlap ||", "overlap needs"},
       {{{"B", 1}, {"N", 72}}, {{"attention", "quad"}}, "attention != quad ||", "attention quad needs"},
       {{{"B", 4}, {"N", 24}, {"D", 48}}, {{"out", "mma"}}, "out != mma ||", "out mma needs"}};
  for (const Refused& x : refused) {
    const Shape shape = resolve_shape(find_problem("scene_graph"), space, x.dims);
    nlohmann::ordered_json json = space.to_json(space.baseline());
    json.update({{"strategy", "fused"}, {"mapping", "cluster"}, {"rsplit", 2}, {"block", 512}, {"ksplit", 3}, {"ntile", 4}});
    json.update(x.knobs);
    const Config c = space.from_json(json);
    EXPECT_EQ(space.violated_constraint(c, shape, DeviceLimits::for_arch(90)).rfind(x.constraint, 0), 0u)
        << space.name(c) << ": " << space.violated_constraint(c, shape, DeviceLimits::for_arch(90));
    const std::vector<std::string> a = cluster_args(space.lower(c, shape, DeviceLimits::for_arch(90)).launches.front());
    const CompileResult r = compile_checks(space, {plan_of(a)}, "sg_cluster_refused.cu");
    EXPECT_FALSE(r.ok) << space.name(c);
    EXPECT_NE(r.log.find(x.assertion), std::string::npos) << space.name(c) << ":\n" << r.log;
  }
}

// strategy tc (issue 36): the tc variants of the sizes where the constraints admit them, their four
// launches, their dynamic shared memory equal to the kernels' own sizes (static_asserts in one NVRTC
// compile), one variant per block size compiled without spills at the shape of record; and none
// where the constraints must refuse (D % 8 != 0, a block of 512 whose warps cannot split the
// 64-column tile, more query rows than N). The space stays within --max-space, so that a default
// tune of scene_graph still enumerates it.
// The valid tc configurations (block, qrows, smem_w over their values; the other parameters as
// the baseline's, but mapping head; ilp: the wide GEMM tiles), checked one by one: enumerating the whole space takes seconds.
std::vector<Config> tc_configs(const Space& space, const Shape& shape, int arch = 90) {
  std::vector<Config> tc;
  auto json = space.to_json(space.baseline());
  json["strategy"] = "tc";
  json["mapping"] = "head";
  for (const int block : {64, 128, 256, 512, 1024}) {
    for (const int qrows : {1, 2, 4, 8, 16}) {
      for (const int flags : {0, 1, 2, 3}) {
        json["block"] = block;
        json["qrows"] = qrows;
        json["smem_w"] = (flags & 1) != 0;
        json["ilp"] = (flags & 2) != 0;  // the wide GEMM tiles
        const Config c = space.from_json(json);
        if (space.violated_constraint(c, shape, DeviceLimits::for_arch(arch)).empty()) tc.push_back(c);
      }
    }
  }
  return tc;
}

TEST(Nvrtc, SceneGraphTcVariantsCompileWithTheirKernelsSharedMemory) {
  const Space space = load_space("scene_graph", std::nullopt);
  EXPECT_LE(space.size(), kDefaultMaxSpace);
  const std::vector<std::vector<std::pair<std::string, std::int64_t>>> shapes =
      {{{"B", 16}, {"N", 64}, {"D", 256}, {"heads", 8}, {"P", 32}},
       {{"B", 4}, {"N", 24}},
       {{"B", 3}, {"N", 13}, {"D", 40}, {"heads", 5}, {"P", 12}},
       {{"B", 2}, {"N", 6}, {"D", 16}, {"heads", 2}, {"P", 4}}};
  std::string source = space.sources()->main + "\n";
  std::vector<Config> record_picks;
  for (const auto& dims : shapes) {
    const Shape shape = resolve_shape(find_problem("scene_graph"), space, dims);
    const std::vector<Config> tc = tc_configs(space, shape);
    ASSERT_FALSE(tc.empty()) << "no tc variant at N " << dims[1].second;
    if (dims[1].second >= 16) {
      EXPECT_EQ(tc.size(), (3u + 2u) * 5u * 2u) << "at N " << dims[1].second;  // ilp: blocks 128, 256
    }
    std::set<std::int64_t> blocks;
    for (const auto& c : tc) {
      const Lowered lowered = space.lower(c, shape, DeviceLimits::for_arch(90));
      ASSERT_EQ(lowered.launches.size(), 4u) << space.name(c);
      const auto& l = lowered.launches;
      EXPECT_EQ(l[0].kernel, "sg_tc_qkv");
      EXPECT_EQ(l[1].kernel, "sg_pair_bias");
      EXPECT_EQ(l[2].kernel, "sg_tc_attention");
      EXPECT_EQ(l[3].kernel, "sg_tc_out_proj");
      EXPECT_LE(space.numeric(c, "qrows"), dims[1].second) << space.name(c);
      const auto args = [](const std::string& e) { return e.substr(e.find('<') + 1, e.size() - e.find('<') - 2); };
      // sg_tc_qkv<B, N, D, H, BM, BN, BLOCK>, sg_tc_attention<B, N, D, H, QR, BLOCK>,
      // sg_tc_out_proj<B, N, D, BM, BN, BLOCK>
      const auto a0 = args(l[0].name_expression), a2 = args(l[2].name_expression), a3 = args(l[3].name_expression);
      const auto nth = [](const std::string& a, int i) {
        std::size_t at = 0;
        for (int k = 0; k < i; ++k) at = a.find(',', at) + 1;
        return a.substr(at, a.find(',', at) - at);
      };
      source += fmt::format("static_assert(tune_kernels::sg_tc_gemm_smem_bytes({}, {}, {}) == {}u, \"{}\");\n", nth(a0, 2),
                            nth(a0, 4), nth(a0, 5), l[0].dynamic_smem, l[0].name_expression);
      source += fmt::format("static_assert(tune_kernels::sg_tc_attention_smem_bytes({}, {}, {}, {}) == {}u, \"{}\");\n",
                            nth(a2, 1), nth(a2, 2), nth(a2, 3), nth(a2, 4), l[2].dynamic_smem, l[2].name_expression);
      source += fmt::format("static_assert(tune_kernels::sg_tc_gemm_smem_bytes({}, {}, {}) == {}u, \"{}\");\n", nth(a3, 2),
                            nth(a3, 3), nth(a3, 4), l[3].dynamic_smem, l[3].name_expression);
      const std::int64_t tiles = space.numeric(c, "block") * 2 + space.numeric(c, "ilp");
      if (dims.size() == 5 && dims[0].second == 16 && blocks.insert(tiles).second) {
        record_picks.push_back(c);
      }
    }
  }
  const CompileResult layout =
      compile(CompileRequest{source, "sg_tc_smem_check.cu", {}, default_options(90), space.sources()->headers});
  EXPECT_TRUE(layout.ok) << layout.log;

  const Shape record = resolve_shape(find_problem("scene_graph"), space, shapes.front());
  ASSERT_EQ(record_picks.size(), 5u);  // blocks 64, 128, 256; with ilp 128, 256
  std::vector<Lowered> lowered;
  for (const auto& c : record_picks) lowered.push_back(space.lower(c, record, DeviceLimits::for_arch(90)));
  const std::vector<CompileResult> results = test::compile_all(lowered, default_options(90));
  for (std::size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << space.name(record_picks[i]) << ":\n" << results[i].log;
    for (const auto& name : results[i].lowered_names) {
      const auto it = results[i].resources.find(name);
      ASSERT_NE(it, results[i].resources.end()) << name;
      EXPECT_EQ(it->second.spill_store_bytes, 0) << name << ":\n" << results[i].log;
    }
  }
}

TEST(Nvrtc, SceneGraphTcIsRefusedWhereItsKernelsCannotRun) {
  const Space space = load_space("scene_graph", std::nullopt);
  // D % 8 != 0: the GEMMs take k-steps of 8 (D = 12 passes the shape's own D % 4 check).
  const Shape d12 =
      resolve_shape(find_problem("scene_graph"), space, {{"B", 2}, {"N", 6}, {"D", 12}, {"heads", 3}, {"P", 4}});
  EXPECT_TRUE(tc_configs(space, d12).empty());
  const Shape n6 =
      resolve_shape(find_problem("scene_graph"), space, {{"B", 2}, {"N", 6}, {"D", 16}, {"heads", 2}, {"P", 4}});
  auto json = space.to_json(space.baseline());
  json["strategy"] = "tc";
  json["mapping"] = "head";
  json["block"] = 128;
  json["qrows"] = 4;
  EXPECT_EQ(space.violated_constraint(space.from_json(json), n6, DeviceLimits::for_arch(90)), "");
  for (const auto& [name, value] : std::vector<std::pair<std::string, nlohmann::ordered_json>>{{"qrows", 8},
                                                                                               {"block", 512},
                                                                                               {"mapping", "batch"},
                                                                                               {"l1pf", true}}) {
    auto bad = json;
    bad[name] = value;
    EXPECT_NE(space.violated_constraint(space.from_json(bad), n6, DeviceLimits::for_arch(90)), "") << name;
  }
  EXPECT_TRUE(tc_configs(space, n6, 75).empty());                // sm_75: no TF32 tensor cores
  EXPECT_EQ(tc_configs(space, n6).size(), (3u + 2u) * 3u * 2u);  // blocks 64-256 (ilp 128-256), qrows 1-4, smem_w
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
  const std::string source =
      "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
      "template <typename T> __global__ void k(T* out) { out[0] = __float2bfloat16(1.5f) + T(out[1]); }\n";
  EXPECT_TRUE(with_cuda_headers("__global__ void k() {}", {}).empty());
  const auto headers = with_cuda_headers(source, {});
  ASSERT_EQ(headers.size(), 4u);
  CompileRequest req{source, "bf16.cu", {"k<__nv_bfloat16>"}, default_options(90), headers};
  const CompileResult r = compile(req);
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_NE(CompileCache::key(req, "v"),
            CompileCache::key(CompileRequest{source, "bf16.cu", {"k<float>"}, default_options(90), headers}, "v"));
}

}  // namespace
}  // namespace tune
