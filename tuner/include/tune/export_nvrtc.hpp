#pragma once
// `tune export nvrtc`: what a downstream NVRTC build of tuned kernels needs, read by tune's own
// readers (bench/embed_nvrtc.py turns it into <problem>_nvrtc.hpp; docs/cli.md).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tune {

// {"kind": "tune.export_nvrtc", "schema_version": 1, "problem",
//  "template": {"name", "text"}, "headers": [{"name", "text"}]   (the sources as tune hands them to
//      NVRTC: Space::sources(), includes rewritten to the names NVRTC knows),
//  "files_read": [absolute paths: problem.json, template, headers, results files],
//  "records": [per results file, by shape stem: {"file", "shape_name", "compile_options",
//      "finalists": [the variants of the strict re-measure (a search_timing and a timing), fastest
//      search median first (the order tune interleaves them): {"name", "baseline", "strict_median_us",
//      "search_median_us", "launches": [{"name_expression", "grid", "block", "dynamic_smem_bytes"}]}],
//      with all_variants also "variants": [every variant, in the record's order: {"name", "baseline",
//      "status", "reason", "launches" (as the finalists'; none where the record has none)}]}]}
// `problem`: a name or a problem folder or file; empty: the first results file's own problem (no
// results: the sources alone, of `problem`). A
// record older than a dtype variable of the problem names its kernels with the variable's default
// type (as tune lowers them now, issue 35). Throws InputError (a results file not valid, one of
// another problem, no results given).
// `note` gets a line per results file tuned on other kernel sources than the problem's now.
nlohmann::ordered_json export_nvrtc(const std::vector<std::filesystem::path>& results, const std::string& problem,
                                    bool all_variants = false, const std::function<void(const std::string&)>& note = {});

}  // namespace tune
