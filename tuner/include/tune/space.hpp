#pragma once
// The search space of a problem, as data (configs/<problem>.json), and the one pure function
// that lowers a configuration and a shape to what the compiler and the launcher need.
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/compile.hpp"
#include "tune/shape.hpp"
#include "tune/tensor.hpp"

namespace tune {

// Limits that device-dependent constraints are checked against and configurations are lowered
// with; named in expressions as dev_max_threads, dev_max_smem, dev_sm_count, dev_cc. A run takes
// its device's (DeviceInfo::limits, as the results file records them in "device"); only a run
// without a device takes those of its named target arch.
struct DeviceLimits {
  int max_threads_per_block = 1024;
  std::int64_t max_smem_per_block = 227 * 1024;  // opt-in maximum, bytes
  int sm_count = 132;
  int compute_capability = 90;  // major * 10 + minor
  // The compile-only target of an arch (--arch, no device): sm_90 and later as an H200 (132 SMs,
  // 227 KiB), sm_8x as an A100 (108 SMs, 163 KiB), older as 80 SMs and 64 KiB.
  static DeviceLimits for_arch(int compute_capability);
};

struct Parameter {
  std::string name;
  std::vector<nlohmann::ordered_json> values;  // scalars: integers, booleans or strings
  // The value of a configuration that does not name this parameter (one recorded before the
  // parameter existed): the value that reproduces the kernel it was. None: it must be named.
  std::optional<nlohmann::ordered_json> absent;
};

// One point of the space: a value index per parameter, in the space's parameter order.
struct Config {
  std::vector<std::size_t> choice;
  friend bool operator==(const Config&, const Config&) = default;
  friend auto operator<=>(const Config&, const Config&) = default;
};

struct KernelLaunch {
  std::string kernel;           // template name, e.g. "contact_kernel"
  std::string name_expression;  // e.g. "contact_kernel<4,64,64,32,1,0,128,1,8,0,1>"
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned dynamic_smem = 0;
  std::vector<std::string> args;  // buffer names: params, inputs, "out", or scratch
};

// The kernel template of a space, read from disk when the space loads: the main source and every
// header in its folder (and the space's include_dirs), by path relative to that folder.
struct KernelSources {
  std::string main_name;  // e.g. "contact.cuh"
  std::string main;
  std::vector<std::pair<std::string, std::string>> headers;  // include name, text
  std::vector<std::filesystem::path> files;                  // where each came from (main first)
};

struct Lowered {
  std::string template_name;                     // e.g. "contact.cuh"
  std::shared_ptr<const KernelSources> sources;  // null for a space parsed without its files
  std::vector<KernelLaunch> launches;            // run in order; timed as one call
  std::vector<TensorSpec> scratch;               // device buffers the launches share
};

// The compile request of a lowered variant: its template and headers, its name expressions in
// launch order, and the options.
CompileRequest compile_request(const Lowered& lowered, std::vector<std::string> options);

// The expressions of a space as written (muParser syntax), for code generators: the generated
// headers compute a configuration's validity and launches for any shape from these.
struct SpaceExpressions {
  struct Named {
    std::string name, text;
  };
  struct LaunchText {
    std::string kernel, when;
    std::vector<std::string> template_args;  // names of dims, parameters or derived values
    std::vector<std::string> grid, block;    // three expressions each
    std::string dynamic_smem;
    std::vector<std::string> args;  // buffer names: tensors, out, scratch
  };
  struct ScratchText {
    std::string name, elements, when;
  };
  std::vector<std::string> dims;
  std::vector<Named> derived;               // in evaluation order
  std::vector<Named> shape_rules;           // name: the message a failing rule gives
  std::vector<std::string> constraints;     // in file order
  std::vector<LaunchText> launches;         // in file order
  std::vector<ScratchText> scratch;         // in file order
  std::map<std::string, double> constants;  // the string values of parameters: their index
};

struct Enumeration {
  std::vector<Config> configs;                                   // the valid ones held, in enumeration order
  std::uint64_t valid = 0;                                       // the valid ones counted (held or not)
  std::size_t total = 0;                                         // size of the Cartesian product
  std::vector<std::pair<std::string, std::size_t>> rejected_by;  // first failing constraint -> count
  std::uint64_t draws = 0;  // Space::sample: configurations drawn (repeats included); 0 when enumerated
};

// How far a long enumeration (or sample) has got: configurations checked against the constraints
// so far, of how many (the product's size, or the most draws), and how many of them were valid.
struct SpaceProgress {
  std::uint64_t checked = 0, of = 0;
  std::size_t valid = 0;
};
using SpaceProgressFn = std::function<void(const SpaceProgress&)>;

// The most configurations (the product of the parameters' values) a space is enumerated up to by
// default (--max-space): under 10 s of constraint checks on one core and under 500 MB of valid
// configurations however many pass (the built-in spaces hold about 2 million); past it a run
// refuses in one line, or with --budget samples the space.
inline constexpr std::uint64_t kDefaultMaxSpace = 4'000'000;
// The most valid configurations a search that chooses among them (--budget, --warm-start, --search
// model) holds by default (--max-candidates): about 1 GB with their names and the model's rounds, a
// few seconds a round. The valid configurations of the built-in spaces are thousands at most.
inline constexpr std::size_t kDefaultMaxCandidates = 1'000'000;

// How many of the valid configurations an enumeration holds. Past `most`, a uniform sample of `most`
// (reservoir sampling, Algorithm R, on mt19937_64 from `seed`: the same sample on every machine), and
// besides it every one `pin` holds to (the baseline, a warm start's promising ones), so memory stays
// bounded however large the space.
struct Holding {
  std::size_t most = std::numeric_limits<std::size_t>::max();
  std::uint64_t seed = 0;
  std::function<bool(const Config&)> pin;  // asked only of those the sample leaves out
};

// A count of configurations for a message: "1244160", "100000000000 (1e+11)", "at least 1.8e+19".
std::string describe_count(std::uint64_t count);

class Space {
 public:
  // Throws ConfigError "<file>: <reason>" for an unreadable or malformed file. The template is
  // read relative to the file, else from `template_dirs` (the problem's own template folders).
  static Space load(const std::filesystem::path& file, const std::vector<std::filesystem::path>& template_dirs = {});
  // Without `base_dir` the template is not read (lower() gives no sources): for tests of spaces.
  static Space parse(const nlohmann::ordered_json& json, const std::string& source_name,
                     const std::optional<std::filesystem::path>& base_dir = std::nullopt,
                     const std::vector<std::filesystem::path>& template_dirs = {});

  Space(Space&&) noexcept;
  Space& operator=(Space&&) noexcept;
  ~Space();

  [[nodiscard]] const std::string& problem() const;
  [[nodiscard]] const std::string& template_name() const;
  [[nodiscard]] const std::string& source_name() const;
  [[nodiscard]] const std::vector<Parameter>& parameters() const;
  [[nodiscard]] const std::map<std::string, std::int64_t>& default_dims() const;
  [[nodiscard]] const Config& baseline() const;
  // The template files (null when parsed without a base folder).
  [[nodiscard]] std::shared_ptr<const KernelSources> sources() const;
  // A hash of the space file and every template file's bytes: the run's identity, the sweep key.
  [[nodiscard]] const std::string& source_hash() const;
  // Each launch's kernel and its `args` (buffer names), in file order; the scratch buffers' names.
  [[nodiscard]] std::vector<std::pair<std::string, std::vector<std::string>>> launch_args() const;
  [[nodiscard]] std::vector<std::string> scratch_names() const;
  [[nodiscard]] SpaceExpressions expressions() const;

  // Throws ShapeError with the failing shape constraint's message.
  void check_shape(const Shape& shape) const;
  // The size of the Cartesian product of the parameters' values, counted (never enumerated);
  // UINT64_MAX when it is at least that large.
  [[nodiscard]] std::uint64_t size() const;
  // Every configuration that satisfies all constraints for this shape and device (past
  // `holding.most` of them, those it holds). Throws InputError when size() is larger than
  // max_configurations (enumerating it would take hours). `progress` is called every 65536
  // configurations.
  [[nodiscard]] Enumeration enumerate(const Shape& shape, const DeviceLimits& limits,
                                      std::uint64_t max_configurations = kDefaultMaxSpace,
                                      const SpaceProgressFn& progress = {}, const Holding& holding = {}) const;
  // Up to `count` distinct valid configurations drawn without enumerating the space: each draw
  // takes every parameter's value from mt19937_64(seed) (uniform over the product; portable: no
  // library distribution), a repeat or one that fails a constraint is rejected, and drawing stops
  // after max_draws. Only the sample is held in memory (rejected_by counts rejected draws, repeats
  // included). The configurations are in enumeration order; total is size(), draws the draws.
  [[nodiscard]] Enumeration sample(const Shape& shape, const DeviceLimits& limits, std::size_t count, std::uint64_t seed,
                                   std::uint64_t max_draws, const SpaceProgressFn& progress = {}) const;
  // Empty when valid, else the text of the first failing constraint.
  [[nodiscard]] std::string violated_constraint(const Config& config, const Shape& shape, const DeviceLimits& limits) const;
  // The launches on a device of these limits (a grid may depend on dev_sm_count): always the
  // device's own, so that the variant timed is the variant the header ships for it.
  [[nodiscard]] Lowered lower(const Config& config, const Shape& shape, const DeviceLimits& limits) const;

  // {"strategy": "warp", "block": 128, ...} in parameter order.
  [[nodiscard]] nlohmann::ordered_json to_json(const Config& config) const;
  // Throws InputError for unknown parameters or values.
  [[nodiscard]] Config from_json(const nlohmann::ordered_json& params) const;
  // from_json for a variant of a results file (`where`: the file), as every reader of records says
  // it: InputError "<where>: variant <variant> does not fit <space file>: <why>; re-tune ..." when
  // the space has changed since the run (a parameter renamed, a value removed).
  [[nodiscard]] Config from_record(const nlohmann::ordered_json& params, const std::string& where,
                                   const std::string& variant) const;
  // "strategy=warp,block=128,...": stable, derived from the parameters.
  [[nodiscard]] std::string name(const Config& config) const;
  // Numeric value of a parameter as expressions see it (enum strings: their index).
  [[nodiscard]] std::int64_t numeric(const Config& config, const std::string& parameter) const;

 private:
  struct Impl;
  explicit Space(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tune
