#pragma once
// The parts of a merged header (`tune header`, header_merged.cpp): the results as table entries
// (header_entries.cpp), select() (header_select.cpp), and the comment lines a single-result header
// (header.cpp) shares with it.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"

namespace tune::header_parts {

// The measured line of a variant: "cold median 13.184 us (noise 3.16 %, 11841 samples, wall_cap 3.00 s)".
std::string timing_summary(const TimingRecord& t);
// Where a result came from, as comment lines that start with `prefix`.
std::string provenance(const RunRecord& run, const std::string& prefix);
// A header is made only from a record that passes the one validation of results (its winner passed,
// with a positive, finite median), in memory as from a file. Throws InputError "<file>: ...".
void check_record(const RunRecord& run, const std::string& file);
// What is shipped is a whole shape's record, not one --shard of its variants (whose winner is its
// part's): checked as each shipping command reads a file. Throws InputError "<file>: ...".
void check_whole_shape(const RunRecord& run, const std::string& file);
// A note for a record tuned on other kernel sources than the problem's now (context.source_hash:
// the space, its templates, the problem file; `sources_now`, sources_hash), else "": what a header
// or a build ships for it was timed and gated on those. A record of an earlier tune has no hash.
std::string changed_sources_note(const RunRecord& run, const std::string& file, const std::string& sources_now);
// A record's shape and a variant's configuration as the problem and its space take them now: the
// shape's dimensions and constraints, the configuration's constraints at that shape on the record's
// device. Throws InputError naming the file: shipping a kernel for a shape or configuration the
// problem refuses would ship one tune never ran as that problem stands.
void check_recorded_shape(const RunRecord& run, const VariantRecord& v, const Config& config, const Space& space,
                          const Problem& problem, const std::string& file);

// A recorded variant as tune lowers it now, for the record's device (recorded_config: a parameter
// the space gained takes its `absent` or the baseline's value, listed in *assumed), checked against
// its record: the shape and configuration (check_recorded_shape), the launch count, each launch's
// kernel, grid, block and shared memory. Throws InputError naming the file and what differs.
Lowered lower_recorded(const RunRecord& run, const VariantRecord& v, const Space& space, const Problem& problem,
                       const std::string& file, Config* config = nullptr, std::vector<std::string>* assumed = nullptr);

// One variant of a merged entry, with everything a build needs to launch it without NVRTC.
struct MergedVariant {
  const VariantRecord* record = nullptr;
  Config config;
  std::vector<std::string> assumed;  // parameters the result predates: the baseline's value is used
  Lowered lowered;                   // for the arguments and scratch buffers
  std::vector<TensorSpec> buffers;   // params, inputs, "out", scratch: what the arguments index
  std::string output_name;           // the output's own name, which launch args may use for "out"
};

struct MergedEntry {
  const RunRecord* run = nullptr;
  MergedVariant winner, baseline;
  bool synthetic = false;  // not measured on a GPU (measured_on_gpu)
  // The baseline configuration breaks a constraint at this shape (the run timed none, as it says):
  // the entry's baseline is its winner, and the header says so; the reason, else "".
  std::string baseline_invalid;
};

// The results as table entries, validated, in table order: arch, device name, shape. Throws
// InputError for a result that cannot be an entry (no winner, synthetic without allow_synthetic, a
// recorded launch this tune lowers otherwise, two results of one device and shape).
std::vector<MergedEntry> merged_entries(const std::vector<NamedResult>& results, const Space& space, const Problem& problem,
                                        bool allow_synthetic);
// Every entry binds the same dtype variables, which the header's Shape holds (a record older than
// a variable reads with its default: read_problem_result). Throws InputError.
void check_dtype_variables(const std::vector<NamedResult>& out);
// Whether the merged header speaks of dtypes: the problem has dtype variables, or a buffer is not
// float32. A header without them is the one tune wrote before dtypes, byte for byte.
bool typed(const std::vector<MergedEntry>& entries);

// The configuration with the smallest worst-case loss (its cold median over the entry's winner's)
// among those that passed with a usable timing in every measured entry; ties: the smaller mean
// loss, then the name. None when no measured entry exists or no configuration ran in all.
struct Portable {
  std::optional<Config> config;
  std::string name;
  double worst_loss = 0;
  std::size_t over = 0;  // measured entries it was compared over
};

Portable portable_config(const std::vector<MergedEntry>& entries, const Space& space);

// select() of a merged header, for entries whose Shape is like shape0 (its dtype variables).
std::string select_code(const Shape& shape0);

}  // namespace tune::header_parts
