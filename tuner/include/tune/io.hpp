#pragma once
// Readers and writers of files users hand around: results, golden cases, generated headers.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"

namespace tune {

// Throws InputError "<file>: <reason>" (for a file that is not valid: "<file>: <JSON path>: <what is
// wrong>; <what to do>", validate_result_json).
RunRecord read_result(const std::filesystem::path& file);
// read_result of a file whose JSON has been read (its bounded reader), with its errors.
RunRecord read_result(const std::filesystem::path& file, const nlohmann::ordered_json& json);
// Whether a file found in a results folder may be a tune result, by its name: <name>.json or
// <name>.json.gz, and not hidden. tune writes no dot-file; editors and copies do (Emacs's lock
// link .#<shape>.json to nothing, macOS's ._<shape>.json beside a copied file), and a reader of the
// folder passes them over instead of refusing the folder.
bool is_results_file_name(const std::string& name);
// Whether JSON read from a results folder is a tune result ("kind": "tune.result"); other JSON
// there (another tool's) is passed over by each reader of the folder.
bool is_tune_result_json(const nlohmann::ordered_json& json);
// A results file read as a record of its problem (problem_spec_of: by name, else the problem file
// it records), for the readers that interpret its shape against today's problem (tune header, tune
// export torch): read_result, then each dtype variable its shape lacks set to the dtype its tensors
// ran in (context.tensors: a record older than the variable), else the variable's default (issue
// 35; without a default it stays unset). Throws InputError as read_result, or when the problem is
// not found.
RunRecord read_problem_result(const std::filesystem::path& file);
// `shape` (a record's, of `problem`) with each dtype variable it lacks set as read_problem_result
// says (the dtype the record's tensors ran in, else the default); throws InputError "<file>:
// shape.T: ..." for a dtype variable's value the problem does not take.
void bind_recorded_dtypes(const Problem& problem, const RunRecord& run, Shape& shape, const std::filesystem::path& file);
// The tune results of a report folder, <root>/<gpu>/<problem>/<shape>.json or .json.gz in path order,
// each read once and validated as read_result validates it: the file, its JSON as written and its
// record. Other JSON files there are passed over, as report.py passes them. <shape>.json beside
// <shape>.json.gz is refused (find_result_file).
struct ReportResult {
  std::filesystem::path file;
  nlohmann::ordered_json raw;
  RunRecord run;
};
std::vector<ReportResult> read_report_results(const std::filesystem::path& root);

// Every entry under root, depth first (visit may call disable_recursion_pending()). A folder that
// cannot be read is refused in one line naming it (InputError): the entries after it would be
// passed over in silence.
void walk_tree(const std::filesystem::path& root, std::filesystem::directory_options options,
               const std::function<void(std::filesystem::recursive_directory_iterator&)>& visit);

// `tune results --json`: the results under each path (a report folder <gpu>/<problem>/<shape>.json or
// .json.gz, as read_report_results finds them, or one results file), each validated as read_result
// validates it, as {"kind": "tune.results", "schema_version": 1, "records": [...]}; a record holds
// the file, the run as written, and what readers derive: device_slug, shape_tag, the shape with the
// problem's dtype defaults (read_problem_result), measured_on_gpu and why not. Throws InputError
// "<file>: <JSON path>: <what is wrong>; <what to do>" for the first file that is not valid.
nlohmann::ordered_json results_listing(const std::vector<std::filesystem::path>& paths);

// `tune problem draw`: the data tune draws for `shape` (Problem::make_data at `seed` for `purpose`,
// or the edge case named), written under `out` as one .npy per parameter and input (t0.npy, ...: the
// torch harness's writer; bfloat16 and float16 values in '<f4', which holds them exactly) and
// index.json {"kind": "tune.problem_draw", "problem", "shape", "seed", "purpose", "edge_case",
// "tensors": [{"name", "role", "dtype" (as the problem declares it), "shape", "file"}]}. Returns the
// index's path. Throws InputError for an edge case the problem does not have at this shape.
struct DrawRequest {
  std::uint64_t seed = 0;
  DataPurpose purpose = DataPurpose::kParity;
  std::string edge_case;  // empty: none
};
std::filesystem::path draw_problem_data(const Problem& problem, const Shape& shape, const DrawRequest& request,
                                        const std::filesystem::path& out);

// `tune problem show --json`: the problem as tune reads it at `shape` (check_shape passed), for the
// Python tools (goldens, the torch baseline) that would otherwise read problem.json again:
// {"kind": "tune.problem_show", "schema_version": 1, "problem", "folder", "reference" (reference.py,
// absolute, or null), "shape" (with dtype defaults), "dtypes": {variable: {"values", "default"}},
// "tensors": [{"name", "role", "dtype", "shape"}] (parameters, inputs, then the output, each group in
// the file's order: the order of `tune problem draw`), "edge_cases", "tolerance": {dtype: {"atol",
// "rtol", "module_k", "module_atol", "rule"}} for every dtype (an output cast with --dtype included)}.
nlohmann::ordered_json problem_facts(const Problem& problem, const Shape& shape);

// <stem>.json.gz beside <stem>.json: the form a results file of record over 256 KB is kept in.
std::filesystem::path compressed_result_path(const std::filesystem::path& json);
// The results file of one shape, given its <dir>/<stem>.json: that file, else <stem>.json.gz beside
// it; nullopt when neither exists. Both at once is refused in one line (InputError naming both): a
// reader never takes one of two files of one shape (a tune run that replaces a .json.gz removes it).
std::optional<std::filesystem::path> find_result_file(const std::filesystem::path& json);

// A golden case: the PyTorch model's float64 output on seeded data (docs/problem-format.md, scripts/make_goldens.py).
struct GoldenCase {
  std::string problem;
  Shape shape;
  ProblemData data;
  // The reference's output: a float output's float64 values; an integer or bool output's integers
  // exactly (JSON integers; an int64 past 2^53 too).
  OutputValues output;
  // An int64 output written as doubles (goldens made before integer outputs were written as
  // integers): its first element past 2^53, where the double holds only the nearest integer; a
  // reference can then be checked against it only to that double. nullopt: every value exact.
  std::optional<std::size_t> output_rounded_from;
};
// The problem a golden file belongs to: the folder it sits in (<folder>/golden/x.json) when that
// folder's problem has the golden's name, else the name, found on the problem path.
std::string golden_problem(const std::filesystem::path& golden, const std::string& name);
// Validates names and shapes against the problem's specs. Throws InputError "<file>: <reason>".
GoldenCase read_golden(const std::filesystem::path& file);

// The single-result header: the winner as constexpr values, with provenance. Needs a timed run.
std::string generate_header(const RunRecord& run, const Space& space);

// A result and the file it was read from (for messages).
struct NamedResult {
  std::string file;
  RunRecord run;
};
// Whether a run's timings were measured on a GPU by tune's worker process. Not so: a compile-only
// run, a fake worker's made-up results (TUNE_WORKER_FAKE), and a file that does not record how it
// was measured (no context.isolation.worker). *why says which.
bool measured_on_gpu(const RunRecord& run, std::string* why = nullptr);

// Timed results of one problem (several devices and shapes) merged into one header: per (device,
// shape) the winner and the baseline with their launches and buffers; the configuration's
// geometry for any shape (constexpr, from the space's expressions); the portable configuration;
// and select(device, shape). Byte-identical for the same results in any order. The results as
// read_problem_result reads them (each shape binding the problem's dtype variables). Throws
// InputError (mixed problems, no winner, two results for one device and shape, results binding
// different dtype variables, a synthetic result without allow_synthetic).
std::string generate_merged_header(const std::vector<NamedResult>& results, const Space& space,
                                   bool allow_synthetic = false);

// `tune export torch`: the results (one arch) as a PyTorch extension project in `out`: one op per
// problem in torch.ops.<package>, dispatching on (device, shape) to the tuned instantiations (nvcc),
// a ModelNew per problem, setup.py and a JIT load(). Returns the files written. Throws InputError.
struct TorchExportOptions {
  std::string package = "tune_ops";
  bool allow_synthetic = false;
  std::optional<int> arch;                      // needed when the results span several archs
  std::optional<std::filesystem::path> config;  // the search space (default: the problem's)
};
std::vector<std::filesystem::path> export_torch(const std::vector<std::filesystem::path>& files,
                                                const std::filesystem::path& out, const TorchExportOptions& options);

// The tool's own version and the git commit it was built from.
std::string tool_version();
std::string tool_git_commit();

// Why the folder `dir` could not be made (ec, from create_directories), in the user's words: a
// part of it that is a link to nothing or a loop of links is named ("File exists" or "Too many
// levels of symbolic links" said neither which part nor what to do), else ec's message.
std::string folder_error(const std::filesystem::path& dir, const std::error_code& ec);

// Writes text to path atomically (temporary file, then rename); a link, a pipe or a device at path
// (-o /dev/stdout) is written through in place. Throws InputError on failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& text);
// Whether the file name `name` is one of write_file_atomic's temporary files of a file named
// `target` ("<target>.tmp.<pid>.<n>"): what a writer killed mid-write leaves (ResultsLock removes them).
bool is_atomic_write_temporary(const std::string& name, const std::string& target);
// The temporary files of write_file_atomic in `dir` (any target) that a writer killed mid-write
// left, in a folder that concurrent runs write without a lock (the compile and verdict caches):
// removed when older than `min_age` and their writer, the pid in the name, is no process of this
// host. A live writer's temporary lasts milliseconds and is kept; a cache shared between hosts has
// writers whose pid says nothing here, hence the age too. Never throws; returns how many it removed.
std::size_t remove_stale_temporaries(const std::filesystem::path& dir, std::chrono::seconds min_age);
// remove_stale_temporaries(dir, 1 hour), once per folder in a process (a sweep opens its caches per shape).
void remove_stale_temporaries_once(const std::filesystem::path& dir);
// The temporary files of write_file_atomic of the file `path` that a writer killed mid-write left
// (a tune header -o or tune export killed by kill -9 or a lost node): removed when their writer is
// no process of this host. Nothing else would remove them from a folder the user ships or builds.
// (Unlike a cache, an output file has one writer at a time: no age is waited for, so a run again
// right after the kill finds the folder clean.) Never throws; returns how many it removed.
std::size_t remove_dead_temporaries_of(const std::filesystem::path& path);
// A file the user names (-o, a file of an export): its dead temporaries removed, then write_file_atomic.
void write_output_atomic(const std::filesystem::path& path, const std::string& text);

// One writer per results file. Two runs of one shape on one --out would truncate each other's
// journal and results, and tune merge --out or tune check --write would be overwritten by a running
// tune (issue 34 #25); the second is refused in one line that names the first. The lock is flock(2)
// on "<shape>.lock" beside the results (released by the kernel however the holder ends), the
// holder's pid in it; the file is removed when the holder ends. Taking it removes the temporary files
// a writer of the shape killed mid-write left ("<shape>.json.tmp.<pid>.<n>", of the .partial and the
// .hpp too). Throws ResultsHeldError (an InputError) "another tune (pid N) is writing FILE; <remedy>".
class ResultsLock {
 public:
  explicit ResultsLock(const std::filesystem::path& results,
                       const std::string& remedy = "wait for it to finish, or pass another --out");
  ~ResultsLock();
  ResultsLock(const ResultsLock&) = delete;
  ResultsLock& operator=(const ResultsLock&) = delete;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// Where a run keeps its snapshot while it goes (<shape>.json.partial beside <shape>.json): the
// results file and its header are replaced only when the run ends with a record at least as good
// as theirs (a winner beats no variant passed, which beats an interrupted run; of two interrupted
// runs, the one that recorded more variants), so a re-run that dies or is cut short leaves the
// earlier pair as it was, and its own record here.
std::filesystem::path partial_results_path(const std::filesystem::path& json_path);

}  // namespace tune
