// The correctness gate's pieces that need no GPU: reading compute-sanitizer logs, demangling,
// the verdict a gate record gives, --sanitize's values.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <type_traits>
#include <utility>

#include "tune/compile_cache.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/problem.hpp"
#include "tune/tune.hpp"
#include "tune/verdict_cache.hpp"
#include "tune/worker_client.hpp"
#include "worker/backend.hpp"

namespace tune {
namespace {

// The name pick_winner gives (nullopt when no variant may win).
std::optional<std::string> picked_name(const tune::RunRecord& run) {
  const auto picked = tune::pick_winner(run);
  return picked ? std::optional<std::string>(picked->name) : std::nullopt;
}

constexpr const char* kKernel = "_Z14contact_kernelILi4ELi64EEvPKfPf";
constexpr const char* kOther = "_Z14contact_kernelILi8ELi64EEvPKfPf";

// memcheck as compute-sanitizer writes it with --demangle no: the report, its host backtrace, the
// host-side consequence ("Program hit"), the summary.
const std::string kMemcheckLog =
    std::string() +
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at " +
    kKernel +
    "+0x70 in contact.cuh:120\n"
    "=========     by thread (0,0,0) in block (5,0,0)\n"
    "=========     Address 0x7f1c3e000400 is out of bounds\n"
    "=========     and is 1 bytes after the nearest allocation at 0x7f1c3e000000 of size 1023 bytes\n"
    "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
    "=========         Host Frame: [0x2f1a3b] in /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
    "=========         Host Frame: _ZN4tune12DeviceRunner4Impl7enqueueEv [0x1a2b3c] in /opt/tune/bin/tune\n"
    "=========\n"
    "========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to \"unspecified launch failure\" on CUDA API "
    "call to cuCtxSynchronize.\n"
    "=========     Saved host backtrace up to driver entry point at error\n"
    "=========\n"
    "tune worker output that is not the sanitizer's\n"
    "========= ERROR SUMMARY: 2 errors\n";

TEST(SanitizerLog, AMemcheckReportIsReadWithItsKernelAndTheHostSideLinesAreNotReports) {
  int summary = 0;
  const auto reports = parse_sanitizer_log("memcheck", kMemcheckLog, &summary);
  EXPECT_EQ(summary, 2);
  ASSERT_EQ(reports.size(), 1u);
  const auto& r = reports[0];
  EXPECT_EQ(r.finding.tool, "memcheck");
  EXPECT_EQ(r.finding.kind, "Invalid __global__ read of size 4 bytes");
  ASSERT_GE(r.finding.report.size(), 4u);
  EXPECT_EQ(r.finding.report[1], "at void contact_kernel<4, 64>(float const*, float*)+0x70 in contact.cuh:120");
  EXPECT_EQ(r.finding.report[3], "Address 0x7f1c3e000400 is out of bounds");
  ASSERT_EQ(r.kernels.size(), 2u) << "the kernel and the host frame's function";
  EXPECT_EQ(r.kernels[0], kKernel);
}

TEST(SanitizerLog, RacecheckReportsAreReadOneByOneAndAFileWithoutOnesReadsEmpty) {
  const std::string log = std::string() +
                          "========= COMPUTE-SANITIZER\n"
                          "========= Error: Race reported between Write access at " +
                          kKernel +
                          "+0x1f0 in contact.cuh:412\n"
                          "=========     and Read access at " +
                          kKernel +
                          "+0x2a0 in contact.cuh:398 [1024 hazards]\n"
                          "=========\n"
                          "========= Warning: Race reported between Read access at " +
                          kOther +
                          "+0x10 in contact.cuh:12\n"
                          "=========     and Write access at " +
                          kOther +
                          "+0x20 in contact.cuh:14 [2 hazards]\n"
                          "=========\n"
                          "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n";
  int errors = -1;
  const auto reports = parse_sanitizer_log("racecheck", log, &errors);
  EXPECT_EQ(errors, 1) << "racecheck writes its own summary, no ERROR SUMMARY";
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].finding.kind.rfind("Error: Race reported between Write access at void contact_kernel<4, 64>", 0), 0u)
      << reports[0].finding.kind;
  EXPECT_EQ(reports[0].kernels, std::vector<std::string>{kKernel});
  EXPECT_EQ(reports[1].kernels, std::vector<std::string>{kOther});
  EXPECT_EQ(reports[1].finding.report.size(), 2u);
  int summary = 7;
  EXPECT_TRUE(parse_sanitizer_log("racecheck", "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", &summary)
                  .empty());
  EXPECT_EQ(summary, 0);
  EXPECT_TRUE(parse_sanitizer_log("synccheck", "", &summary).empty());
  EXPECT_EQ(summary, -1);
  // A clean racecheck, as compute-sanitizer writes it: its summary alone (adversarial round 5: a log
  // without a summary is no clean run, so this one must read as 0).
  EXPECT_TRUE(parse_sanitizer_log("racecheck",
                                  "========= COMPUTE-SANITIZER\n"
                                  "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
                                  &summary)
                  .empty());
  EXPECT_EQ(summary, 0);
}

TEST(SanitizerLog, ALongReportKeepsItsFirstLines) {
  std::string log = "========= Invalid __shared__ write of size 4 bytes\n";
  for (int i = 0; i < 40; ++i) log += "=========     line " + std::to_string(i) + "\n";
  const auto reports = parse_sanitizer_log("memcheck", log);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].finding.report.size(), 12u);
}

TEST(SanitizerLog, DemanglingLeavesWhatIsNotAName) {
  EXPECT_EQ(demangle_names("at _Z3fooILi4EEvPf+0x10 in a.cu:3"), "at void foo<4>(float*)+0x10 in a.cu:3");
  EXPECT_EQ(demangle_names("_Znot_a_name and text"), "_Znot_a_name and text");
  EXPECT_EQ(demangle_names("no names"), "no names");
}

TEST(GateVerdict, FindingsThenDeterminismThenInputsDecide) {
  VariantRecord v;
  v.status = Status::kPassed;
  v.gate.emplace();
  v.gate->tools = {"memcheck", "racecheck"};
  v.gate->determinism = "bitwise identical over 16 launches";
  ParityRecord ok;
  ok.elements = 10;
  v.gate->inputs.push_back({"seed 1", ok});
  Gate::apply_verdict(v);
  EXPECT_EQ(v.gate->verdict, GateVerdict::kSafe);
  EXPECT_EQ(v.status, Status::kPassed);
  EXPECT_NE(v.gate->reason.find("memcheck, racecheck clean"), std::string::npos) << v.gate->reason;

  VariantRecord bad = v;
  ParityRecord wrong = ok;
  wrong.mismatches = 3;
  bad.gate->inputs.push_back({"all-equal rows", wrong});
  Gate::apply_verdict(bad);
  EXPECT_EQ(bad.status, Status::kIncorrect);
  EXPECT_NE(bad.reason.find("parity failed on input 'all-equal rows'"), std::string::npos) << bad.reason;
  // An input failed by NaNs alone has no finite error: the reason counts them, not "max abs error 0".
  VariantRecord nan = v;
  ParityRecord nans = ok;
  nans.mismatches = nans.non_finite = 2;
  nan.gate->inputs.push_back({"large magnitudes", nans});
  Gate::apply_verdict(nan);
  EXPECT_EQ(nan.status, Status::kIncorrect);
  EXPECT_NE(nan.reason.find("2 of 10 outputs outside atol=0.0001 rtol=0.0001 (2 not finite)"), std::string::npos)
      << nan.reason;

  VariantRecord flaky = v;
  flaky.gate->deterministic = false;
  flaky.gate->determinism = "launch 3 of 16 changed 2 of 10 output elements";
  Gate::apply_verdict(flaky);
  EXPECT_EQ(flaky.status, Status::kUnsafe);
  EXPECT_NE(flaky.reason.find("changed between launches"), std::string::npos);

  VariantRecord racy = v;
  racy.gate->inputs.push_back({"all-equal rows", wrong});
  racy.gate->findings.push_back({"racecheck", "Error: Race reported between Write access at k+0x1", {}});
  Gate::apply_verdict(racy);
  EXPECT_EQ(racy.status, Status::kUnsafe) << "a finding outranks a failed input";
  EXPECT_EQ(racy.gate->reason, "racecheck: Error: Race reported between Write access at k+0x1");
  racy.gate->findings_left_out = 40;  // reports beyond those kept
  Gate::apply_verdict(racy);
  EXPECT_EQ(racy.gate->reason, "racecheck: Error: Race reported between Write access at k+0x1 (and 40 more reports)");

  VariantRecord slow;  // not passed: the verdict is recorded, the status is left alone
  slow.status = Status::kCrashed;
  slow.gate = racy.gate;
  Gate::apply_verdict(slow);
  EXPECT_EQ(slow.status, Status::kCrashed);
}

// A check that could not run is never `safe` (issue 34): the variant is `unchecked`, keeps its
// status, and wins only where the run allows it (context.gate.allow_unchecked).
TEST(GateVerdict, ACheckThatCouldNotRunMakesItUncheckedAndItWinsOnlyByConsent) {
  RunRecord run;
  for (const auto& [name, median] : {std::pair{"a", 10.0}, std::pair{"b", 20.0}}) {
    VariantRecord v;
    v.name = name;
    v.status = Status::kPassed;
    v.timing.emplace();
    v.timing->samples = 100;
    v.timing->q1_us = v.timing->median_us = v.timing->q3_us = median;
    v.gate.emplace();
    ParityRecord ok;
    ok.elements = 10;
    v.gate->inputs.push_back({"seed 1", ok});
    run.variants.push_back(v);
  }
  VariantRecord& fast = run.variants[0];
  fast.gate->tools = {"memcheck"};
  fast.gate->not_run = {"racecheck", "synccheck", "initcheck"};
  Gate::apply_verdict(fast);
  EXPECT_EQ(fast.gate->verdict, GateVerdict::kUnchecked);
  EXPECT_EQ(fast.status, Status::kPassed);
  EXPECT_EQ(fast.gate->reason.rfind("racecheck, synccheck, initcheck could not run", 0), 0u) << fast.gate->reason;
  Gate::apply_verdict(run.variants[1]);
  EXPECT_EQ(run.variants[1].gate->verdict, GateVerdict::kSafe);

  EXPECT_EQ(picked_name(run).value_or(""), "b") << "the unchecked one does not win";
  run.context.gate.allow_unchecked = true;
  EXPECT_EQ(picked_name(run).value_or(""), "a") << "--allow-unchecked";

  VariantRecord racy = fast;  // a finding still outranks what did not run
  racy.gate->findings.push_back({"memcheck", "Invalid __global__ read", {}});
  Gate::apply_verdict(racy);
  EXPECT_EQ(racy.gate->verdict, GateVerdict::kUnsafe);
  EXPECT_EQ(racy.status, Status::kUnsafe);
}

// Issue 38: a request to the worker returns what it came back with (the reply, else the fault and
// the item in hand), never through out-parameters.
static_assert(std::is_same_v<decltype(std::declval<WorkerProcess&>().measure_floor(1.0)), WorkerAnswer<HarnessFloor>>);
static_assert(std::is_same_v<decltype(std::declval<WorkerProcess&>().call("gate", {}, {}, 1.0)),
                             WorkerAnswer<nlohmann::ordered_json>>);
// The worker's side too: a sanitized launch returns its result and whether its fault was sticky.
static_assert(std::is_same_v<decltype(std::declval<WorkerBackend&>().sanitize(std::declval<WorkerItems&>(), 0)),
                             WorkerBackend::Sanitized>);

TEST(GateVerdict, SanitizeModesParseAndABadOneSaysTheChoices) {
  EXPECT_EQ(sanitize_mode_names(), (std::vector<std::string>{"off", "winner", "finalists"}));
  EXPECT_EQ(sanitize_mode_from_string("off"), SanitizeMode::kOff);
  EXPECT_EQ(to_string(sanitize_mode_from_string("winner")), "winner");
  EXPECT_EQ(to_string(sanitize_mode_from_string("finalists")), "finalists");
  try {
    (void)sanitize_mode_from_string("all");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--sanitize all: expected off, winner or finalists");
  }
}

}  // namespace
}  // namespace tune

// ---- The verdict cache (issue 37) ------------------------------------------------------------

namespace tune {
namespace {

struct Gated {
  CompileResult compiled;
  Lowered lowered;
};

Gated a_variant() {
  Gated g;
  g.compiled.ok = true;
  g.compiled.cubin = {'\x7f', 'E', 'L', 'F', 1, 2, 3, 4};
  KernelLaunch l;
  l.kernel = "contact_kernel";
  l.name_expression = "contact_kernel<4,64>";
  l.grid = {16, 1, 1};
  l.block = {128, 1, 1};
  l.dynamic_smem = 4096;
  l.args = {"x", "out"};
  g.lowered.launches = {l};
  g.lowered.scratch = {TensorSpec{"partial", {16, 64}}};
  return g;
}

std::string key_of(const Gated& g, const std::vector<std::string>& context = {"B4_N64", "data", "1,2", "16", ""}) {
  return VerdictCache::key("racecheck", VerdictCache::variant_fields(g.compiled, g.lowered), context);
}

// A verdict is never reused for other bytes, launches, scratch, check or context: each part of the
// key, changed alone, gives another key.
TEST(VerdictCache, EveryPartOfWhatDecidesAVerdictChangesTheKey) {
  const Gated base = a_variant();
  const std::string k = key_of(base);
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(key_of(a_variant()), k) << "the same variant, the same key";
  std::vector<std::function<void(Gated&)>> changes = {
      [](Gated& g) { g.compiled.cubin[5] ^= 1; },       // one bit of the CUBIN
      [](Gated& g) { g.compiled.cubin.push_back(0); },  // its length
      [](Gated& g) { g.lowered.launches[0].name_expression = "contact_kernel<8,64>"; },
      [](Gated& g) { g.lowered.launches[0].grid[1] = 2; },
      [](Gated& g) { g.lowered.launches[0].block[0] = 256; },
      [](Gated& g) { g.lowered.launches[0].dynamic_smem = 8192; },
      [](Gated& g) {
        g.lowered.launches[0].args = {"out", "x"};
      },
      [](Gated& g) { g.lowered.launches.push_back(g.lowered.launches[0]); },  // a second launch
      [](Gated& g) {
        g.lowered.scratch[0].shape = {16, 65};
      },
      [](Gated& g) { g.lowered.scratch.clear(); },
  };
  std::set<std::string> keys{k};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    Gated g = a_variant();
    changes[i](g);
    EXPECT_TRUE(keys.insert(key_of(g)).second) << "change " << i << " kept the key";
  }
  const auto fields = VerdictCache::variant_fields(base.compiled, base.lowered);
  EXPECT_NE(VerdictCache::key("memcheck", fields, {"B4_N64", "data", "1,2", "16", ""}), k) << "another tool";
  for (std::size_t part = 0; part < 5; ++part) {
    std::vector<std::string> context{"B4_N64", "data", "1,2", "16", ""};
    context[part] += "x";  // the shape, the data identity, the seeds, the rounds, the test hooks
    EXPECT_TRUE(keys.insert(key_of(base, context)).second) << "context part " << part << " kept the key";
  }
  // Fields are length-prefixed: moving a character from one field to the next is another key.
  EXPECT_NE(key_of(base, {"B4_N6", "4data", "1,2", "16", ""}), k);
}

TEST(VerdictCache, AStoredVerdictComesBackAndADamagedOrForeignEntryIsAMiss) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_verdict_cache_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const VerdictCache cache(dir / "verdicts");
  GateRecord v;
  v.findings.push_back({"racecheck", "Race reported between Write access and Read access", {"line 1", "line 2"}});
  v.findings_left_out = 3;
  const std::string key = key_of(a_variant());
  EXPECT_FALSE(cache.load(key)) << "a cold cache";
  ASSERT_EQ(cache.store(key, {{"check", "racecheck"}, {"verdict", to_json(v)}}), "");
  const auto hit = cache.load(key);
  ASSERT_TRUE(hit);
  const GateRecord back = gate_from_json(hit->at("verdict"));
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(back.findings[0].report.size(), 2u);
  EXPECT_EQ(back.findings_left_out, 3);
  // Another key's file under this name (copied by hand) and a torn file are misses.
  std::filesystem::copy_file(dir / "verdicts" / (key + ".json"), dir / "verdicts" / (std::string(32, 'a') + ".json"));
  EXPECT_FALSE(cache.load(std::string(32, 'a')));
  write_file_atomic(dir / "verdicts" / (key + ".json"), "{\"key\": \"" + key + "\", \"verd");
  EXPECT_FALSE(cache.load(key));
  std::filesystem::remove_all(dir);
}

// A folder of one float32 output whose reference.py copies its input (numpy).
std::unique_ptr<Problem> copying_problem(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "reference.py") << "def reference(shape, params, inputs):\n    return inputs['x']\n";
  std::ofstream(dir / "problem.json") << R"({"problem": "copy", "reference": {"python": "reference.py"},
    "shape": {"dims": ["N"]}, "tensors": [{"name": "x", "role": "input", "shape": ["N"], "init": "normal"},
                                          {"name": "out", "role": "output", "shape": ["N"]}]})";
  return Problem::load(dir / "problem.json");
}

// The same reference.py under another Python is another reference (torch where it imports, numpy
// where not): its identity names the interpreter, so a reference remembered under one (here, that it
// repeats itself) is not taken under the other. Python without its site packages finds no numpy.
TEST(VerdictCache, AReferenceUnderAnotherPythonIsAnotherReference) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_identity_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto problem = copying_problem(dir / "copy");
  const char* had = std::getenv("TUNE_PYTHON");
  const std::string python = had && *had ? had : "python3";
  std::ofstream(dir / "bare-python") << "#!/bin/sh\nexec " << python << " -S \"$@\"\n";
  std::filesystem::permissions(dir / "bare-python", std::filesystem::perms::owner_all);
  const std::string with_site = problem->reference_identity(ReferenceBackend::kPython);
  EXPECT_NE(with_site.find("under "), std::string::npos) << with_site;
  EXPECT_NE(with_site.find("(Python 3."), std::string::npos) << with_site;
  const auto memo =
      ReferenceRepeatMemo::open(dir / "verdicts", *problem, problem->reference_identity(ReferenceBackend::kPython));
  ASSERT_TRUE(memo.has_value());
  EXPECT_FALSE(memo->known());
  memo->remember();
  EXPECT_TRUE(memo->known());
  EXPECT_TRUE(ReferenceRepeatMemo::open(dir / "verdicts", *problem, problem->reference_identity(ReferenceBackend::kPython))
                  ->known());

  setenv("TUNE_PYTHON", (dir / "bare-python").c_str(), 1);
  const std::string bare = problem->reference_identity(ReferenceBackend::kPython);
  EXPECT_NE(bare, with_site);
  EXPECT_NE(bare.find("numpy none"), std::string::npos) << bare;
  EXPECT_FALSE(ReferenceRepeatMemo::open(dir / "verdicts", *problem, problem->reference_identity(ReferenceBackend::kPython))
                   ->known());
  if (had)
    setenv("TUNE_PYTHON", had, 1);
  else
    unsetenv("TUNE_PYTHON");
  EXPECT_EQ(problem->reference_identity(ReferenceBackend::kPython), with_site);
  EXPECT_FALSE(ReferenceRepeatMemo::open("", *problem, problem->reference_identity(ReferenceBackend::kPython))
                   .has_value());  // --no-cache
  std::filesystem::remove_all(dir);
}

// A reference that keeps state between runs (a file) or draws unseeded random numbers gives
// another output for the same input: refused in one line that names reference.py and the element.
TEST(VerdictCache, AReferenceThatDoesNotRepeatItselfIsRefusedNamingTheElement) {
  const auto dir = std::filesystem::temp_directory_path() / ("tune_repeat_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto problem = copying_problem(dir);
  const Shape shape({{"N", 6}});
  const ProblemData data = problem->make_data(shape, 3, DataPurpose::kParity);
  const OutputValues ref = problem->reference(shape, data, ReferenceBackend::kPython);
  problem->check_reference_repeats(shape, data, ReferenceBackend::kPython, ref);  // a copy repeats itself
  std::ofstream(dir / "reference.py") << "import os\n\ndef reference(shape, params, inputs):\n"
                                         "    f = os.path.join(os.path.dirname(__file__), 'runs')\n"
                                         "    n = int(open(f).read()) if os.path.exists(f) else 0\n"
                                         "    open(f, 'w').write(str(n + 1))\n"
                                         "    y = inputs['x'].copy()\n    y[4] += n\n    return y\n";
  const OutputValues first = problem->reference(shape, data, ReferenceBackend::kPython);
  try {
    problem->check_reference_repeats(shape, data, ReferenceBackend::kPython, first);
    ADD_FAILURE() << "a reference that counts its runs was taken";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("reference.py returned another output for the same input on a second run (the output 'out' at "
                        "element 4:"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("seed its random numbers"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  std::filesystem::remove_all(dir);
}

TEST(VerdictCache, TheFolderIsBesideTheCompileCacheAndOffWithNoCache) {
  EXPECT_EQ(verdict_cache_for(false, std::filesystem::path("/c")), std::filesystem::path("/c/verdicts"));
  EXPECT_EQ(verdict_cache_for(true, std::filesystem::path("/c")), std::filesystem::path());
  EXPECT_EQ(verdict_cache_for(false, std::nullopt), CompileCache::default_dir() / "verdicts");
}

TEST(VerdictCache, GateJobsComeFromTheEnvironmentAndABadValueSaysWhatIsExpected) {
  ::unsetenv("TUNE_GATE_JOBS");
  EXPECT_EQ(gate_jobs(), 4);
  ::setenv("TUNE_GATE_JOBS", "2", 1);
  EXPECT_EQ(gate_jobs(), 2);
  for (const char* bad : {"0", "65", "two", "2x"}) {
    ::setenv("TUNE_GATE_JOBS", bad, 1);
    try {
      (void)gate_jobs();
      ADD_FAILURE() << bad << " was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("from 1 to 64"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("TUNE_GATE_JOBS");
}

}  // namespace
}  // namespace tune
