// The machine code `tune export torch` ships (issue 36): each entry's winner compiled again by tune's
// own NVRTC path exactly as the tune compiled it (its lowering at the record's shape and device
// limits, the record's options), checked to be the code the record gated and timed, and embedded as
// CUBIN bytes (csrc/<problem>/cubins.inc) that the launcher loads with the CUDA runtime's library API.
// nvcc builds of the same templates gave other code (98 registers against the record's 102 for
// ln_linear_gelu M1024's GEMM): code that was never gated.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "ship/export_torch_parts.hpp"
#include "ship/header_text.hpp"
#include "tune/compile.hpp"
#include "tune/compile_cache.hpp"
#include "tune/errors.hpp"
#include "tune/problem_space.hpp"
#include "tune/tune.hpp"

namespace tune::torch_export {
namespace {

using header_parts::MergedEntry;
using header_text::c_string;
using header_text::comment_safe;

// One line: which record, which field, what to do. Nothing is written (exit 2).
[[noreturn]] void not_the_record(const std::string& file, const std::string& what) {
  throw InputError(
      fmt::format("{}: {}: the export ships only the code that was gated; re-run tune on these sources, or "
                  "export with the tune (NVRTC) and the sources that tuned it",
                  file, what));
}

// The record's identity against what this tune compiles: the sources, NVRTC, and the arch of its
// options. A synthetic record (a fake GPU's, exported only with --allow-synthetic) is checked on
// what it records; a measured one must record each.
void check_context(const MergedEntry& e, const std::string& file, const std::string& sources_now,
                   const std::string& nvrtc_now) {
  const RunContext& c = e.run->context;
  if (c.source_hash.empty() && !e.synthetic)
    not_the_record(file, "context.source_hash is missing (results of an earlier tune), so its kernels cannot be matched");
  if (!c.source_hash.empty() && c.source_hash != sources_now)
    not_the_record(file, fmt::format("context.source_hash {} is not the hash of the problem's sources now ({}): the "
                                     "space, templates or problem file changed since the tune",
                                     c.source_hash, sources_now));
  if (c.nvrtc_version != nvrtc_now && !(e.synthetic && c.nvrtc_version.empty()))
    not_the_record(file, fmt::format("context.nvrtc_version {} is not this tune's NVRTC {}: its code would differ",
                                     c.nvrtc_version.empty() ? "(missing)" : c.nvrtc_version, nvrtc_now));
  const std::string arch = "-arch=" + arch_name(e.run->device->compute_capability());
  if (std::find(c.compile_options.begin(), c.compile_options.end(), arch) == c.compile_options.end())
    not_the_record(file, fmt::format("context.compile_options [{}] hold no {}, the arch of its device",
                                     fmt::join(c.compile_options, " "), arch));
  // A run compiles with tune's options for its arch, no others: options of a record's own (edited by
  // hand: --use_fast_math) would embed other machine code than the one gated and timed, with the same
  // resources as often as not.
  const std::vector<std::string> tunes = default_options(e.run->device->compute_capability());
  if (!e.synthetic && c.compile_options != tunes)
    not_the_record(file, fmt::format("context.compile_options [{}] are not the options tune compiles with for {} "
                                     "([{}]): its code would differ",
                                     fmt::join(c.compile_options, " "), arch_name(e.run->device->compute_capability()),
                                     fmt::join(tunes, " ")));
}

// The ptxas resources of every kernel compiled now equal the record's (by lowered name).
void check_resources(const MergedEntry& e, const std::string& file, const CompileResult& now) {
  const VariantRecord& w = *e.winner.record;
  if (w.resources.empty() && e.synthetic) return;
  for (const auto& [name, unused] : w.resources)
    if (std::find(now.lowered_names.begin(), now.lowered_names.end(), name) == now.lowered_names.end())
      not_the_record(file,
                     fmt::format("winner {}: resources name kernel {}, which the code compiled now lacks", w.name, name));
  for (const auto& name : now.lowered_names) {
    const auto rec = w.resources.find(name);
    if (rec == w.resources.end())
      not_the_record(file, fmt::format("winner {}: resources record no kernel {} (compiled now)", w.name, name));
    const auto got = now.resources.find(name);
    if (got == now.resources.end())
      not_the_record(file,
                     fmt::format("winner {}: NVRTC's ptxas report gives no resources for kernel {} now", w.name, name));
    const Resources &r = rec->second, &g = got->second;
    const std::pair<const char*, std::pair<int, int>> fields[] =
        {{"registers", {r.registers, g.registers}},
         {"spill_store_bytes", {r.spill_store_bytes, g.spill_store_bytes}},
         {"spill_load_bytes", {r.spill_load_bytes, g.spill_load_bytes}},
         {"static_smem_bytes", {r.static_smem_bytes, g.static_smem_bytes}}};
    for (const auto& [field, values] : fields)
      if (values.first != values.second)
        not_the_record(file, fmt::format("winner {} kernel {}: resources.{} is {} in the record, {} compiled now", w.name,
                                         name, field, values.first, values.second));
  }
}

// The winner's CUBIN, compiled as the tune compiled it (compile_feed: compile_request of the lowering
// with the record's options), through the compile cache as tune check does; without one when none
// can be made. Only a verified cache entry (length and XXH3 of its CUBIN) is taken.
CompileResult compile_winner(const MergedEntry& e, const std::string& file, const std::string& nvrtc_now) {
  const CompileRequest request = compile_request(e.winner.lowered, e.run->context.compile_options);
  CompileResult out;
  try {
    const CompileCache cache(CompileCache::default_dir());
    bool cached = false;
    std::string store_failure;  // a cache that cannot be written costs nothing here
    out = cache.get_or_compile(request, nvrtc_now, &cached, &store_failure);
  } catch (const InputError&) {
    out = compile(request);
  }
  if (!out.ok) {
    std::string log = out.log.substr(0, 300);
    std::replace(log.begin(), log.end(), '\n', ' ');
    not_the_record(file, fmt::format("winner {} does not compile now ({})", e.winner.record->name, log));
  }
  return out;
}

}  // namespace

std::vector<GatedCode> gated_code(const ExportedProblem& p, const Space& space, bool allow_synthetic) {
  const std::string sources_now = sources_hash(space, *p.problem);
  const std::string nvrtc_now = nvrtc_version();
  std::vector<GatedCode> out;
  for (const MergedEntry& e : header_parts::merged_entries(p.results, space, *p.problem, allow_synthetic)) {
    const auto r = std::find_if(p.results.begin(), p.results.end(), [&](const NamedResult& n) { return &n.run == e.run; });
    const std::string file = r == p.results.end() ? p.name : r->file;
    check_context(e, file, sources_now, nvrtc_now);
    CompileResult compiled = compile_winner(e, file, nvrtc_now);
    check_resources(e, file, compiled);
    out.push_back({fmt::format("{} {}: winner {}{}", e.run->device->name, e.run->shape.tag(), e.winner.record->name,
                               e.synthetic ? " (SYNTHETIC: checked only on what its record holds)" : ""),
                   std::move(compiled.cubin), std::move(compiled.lowered_names)});
  }
  return out;
}

std::string cubin_source(const std::vector<GatedCode>& code) {
  std::string s = fmt::format(
      "// Generated by `tune export torch` (tune {}): the CUBIN of each entry's winner (tuned.hpp's\n"
      "// kEntries order), compiled by tune's NVRTC ({}) as the tune compiled it and checked against its\n"
      "// record (source hash, NVRTC version, ptxas resources of each kernel): the code that was gated and\n"
      "// timed. Included by the launcher. Do not edit.\n\n",
      tool_version(), nvrtc_version());
  auto it = std::back_inserter(s);
  for (std::size_t i = 0; i < code.size(); ++i) {
    const auto& c = code[i];
    fmt::format_to(it, "// [{}] {}: {} bytes, xxh3 {}\nalignas(8) static const unsigned char kCubin{}[{}] = {{", i,
                   comment_safe(c.what), c.cubin.size(), CompileCache::content_hash(c.cubin), i, c.cubin.size());
    for (std::size_t b = 0; b < c.cubin.size(); ++b)
      fmt::format_to(it, "{}{},", b % 24 == 0 ? "\n" : "", static_cast<unsigned>(static_cast<unsigned char>(c.cubin[b])));
    s += "\n};\n\n";
  }
  s +=
      "// An entry's code: its CUBIN, and the lowered (mangled) name of the kernel of each launch.\n"
      "struct EntryCode {\n  const unsigned char* cubin;\n  unsigned long long bytes;\n  const char* kernels[t::kMaxLaunches];\n};\n\n"
      "static const EntryCode kEntryCode[t::kEntryCount] = {\n";
  for (std::size_t i = 0; i < code.size(); ++i) {
    std::vector<std::string> names;
    for (const auto& n : code[i].kernels) names.push_back(c_string(n));
    fmt::format_to(it, "    {{kCubin{0}, sizeof kCubin{0}, {{{1}}}}}{2}\n", i, fmt::join(names, ", "),
                   i + 1 < code.size() ? "," : "");
  }
  s += "};\n";
  return s;
}

}  // namespace tune::torch_export
