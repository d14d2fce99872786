// The merged header (`tune header`): every result of a problem as a table entry with its recorded
// launches, geometry() for any shape, select() by device and shape, and the kernels' pointers.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "ship/header_parts.hpp"
#include "ship/header_text.hpp"
#include "tune/dtype.hpp"
#include "tune/errors.hpp"
#include "tune/io.hpp"
#include "tune/problem.hpp"
#include "tune/problem_space.hpp"

namespace tune {
namespace {

using header_parts::MergedEntry;
using header_parts::MergedVariant;
using header_parts::Portable;
using header_parts::provenance;
using header_parts::timing_summary;
using header_text::c_string;
using header_text::comment_safe;
using header_text::dtype_enumerator;
using header_text::identifier;

// A file of the problem as a shipped header names it: its file name, not this machine's path to it.
// The header's bytes, and so the hash that names its namespace, must not depend on where the problem
// folder lay when it was made (a checkout, an install prefix, a build machine's home).
std::string shipped_file_name(const std::string& path) {
  return comment_safe(std::filesystem::path(path).filename().string());
}

// The space file: "problem contact's problem.json", or a --config file's name.
std::string shipped_space_name(const Space& space) {
  return fmt::format("problem {}'s {}", comment_safe(space.problem()), shipped_file_name(space.source_name()));
}

// The shape's dtype variables, each with the values the problem takes (select() refuses others);
// one the problem does not declare, with the values its entries were tuned in.
std::vector<DTypeVariable> shape_dtype_variables(const std::vector<MergedEntry>& entries, const Problem& problem) {
  std::vector<DTypeVariable> out;
  for (const auto& d : entries.front().run->shape.dtypes()) {
    const auto& declared = problem.dtype_variables();
    if (const auto it = std::ranges::find(declared, d.first, &DTypeVariable::name); it != declared.end()) {
      out.push_back(*it);
      continue;
    }
    DTypeVariable seen{d.first, {}, std::nullopt};
    for (const auto& e : entries)
      for (const auto& [name, t] : e.run->shape.dtypes())
        if (name == d.first && std::ranges::find(seen.values, t) == seen.values.end()) seen.values.push_back(t);
    out.push_back(std::move(seen));
  }
  return out;
}

std::string shape_values(const Shape& shape) {
  std::vector<std::string> v;
  for (const auto& d : shape.dims()) v.push_back(std::to_string(d.second));
  for (const auto& d : shape.dtypes()) v.push_back(dtype_enumerator(d.second));
  return fmt::format("{}", fmt::join(v, ", "));
}

std::string params_init(const Space& space, const Config& config) {
  std::vector<std::int64_t> v;
  for (const auto& p : space.parameters()) v.push_back(space.numeric(config, p.name));
  return fmt::format("{{{}}}", fmt::join(v, ", "));
}

std::string variant_init(const MergedVariant& m, const Space& space, const std::string& indent, bool with_dtypes) {
  const VariantRecord& v = *m.record;
  std::string h =
      fmt::format("{{{},\n{} {},\n{} {:.4f}, {:.4f},\n{} {}, {{", c_string(v.name), indent, params_init(space, m.config),
                  indent, v.timing->median_us, v.timing->noise, indent, v.launches.size());
  for (std::size_t l = 0; l < v.launches.size(); ++l) {
    const auto& rec = v.launches[l];
    const auto& low = m.lowered.launches[l];
    std::vector<int> args;
    for (const auto& a : low.args) {
      const std::string& name = a == m.output_name ? std::string("out") : a;  // the output by its own name
      auto it = std::find_if(m.buffers.begin(), m.buffers.end(), [&](const TensorSpec& t) { return t.name == name; });
      if (it == m.buffers.end())
        throw InputError(fmt::format("launch {} takes '{}', which is no buffer of the problem", low.kernel, a));
      args.push_back(static_cast<int>(it - m.buffers.begin()));
    }
    const auto dim3 = [](const nlohmann::ordered_json& j) {
      return fmt::format("{{{}, {}, {}}}", j.at(0).get<unsigned>(), j.at(1).get<unsigned>(), j.at(2).get<unsigned>());
    };
    h += fmt::format("{}\n{}  {{{}, {}, {}, {}, {}, {{{}}}}}", l ? "," : "", indent, c_string(low.name_expression),
                     dim3(rec.at("grid")), dim3(rec.at("block")), rec.value("dynamic_smem_bytes", 0u), args.size(),
                     fmt::join(args, ", "));
  }
  h += fmt::format("}},\n{} {}, {{", indent, m.buffers.size());
  for (std::size_t b = 0; b < m.buffers.size(); ++b)
    h += fmt::format("{}{{{}, {}{}}}", b ? ", " : "", c_string(m.buffers[b].name), m.buffers[b].elements(),
                     with_dtypes ? ", " + dtype_enumerator(m.buffers[b].dtype) : "");
  return h + "}}";
}

// The problem's work in C++ over `s`: its "flop" expression (else "bytes") when it is plain
// arithmetic of the dims (+ - * / and parentheses), else the product of the dims.
std::string work_expression(const Problem& problem, const Shape& shape) {
  for (const char* which : {"flop", "bytes"}) {
    const std::string text = problem.work_expression(which);
    if (text.empty()) continue;
    std::string out;
    bool ok = true;
    for (std::size_t i = 0; ok && i < text.size();) {
      const char c = text[i];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t j = i;
        while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
        const std::string id = text.substr(i, j - i);
        ok = shape.has(id);
        out += "s." + identifier(id);
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        std::size_t j = i;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        out += text.substr(i, j - i);
        i = j;
      } else {
        ok = std::string_view(" +-*/()").find(c) != std::string_view::npos;
        out += c;
        ++i;
      }
    }
    if (ok) return out;
  }
  std::vector<std::string> f;
  for (const auto& d : shape.dims()) f.push_back("s." + identifier(d.first));
  return fmt::format("{}", fmt::join(f, " * "));
}

// The dtype enum of a typed header (every dtype, numbered as tune numbers them: a dtype variable's
// value in the geometry's expressions is that number), the CUDA type a kernel template receives
// for each, and its size.
std::string dtype_types() {
  std::string names, cuda, bytes;
  for (const DType t : all_dtypes()) {
    const std::string id = identifier(std::string(dtype_name(t)));
    names += fmt::format("{}{} = {}", names.empty() ? "" : ", ", id, static_cast<int>(t));
    cuda += fmt::format("    case DType::{}: return \"{}\";\n", id, dtype_cuda_type(t));
    bytes += fmt::format("    case DType::{}: return {};\n", id, dtype_size(t));
  }
  std::string h = "// The element types of the problem's tensors, named as PyTorch names them (bool_: bool).\n";
  h += fmt::format("enum class DType : int {{ {} }};\n\n", names);
  h += "// The type a kernel template receives for a dtype (a template argument that is a dtype variable).\n";
  h += "constexpr const char* cuda_type(DType t) {\n  switch (t) {\n" + cuda + "  }\n  return \"\";\n}\n\n";
  h += "constexpr long long dtype_bytes(DType t) {\n  switch (t) {\n" + bytes + "  }\n  return 0;\n}\n\n";
  return h;
}

// The header's opening comment: what it holds, how select() chooses, the entries.
std::string merged_doc(const std::vector<MergedEntry>& entries, const Space& space, const Problem& problem,
                       const Portable& portable) {
  const std::string& problem_name = space.problem();
  std::string h;
  h += fmt::format(
      "// Generated by `tune header` (tune {}) from {} result{} of problem {}. Do not edit: re-run `tune header`.\n",
      tool_version(), entries.size(), entries.size() == 1 ? "" : "s", problem_name);
  h += "// It includes nothing: it compiles on its own as C++17 and as CUDA.\n//\n";
  h += "// select(device, shape) picks a configuration for a device {name, arch, SM count, shared memory per\n"
       "// block opt-in} (name as cudaDeviceProp::name; nullptr: any measured device of that arch; SM count 0:\n"
       "// any; shared memory 0: the arch's), and gives its\n"
       "// geometry at that shape (grid, block, dynamic shared memory and template arguments, computed by\n"
       "// geometry() from the config's expressions). Each step takes only configurations valid at the shape:\n";
  h += "//   1. kExact: an entry tuned on that device for exactly that shape;\n";
  h += "//   2. kSameArch: an entry of another device of that arch, for exactly that shape;\n";
  std::string work_doc = work_expression(problem, entries.front().run->shape);
  for (std::size_t p = 0; (p = work_doc.find("s.", p)) != std::string::npos;) work_doc.erase(p, 2);
  h += fmt::format("//   3. kNearestWork: the entry of that device, else of that arch, nearest in work, work(shape) = {}\n",
                   work_doc);
  h += "//      (distance: the ratio of the larger work to the smaller; ties: the smaller work, then table order);\n";
  h += "//   4. kNearestArch: an entry for exactly that shape on the nearest arch (ties: the lower arch);\n";
  if (portable.config)
    h += fmt::format("//   5. kPortable: {} (worst-case loss {:.2f}x over the {} measured entr{});\n",
                     comment_safe(portable.name), portable.worst_loss, portable.over, portable.over == 1 ? "y" : "ies");
  else
    h += "//   5. kPortable: none (no configuration passed in every measured entry);\n";
  h += fmt::format("//   6. kDefault: the baseline configuration of {};\n", shipped_space_name(space));
  h += "//   7. kNone: nothing is valid at that shape (index -1, geometry.ok false, geometry.why says why).\n";
  if (!entries.front().run->shape.dtypes().empty())
    h += "// Entries are keyed by dtype too: Shape holds the dtype variables (enum DType), and select() takes\n"
         "// only entries of the shape's dtypes (steps 1 to 4); select(device, dtype, shape) with one variable.\n";
  h += "// A synthetic entry (fake GPU, nothing measured; merged only with --allow-synthetic) is taken only\n"
       "// for the device it names.\n";
  h +=
      "// Compile time: constexpr auto s = select(Device{\"NVIDIA H200\", 90, 132, 232448}, Shape{...}); then\n"
      "// kernel<s.geometry.launches[0].template_args[0], ...> launched with s.geometry's grid, block and\n"
      "// shared memory. Run time: include the problem's template " +
      shipped_file_name(space.template_name()) +
      ", define TUNE_TUNED_KERNELS (every tuned header's\n// kernels) or TUNE_TUNED_KERNELS_" +
      header_text::identifier(space.problem()) +
      " (this problem's alone), then this header: kWinnerKernels[i][l]\n// and kBaselineKernels[i][l] are the instantiations of kEntries[i]'s launches.\n//\n";
  h += "// Entries (index: device, arch, shape):\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const RunRecord& run = *e.run;
    h += fmt::format("// [{}] {} (sm_{}, {} SMs), {}{}\n", i, comment_safe(run.device->name),
                     run.device->compute_capability(), run.device->sm_count, run.shape.describe(),
                     e.synthetic ? "  SYNTHETIC: nothing was measured" : "");
    h += fmt::format("//     winner   {}: {}\n", comment_safe(e.winner.record->name),
                     timing_summary(*e.winner.record->timing));
    if (e.baseline_invalid.empty())
      h += fmt::format("//     baseline {}: {}\n", comment_safe(e.baseline.record->name),
                       timing_summary(*e.baseline.record->timing));
    else
      h += fmt::format(
          "//     baseline: none at this shape (the baseline configuration breaks {}); the winner stands "
          "in\n",
          comment_safe(e.baseline_invalid));
    if (run.speedup) h += fmt::format("//     speedup {:.2f}x\n", *run.speedup);
    for (const MergedVariant* m : {&e.winner, &e.baseline})
      if (!m->assumed.empty())
        h += fmt::format("//     {} predates parameter(s) {}: the baseline's value is assumed\n", m->record->name,
                         fmt::join(m->assumed, ", "));
    h += provenance(run, "//     ");
  }
  return h;
}

// Shape, work, Params, Launch, Buffer, Variant and Entry.
std::string merged_types(const std::vector<MergedEntry>& entries, const Space& space, const Problem& problem) {
  const bool with_dtypes = header_parts::typed(entries);
  std::size_t max_launches = 1, max_args = 1, max_buffers = 1;
  for (const auto& e : entries)
    for (const MergedVariant* m : {&e.winner, &e.baseline}) {
      max_launches = std::max(max_launches, m->lowered.launches.size());
      max_buffers = std::max(max_buffers, m->buffers.size());
      for (const auto& l : m->lowered.launches) max_args = std::max(max_args, l.args.size());
    }
  const Shape& shape0 = entries.front().run->shape;
  std::string h;
  h += fmt::format(
      "inline constexpr int kMaxLaunches = {};\ninline constexpr int kMaxArgs = {};\ninline constexpr int kMaxBuffers = {};\n\n",
      max_launches, max_args, max_buffers);
  if (with_dtypes) h += dtype_types();
  h += fmt::format("// A shape, dimensions in the problem's order{}.\nstruct Shape {{\n",
                   shape0.dtypes().empty() ? "" : ", then its dtype variables");
  for (const auto& d : shape0.dims()) h += fmt::format("  long long {};\n", identifier(d.first));
  // A dtype variable's field defaults to the variable's default, so Shape{4, 64, 64, 32} of code
  // written before the problem had the variable still means what it meant (float32). Without a
  // default it is no dtype at all: left out, select() gives kNone, not the first enumerator (float16).
  // The type is named from the global namespace: a dimension or variable named DType is a member
  // of Shape by then, and would hide the enum from a plain `DType`.
  const std::string global = "::tune_tuned::" + identifier(entries.front().run->problem) + "::";
  for (const auto& d : shape0.dtypes()) {
    std::string init = fmt::format(" = static_cast<{}DType>(-1)", global);
    for (const DTypeVariable& v : problem.dtype_variables())
      if (v.name == d.first && v.default_value) init = " = " + global + dtype_enumerator(*v.default_value);
    h += fmt::format("  {}DType {}{};\n", global, identifier(d.first), init);
  }
  h += "};\n\n";
  h += "constexpr bool same_shape(const Shape& a, const Shape& b) {\n  return ";
  std::vector<std::string> fields, dtype_fields;
  for (const auto& d : shape0.dims()) fields.push_back(identifier(d.first));
  for (const auto& d : shape0.dtypes()) dtype_fields.push_back(identifier(d.first));
  fields.insert(fields.end(), dtype_fields.begin(), dtype_fields.end());
  for (std::size_t i = 0; i < fields.size(); ++i) h += fmt::format("{}a.{} == b.{}", i ? " && " : "", fields[i], fields[i]);
  h += ";\n}\n\n";
  if (!dtype_fields.empty()) {
    h += "// Entries of one dtype: select() never takes an entry of other dtypes, nearest shape or not.\n"
         "constexpr bool same_dtypes(const Shape& a, const Shape& b) {\n  return ";
    for (std::size_t i = 0; i < dtype_fields.size(); ++i)
      h += fmt::format("{}a.{} == b.{}", i ? " && " : "", dtype_fields[i], dtype_fields[i]);
    h += ";\n}\n\n";
  }
  h += fmt::format("// The work select() compares shapes by.\nconstexpr long long work(const Shape& s) {{ return {}; }}\n\n",
                   work_expression(problem, shape0));
  h += "// Parameters as the kernel template takes them (strings: index in the config's list).\nstruct Params {\n";
  for (const auto& p : space.parameters()) {
    std::vector<std::string> values;
    for (std::size_t i = 0; i < p.values.size(); ++i)
      values.push_back(p.values[i].is_string() ? fmt::format("{} {}", i, p.values[i].get<std::string>())
                                               : p.values[i].dump());
    h += fmt::format("  int {};  // {}\n", identifier(p.name), comment_safe(fmt::format("{}", fmt::join(values, ", "))));
  }
  h += "};\n\n";
  h += "// One kernel launch; arguments are indices into Variant::buffers, in the kernel's parameter order.\n";
  h +=
      "struct Launch {\n  const char* name_expression;  // the template instantiation (NVRTC name expression)\n"
      "  unsigned grid[3];\n  unsigned block[3];\n  unsigned dynamic_smem_bytes;\n  int arg_count;\n  int args[kMaxArgs];\n};\n\n";
  if (with_dtypes) {
    h += "// A device buffer: the problem's parameters and inputs, \"out\", then scratch, elements of its dtype.\n";
    h += "struct Buffer {\n  const char* name;\n  long long elements;\n  DType dtype;\n};\n\n";
  } else {
    h += "// A device buffer of float32 elements: the problem's parameters and inputs, \"out\", then scratch.\n";
    h += "struct Buffer {\n  const char* name;\n  long long elements;\n};\n\n";
  }
  h += "// A configuration with its launches in order (timed together as one call).\n";
  h += "struct Variant {\n  const char* name;\n  Params params;\n  double median_us;  // measured cold median\n"
       "  double noise;      // relative standard deviation of the samples\n  int launch_count;\n"
       "  Launch launches[kMaxLaunches];\n  int buffer_count;\n  Buffer buffers[kMaxBuffers];\n};\n\n";
  h += "struct Entry {\n  const char* device;  // cudaDeviceProp::name of the GPU it was tuned on\n  int arch;\n"
       "  int sm_count;\n  bool synthetic;  // a fake GPU's made-up results: nothing was measured\n"
       "  const char* shape_name;  // the results file stem\n  Shape shape;\n  Variant winner;\n  Variant baseline;\n};\n\n";
  return h;
}

// The identifiers of the header's code that the problem's author chose: its name, dimensions,
// dtype variables and parameters (a user's macro of such a name is set aside: macro_guards). A name
// of tune's own macros stays out: setting TUNE_TUNED_KERNELS aside would drop the kernels asked for.
std::vector<std::string> user_names(const Shape& shape0, const Space& space) {
  std::vector<std::string> names{identifier(space.problem())};
  for (const auto& d : shape0.dims()) names.push_back(identifier(d.first));
  for (const auto& d : shape0.dtypes()) names.push_back(identifier(d.first));
  for (const auto& p : space.parameters()) names.push_back(identifier(p.name));
  std::erase_if(names, [](const std::string& n) { return n.starts_with("TUNE_TUNED_"); });
  return names;
}

}  // namespace

std::string generate_merged_header(const std::vector<NamedResult>& results, const Space& space, bool allow_synthetic) {
  if (results.empty()) throw InputError("no result files given; pass at least one results JSON");
  const std::string& problem_name = results.front().run.problem;
  for (const auto& r : results)
    if (r.run.problem != problem_name)
      throw InputError(fmt::format("{} is problem {} but {} is problem {}; merge one problem per header", r.file,
                                   r.run.problem, results.front().file, problem_name));
  if (space.problem() != problem_name)
    throw InputError(
        fmt::format("the results are problem {} but {} describes {}", problem_name, space.source_name(), space.problem()));
  const Problem& problem = find_problem(problem_spec_of(results.front().run));
  header_parts::check_dtype_variables(results);
  const std::vector<MergedEntry> entries = header_parts::merged_entries(results, space, problem, allow_synthetic);
  const Portable portable = header_parts::portable_config(entries, space);
  const bool with_dtypes = header_parts::typed(entries);

  std::string h = merged_doc(entries, space, problem, portable);
  h += "#pragma once\n\n";
  std::string body = merged_types(entries, space, problem);
  body += geometry_code(space, shape_dtype_variables(entries, problem));
  body += fmt::format("inline constexpr int kEntryCount = {};\n", entries.size());
  body += "inline constexpr Entry kEntries[kEntryCount] = {\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    body += fmt::format("    // [{}]\n    {{{}, {}, {}, {}, {}, {{{}}},\n     {},\n     {}}}{}\n", i,
                        c_string(e.run->device->name), e.run->device->compute_capability(), e.run->device->sm_count,
                        e.synthetic ? "true" : "false", c_string(e.run->shape.tag()), shape_values(e.run->shape),
                        variant_init(e.winner, space, "     ", with_dtypes),
                        variant_init(e.baseline, space, "     ", with_dtypes), i + 1 < entries.size() ? "," : "");
  }
  body += "};\n\n";
  if (portable.config)
    body += fmt::format(
        "// The portable configuration: {}, worst-case loss {:.4f}x over the measured entries.\n"
        "inline constexpr bool kHasPortable = true;\ninline constexpr Params kPortableParams = {};\n",
        comment_safe(portable.name), portable.worst_loss, params_init(space, *portable.config));
  else
    body +=
        "// No portable configuration: none passed in every measured entry.\n"
        "inline constexpr bool kHasPortable = false;\ninline constexpr Params kPortableParams = {};\n";
  body += fmt::format("// The baseline of {}.\ninline constexpr Params kDefaultParams = {};\n\n", shipped_space_name(space),
                      params_init(space, space.baseline()));
  body += header_parts::select_code(entries.front().run->shape);
  // TUNE_TUNED_KERNELS asks every tuned header of the translation unit for its kernels (each needs its
  // template included first); TUNE_TUNED_KERNELS_<problem> asks this problem's alone.
  body += fmt::format("#if defined(TUNE_TUNED_KERNELS) || defined(TUNE_TUNED_KERNELS_{})\n",
                      header_text::identifier(problem_name));
  body += "// Every launch's kernel, for cudaLaunchKernel: [entry][launch], unused slots null.\n";
  for (const char* which : {"Winner", "Baseline"}) {
    body += fmt::format("inline const void* const k{}Kernels[kEntryCount][kMaxLaunches] = {{\n", which);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const MergedVariant& m = std::string(which) == "Winner" ? entries[i].winner : entries[i].baseline;
      std::vector<std::string> ptrs;
      // From the configuration: a kernel string in the file is never pasted into code.
      for (const auto& l : m.lowered.launches)
        ptrs.push_back(fmt::format("reinterpret_cast<const void*>(&::{})", l.name_expression));
      body += fmt::format("    {{{}}}{}\n", fmt::join(ptrs, ", "), i + 1 < entries.size() ? "," : "");
    }
    body += "};\n";
  }
  body += "#endif\n";
  h += header_text::in_problem_namespace(problem_name, "HEADER", body, user_names(entries.front().run->shape, space));
  return h;
}

}  // namespace tune
