// The Python of `tune export torch`'s package: a module per problem (ModelNew, PARAMETERS, INPUTS,
// TUNED) and the package's __init__ (load(): the built extension, else a JIT build).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ship/export_torch_parts.hpp"
#include "tune/dtype.hpp"
#include "tune/io.hpp"

namespace tune::torch_export {
namespace {

// The columns of a generated Python line: the repo's .flake8 (max-line-length 120).
constexpr std::size_t kPythonColumns = 120;

// A JSON-escaped string's text as the pieces a line may end after: each escape (\" or \uXXXX) and
// each UTF-8 character whole, so that no cut splits one.
std::vector<std::string> escaped_tokens(const std::string& escaped) {
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < escaped.size();) {
    const auto c = static_cast<unsigned char>(escaped[i]);
    std::size_t n = 1;
    if (c == '\\')
      n = i + 1 < escaped.size() && escaped[i + 1] == 'u' ? 6 : 2;
    else if (c >= 0xF0)
      n = 4;
    else if (c >= 0xE0)
      n = 3;
    else if (c >= 0xC0)
      n = 2;
    tokens.push_back(escaped.substr(i, n));
    i += n;
  }
  return tokens;
}

// `pieces` laid into lines of at most kPythonColumns: a line holds its pieces joined by `between`
// and `overhead` columns more (its indent, quotes, brackets); a piece too long for any line stands alone.
std::vector<std::string> packed_lines(const std::vector<std::string>& pieces, std::size_t overhead,
                                      const std::string& between) {
  std::vector<std::string> lines(1);
  for (const auto& piece : pieces) {
    if (!lines.back().empty() && overhead + lines.back().size() + between.size() + piece.size() > kPythonColumns)
      lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : between) + piece;
  }
  return lines;
}

// NAME = json.loads("TEXT") on one line, or where that passes kPythonColumns, the string cut into
// adjacent literals of a hanging indent (Python joins them).
std::string python_json_loads(const std::string& name, const std::string& text) {
  const std::string quoted = nlohmann::json(text).dump();
  const std::string one = fmt::format("{} = json.loads({})", name, quoted);
  if (one.size() <= kPythonColumns) return one + "\n";
  const auto lines = packed_lines(escaped_tokens(quoted.substr(1, quoted.size() - 2)), 8, "");
  return fmt::format("{} = json.loads(\n    \"{}\")\n", name, fmt::join(lines, "\"\n    \""));
}

// TUNED of a problem's module: each result exported, with its device, shape and winner.
nlohmann::ordered_json tuned_records(const ExportedProblem& p) {
  nlohmann::ordered_json tuned = nlohmann::ordered_json::array();
  for (const auto& r : p.results) {
    const VariantRecord* w = r.run.winner ? r.run.find(*r.run.winner) : nullptr;
    nlohmann::ordered_json shape = nlohmann::ordered_json::object();
    for (const auto& [k, v] : r.run.shape.dims()) shape[k] = v;
    for (const auto& [k, v] : r.run.shape.dtypes()) shape[k] = std::string(dtype_name(v));
    tuned.push_back({{"device", r.run.device ? r.run.device->name : ""},
                     {"arch", r.run.device ? r.run.device->compute_capability() : 0},
                     {"shape", shape},
                     {"variant", w ? w->name : ""},
                     {"median_us", w && w->timing ? w->timing->median_us : 0.0},
                     {"synthetic", !measured_on_gpu(r.run)},
                     {"file", std::filesystem::path(r.file).filename().string()}});
  }
  return tuned;
}

// ModelNew.__init__'s reading of GIVEN: each by keyword, else the module's attribute of that name.
std::string given_init() {
  return R"PY(        unknown = sorted(set(given) - set(GIVEN))
        if unknown:
            raise TypeError(f"ModelNew({PROBLEM}) takes {', '.join(GIVEN)} by keyword, not {', '.join(unknown)}")
        values = {k: given[k] if k in given else getattr(model, k, None) for k in GIVEN}
        missing = [k for k in GIVEN if values[k] is None]
        if missing:
            raise ValueError(f"ModelNew({PROBLEM}): no parameter or input tells {', '.join(missing)}; give it, as in "
                             f"ModelNew(model, {missing[0]}=...), or set the module's attribute of that name")
        self._given = [_dtype_code(values[k]) if k in DTYPE_VARIABLES else int(values[k]) for k in GIVEN]
)PY";
}

// The Python expression, in ModelNew.forward, of the output's dtype as problem.json declares it (the
// tuned op's): a dtype, or a dtype variable's value, from the tensor the op reads it from or GIVEN.
std::string output_dtype_expression(const ExportedProblem& p) {
  for (const auto& v : p.dtype_vars) {
    if (v.name != p.output.dtype) continue;
    if (v.tensor >= p.tensors.size()) {
      const auto at = std::find(p.given.begin(), p.given.end(), v.name) - p.given.begin();
      return fmt::format("_dtype(self._given[{}])", at);
    }
    if (v.tensor < p.parameter_count) return fmt::format("self._parameters_in_order[{}].dtype", v.tensor);
    return fmt::format("inputs[{}].dtype", v.tensor - p.parameter_count);
  }
  return "torch." + p.output.dtype;
}

// The module's helpers after its constants: the dtypes by tune's numbers, and variant().
std::string helpers_code(const ExportedProblem& p) {
  return fmt::format(R"PY(def _dtype_code(value):
    """tune's number of a dtype given by name ("bfloat16") or as a torch.dtype."""
    name = value if isinstance(value, str) else str(value).replace("torch.", "")
    if name not in DTYPE_CODES:
        raise ValueError(f"{{value!r}} is not a dtype (one of {{', '.join(DTYPE_CODES)}})")
    return DTYPE_CODES[name]


def _dtype(code):
    """The torch.dtype of tune's number `code`."""
    return getattr(torch, next(name for name, c in DTYPE_CODES.items() if c == code))


def variant(device, dims):
    """The tuned variant the op runs on `device` (a torch.device or index) for `dims` ({{dim: size}}, and
    {{dtype variable: dtype name or torch.dtype}} for each of DTYPE_VARIABLES), or ''."""
    props = torch.cuda.get_device_properties(device)
    # Shared memory per block opt-in where this torch reports it; 0: the arch's.
    return load().{ns}_variant(
        props.name, props.major * 10 + props.minor, props.multi_processor_count,
        int(getattr(props, "shared_memory_per_block_optin", 0)),
        [int(dims[d]) for d in DIMS] + [_dtype_code(dims[v]) for v in DTYPE_VARIABLES])


)PY",
                     fmt::arg("ns", p.ns));
}

// ModelNew, which calls the op, and the module where no tuned entry covers the call.
std::string model_code(const ExportedProblem& p) {
  return fmt::format(R"PY(class ModelNew(torch.nn.Module):
    def __init__(self, model{given_param}):
        super().__init__()
        self.model = model
        named = dict(model.named_parameters())
        named.update(dict(model.named_buffers()))
        missing = [n for n in PARAMETERS if n not in named]
        if missing:
            raise ValueError(f"ModelNew({{PROBLEM}}): the module has no {{missing}}; "
                             "pass an instance of the problem's Model")
        self._parameters_in_order = [named[n] for n in PARAMETERS]
{given_init}        self._warned = set()
        self.last_call_tuned = False

    def forward(self, *inputs):
        if len(inputs) != len(INPUTS):
            raise TypeError(f"ModelNew({{PROBLEM}}) takes {{len(INPUTS)}} inputs ({{', '.join(INPUTS)}}), "
                            f"not {{len(inputs)}}")
        out = load().{ns}(list(self._parameters_in_order) + list(inputs){given_arg})
        self.last_call_tuned = out is not None
        if out is None:
            key = (str(inputs[0].device), tuple(tuple(x.shape) for x in inputs))
            if key not in self._warned:
                self._warned.add(key)
                name = torch.cuda.get_device_name(inputs[0].device) if inputs[0].is_cuda else str(inputs[0].device)
                warnings.warn(f"tune: no tuned {{PROBLEM}} kernel for {{name}} at input shapes {{key[1]}}; running "
                              "the reference module (tune that shape, re-export)", RuntimeWarning, stacklevel=2)
            # In the output's declared dtype, as the tuned op returns it: the module may compute in
            # another (a float16 output of a module that returns float32).
            return self.model(*inputs).to({out_dtype})
        return out
)PY",
                     fmt::arg("ns", p.ns), fmt::arg("given_param", p.given.empty() ? "" : ", /, **given"),
                     fmt::arg("given_init", p.given.empty() ? "" : given_init()),
                     fmt::arg("given_arg", p.given.empty() ? "" : ", self._given"),
                     fmt::arg("out_dtype", output_dtype_expression(p)));
}

}  // namespace

std::vector<std::string> python_strings(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(nlohmann::json(s).dump());
  return quoted;
}

std::string python_assignment(const std::string& name, const std::vector<std::string>& literals, const char* brackets) {
  const std::string one = fmt::format("{} = {}{}{}", name, brackets[0], fmt::join(literals, ", "), brackets[1]);
  if (one.size() <= kPythonColumns) return one + "\n";
  std::vector<std::string> items;
  for (const auto& l : literals) items.push_back(l + ",");
  return fmt::format("{} = {}\n    {}\n{}\n", name, brackets[0], fmt::join(packed_lines(items, 4, " "), "\n    "),
                     brackets[1]);
}

std::string problem_module(const ExportedProblem& p) {
  std::vector<std::string> params, inputs, dtype_var_names, dtype_codes;
  for (const auto& v : p.dtype_vars) dtype_var_names.push_back(v.name);
  for (const DType t : all_dtypes())
    dtype_codes.push_back(fmt::format("{}: {}", nlohmann::json(dtype_name(t)).dump(), static_cast<int>(t)));
  for (std::size_t i = 0; i < p.tensors.size(); ++i) (i < p.parameter_count ? params : inputs).push_back(p.tensors[i].name);
  const nlohmann::ordered_json tuned = tuned_records(p);
  return fmt::format(R"PY('''Problem {name} with tune's tuned kernels
(generated by `tune export torch`, tune {version}).

ModelNew(model) runs the problem's PyTorch module `model` (an instance of its Model, on a CUDA
device, its tensors in the dtypes problem.json gives them) with the tuned kernel of the device, shape
and dtypes when the export has one (a tensor of another dtype: a clear error), and the
module itself otherwise (a warning, once per device and shape, says so; its output in the dtype
problem.json declares). It uses the module's parameters, not copies: load weights into `model`, then
call ModelNew. Inference only: the op has no backward.
'''
import json
import warnings

import torch

from . import load

PROBLEM = {name_json}
{dims}# The dtype variables (a dtype the op reads from the tensors), and tune's number of each dtype.
{dtype_vars}{dtype_codes}# The op's arguments: the module's parameters (state_dict names), then the forward's inputs.
{params}{inputs}{given_constant}# The results exported: device, arch, shape, winner and its cold median as tune measured it.
{tuned}

)PY",
                     fmt::arg("name", p.name), fmt::arg("version", tool_version()),
                     fmt::arg("name_json", nlohmann::json(p.name).dump()),
                     fmt::arg("dims", python_assignment("DIMS", python_strings(p.dims))),
                     fmt::arg("params", python_assignment("PARAMETERS", python_strings(params))),
                     fmt::arg("inputs", python_assignment("INPUTS", python_strings(inputs))),
                     fmt::arg("tuned", python_json_loads("TUNED", tuned.dump())),
                     fmt::arg("dtype_vars", python_assignment("DTYPE_VARIABLES", python_strings(dtype_var_names))),
                     fmt::arg("dtype_codes", python_assignment("DTYPE_CODES", dtype_codes, "{}")),
                     fmt::arg("given_constant", p.given.empty()
                                                    ? std::string()
                                                    : "# What no parameter or input tells: ModelNew(model, NAME=...) gives "
                                                      "each, else the module's\n# attribute of that name.\n" +
                                                          python_assignment("GIVEN", python_strings(p.given)))) +
         helpers_code(p) + model_code(p);
}

std::string init_module(const std::vector<ExportedProblem>& problems, const std::string& package) {
  std::vector<std::string> modules;
  for (const auto& p : problems) modules.push_back(p.ns);
  std::vector<std::string> all{"load"};  // what the package exports: its modules are used, not unused imports
  all.insert(all.end(), modules.begin(), modules.end());
  return fmt::format(R"PY('''Tuned kernels exported by tune (`tune export torch`, tune {version}): one op per problem in
torch.ops.{package}, and a ModelNew per problem ({modules}).

load() loads the extension built by `pip install .` (setup.py), else builds it once with
torch.utils.cpp_extension.load (the host compiler and the CUDA runtime; the kernels are the embedded
CUBINs tune gated; cached by PyTorch) and returns torch.ops.{package}.
'''
import glob
import os

import torch

from . import _build

_HERE = os.path.dirname(os.path.abspath(__file__))
_ops = None


def load(verbose=False):
    global _ops
    if _ops is None:
        built = sorted(glob.glob(os.path.join(_HERE, "_C*.so")))
        if built:
            torch.ops.load_library(built[0])
        else:
            from torch.utils.cpp_extension import load as build
            build(name="{package}_C", sources=[os.path.join(_HERE, s) for s in _build.SOURCES],
                  extra_cflags=_build.CXX_FLAGS, with_cuda=True, is_python_module=False,
                  verbose=verbose)
        _ops = getattr(torch.ops, "{package}")
    return _ops


from . import {imports}  # noqa: E402
{all})PY",
                     fmt::arg("version", tool_version()), fmt::arg("package", package),
                     fmt::arg("modules", fmt::join(modules, ", ")), fmt::arg("imports", fmt::join(modules, ", ")),
                     fmt::arg("all", python_assignment("__all__", python_strings(all))));
}

}  // namespace tune::torch_export
