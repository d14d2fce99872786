#pragma once
// Sweeps and shards: lists of shapes (command line or sweep file) expanded into an ordered list of
// work items; --shard K/N picks a deterministic part of it; `tune merge` puts the parts together.
//
// The split (recorded in every result's context.shard):
//  - a sweep of several items splits whole items: item i goes to shard i mod N, and each shard
//    writes ordinary per-shape files;
//  - a sweep of one item splits that shape's variants: variant i of the chosen list (after
//    --budget) goes to shard i mod N. The baseline is measured in every shard (first, as in any
//    run, so each shard's file has its own speedup); merge keeps the record of the shard that owns
//    its index. Such a shard writes <shape>.shard-K-of-N.json and no header.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tune/errors.hpp"
#include "tune/problem_space.hpp"
#include "tune/record.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace tune {

// One shape of one problem; the dimensions not given come from the space's defaults.
struct SweepItem {
  std::string problem;
  std::vector<std::pair<std::string, std::int64_t>> dims;
  [[nodiscard]] std::string describe() const;  // "contact B=4 N=64"
};

struct ShardSpec {
  int index = 0;
  int count = 1;
};
// "K/N" with 0 <= K < N. Throws InputError.
ShardSpec parse_shard(const std::string& text);

// The cartesian product of the lists, in the problem's dimension order, the last varying fastest.
// Throws InputError for an empty list or a repeated value.
std::vector<SweepItem> expand_dims(const std::string& problem,
                                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& lists);

// {"items": [{"problem": "contact", "B": [1, 4], "N": 64}, ...]}: each entry expanded by
// expand_dims, in file order. Throws InputError "<file>: items[i].<field>: <reason>".
std::vector<SweepItem> load_sweep_file(const std::filesystem::path& file);

// A unit of work: the item, its index in the whole sweep, its problem, space and shape resolved
// once (resolve_item; a failed resolution keeps its error), and what its results record in
// context.shard (nullopt for an unsharded run).
struct SweepWork {
  std::size_t index = 0;
  SweepItem item;
  std::optional<ShardRecord> shard;
  ShapeResolution shape;
};

// The items, in order, each resolved once with `config` (the space file, --config). Throws nothing:
// an item that does not resolve keeps its error (validate_sweep, or its run, reports it).
std::vector<SweepWork> resolve_items(const std::vector<SweepItem>& items,
                                     const std::optional<std::filesystem::path>& config);

// Checks every item's problem, space and shape before anything runs. Throws InputError naming the item.
void validate_sweep(const std::vector<SweepWork>& work);

// The sweep's items for --transfer: each problem's items together (in the order the problems first
// appear), cheapest first by the problem's work counts at the shape (flop, then bytes; ties keep
// their order), so that the cheap shapes teach the expensive ones; renumbered in that order.
// Throws InputError naming an item that did not resolve.
std::vector<SweepWork> order_for_transfer(std::vector<SweepWork> work);

// The items of `shard` (all of them when shard.count is 1). `run_key` identifies the run (see
// sweep_run_key) and goes into every shard record. Throws InputError for repeated items.
std::vector<SweepWork> plan_sweep(const std::vector<SweepWork>& work, const ShardSpec& shard, const std::string& run_key);

// A fingerprint of everything that must be equal for shards to belong to one run: the tool, the
// options that decide the variants and their measurement, the search spaces and the whole item
// list. 16 hex digits.
std::string sweep_run_key(const TuneOptions& base, const std::vector<SweepWork>& work);

// What a sweep came to, for its last line.
struct SweepResult {
  std::size_t ran = 0;                  // items (replicas on devices) run, to the end or cut short by a stop
  bool interrupted = false;             // a stop (Ctrl-C, SIGTERM) ended the sweep
  std::vector<std::string> held;        // items another tune was writing, skipped ("<item> (pid N)", held_item)
  std::vector<std::string> unrunnable;  // items no variant can take (ShapeError), skipped ("<item>", unrunnable_item)
  // After a stop: the items it cut short ("<item> (<results file>)": what they measured is written,
  // and --resume finishes them from their journals), and the items it left unrun or stopped before
  // any variant existed ("<item>": nothing of them is written).
  std::vector<std::string> cut_short, not_started;
  std::vector<int> failed;  // devices that failed (run_sweep_on_devices)
  std::size_t not_run = 0;  // items no device was left to run (run_sweep_on_devices)
};

// Runs the work in order on one device: options_for(base, work) through run_tune, then on_done.
// An item whose results another tune is writing (ResultsHeldError) is skipped, said in one line,
// and named in `held` (see held_item); so is one that no variant can take (ShapeError, found as its
// space is enumerated), in `unrunnable`; the sweep goes on. A stop ends the sweep after the item in
// hand, whether that item was cut short (its partial results written) or stopped before it had a
// variant (Interrupted: said in one line, nothing of it written); the result names both and the
// items not started. Several devices: run_sweep_on_devices (tune/devices.hpp).
// With transfer (--transfer), each item runs with --warm-start on base.warm_start and the results
// of the earlier items of its problem that named a winner (the first item of a problem without
// any: as base says, exhaustive by default).
SweepResult run_sweep(const std::vector<SweepWork>& work, const TuneOptions& base,
                      const std::function<void(const SweepWork&, const TuneOutcome&)>& on_done, bool transfer = false);
// A sweep's item that another tune is writing: said in one line through `log` ("<item>: another
// tune (pid N) is writing FILE; skipped, the sweep goes on"); returns what the sweep's last line
// names ("<item> (pid N)").
std::string held_item(const SweepWork& work, const ResultsHeldError& e, const std::function<void(const std::string&)>& log);

// A sweep's item that no variant can take (ShapeError at its turn): said in one line through `log`
// ("<item>: <why>; skipped, the sweep goes on"); returns what SweepResult::unrunnable names.
std::string unrunnable_item(const SweepWork& work, const ShapeError& e, const std::function<void(const std::string&)>& log);
// A sweep's item a stop cut short, as SweepResult::cut_short names it: "<item> (<results file>)".
std::string cut_short_item(const SweepWork& work, const TuneOutcome& outcome);
// A sweep's item whose run a stop ended before any variant existed (Interrupted): said in one line
// through `log` ("<item>: interrupted ..."); returns what SweepResult::not_started names.
std::string stopped_item(const SweepWork& work, const std::exception& e, const std::function<void(const std::string&)>& log);
// base with the work's problem, dimensions and shard record (what its results record).
TuneOptions options_for(const TuneOptions& base, const SweepWork& work);

// For run_tune: the configurations of a variant-split shard (the baseline always included), and
// its record: `shard` with the unsharded variant count and the baseline's unsharded index.
struct ShardPart {
  std::vector<Config> configs;
  ShardRecord shard;
};
ShardPart shard_configs(const std::vector<Config>& chosen, const Config& baseline, const ShardRecord& shard);
// The results file's stem.
std::string result_stem(const Shape& shape, const std::optional<ShardRecord>& shard);

// `tune merge`: result files (or folders searched for *.json) of the shards of one run -> the
// files the unsharded run writes under out_dir (results JSON, and the header of a timed run).
// Throws InputError on shards of different runs or an incomplete set. Returns the files written.
std::vector<std::filesystem::path> merge_shards(const std::vector<std::filesystem::path>& inputs,
                                                const std::filesystem::path& out_dir,
                                                const std::optional<std::filesystem::path>& config,
                                                const std::function<void(const std::string&)>& log);

}  // namespace tune
