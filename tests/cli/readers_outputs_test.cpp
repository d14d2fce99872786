// Issue 34: what tune reads is bounded (a gzip bomb, /dev/zero, JSON nested 100 000 deep are one
// line, exit 2, naming the file), what it writes is checked (an output path that is a file, a
// folder of other files), export names cannot clash, and every usage error is one "tune:" line.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/fixture_problem.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const std::string kContactResult = std::string(TUNE_FIXTURES) + "/merge/contact/synthetic_gpu_a_B4_N64_C64_H32.json";
const std::string kSmallTune =
    "--problem contact --B 2 --N 8 --C 16 --H 8 --config " + std::string(TUNE_FIXTURES) + "/contact_small_space.json";

fs::path scratch(const std::string& name) {
  const auto dir = fs::path(TUNE_BINARY_DIR) / "readers_outputs" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string deep(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// Exit 2 and one "tune:" line holding `needle`, under ulimit -v (4 GB) so that a reader without a
// bound fails the test instead of filling the machine's memory.
void expect_refused(const std::string& args, const std::string& needle, const std::string& env = "") {
  const Result r = run_command("ulimit -v 4000000; " + env + " " + std::string(TUNE_EXE) + " " + args);
  SCOPED_TRACE(args);
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r, needle);
}

// #18: a 4 MB gzip file that holds 4 GiB took 12 GB and a minute; /dev/zero read until bad_alloc.
TEST(Readers, AGzipBombAndAnEndlessFileAreRefusedInOneLineNamingTheFile) {
  const fs::path dir = scratch("bomb");
  const std::string bomb = (dir / "bomb.json.gz").string();
  // 300 gzip members of 1 MiB of spaces each, one after the other: one gzip stream of 300 MiB.
  ASSERT_EQ(run_command(fmt::format("head -c 1048576 /dev/zero | tr '\\0' ' ' | gzip -1 > {}.member", bomb)).code, 0);
  const std::string member = slurp(bomb + ".member");
  {
    std::ofstream out(bomb, std::ios::binary);
    for (int i = 0; i < 300; ++i) out << member;
  }
  const std::string needle = bomb + ": holds more than 256 MiB (decompressed)";
  expect_refused("header " + bomb + " -o " + (dir / "x.hpp").string(), needle);
  expect_refused("merge " + bomb + " --out " + (dir / "merged").string(), needle);
  expect_refused("export torch " + bomb + " -o " + (dir / "exp").string(), needle);
  expect_refused(kSmallTune + " --out " + (dir / "o").string() + " --warm-start " + bomb, needle, "TUNE_WORKER_FAKE=1");
  expect_refused("header /dev/zero -o " + (dir / "x.hpp").string(), "/dev/zero: holds more than 256 MiB");
  expect_refused(kSmallTune + " --out " + (dir / "o").string() + " --warm-start /dev/zero", "/dev/zero: holds more than",
                 "TUNE_WORKER_FAKE=1");
  EXPECT_FALSE(fs::exists(dir / "x.hpp"));
}

// #19: JSON nested 100 000 deep ended in SIGSEGV (exit 139): a results file's problem, a problem
// file's _comment, and `tune list` with such a folder on the problem path.
TEST(Readers, JsonNestedTooDeepIsRefusedInOneLineNamingTheFile) {
  const fs::path dir = scratch("deep");
  std::string text = slurp(kContactResult);
  const auto at = text.find("\"problem\": \"contact\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 20, "\"problem\": " + deep(100000));
  const auto result = dir / "deep.json";
  std::ofstream(result) << text;
  const std::string needle = ": JSON nested deeper than 512 levels";
  expect_refused("header " + result.string() + " -o " + (dir / "x.hpp").string(), result.string() + needle);
  expect_refused(kSmallTune + " --out " + (dir / "o").string() + " --warm-start " + result.string(),
                 result.string() + needle, "TUNE_WORKER_FAKE=1");

  const auto problems = dir / "problems";
  fs::create_directories(problems);
  fs::copy(fs::path(TUNE_FIXTURES) / "problems" / "affine", problems / "affine", fs::copy_options::recursive);
  std::string problem = slurp(problems / "affine" / "problem.json");
  problem.insert(problem.find('{') + 1, "\"_comment\": " + deep(100000) + ",");
  std::ofstream(problems / "affine" / "problem.json") << problem;
  const std::string file = fs::canonical(problems / "affine" / "problem.json").string();
  expect_refused("--problem " + (problems / "affine").string() + " --R 8 --compile-only --out " + (dir / "o").string(),
                 file + needle);
  // tune list lists the folder as one that cannot be loaded, and the others.
  const Result list = run("list --problem-path " + problems.string());
  EXPECT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("cannot be loaded: " + file + needle), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("contact"), std::string::npos) << list.output;
}

// #22: an export onto a file ended in "internal error: filesystem error" (exit 4).
TEST(Outputs, AnExportOntoAFileIsOneLineAndExitCode2) {
  const fs::path dir = scratch("export_file");
  const auto file = dir / "a_file";
  std::ofstream(file) << "x";
  const std::string args = "export torch " + kContactResult + " --allow-synthetic -o ";
  expect_refused(args + file.string(), "-o " + file.string() + ": not a folder");
  expect_refused(args + (file / "exp").string(), "-o " + (file / "exp").string() + ": cannot create the folder");
  EXPECT_EQ(slurp(file), "x");
}

// Adversarial round 5: -o naming the command's own results file replaced the record of a GPU run
// by its header (exit 0), and -o of a pipe or a device put a regular file where it was.
TEST(Outputs, AHeaderOrExportOntoItsOwnInputIsRefusedAndAPipeIsWrittenThrough) {
  const fs::path dir = scratch("own_input");
  const fs::path record = dir / "B4_N64_C64_H32.json";
  fs::copy_file(kContactResult, record);
  const std::string before = slurp(record);
  expect_refused("header " + record.string() + " --allow-synthetic -o " + record.string(),
                 "tune header: -o " + record.string() + " is one of the results files it reads; name another file");
  fs::create_symlink(record, dir / "link.json");
  expect_refused("export nvrtc " + record.string() + " -o " + (dir / "link.json").string(),
                 "tune export nvrtc: -o " + (dir / "link.json").string() + " is one of the results files it reads");
  EXPECT_EQ(slurp(record), before);
  // A link to another file is written through: the link stays a link.
  std::ofstream(dir / "target.hpp") << "old";
  fs::create_symlink(dir / "target.hpp", dir / "out.hpp");
  Result r = run_command(std::string(TUNE_EXE) + " header " + record.string() + " --allow-synthetic -o " +
                         (dir / "out.hpp").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir / "out.hpp"));
  EXPECT_NE(slurp(dir / "target.hpp").find("tune_tuned"), std::string::npos);
  // A pipe: read while tune writes, and still a pipe afterwards.
  const fs::path pipe = dir / "pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0644), 0);
  r = run_command("(cat " + pipe.string() + " > " + (dir / "from_pipe.hpp").string() + " &) ; " + std::string(TUNE_EXE) +
                  " header " + record.string() + " --allow-synthetic -o " + pipe.string() + " && wait");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fs::status(pipe).type(), fs::file_type::fifo);
}

// Issue 36: the export ships the code the record gated, or nothing: a record whose sources or NVRTC
// are not this tune's is one line naming the file and the field, exit 2, and no folder is written.
TEST(Outputs, AnExportOfARecordWhoseCodeIsNotTodaysIsOneLineAndExitCode2) {
  const fs::path dir = scratch("export_identity");
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> cases =
      {{"context.source_hash 00000000deadbeef is not the hash of the problem's sources now",
        {"source_hash", "00000000deadbeef"}},
       {"context.nvrtc_version 11.8 is not this tune's NVRTC", {"nvrtc_version", "11.8"}}};
  for (const auto& [needle, field] : cases) {
    Json j = Json::parse(std::ifstream(kContactResult));
    j["context"][field.first] = field.second;
    const auto file = dir / "B4_N64_C64_H32.json";
    std::ofstream(file) << j.dump(1);
    expect_refused("export torch " + file.string() + " --allow-synthetic -o " + (dir / "e").string(),
                   file.string() + ": " + needle);
    EXPECT_FALSE(fs::exists(dir / "e"));
  }
}

// #26: a second export into a folder left the first one's files, importable and shipped by setup.py.
TEST(Outputs, AnExportReplacesAnEarlierExportAndRefusesAFolderOfOtherFiles) {
  const fs::path dir = scratch("export_again");
  const std::string args = "export torch " + kContactResult + " --allow-synthetic -o " + dir.string();
  const Result first = run(args + " --name first_ops");
  ASSERT_EQ(first.code, 0) << first.output;
  ASSERT_TRUE(fs::is_regular_file(dir / "first_ops" / "contact.py"));
  std::ofstream(dir / "first_ops" / "notes.txt") << "the user's own";
  const Result second = run(args + " --name second_ops");
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_TRUE(fs::is_regular_file(dir / "second_ops" / "contact.py"));
  EXPECT_FALSE(fs::exists(dir / "first_ops" / "contact.py")) << "the earlier export's module stays importable";
  EXPECT_FALSE(fs::exists(dir / "first_ops" / "csrc")) << "the earlier export's sources stay";
  EXPECT_TRUE(fs::is_regular_file(dir / "first_ops" / "notes.txt")) << "a file tune did not write is kept";
  EXPECT_EQ(slurp(dir / "setup.py").find("first_ops"), std::string::npos);

  const fs::path other = scratch("export_other");
  std::ofstream(other / "mine.py") << "print('mine')\n";
  expect_refused("export torch " + kContactResult + " --allow-synthetic -o " + other.string(),
                 "-o " + other.string() + ": a folder that holds other files than an earlier tune export");
  EXPECT_EQ(slurp(other / "mine.py"), "print('mine')\n");
}

// The files under `dir` whose names are write_file_atomic's temporaries ("<file>.tmp.<pid>.<n>").
std::vector<std::string> temporaries_under(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(e.path().string());
  return found;
}

// Round 9: an export killed part way (kill -9, a lost node) left part of its files and no list of
// them, and the next export into that folder refused it for good ("a folder that holds other files
// than an earlier tune export"); its temporary files stayed, to be shipped by setup.py. Killed at
// points spread over a whole export's time, each state is one the next export cleans up after.
TEST(Outputs, AnExportKilledPartWayLeavesNothingTheNextExportKeeps) {
  const fs::path dir = scratch("export_killed");
  const std::string export_args = "export torch " + kContactResult + " --allow-synthetic -o " + (dir / "e").string();
  const Result timed = run_command("s=$(date +%s%N); " + std::string(TUNE_EXE) + " " + export_args +
                                   " >/dev/null && echo $(( ($(date +%s%N) - s) / 1000000 ))");
  ASSERT_EQ(timed.code, 0) << timed.output;
  const long whole_ms = std::max(50L, std::stol(timed.output));
  // Killed while it wrote its list, the first file (CI met it at 0.028 s): only the list's temporary.
  const Result gone = run_command("sh -c 'echo $$'");  // a pid no process has once it has exited
  fs::remove_all(dir / "e");
  fs::create_directories(dir / "e");
  std::ofstream(dir / "e" / fmt::format(".tune-export.json.tmp.{}.0", std::stoi(gone.output))) << "{\"ki";
  const Result listing = run(export_args);
  ASSERT_EQ(listing.code, 0) << listing.output;
  EXPECT_EQ(temporaries_under(dir / "e"), std::vector<std::string>{});
  for (int k = 1; k <= 8; ++k) {
    fs::remove_all(dir / "e");
    const double at = static_cast<double>(whole_ms) * k / 9 / 1000.0;
    run_command(fmt::format("{} {} >/dev/null 2>&1 & p=$!; sleep {:.3f}; kill -9 $p 2>/dev/null; wait $p", TUNE_EXE,
                            export_args, at));
    SCOPED_TRACE(fmt::format("killed after {:.3f} s", at));
    const Result again = run(export_args);
    ASSERT_EQ(again.code, 0) << again.output;
    EXPECT_EQ(temporaries_under(dir / "e"), std::vector<std::string>{});
    const Json manifest = Json::parse(slurp(dir / "e" / ".tune-export.json"));
    std::vector<std::string> listed{".tune-export.json"}, on_disk;
    for (const auto& f : manifest.at("files")) listed.push_back(f.get<std::string>());
    for (const auto& e : fs::recursive_directory_iterator(dir / "e"))
      if (e.is_regular_file()) on_disk.push_back(fs::relative(e.path(), dir / "e").generic_string());
    std::sort(listed.begin(), listed.end());
    std::sort(on_disk.begin(), on_disk.end());
    EXPECT_EQ(on_disk, listed);
  }
}

// Round 9: `tune header -o`, `tune export nvrtc -o` and an export's files kept the temporary files a
// killed writer of them left (its pid gone): each writer now removes its own file's.
TEST(Outputs, AKilledWritersTemporaryFilesAreRemovedByTheNextWriterOfThatFile) {
  const fs::path dir = scratch("dead_temporaries");
  const Result gone = run_command("sh -c 'echo $$'");  // a pid no process has once it has exited
  ASSERT_EQ(gone.code, 0);
  const std::string pid = gone.output.substr(0, gone.output.find('\n'));
  const Result first = run("export torch " + kContactResult + " --allow-synthetic -o " + (dir / "e").string());
  ASSERT_EQ(first.code, 0) << first.output;
  const std::vector<fs::path> planted = {dir / ("h.hpp.tmp." + pid + ".0"), dir / ("n.json.tmp." + pid + ".3"),
                                         dir / "e" / "tune_ops" / ("contact.py.tmp." + pid + ".1"),
                                         dir / "e" / "tune_ops" / "csrc" / "contact" / ("cubins.inc.tmp." + pid + ".2"),
                                         dir / "e" / (".tune-export.json.tmp." + pid + ".4")};
  for (const auto& f : planted) std::ofstream(f) << "half a file";
  const fs::path live = dir / ("h.hpp.tmp." + std::to_string(getpid()) + ".0");  // a writer still running
  std::ofstream(live) << "being written";
  for (const std::string& args : {"header " + kContactResult + " --allow-synthetic -o " + (dir / "h.hpp").string(),
                                  "export nvrtc " + kContactResult + " -o " + (dir / "n.json").string(),
                                  "export torch " + kContactResult + " --allow-synthetic -o " + (dir / "e").string()}) {
    const Result r = run(args);
    ASSERT_EQ(r.code, 0) << args << "\n" << r.output;
  }
  for (const auto& f : planted) EXPECT_FALSE(fs::exists(f)) << f;
  EXPECT_TRUE(fs::exists(live)) << "a live writer's temporary file";
}

// #16: a package name that is a keyword or shadows a module, and two problems whose names meet
// once made identifiers (a-b and a_b), gave packages that do not import.
TEST(Outputs, ExportNamesThatCannotBeImportedOrThatClashAreRefused) {
  const fs::path dir = scratch("export_names");
  for (const char* name : {"class", "None", "lambda", "2ops", "my-ops"})
    expect_refused("export torch " + kContactResult + " --allow-synthetic -o " + (dir / "e").string() + " --name " + name,
                   std::string("--name ") + name + ": not a Python identifier, or a Python or C++ keyword");
  for (const char* name : {"torch", "json", "list"})
    expect_refused("export torch " + kContactResult + " --allow-synthetic -o " + (dir / "e").string() + " --name " + name,
                   std::string("--name ") + name + ": the name of a Python module or builtin the package would shadow");
  EXPECT_FALSE(fs::exists(dir / "e"));

  // Problems a-b and a_b: both would be module a_b.py and op a_b.
  std::string results;
  for (const std::string name : {"a-b", "a_b"}) {
    const auto folder = dir / "problems" / name;
    tune::test::copy_fixture_problem("affine", folder, [&name](nlohmann::ordered_json& j) { j["problem"] = name; });
    const Result r = run_with("TUNE_WORKER_FAKE=1", "--problem " + folder.string() +
                                                        " --R 8 --budget 1 --sanitize off --no-cache --out " +
                                                        (dir / "results").string());
    ASSERT_EQ(r.code, 0) << r.output;
    results += ' ';
    results += (dir / "results" / "fake-gpu" / name / "R8_L64.json").string();
  }
  expect_refused("export torch" + results + " --allow-synthetic -o " + (dir / "e").string(),
                 "problems a-b and a_b both export as a_b");
  EXPECT_FALSE(fs::exists(dir / "e"));
}

// Issue 38: export_torch.cpp was split by what each part writes (the extension's C++, its Python
// modules, its build files); what it writes stays byte for byte what tests/fixtures/export holds (made
// by tune before the split). The merged header has goldens of its own (the headers of record) and the
// CUBINs (cubins.inc) follow the kernels and NVRTC; the rest is the export's own text. A deliberate
// change of that text updates the golden with it (issue 36: a .cpp launcher of embedded CUBINs, no
// nvcc flags).
TEST(Outputs, AnExportsOwnFilesAreByteForByteTheGolden) {
  const fs::path dir = scratch("export_golden");
  const Result r = run("export torch " + kContactResult + " --allow-synthetic -o " + (dir / "e").string());
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path golden = fs::path(TUNE_FIXTURES) / "export";
  for (const char* file : {"README.md", "pyproject.toml", "setup.py", "tune_ops/__init__.py", "tune_ops/_build.py",
                           "tune_ops/contact.py", "tune_ops/csrc/binding.cpp", "tune_ops/csrc/contact/launch_contact.cpp"}) {
    SCOPED_TRACE(file);
    ASSERT_TRUE(fs::exists(golden / file));
    EXPECT_EQ(slurp(dir / "e" / file), slurp(golden / file));
  }
}

std::string test_python() {
  const char* py = std::getenv("TUNE_PYTHON");
  return py && *py ? py : "python3";
}

// The scatter_given fixture (out[N, L] in dtype U: N and U are the output's alone) tuned on the fake
// worker in float32 and float16 and exported; returns the package folder.
fs::path export_given(const fs::path& dir) {
  const std::string problem = std::string(TUNE_FIXTURES) + "/problems/scatter_given";
  const Result tuned = run_with("TUNE_WORKER_FAKE=1", "--problem " + problem + " --R 16 --U float32,float16 --out " +
                                                          (dir / "r").string() + " --cache-dir " + (dir / "c").string());
  EXPECT_EQ(tuned.code, 0) << tuned.output;
  const fs::path results = dir / "r" / "fake-gpu" / "scatter_given";
  const Result r = run("export torch " + (results / "R16_N8_L32.json").string() + " " +
                       (results / "R16_N8_L32_float16.json").string() + " --allow-synthetic -o " + (dir / "e").string());
  EXPECT_EQ(r.code, 0) << r.output;
  return dir / "e" / "tune_ops";
}

// Adversarial round 4: a problem whose output alone has a dim (index_add's row count N) or a dtype
// variable (a separate output dtype U) could not be exported ("the op cannot tell it from the
// tensors"). The op now takes them as `int[] given`, checked (a dim at least 1, a dtype one of its
// values), and ModelNew by keyword or from the module's attribute of that name.
TEST(Outputs, AnExportIsGivenTheDimsAndDtypesOnlyItsOutputHas) {
  const fs::path package = export_given(scratch("export_given"));
  const std::string binding = slurp(package / "csrc" / "binding.cpp");
  for (const char* line : {"m.def(\"scatter_given(Tensor[] tensors, int[] given) -> Tensor?\");",
                           "const long long d_N = given[0];", "const long long g_U = given[1];",
                           "TORCH_CHECK(g_U == 2 || g_U == 0, \"tune_ops::scatter_given: U is dtype number \"",
                           "return {d_R, d_N, d_L, g_U};", "t[0].options().dtype(scalar_type_of(dims[3]))"})
    EXPECT_NE(binding.find(line), std::string::npos) << line << "\n" << binding;
  // The package's README gives the op's second argument (adversarial round 5: it said the op took
  // the parameters and inputs alone).
  EXPECT_NE(slurp(package.parent_path() / "README.md")
                .find("`torch.ops.tune_ops.scatter_given(parameters + inputs, given)`: what no parameter or input tells "
                      "comes as a second argument, `int[] given`: N, U in this order"),
            std::string::npos);
  const fs::path module = package / "scatter_given.py";
  const std::string text = slurp(module);
  for (const char* line : {"GIVEN = [\"N\", \"U\"]", "def __init__(self, model, /, **given):",
                           "out = load().scatter_given(list(self._parameters_in_order) + list(inputs), self._given)"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_EQ(run_command(test_python() + " -m py_compile " + module.string()).code, 0);
  EXPECT_NE(slurp(package.parent_path() / "README.md")
                .find("fast = ModelNew(model, N=..., U=...)   # model: the problem's Model on the GPU; GIVEN: what no "
                      "input tells"),
            std::string::npos);
}

// The same export's binding.cpp compiled against PyTorch's headers as TorchExport's binding is
// (-Wall -Wextra -Werror), where $TUNE_TORCH_INCLUDE names them (.ci/run unpacks them from the torch
// wheel). The GPU build of exports is tools/device_session.sh's modelnew.
TEST(Outputs, AnExportGivenItsOutputsDimsCompilesAgainstTorchsHeaders) {
  const char* env = std::getenv("TUNE_TORCH_INCLUDE");
  const std::string include = env ? env : "";
  if (include.empty() || !fs::is_directory(include))
    GTEST_SKIP() << "no PyTorch headers: set TUNE_TORCH_INCLUDE to torch/include (.ci/run unpacks them from the "
                    "torch wheel)";
  const fs::path package = export_given(scratch("export_given_compiles"));
  const Result compiled = run_command(fmt::format(
      "{} -std=c++20 -fsyntax-only -Wall -Wextra -Werror -isystem {} -isystem {}/torch/csrc/api/include -isystem {} {}",
      TUNE_CXX_COMPILER, include, include, TUNE_CUDA_INCLUDE, (package / "csrc" / "binding.cpp").string()));
  EXPECT_EQ(compiled.code, 0) << compiled.output;
}

// Adversarial round 7: names a problem may give that meet the generated code's own. scatter_given
// with its output's dtype variable named DType (the merged header's enum), its input named x"\ (a
// quote and a backslash: any text is a tensor name), and parameters tile_m, tileM (one constant,
// kTileM, in the run's header) and sm_count (the header's kSmCount). Tuned on the fake worker in
// float32 and float16; returns the results folder.
fs::path tune_odd_names(const fs::path& dir) {
  const fs::path problem = dir / "odd_names";
  tune::test::copy_fixture_problem("scatter_given", problem, [](Json& json) {
    json["problem"] = "odd_names";
    json["dtypes"] = Json{{"DType", json["dtypes"]["U"]}};
    json["work"]["bytes"] = "8 * R + 4 * R * L + DType_bytes * N * L";
    json["tensors"][1]["name"] = "x\"\\";
    json["tensors"][2]["dtype"] = "DType";
    for (const char* name : {"tile_m", "tileM", "sm_count"}) {
      json["parameters"].push_back(Json{{"name", name}, {"values", {1}}});
      json["baseline"][name] = 1;
    }
    json["launches"][0]["template_args"][0] = "DType";
    json["launches"][0]["args"][1] = "x\"\\";
  });
  std::string reference = slurp(problem / "reference.py");
  reference.replace(reference.find("inputs[\"x\"]"), 11, "inputs['x\"\\\\']");
  std::ofstream(problem / "reference.py") << reference;
  const Result tuned =
      run_with("TUNE_WORKER_FAKE=1", "--problem " + problem.string() + " --R 16 --DType float32,float16 --out " +
                                         (dir / "r").string() + " --cache-dir " + (dir / "c").string());
  EXPECT_EQ(tuned.code, 0) << tuned.output;
  return dir / "r" / "fake-gpu" / "odd_names";
}

// `source` compiled with the host compiler (warnings as errors) in `dir`; the compiler's code and output.
Result compile(const fs::path& dir, const std::string& source, const std::string& flags = "") {
  std::ofstream(dir / "check.cpp") << source;
  return run_command(fmt::format("{} -std=c++17 -Wall -Wextra -Werror -I{} {} -o {} {} && {}", TUNE_CXX_COMPILER,
                                 dir.string(), flags, (dir / "check").string(), (dir / "check.cpp").string(),
                                 (dir / "check").string()));
}

// The run's header gave each parameter and dimension its constant by a spelling that drops '_' and
// case: tile_m and tileM were both kTileM, a parameter sm_count the header's own kSmCount, and the
// header did not compile. Names that meet keep their own spelling now (k_tile_m, k_tileM, k_sm_count).
TEST(Outputs, ARunsHeaderCompilesWhenTwoNamesWouldMeetInOneConstant) {
  const fs::path dir = scratch("odd_names_run_header");
  const fs::path results = tune_odd_names(dir);
  const std::string header = slurp(results / "R16_N8_L32_float16.hpp");
  for (const char* line : {"inline constexpr int k_tile_m = 1;", "inline constexpr int k_tileM = 1;",
                           "inline constexpr int k_sm_count = 1;", "inline constexpr int kSmCount = 132;",
                           "inline constexpr int kBlock = ", "inline constexpr long long kShapeR = 16;"})
    EXPECT_NE(header.find(line), std::string::npos) << line << "\n" << header;
  const Result built = compile(dir, "#include \"" + (results / "R16_N8_L32_float16.hpp").string() +
                                        "\"\nint main() { return tune_tuned::odd_names::k_tileM + "
                                        "tune_tuned::odd_names::k_sm_count == 2 ? 0 : 1; }\n");
  EXPECT_EQ(built.code, 0) << built.output;
}

// The merged header's Shape declared a dtype variable's field as `DType U`: a dimension or dtype
// variable named DType, a member of Shape by then, hid the enum, and the header did not compile.
// select() takes the float16 entry for a float16 shape, the float32 one for float32.
TEST(Outputs, AMergedHeaderCompilesWhenADtypeVariableIsNamedDType) {
  const fs::path dir = scratch("odd_names_merged_header");
  const fs::path results = tune_odd_names(dir);
  const Result h =
      run("header " + (results / "R16_N8_L32.json").string() + " " + (results / "R16_N8_L32_float16.json").string() +
          " --allow-synthetic -o " + (dir / "tuned.hpp").string());
  ASSERT_EQ(h.code, 0) << h.output;
  const Result ran = compile(dir, R"CPP(#include <cstdio>
#include <initializer_list>
#include "tuned.hpp"
namespace t = tune_tuned::odd_names;
int main() {
  for (const t::DType d : {t::DType::float16, t::DType::float32}) {
    const t::Selection s = t::select(t::Device{"Fake GPU", 90, 132, 0}, t::Shape{16, 8, 32, d});
    std::printf("%s %s\n", t::kEntries[s.index].shape_name, t::kEntries[s.index].winner.buffers[2].name);
  }
}
)CPP");
  ASSERT_EQ(ran.code, 0) << ran.output;
  EXPECT_NE(ran.output.find("R16_N8_L32_float16 out\nR16_N8_L32 out\n"), std::string::npos) << ran.output;
}

// The export's binding wrote a tensor's name into its dtype messages' string literals as it stood:
// a name with a quote or a backslash ended the literal, and binding.cpp did not compile. The names
// are C++ string literals now (compiled against PyTorch's headers where TUNE_TORCH_INCLUDE names them).
TEST(Outputs, AnExportsBindingWritesEveryTensorNameAsAStringLiteral) {
  const fs::path dir = scratch("odd_names_export");
  const fs::path results = tune_odd_names(dir);
  const Result r = run("export torch " + (results / "R16_N8_L32.json").string() + " " +
                       (results / "R16_N8_L32_float16.json").string() + " --allow-synthetic -o " + (dir / "e").string());
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path binding = dir / "e" / "tune_ops" / "csrc" / "binding.cpp";
  const std::string text = slurp(binding);
  EXPECT_NE(text.find(R"("tune_ops::odd_names: x\"\\ must be float32, not ")"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"(x"\ must)"), std::string::npos) << text;
  // Every line's quotes pair up once escaped quotes are set aside: no literal is left open.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::size_t quotes = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '\\')
        ++i;
      else if (line[i] == '"')
        ++quotes;
    EXPECT_EQ(quotes % 2, 0u) << line;
  }
  const char* env = std::getenv("TUNE_TORCH_INCLUDE");
  const std::string include = env ? env : "";
  if (include.empty() || !fs::is_directory(include)) return;
  const Result compiled = run_command(fmt::format(
      "{} -std=c++20 -fsyntax-only -Wall -Wextra -Werror -isystem {} -isystem {}/torch/csrc/api/include -isystem {} {}",
      TUNE_CXX_COMPILER, include, include, TUNE_CUDA_INCLUDE, binding.string()));
  EXPECT_EQ(compiled.code, 0) << compiled.output;
}

// The Python an export writes (setup.py, the package's __init__ and _build, a module per problem)
// passes flake8 with the repo's .flake8, for a problem of odd names (a tensor x"\, a dtype variable
// DType) and one whose dims and dtypes its output alone has: it had lines of 433 columns, dicts
// without spaces and unused imports (round 8).
TEST(Outputs, AnExportsPythonIsFlake8Clean) {
  if (run_command("command -v flake8").code != 0) GTEST_SKIP() << "no flake8 (apt-get install flake8)";
  const fs::path dir = scratch("export_flake8");
  const fs::path odd = tune_odd_names(dir / "odd");
  const fs::path given = dir / "given" / "r" / "fake-gpu" / "scatter_given";
  (void)export_given(dir / "given");
  const Result r = run("export torch " + (odd / "R16_N8_L32.json").string() + " " +
                       (odd / "R16_N8_L32_float16.json").string() + " " + (given / "R16_N8_L32_float16.json").string() +
                       " " + kContactResult + " --allow-synthetic -o " + (dir / "e").string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Result lint = run_command("cd " + (dir / "e").string() + " && flake8 --config " +
                                  (fs::path(TUNE_REPO_DIR) / ".flake8").string() + " . 2>&1");
  EXPECT_EQ(lint.code, 0) << lint.output;
}

// ModelNew's fallback (no tuned entry for the call) returns the output in the dtype problem.json
// declares, as the tuned op does: it returned the module's own (scatter_given's module computes in
// float32; its output U may be float16) (round 8). Run with a stand-in torch (no torch here): the
// op finds no entry, and the module's output is converted to U as given, or to a fixed dtype.
TEST(Outputs, ModelNewsFallbackReturnsTheDeclaredOutputDtype) {
  const fs::path package = export_given(scratch("export_fallback_dtype"));
  EXPECT_NE(slurp(package / "scatter_given.py").find("return self.model(*inputs).to(_dtype(self._given[1]))"),
            std::string::npos);
  const fs::path script = package.parent_path() / "fallback.py";
  std::ofstream(script) << R"PY(import importlib
import sys
import types
import warnings


class Module:  # torch.nn.Module's call: forward
    def __call__(self, *inputs):
        return self.forward(*inputs)


torch = types.ModuleType("torch")
torch.nn = types.SimpleNamespace(Module=Module)
for name in ("float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool"):
    setattr(torch, name, "torch." + name)
sys.modules["torch"] = torch
package = types.ModuleType("tune_ops")
package.__path__ = [sys.argv[1]]
package.load = lambda: types.SimpleNamespace(scatter_given=lambda tensors, given: None)
sys.modules["tune_ops"] = package
module = importlib.import_module("tune_ops.scatter_given")


class Out:
    dtype = "torch.float32"  # the module's own

    def to(self, dtype):
        self.dtype = dtype
        return self


class Model:
    N = 8

    def named_parameters(self):
        return []

    def named_buffers(self):
        return []

    def __call__(self, *inputs):
        return Out()


tensor = types.SimpleNamespace(device="cpu", is_cuda=False, shape=(16,))
warnings.simplefilter("ignore")
for u in ("float16", "float32"):
    print(u, module.ModelNew(Model(), U=u)(tensor, tensor).dtype)
)PY";
  const Result ran = run_command(test_python() + " " + script.string() + " " + package.string() + " 2>&1");
  ASSERT_EQ(ran.code, 0) << ran.output;
  EXPECT_NE(ran.output.find("float16 torch.float16\nfloat32 torch.float32\n"), std::string::npos) << ran.output;
}

// Each problem registers two ops, <problem> and <problem>_variant: problems a and a_variant both
// registered a_variant, which torch refuses when the package loads. The export refuses them in one line.
TEST(Outputs, AnExportRefusesTwoProblemsWhoseOpsMeet) {
  const fs::path dir = scratch("ops_meet");
  std::string files;
  for (const std::string name : {"pp", "pp_variant"}) {
    tune::test::copy_fixture_problem("two_pass", dir / name, [&](Json& json) { json["problem"] = name; });
    const Result tuned = run_with("TUNE_WORKER_FAKE=1", "--problem " + (dir / name).string() + " --M 8 --N 1024 --out " +
                                                            (dir / "r").string() + " --cache-dir " + (dir / "c").string());
    ASSERT_EQ(tuned.code, 0) << tuned.output;
    files += " " + (dir / "r" / "fake-gpu" / name / "M8_N1024.json").string();
  }
  const Result r = run("export torch" + files + " --allow-synthetic -o " + (dir / "e").string());
  EXPECT_EQ(r.code, 2) << r.output;
  expect_error_output(r,
                      "problems pp and pp_variant both need op torch.ops.tune_ops.pp_variant (pp's variant lookup, "
                      "pp_variant's op); export them in two packages (--name), or rename one");
  EXPECT_FALSE(fs::exists(dir / "e"));
}

// A results file without a winner was refused as "a compile-only or interrupted run; tune it on a GPU
// first", also when it was a GPU run in which no variant passed: the line now says which it is.
TEST(Outputs, AResultWithoutAWinnerIsRefusedSayingWhy) {
  const fs::path dir = scratch("no_winner");
  const fs::path problem = dir / "broken";
  tune::test::copy_fixture_problem("two_pass", problem, [](Json& json) { json["problem"] = "broken"; });
  std::ofstream(problem / "kernel.cuh", std::ios::app) << "\nstatic_assert(sizeof(float) == 3, \"broken\");\n";
  const Result failed = run_with("TUNE_WORKER_FAKE=1", "--problem " + problem.string() + " --M 8 --N 1024 --out " +
                                                           (dir / "r").string() + " --cache-dir " + (dir / "c").string());
  ASSERT_EQ(failed.code, 5) << failed.output;
  const Result compile_only = run("--problem " + std::string(TUNE_FIXTURES) + "/problems/two_pass --M 8 --N 1024 " +
                                  "--compile-only --out " + (dir / "r").string() + " --cache-dir " + (dir / "c").string());
  ASSERT_EQ(compile_only.code, 0) << compile_only.output;
  const std::string none_passed = (dir / "r" / "fake-gpu" / "broken" / "M8_N1024.json").string();
  const std::string untimed = (dir / "r" / "compile-only-sm_90" / "two_pass" / "M8_N1024.json").string();
  for (const std::string command : {"header", "export torch"}) {
    SCOPED_TRACE(command);
    const std::string out = (dir / "out").string() + (command == "header" ? ".hpp" : "");
    const Result a = run(command + " " + none_passed + " --allow-synthetic -o " + out);
    EXPECT_EQ(a.code, 2) << a.output;
    expect_error_output(a, none_passed +
                               ": no winner: no variant passed (4 compile_failed); each variant's status "
                               "and reason in the file say why");
    const Result b = run(command + " " + untimed + " --allow-synthetic -o " + out);
    EXPECT_EQ(b.code, 2) << b.output;
    expect_error_output(b, untimed + ": no winner: a compile-only run, nothing was timed; tune it on a GPU first");
  }
}

// A shape the baseline configuration is invalid at (rmsnorm's team * vec <= K at K 64): the run
// times no baseline and says so, names a winner and writes its header; tune header and tune export
// torch take the record with the winner standing in for the baseline (adversarial round 4: "the
// baseline was not timed; re-tune", which no re-tune could mend).
TEST(Outputs, ARecordWhoseBaselineTheShapeRulesOutIsShipped) {
  const fs::path dir = scratch("baseline_invalid");
  const std::string problem = std::string(TUNE_REPO_DIR) + "/examples/rmsnorm";
  const Result tuned = run_with("TUNE_WORKER_FAKE=1", "--problem " + problem + " --M 4 --K 64 --torch off --out " +
                                                          (dir / "r").string() + " --cache-dir " + (dir / "c").string());
  ASSERT_EQ(tuned.code, 0) << tuned.output;
  const std::string file = (dir / "r" / "fake-gpu" / "rmsnorm" / "M4_K64.json").string();
  const Result header = run("header " + file + " --allow-synthetic -o " + (dir / "h.hpp").string());
  ASSERT_EQ(header.code, 0) << header.output;
  EXPECT_NE(slurp(dir / "h.hpp")
                .find("baseline: none at this shape (the baseline configuration breaks team * vec <= "
                      "K); the winner stands in"),
            std::string::npos);
  const Result exported = run("export torch " + file + " --allow-synthetic -o " + (dir / "e").string());
  EXPECT_EQ(exported.code, 0) << exported.output;
}

// #28: CLI11's own errors printed two lines without "tune:" ("Run with --help for more
// information."); `export onnx` did not name the subcommands; a missing --problem-path listed
// nothing, silently; --max-space -1 wrapped to 2^64 - 1. Issue 38: --sanitize is parsed at the
// command line of tune, check and verify alike, before anything runs.
TEST(Cli, EveryUsageErrorIsOneTuneLineAndExitCode2) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kSmallTune + " --search bogus", "tune: --search: bogus not in {"},
      {kSmallTune + " --sanitize bogus", "tune: --sanitize: bogus not in {off,winner,finalists} (tune --help"},
      {"check " + kContactResult + " --sanitize bogus",
       "tune: --sanitize: bogus not in {off,winner,finalists} (tune check --help"},
      {"verify " + kContactResult + " --sanitize all",
       "tune: --sanitize: all not in {off,winner,finalists} (tune verify --help"},
      {kSmallTune + " --budget x", "tune: --budget"},
      {kSmallTune + " --warm-keep 0.5", "tune: --warm-keep"},
      {"verify", "tune: golden is required (tune verify --help lists the options)"},
      {"header " + kContactResult, "is required (tune header --help lists the options)"},
      {"check /nonexistent.json", "/nonexistent.json (tune check --help lists the options)"},
      {"export", "tune: export needs a subcommand: torch, nvrtc (tune export torch --help)"},
      {"export onnx x.json -o d", "tune: export needs a subcommand: torch"},
      {"list --problem-path /nonexistent/problems", "tune: --problem-path /nonexistent/problems: no such folder"},
      // Adversarial round 5: a tune run's option fell through to the main command in silence.
      {"export nvrtc " + kContactResult + " --config " + kContactResult,
       "tune: tune export nvrtc does not take --config (an option of a tune run); leave it out"},
      {"results " + kContactResult + " --top 3", "tune: tune results does not take --top"},
      {"--jobs 2 header " + kContactResult + " -o /nonexistent/h.hpp", "tune: tune header does not take --jobs"},
      {"list --problem contact", "tune: tune list does not take --problem"},
      {kSmallTune + " --max-space -1", "tune: --max-space: -1 is not a count"},
      {kSmallTune + " --max-variants -1", "tune: --max-variants: -1 is not a count"},
      {kSmallTune + " --max-space 0x10", "tune: --max-space: 0x10 is not a count"},
      {kSmallTune + " --model-gain nan", "tune: --model-gain: nan is not a finite number"},
      {kSmallTune + " --warm-keep nan", "tune: --warm-keep: nan is not a finite number"},
      {"verify " + kContactResult + " --max-space -1", "tune: --max-space: -1 is not a count"},
      {"verify " + kContactResult + " --max-variants -5", "tune: --max-variants: -5 is not a count"},
  };
  const std::string out = out_dir("usage_errors");
  for (const auto& [given, needle] : cases) {
    const std::string args = given.rfind("--problem", 0) == 0 ? given + " --out " + out : given;
    const Result r = run(args);
    SCOPED_TRACE(args);
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, needle);
    EXPECT_EQ(r.output.find("Run with --help"), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_FALSE(fs::exists(out)) << "nothing runs";
}

// Adversarial round 7: a compile cache folder that cannot be made (a read-only $HOME on a cluster
// node, a link to nothing) stopped a tune with exit 2, where a cache that cannot be written is one
// warning; and tune check, which takes no --cache-dir, stopped telling the user to pass one. /proc
// takes no new folder, even from root.
TEST(Outputs, ACacheFolderThatCannotBeMadeIsOneWarningAndStopsNothing) {
  const fs::path dir = scratch("cache_not_made");
  const Result tune =
      run_with("TUNE_WORKER_FAKE=1", kSmallTune + " --out " + dir.string() + " --cache-dir /proc/tune-cache");
  ASSERT_EQ(tune.code, 0) << tune.output;
  std::size_t warnings = 0;
  for (std::size_t pos = 0; (pos = tune.output.find("cannot be written", pos)) != std::string::npos; ++pos) ++warnings;
  EXPECT_EQ(warnings, 1u) << tune.output;
  EXPECT_NE(tune.output.find("warning: the compile cache /proc/tune-cache cannot be written (cannot create the folder"),
            std::string::npos)
      << tune.output;
  const fs::path results = dir / "fake-gpu" / "contact" / "B2_N8_C16_H8.json";
  ASSERT_TRUE(fs::exists(results)) << tune.output;
  // tune check uses the default caches: under $XDG_CACHE_HOME, here one that cannot be made.
  const Result check = run_with("TUNE_WORKER_FAKE=1 XDG_CACHE_HOME=/proc/tune-cache", "check " + results.string());
  EXPECT_EQ(check.code, 0) << check.output;
  EXPECT_EQ(check.output.find("--no-cache"), std::string::npos) << check.output;
  EXPECT_EQ(check.output.find("tune: "), std::string::npos) << check.output;
}

// Adversarial round 7: a writer killed mid-write (kill -9, a node lost) leaves its temporary file,
// "<shape>.json.tmp.<pid>.<n>", which nothing removed and git does not ignore in results/. The next
// writer of the shape, holding its lock, removes those of its shape and no other file.
TEST(Outputs, TheTemporaryFilesOfAKilledWriterGoWithTheNextRunOfTheShape) {
  const fs::path dir = scratch("stale_temporaries");
  const fs::path folder = dir / "fake-gpu" / "contact";
  fs::create_directories(folder);
  const std::vector<std::string> stale = {"B2_N8_C16_H8.json.tmp.99999.0", "B2_N8_C16_H8.json.partial.tmp.4242.17",
                                          "B2_N8_C16_H8.hpp.tmp.1.2"};
  const std::vector<std::string> kept = {"B4_N8_C16_H8.json.tmp.99999.0", "B2_N8_C16_H8.json.tmp.notes", "notes.tmp.1.2",
                                         "B2_N8_C16_H8.json.tmp.1.2.bak"};
  for (const auto& name : stale) std::ofstream(folder / name) << "{";
  for (const auto& name : kept) std::ofstream(folder / name) << "mine";
  const Result r = run_with("TUNE_WORKER_FAKE=1", kSmallTune + " --torch off --out " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  for (const auto& name : stale) EXPECT_FALSE(fs::exists(folder / name)) << name;
  for (const auto& name : kept) EXPECT_EQ(slurp(folder / name), "mine") << name;
  EXPECT_TRUE(fs::exists(folder / "B2_N8_C16_H8.json"));
}

// Adversarial round 7: a file was renamed over its path before its bytes reached the disk, and a run
// removed its journal right after: a power cut could leave an empty results file and no journal, the
// measured records gone, where design.md promises --resume after a power cut. Each write is synced
// before its rename, and the rename (its folder) before the writer goes on.
TEST(Outputs, AFileIsOnTheDiskBeforeItIsRenamedOverItsPath) {
  if (run_command("command -v strace && strace -o /dev/null true").code != 0) GTEST_SKIP() << "no strace here";
  const fs::path dir = scratch("synced");
  const fs::path trace = dir / "trace.txt";
  const fs::path header = dir / "out.hpp";
  const Result r =
      run_command(fmt::format("strace -f -o {} -e trace=openat,fsync,fdatasync,rename,renameat,renameat2 {} "
                              "header {} --allow-synthetic -o {}",
                              trace.string(), TUNE_EXE, kContactResult, header.string()));
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<std::string> lines;
  {
    std::ifstream in(trace);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  const auto tmp_open = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find("openat(") != std::string::npos && l.find(header.string() + ".tmp.") != std::string::npos;
  });
  ASSERT_NE(tmp_open, lines.end()) << slurp(trace);
  const std::string fd = tmp_open->substr(tmp_open->rfind("= ") + 2);
  const std::string quoted = fmt::format("\"{}\"", header.string());
  const auto renamed = std::find_if(tmp_open, lines.end(), [&](const std::string& l) {
    return l.find("rename") != std::string::npos && l.find(quoted) != std::string::npos;
  });
  ASSERT_NE(renamed, lines.end()) << slurp(trace);
  const bool synced = std::any_of(tmp_open, renamed, [&](const std::string& l) {
    return l.find("fsync(" + fd + ")") != std::string::npos || l.find("fdatasync(" + fd + ")") != std::string::npos;
  });
  EXPECT_TRUE(synced) << "no fsync of fd " << fd << " before the rename\n" << slurp(trace);
  EXPECT_TRUE(std::any_of(renamed, lines.end(), [](const std::string& l) { return l.find("fsync(") != std::string::npos; }))
      << "the folder is not synced after the rename\n"
      << slurp(trace);
}

// Adversarial round 7: an --out or --cache-dir that is (or runs through) a link to nothing said
// "cannot create output directory out/fake-gpu/contact (File exists)", naming neither the link nor
// what was wrong with it.
TEST(Outputs, AFolderThroughALinkToNothingNamesTheLink) {
  const fs::path dir = scratch("dangling_out");
  fs::create_symlink("/nonexistent/results", dir / "out");
  for (const std::string& out : {(dir / "out").string(), (dir / "out" / "sub").string()}) {
    const Result r = run_with("TUNE_WORKER_FAKE=1", kSmallTune + " --out " + out);
    EXPECT_EQ(r.code, 2) << r.output;
    expect_error_output(r, (dir / "out").string() + " is a link to nothing (/nonexistent/results)");
  }
  fs::create_symlink("/nonexistent/cache", dir / "cache");
  const Result c = run_with("TUNE_WORKER_FAKE=1",
                            kSmallTune + " --out " + (dir / "o").string() + " --cache-dir " + (dir / "cache").string());
  EXPECT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find((dir / "cache").string() + " is a link to nothing (/nonexistent/cache)"), std::string::npos)
      << c.output;
}

}  // namespace
