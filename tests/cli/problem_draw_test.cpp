// Issue 38: `tune problem draw` writes the data tune draws (Problem::make_data) as .npy files with
// index.json, value for value, and `tune problem show --json` the problem as tune reads it at a shape,
// so the Python tools need no draw and no reader of problem.json of their own.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "tune/problem.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string slurp(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The values of a version 1.0 .npy file of float32 ('<f4'), as doubles.
std::vector<double> npy_f4(const fs::path& file) {
  const std::string b = slurp(file);
  EXPECT_EQ(b.compare(0, 6, "\x93NUMPY"), 0) << file;
  const std::size_t header =
      static_cast<unsigned char>(b[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(b[9])) << 8);
  EXPECT_NE(b.substr(10, header).find("'descr': '<f4'"), std::string::npos) << b.substr(10, header);
  std::vector<double> out;
  for (std::size_t at = 10 + header; at + 4 <= b.size(); at += 4) {
    float f = 0;
    std::memcpy(&f, b.data() + at, 4);
    out.push_back(f);
  }
  return out;
}

TEST(ProblemDraw, WritesTunesDrawAsNpyWithAnIndex) {
  const fs::path out = out_dir("problem_draw");
  const Result r = run("problem draw --problem contact --B 1 --N 5 --C 8 --H 4 --seed 7 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Json index = Json::parse(slurp(out / "index.json"));
  EXPECT_EQ(index["kind"], "tune.problem_draw");
  EXPECT_EQ(index["purpose"], "parity");
  const auto problem = tune::Problem::load(fs::path(TUNE_REPO_DIR) / "configs" / "contact" / "problem.json");
  tune::Shape shape({{"B", 1}, {"N", 5}, {"C", 8}, {"H", 4}});
  problem->add_dtype_defaults(shape);
  const tune::ProblemData data = problem->make_data(shape, 7, tune::DataPurpose::kParity);
  ASSERT_EQ(index["tensors"].size(), data.params.size() + data.inputs.size());
  std::size_t i = 0;
  for (const auto* group : {&data.params, &data.inputs})
    for (const tune::HostTensor& t : *group) {
      const Json& entry = index["tensors"][i++];
      EXPECT_EQ(entry["name"], t.spec.name);
      EXPECT_EQ(entry["dtype"], "float32");
      EXPECT_EQ(entry["shape"].get<std::vector<std::int64_t>>(), t.spec.shape);
      EXPECT_EQ(npy_f4(out / entry["file"].get<std::string>()), t.data) << t.spec.name;  // bit for bit
    }
}

// `tune problem show --json`: the problem as tune reads it at a shape (issue 38: the Python tools' one
// reader of problem.json): the dtype variable bound, each tensor's dtype and shape, the edge cases and
// each dtype's tolerance, as the library gives them.
TEST(ProblemShow, PrintsTheProblemAtAShapeAsJson) {
  const fs::path folder = fs::path(TUNE_REPO_DIR) / "examples" / "rmsnorm";
  const Result r = run("problem show --json --problem " + folder.string() + " --M 3 --T bfloat16");
  ASSERT_EQ(r.code, 0) << r.output;
  const Json facts = Json::parse(r.output);
  const auto problem = tune::Problem::load(folder / "problem.json");
  tune::Shape shape({{"M", 3}, {"K", 4096}});
  shape.set_dtype("T", tune::DType::kBFloat16);
  EXPECT_EQ(facts["kind"], "tune.problem_show");
  EXPECT_EQ(facts["problem"], "rmsnorm");
  EXPECT_EQ(facts["reference"], (folder / "reference.py").string());
  EXPECT_EQ(facts["shape"]["T"], "bfloat16");
  EXPECT_EQ(facts["dtypes"]["T"]["default"], "float32");
  shape.set("K", facts["shape"]["K"].get<std::int64_t>());  // the space's default
  std::vector<tune::TensorSpec> specs = problem->param_specs(shape);
  for (const auto& t : problem->input_specs(shape)) specs.push_back(t);
  specs.push_back(problem->output_spec(shape));
  ASSERT_EQ(facts["tensors"].size(), specs.size()) << r.output;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(facts["tensors"][i]["name"], specs[i].name);
    EXPECT_EQ(facts["tensors"][i]["dtype"], "bfloat16");
    EXPECT_EQ(facts["tensors"][i]["shape"].get<std::vector<std::int64_t>>(), specs[i].shape);
  }
  EXPECT_EQ(facts["tensors"].back()["role"], "output");
  EXPECT_EQ(facts["edge_cases"].get<std::vector<std::string>>(), problem->edge_cases(shape));
  const tune::Tolerance bf = problem->tolerance(tune::DType::kBFloat16);
  EXPECT_EQ(facts["tolerance"]["bfloat16"]["atol"].get<double>(), bf.atol);
  EXPECT_EQ(facts["tolerance"]["bfloat16"]["rtol"].get<double>(), bf.rtol);
  EXPECT_EQ(facts["tolerance"]["int64"]["atol"].get<double>(), 0.0);
  // Without --json: one line per tensor for a person.
  const Result text = run("problem show --problem " + folder.string() + " --M 3 --T bfloat16");
  ASSERT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.output.find("x input bfloat16 [3, "), std::string::npos) << text.output;
}

TEST(ProblemDraw, BadRequestsAreOneLineAndExit2) {
  const std::string out = " --out " + out_dir("problem_draw_bad");
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"problem draw --B 1 --N 5" + out, "--problem is required"},
           {"problem draw --problem contact --B 1,2 --N 5" + out, "2 shapes given"},
           {"problem draw --problem contact --B 1 --N 5 --seed -1" + out, "--seed -1"},
           {"problem draw --problem contact --B 1 --N 5 --edge-case nope" + out, "--edge-case nope: not an edge case"},
           {"problem draw --problem contact --B 1 --N 5 --purpose warm" + out, "--purpose"},
           {"problem show --json --B 1 --N 5", "tune problem show: --problem is required"},
           {"problem show --problem contact --B 1,2 --N 5", "2 shapes given"},
           {"problem show --problem contact --B 1 --N 5 --Q 3", "--Q is not a dimension of problem contact"},
           {"problem show --problem " + std::string(TUNE_REPO_DIR) + "/examples/rmsnorm --M 3 --T int8",
            "--T int8 is not a dtype problem rmsnorm takes"}}) {
    const Result r = run(args);
    SCOPED_TRACE(args);
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, needle);
  }
}

}  // namespace
