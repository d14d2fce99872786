#pragma once
// A problem: what is computed (dims, tensors, seeded data, float64 reference, tolerance, work
// counts), read at run time from a problem folder (docs/problem-format.md): problem.json, the
// kernel template(s) it names, a reference.py. The search space lives in the same file (Space);
// a problem never knows about variants.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/dtype.hpp"
#include "tune/shape.hpp"
#include "tune/tensor.hpp"

namespace tune {

struct WorkCounts {
  double flop = 0;   // floating-point operations per call
  double bytes = 0;  // fewest bytes moved through device memory per call
};

// How an output of one dtype is judged (docs/problem-format.md "tolerance"): elementwise
// |out - ref| <= atol + rtol * |ref|, and for a low-precision output whose module ran in its dtype,
// the module rule kernel_max_abs_error <= module_k * module_max_abs_error + module_atol.
struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
  double module_k = 2.0;
  double module_atol = 1e-4;  // default: the dtype's atol
  std::string rule = "both";  // "both", "tolerance", "module"
  DType dtype = DType::kFloat32;
};

// A dtype variable of the file's `dtypes` (issue 35): a flag like a dimension (--T bfloat16).
struct DTypeVariable {
  std::string name;
  std::vector<DType> values;           // the allowed dtypes, in the file's order
  std::optional<DType> default_value;  // none: the flag is required, as a dimension without default is
};
// The file's `tolerance` object, per dtype: the parsed form Problem keeps.
struct TolerancePolicy {
  std::vector<std::pair<DType, std::pair<double, double>>> given;  // {dtype, {atol, rtol}} the file sets
  std::optional<double> module_k, module_atol;
  std::string rule = "both";
  // The tolerance of an output of `dtype`: the file's values, else the dtype's defaults.
  [[nodiscard]] Tolerance of(DType dtype) const;
};
// Reads a problem file's `tolerance` object; throws ConfigError "<file>: tolerance.<key>: <why>".
[[nodiscard]] TolerancePolicy parse_tolerance(const nlohmann::ordered_json& t, const std::string& file);

enum class DataPurpose {
  kTiming,  // plain seeded inputs
  kParity,  // seeded inputs plus the file's edits of purpose parity (fully masked rows, ...)
};

// How the float64 reference is computed: the problem's reference.py out of process, or a C++
// fast path of the same function (built-in problems only).
enum class ReferenceBackend { kAuto, kBuiltin, kPython };

class Problem {
 public:
  // Reads and checks a problem file (problem.json); throws ConfigError "<file>: <path>: <reason>".
  static std::unique_ptr<Problem> load(const std::filesystem::path& problem_file);
  ~Problem();
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] const std::string& description() const;
  // The problem file, absolute; its folder holds the reference and the goldens.
  [[nodiscard]] const std::filesystem::path& file() const;
  [[nodiscard]] std::filesystem::path dir() const { return file().parent_path(); }
  // The folder of golden cases (may not exist).
  [[nodiscard]] std::filesystem::path golden_dir() const;
  // The parsed problem file (the search-space keys are read from it by Space::parse).
  [[nodiscard]] const nlohmann::ordered_json& json() const;
  // Dimension names in order, e.g. {"B","N","C","H"}.
  [[nodiscard]] std::vector<std::string> dims() const;
  // The file's dtype variables, in its order (empty without `dtypes`).
  [[nodiscard]] const std::vector<DTypeVariable>& dtype_variables() const;
  // Gives each dtype variable the shape lacks its default (one without default stays absent, for
  // check_shape to refuse). `recorded`: a results file's tensors as bound (context.tensors, tensor
  // name to dtype name): a record that predates a dtype variable ran its tensors in the dtypes it
  // lists, so the variable takes that dtype rather than its default. The shape's dtype variables
  // end in the file's order (Shape::order_dtypes).
  void add_dtype_defaults(Shape& shape, const std::map<std::string, std::string>& recorded = {}) const;
  // A tensor of a dtype variable that `recorded` (context.tensors) lists in another dtype than the
  // variable has in `shape`: "shape.T is bfloat16, but context.tensors records x as float32", or ""
  // when every one agrees.
  [[nodiscard]] std::string recorded_dtype_conflict(const Shape& shape,
                                                    const std::map<std::string, std::string>& recorded) const;
  // Throws ShapeError (one line, naming the dimension or tensor) for a dimension that is missing, not
  // positive or too large, a dtype variable missing (without default) or not one of its values, a
  // tensor past 2^40 elements; ConfigError for what the shape makes of the
  // file: a work count that is not finite and >= 0, an edit that loops more often than its tensor has
  // elements or writes outside it or beyond float32, an edge case that takes an input beyond float32.
  void check_shape(const Shape& shape) const;
  // The same, and ShapeError when the data and the float64 reference would not fit the host's memory
  // (make_data checks it; a run checks it before it starts).
  void check_host_memory(const Shape& shape) const;
  [[nodiscard]] std::vector<TensorSpec> param_specs(const Shape& shape) const;
  [[nodiscard]] std::vector<TensorSpec> input_specs(const Shape& shape) const;
  [[nodiscard]] TensorSpec output_spec(const Shape& shape) const;
  // Same seed, same data on every machine: tensors drawn in the file's order, then its edits.
  [[nodiscard]] ProblemData make_data(const Shape& shape, std::uint64_t seed, DataPurpose purpose) const;
  // The problem's edge cases that apply at this shape (their `when` holds), by name, in file order.
  [[nodiscard]] std::vector<std::string> edge_cases(const Shape& shape) const;
  // The parity data of `seed` with edge case `name` applied: its `set` operations, then its edits.
  // Throws InputError for an unknown name, or one whose `when` does not hold at this shape.
  [[nodiscard]] ProblemData make_edge_case(const Shape& shape, std::uint64_t seed, const std::string& name) const;
  // The same, applied to parity data already drawn (make_data(shape, seed, kParity)): several edge
  // cases of one seed draw it once.
  [[nodiscard]] ProblemData make_edge_case(const Shape& shape, const ProblemData& parity, const std::string& name) const;
  // False when the problem declares that its kernels may give other bits from launch to launch
  // (atomics): a determinism check must not hold them to identical outputs. Default true.
  [[nodiscard]] bool deterministic() const;
  // The reference of the output, from the data: its values in float64 and, for an int64 output, its
  // integers exactly (the doubles lose them past 2^53), in one value. *how: which reference ran
  // ("built-in C++ (contact)", "reference.py (torch 2.11.0)", "reference.py (numpy)").
  // *module_output (when given): the make_model module run in the tensors' dtypes, as float64 values
  // of the output, when the output is low precision (bfloat16, float16), reference.py defines
  // make_model and torch imports; else left empty. A built-in C++ reference keeps its float64 output
  // and takes the module's from reference.py (run for the module alone).
  [[nodiscard]] OutputValues reference(const Shape& shape, const ProblemData& data,
                                       ReferenceBackend backend = ReferenceBackend::kAuto, std::string* how = nullptr,
                                       std::vector<double>* module_output = nullptr) const;
  // Runs reference.py once more on `data` and throws InputError (one line naming reference.py and
  // the first element that differs) unless it returns `first` bit for bit (an int64 output's integers): a
  // reference that draws unseeded random numbers or keeps state between runs would fail every
  // correct kernel. Nothing for a built-in reference.
  void check_reference_repeats(const Shape& shape, const ProblemData& data, ReferenceBackend backend,
                               const OutputValues& first) const;
  [[nodiscard]] WorkCounts counts(const Shape& shape) const;
  // The tolerance of the output's dtype at this shape (a dtype variable binds it).
  [[nodiscard]] Tolerance tolerance(const Shape& shape) const;
  [[nodiscard]] Tolerance tolerance(DType output_dtype) const;
  // "flop" / "bytes" expressions of the file (empty when absent), for generated code.
  [[nodiscard]] std::string work_expression(const std::string& which) const;
  // Whether a C++ fast path of the reference exists.
  [[nodiscard]] bool has_builtin_reference() const;
  // The problem's reference.py (reference.python), absolute; nullopt when it has a built-in one only.
  [[nodiscard]] std::optional<std::filesystem::path> python_reference() const;
  // Which reference a run with `backend` checks against, for the run's identity: "built-in C++
  // (contact)", or "reference.py xxh3:<hash of its bytes> (numpy)" with $TUNE_REFERENCE_BACKEND's
  // choice ("numpy or torch" when unset). Throws InputError when the file cannot be read.
  [[nodiscard]] std::string reference_identity(ReferenceBackend backend) const;

 private:
  struct Impl;
  explicit Problem(std::unique_ptr<Impl> impl);
  // Whether `backend` means the C++ fast path for this problem.
  [[nodiscard]] bool uses_builtin(ReferenceBackend backend) const;
  std::unique_ptr<Impl> impl_;
};

// Where problems are found: `--problem-path` folders, then $TUNE_PROBLEM_PATH, then the built-in
// folder (<prefix>/share/tune/configs beside an installed binary, or the source tree's configs/ for
// a binary of the build tree; never both).
struct ProblemLocation {
  std::string name;
  std::filesystem::path file;  // problem.json
  std::string origin;          // "--problem-path", "TUNE_PROBLEM_PATH", "built-in", "path"
};
// Each entry may be a colon list, as $TUNE_PROBLEM_PATH is; empty entries are skipped.
void set_problem_path(std::vector<std::filesystem::path> dirs);
// Names a dimension may not have, because on the command line they are the front end's own options
// (--out, --seed, --help, ...): Problem::load refuses them. The CLI registers its options' names.
void set_reserved_dimension_names(std::set<std::string> names);
[[nodiscard]] std::set<std::string> reserved_dimension_names();
[[nodiscard]] std::vector<std::filesystem::path> builtin_problem_dirs();

// A problem by name (searched on the path) or by path (a folder or its problem.json). Loaded
// once per process; the reference stays valid until exit. Throws InputError naming what was
// searched when nothing is found, ConfigError for a bad folder.
[[nodiscard]] const Problem& find_problem(std::string_view name_or_path);
// Every problem on the search path, the first of each name (the one `find_problem` returns).
[[nodiscard]] std::vector<ProblemLocation> list_problems();
[[nodiscard]] std::vector<std::string> problem_names();

// $TUNE_REFERENCE: "python" or "builtin" (default: auto, the C++ fast path where there is one).
[[nodiscard]] ReferenceBackend reference_backend_from_env();

// How long reference.py may run, in seconds: set_reference_timeout (--reference-timeout), else
// $TUNE_REFERENCE_TIMEOUT, else the default. Past it the reference and every process it started
// are killed and the run stops with one line (exit 2). A worker gets its orchestrator's value with
// init, and waits for its start that much longer. Both throw InputError for a value that is not a
// positive number of seconds.
inline constexpr double kDefaultReferenceTimeoutS = 240;
void set_reference_timeout(double seconds);
[[nodiscard]] double reference_timeout_s();

}  // namespace tune
