// The outputs of a pass (PassRun): the results' place and lock, the journal, the snapshot, the results replaced.
#include "run/pass_run.hpp"

#include <algorithm>
#include <map>

#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run/run_common.hpp"
#include "search/strategy.hpp"
#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/compile_pool.hpp"
#include "tune/devices.hpp"
#include "tune/errors.hpp"
#include "tune/gate.hpp"
#include "tune/io.hpp"
#include "tune/journal.hpp"
#include "tune/measure.hpp"
#include "tune/problem.hpp"
#include "tune/run_plan.hpp"
#include "tune/space.hpp"
#include "tune/worker_client.hpp"
#include "tune/worker_protocol.hpp"

namespace tune {

void Outputs::lock(Pass* pass) {
  check_writable(plan_.json_path.parent_path());
  if (o_.header && o_.header->has_parent_path()) check_writable(o_.header->parent_path(), "--header");
  if (!pass)
    lock_.emplace(plan_.json_path);
  else if (!pass->results_lock)
    pass->results_lock.emplace(plan_.json_path);
}

// Where the results go (locked for this run), and the run's context.
void PassRun::open_outputs() {
  outputs.lock(pass);
  ctx.tool_version = tool_version();
  ctx.git_commit = tool_git_commit();
  ctx.command_line = o.command_line;
  ctx.started_at = now_iso8601();
  ctx.host = host_name();
  ctx.nvrtc_version = nvrtc_version();
  ctx.cuda_header_version = fmt::format("{}.{}", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
  ctx.arch = arch_name(cc);
  ctx.compile_options = default_options(cc);
  ctx.config_file = o.config ? o.config->string() : problem.file().string() + std::string(kProblemFileMark);
  ctx.source_hash = sources_hash(space, problem);
  ctx.tensors = tensor_records(problem, shape);
  ctx.reference_identity = run.device ? problem.reference_identity(reference_backend_from_env()) : "none (compile only)";
  ctx.gate.jobs = gate_jobs();  // a bad TUNE_GATE_JOBS is refused before anything is measured
  feed.open(compile_cache_for(o.no_cache, o.cache_dir), o.jobs, log);
  ctx.jobs = feed.compiler().jobs();
  ctx.compile_cache = feed.compiler().cache_description();
}

std::vector<std::string> Outputs::other_folders() const {
  std::vector<std::string> dirs = o_.resume_dirs;
  // This card's results under another of its folder names: run alone (its model's slug) or beside
  // another card of its model (the slug with its UUID or ordinal).
  if (plan_.device)
    for (const auto& name : device_folder_names(*plan_.device))
      if (plan_.json_path.parent_path().parent_path().filename() != name &&
          std::find(dirs.begin(), dirs.end(), name) == dirs.end())
        dirs.push_back(name);
  // Outside a replica, a shape finished by another card of this model that the run no longer includes.
  std::error_code ec;
  if (plan_.device && !o_.replica && std::filesystem::is_directory(o_.out_dir, ec)) {
    std::vector<std::string> more;
    for (const auto& entry : std::filesystem::directory_iterator(o_.out_dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory(ec) && is_model_folder(name, plan_.device->slug()) &&
          plan_.json_path.parent_path().parent_path().filename() != name &&
          std::find(dirs.begin(), dirs.end(), name) == dirs.end())
        more.push_back(name);
    }
    std::sort(more.begin(), more.end());
    dirs.insert(dirs.end(), more.begin(), more.end());
  }
  return dirs;
}

std::filesystem::path Outputs::in_folder(const RunRecord& run, const std::string& dir) const {
  return o_.out_dir / dir / run.problem / plan_.json_path.filename();
}

std::string Outputs::gated_otherwise(const RunContext::Gate& gate) const {
  if (gate.mode != to_string(o_.sanitize))
    return fmt::format("--sanitize {}, this run's {}", gate.mode, to_string(o_.sanitize));
  if (gate.allow_unchecked != o_.allow_unchecked)
    return fmt::format("{} --allow-unchecked, this run {}", gate.allow_unchecked ? "with" : "without",
                       o_.allow_unchecked ? "with it" : "without it");
  return {};
}

std::optional<TuneOutcome> Outputs::finished_earlier(const RunRecord& run, const Pass* pass) const {
  std::error_code ec;
  const auto& json_path = plan_.json_path;
  if (!o_.resume || (pass && pass->passes_done > 0) || std::filesystem::exists(Journal::path_for(json_path), ec))
    return std::nullopt;
  const auto identity = run_identity(o_, run);
  std::vector<std::filesystem::path> candidates{json_path};
  for (const auto& dir : other_folders()) candidates.push_back(in_folder(run, dir));
  for (const auto& json : candidates) {
    const auto file = earlier_result(json);
    RunRecord earlier;
    try {
      if (!std::filesystem::exists(file, ec)) continue;
      earlier = read_result(file);
    } catch (const InputError&) {
      continue;  // the run replaces it, or keeps it (reason_to_keep), as without --resume
    }
    // A run its --time-budget stopped left variants unreached: --resume continues it from its journal.
    if (!earlier.complete || earlier.context.interrupted || earlier.context.stopped_by_time_budget) continue;
    const std::string differs = json == json_path
                                    ? identity_difference(identity, earlier.context.run_identity)
                                    : identity_difference(across_cards(identity, o_.replica),
                                                          across_cards(earlier.context.run_identity, o_.replica));
    if (!differs.empty()) {
      log_(fmt::format("--resume: {} is complete, but not for this run (its {} differs); {} is tuned again", file.string(),
                       differs, plan_.shape.tag()));
      continue;
    }
    // Its winner was gated as this run asks (--sanitize, --allow-unchecked), or it is no result of this run.
    if (const std::string gated = gated_otherwise(earlier.context.gate); !gated.empty()) {
      log_(fmt::format("--resume: {} is complete, but gated otherwise ({}); {} is tuned again", file.string(), gated,
                       plan_.shape.tag()));
      continue;
    }
    log_(fmt::format("{}: already complete in {}; skipped", plan_.shape.tag(), file.string()));
    TuneOutcome out{.run = std::move(earlier), .json_path = file, .header_path = std::nullopt, .already_complete = true};
    if (const auto header = json.parent_path() / (plan_.shape.tag() + ".hpp");
        out.run.winner && std::filesystem::exists(header, ec))
      out.header_path = header;
    return out;
  }
  return std::nullopt;
}

void Outputs::adopt_journal(const RunRecord& run, const nlohmann::ordered_json& identity) {
  std::error_code ec;
  for (const auto& dir : other_folders()) {
    const auto other_json = in_folder(run, dir);
    const auto other = Journal::path_for(other_json);
    if (other_json == plan_.json_path || !std::filesystem::exists(other, ec)) continue;
    std::optional<ResultsLock> other_lock;  // that folder's writer of the shape: none may be running
    std::vector<Journal::Entry> entries;
    try {
      other_lock.emplace(other_json);
      entries = Journal::read(other, across_cards(identity, o_.replica));
    } catch (const InputError& e) {
      log_(fmt::format("--resume: another device's journal is not taken: {}", e.what()));
      continue;
    }
    {
      Journal moved = Journal::create(journal_path_, identity);
      for (const auto& e : entries) moved.append(e.stage, e.record);
    }
    std::filesystem::remove(other, ec);
    std::filesystem::remove(partial_results_path(other_json), ec);  // its lock file goes with other_lock
    log_(fmt::format("--resume: {} records of {} moved from {} (another device's folder) to {}", entries.size(),
                     plan_.shape.tag(), other.string(), journal_path_.string()));
    return;
  }
}

void Outputs::open_journal(RunRecord& run, const Pass* pass) {
  RunContext& ctx = run.context;
  const std::size_t n = run.variants.size();
  journal_path_ = Journal::path_for(plan_.json_path);
  ctx.journal = journal_path_.string();
  const auto identity = run_identity(o_, run);
  ctx.run_identity = identity;
  journaled_.assign(n, 0);
  halved_.assign(n, 0);
  // One cut short as it was created holds nothing to resume: a fresh run, not a refusal that every
  // resubmission of a sweep with --resume would meet again.
  if (o_.resume && std::filesystem::exists(journal_path_) && Journal::holds_nothing(journal_path_)) {
    log_(fmt::format("--resume: {} holds no record (cut short as it was created); removed", journal_path_.string()));
    std::filesystem::remove(journal_path_);
  }
  if (o_.resume && !std::filesystem::exists(journal_path_)) adopt_journal(run, identity);
  if (o_.resume && std::filesystem::exists(journal_path_)) {
    const std::size_t refused = take_journal(run, identity);
    ctx.resumed_variants = static_cast<int>(std::count(journaled_.begin(), journaled_.end(), 1));
    if (pass && pass->passes_done > 0 && stop_requested()) {  // the last pass, after a stop: it only writes
      log_(fmt::format("writing the {} of {} variants measured before the stop (journal {})", ctx.resumed_variants, n,
                       journal_path_.string()));
    } else if (pass && pass->passes_done > 0) {  // a later pass: resumed by run_tune, not by the user
      log_(
          fmt::format("pass {}: {} of {} variants measured by the earlier passes (journal {}); {} to compile and "
                      "measure",
                      pass->passes_done + 1, ctx.resumed_variants, n, journal_path_.string(),
                      n - static_cast<std::size_t>(ctx.resumed_variants)));
    } else {
      log_(fmt::format("--resume: {} of {} variants taken from {}; the rest are compiled and measured", ctx.resumed_variants,
                       n, journal_path_.string()) +
           (refused ? fmt::format(" ({} journal records not taken: not final, or not this run's variants)", refused) : ""));
    }
    journal_.emplace(Journal::append_to(journal_path_));
  } else {
    if (o_.resume)
      log_(fmt::format("--resume: no journal at {}; starting a fresh run", journal_path_.string()));
    else if (std::filesystem::exists(journal_path_))
      log_(fmt::format("replacing the journal of an earlier run, {} (--resume continues one)", journal_path_.string()));
    journal_.emplace(Journal::create(journal_path_, identity));
    created_ = !pass || pass->passes_done == 0;
  }
  save(run);
}

void Outputs::discard_unmeasured() {
  if (!created_ || appended_ > 0) return;
  journal_.reset();
  std::error_code ec;
  std::filesystem::remove(journal_path_, ec);
  std::filesystem::remove(plan_.partial_path, ec);
}

std::size_t Outputs::take_journal(RunRecord& run, const nlohmann::ordered_json& identity) {
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < run.variants.size(); ++i) by_name[run.variants[i].name] = i;
  std::size_t refused = 0;
  for (auto& e : Journal::read(journal_path_, identity)) {
    const auto it = by_name.find(e.record.name);
    if (it == by_name.end()) {
      ++refused;
      continue;
    }
    const VariantRecord& mine = run.variants[it->second];
    const Status st = e.record.status;
    const bool final_status = st != Status::kPending && st != Status::kUnsafe && !(run.timed && st == Status::kCompiled) &&
                              (st != Status::kPassed || e.record.timing);
    const bool halving_ok = e.stage != kSecondRoundStage || (st == Status::kPassed && journaled_[it->second]);
    if (!final_status || !halving_ok || e.record.params != mine.params || e.record.baseline != mine.baseline) {
      ++refused;
      continue;
    }
    run.variants[it->second] = std::move(e.record);
    (e.stage == kSecondRoundStage ? halved_ : journaled_)[it->second] = 1;
  }
  return refused;
}

void Outputs::save(RunRecord& run, bool force) {
  if (!force && seconds_since(last_save_) < 2.0) return;
  run.wall.total_wall_s = seconds_since(t_start_);
  write_file_atomic(plan_.partial_path, to_json(run).dump(2) + "\n");
  last_save_ = Clock::now();
}

// Not stop_asked(): a stop that came while the gate ran (its first round ends whatever comes) leaves
// a run measured, re-measured and gated in full, which that call would have marked interrupted (no
// winner, no header, "not gated"). The harness records such a stop itself ("stopped").
bool PassRun::torch_wanted() const {
  return run.timed && run.device && !ctx.interrupted && !(o.shard && o.shard->split == ShardSplit::kVariants);
}

TorchCompare PassRun::torch_options() const {
  return TorchCompare{.modes = o.torch,
                      .device = o.device,
                      .seed = o.seed,
                      .cache_dir = torch_cache_for(o.no_cache, o.cache_dir),
                      .fake_device = fake};
}

std::unique_ptr<TorchBeside> PassRun::torch_beside_gate() {
  if (o.torch == TorchModes::kOff || !torch_wanted()) return nullptr;
  return std::make_unique<TorchBeside>(problem, shape, *run.device, torch_options(), log);
}

// The wall the gate added to the run: its own, less what the module's preparation covered (the
// harness's wait for the gate's end, when it waited; else all of it).
void PassRun::time_torch(std::unique_ptr<TorchBeside> beside) {
  ctx.gate.added_s = ctx.gate.wall_s;
  if (beside) {
    TorchRecord rec = beside->wait();
    if (rec.held_s >= 0) ctx.gate.added_s = std::min(ctx.gate.wall_s, rec.held_s);
    if (torch_wanted()) run.torch = std::move(rec);
    return;
  }
  if (!torch_wanted()) return;
  run.torch = time_torch_module(problem, shape, *run.device, torch_options(), log);
}

// The record complete, then the results and their header (Outputs::replace); the worker let go.
TuneOutcome PassRun::write_outputs(int gate_exit_code) {
  run.wall.measure_wall_s = tally.measure_busy + (pass ? pass->measure_wall_s : 0);
  run.complete = true;
  run.wall.total_wall_s = seconds_since(t_start);
  ctx.gate.share = run.wall.total_wall_s > 0 ? ctx.gate.wall_s / run.wall.total_wall_s : 0;
  ctx.gate.added_share = run.wall.total_wall_s > 0 ? ctx.gate.added_s / run.wall.total_wall_s : 0;
  run.context.finished_at = now_iso8601();
  save();
  // No header from a search cut short by hand, nor from a part of one (tune merge writes it). It is
  // made before anything is replaced: a header that cannot be made leaves the earlier pair alone.
  std::optional<std::string> header;
  if (run.timed && run.winner && !run.context.interrupted && !(o.shard && o.shard->split == ShardSplit::kVariants))
    header = generate_header(run, space);
  TuneOutcome out = outputs.replace(run, header, gate_exit_code);
  if (gpu) gpu->detach();
  return out;
}

TuneOutcome Outputs::replace(const RunRecord& run, const std::optional<std::string>& header, int gate_exit_code) {
  const auto& json_path = plan_.json_path;
  TuneOutcome out{.run = run, .json_path = json_path, .header_path = std::nullopt, .gate_exit_code = gate_exit_code};
  move_unreadable_aside(json_path, run, log_);
  if (const std::string kept = reason_to_keep(json_path, run); !kept.empty()) {
    out.json_path = plan_.partial_path;
    log_(fmt::format("kept the earlier results {} and its header: {}; this run's results are in {}",
                     earlier_result(json_path).string(), kept, plan_.partial_path.string()));
  } else {
    replace_results(run, header, out);
  }
  // A finished run needs no journal (its results hold every record); an interrupted one keeps it,
  // and so does one its --time-budget stopped, for --resume to reach the rest.
  journal_.reset();
  if (!run.context.interrupted && !run.context.stopped_by_time_budget) std::filesystem::remove(journal_path_);
  return out;
}

void Outputs::replace_results(const RunRecord& run, const std::optional<std::string>& header, TuneOutcome& out) {
  const auto& json_path = plan_.json_path;
  write_file_atomic(json_path, to_json(run).dump(2) + "\n");
  if (header) {
    out.header_path = o_.header ? *o_.header : json_path.parent_path() / (plan_.shape.tag() + ".hpp");
    write_file_atomic(*out.header_path, *header);
  }
  std::error_code ec;
  std::filesystem::remove(plan_.partial_path, ec);
  // <shape>.json replaces a <shape>.json.gz of record only now, once it is written: readers never
  // see two files of one shape (they refuse the pair), and a run cut short keeps the .json.gz.
  if (std::filesystem::exists(compressed_result_path(json_path), ec)) {
    std::filesystem::remove(compressed_result_path(json_path), ec);
    log_(fmt::format("{} replaces {} (removed)", json_path.string(), compressed_result_path(json_path).filename().string()));
  }
}

}  // namespace tune
