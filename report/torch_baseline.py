#!/usr/bin/env python3
"""Times what a user would run instead of tune: each problem's PyTorch module (make_model of its
folder's reference.py), eager and torch.compile, at the shapes of a results folder, on this
machine's GPU. Run it in the same device session as the tunes it is compared with; `tune report`
reads what it writes.

    python3 report/torch_baseline.py RESULTS_DIR -o FILE.json [--problem-path DIR]... [--gpu SLUG]
    python3 report/torch_baseline.py RESULTS_DIR -o FILE.json --list     (the shapes; needs no torch)
    python3 report/torch_baseline.py RESULTS_DIR -o FILE.json --export PKG_DIR [--tf32]
    python3 report/torch_baseline.py RESULTS_DIR -o FILE.json --dtype bfloat16
    python3 report/torch_baseline.py --probe REFERENCE      (tune --torch: torch's version, make_model?)
    python3 report/torch_baseline.py --one DIR              (tune --torch: one shape on tune's inputs)

tune --torch (docs/cli.md) times one shape through --one: DIR/request.json names the problem folder,
the shape, the modes, the device and the method's settings, the problem as tune reads it at the
shape ("problem_show": `tune problem show --json`'s object), and each parameter and input as a .npy
file of tune's own timing draw (its generator, the run's --seed, the edits of purpose "always"), so
the module runs on the very inputs the variants were timed on; the result goes to DIR/result.json
(run_one). Both go through time_module, the same code as the rest of this script.

Dtypes (issue 35): each tensor in the dtype problem.json gives it, a dtype variable bound to the
shape's value (a results file's "shape" holds it: {"B": 2, ..., "T": "bfloat16"}), else to its
default. --dtype NAME binds every dtype variable to NAME instead (a problem without dtype variables:
its floating tensors take NAME). The module runs as a user runs it in that dtype: make_model, the
parameters loaded, then `.to(dtype)` (the output's dtype, else the floating inputs'); floating
inputs are cast to their dtypes, integer and bool inputs keep theirs. Its parity against the module
in float64 (the parameters and inputs as the dtype holds them) is recorded as "module_parity".

With --export (a project written by `tune export torch`), ModelNew of each problem the package
holds runs beside Model eager and torch.compile in this one process, on the same inputs: its
parity against the module (float32, the same TF32 setting) and against the module in float64,
and its times by the same two methods. ModelNew falls back to the module where the package has
no tuned kernel for the device and shape; the entry says which ran ("tuned").

The folder of problem P is the first DIR/P/problem.json of --problem-path (repeatable, or a colon
list), then of $TUNE_PROBLEM_PATH (colon list), then this repository's configs/P/. The module is
make_model(shape) of its reference module, loaded with the parameters and fed the inputs tune draws
for timing at seed 0 (`tune problem draw --purpose timing`: the edits of purpose "always" applied,
the parity-only ones not; --one takes those of the run's --seed). tune reads the problem folder
(`tune problem show --json`: the tensors, their dtypes and shapes, the tolerances); nothing here
reads problem.json.

Methods (per call, median of the samples):
  events  L2 flushed (a buffer of twice the L2 size zeroed) before each call, CUDA events around
          that one call: the same method as tune's cold median, host launch overhead included.
  graph   --graph-calls calls captured in one CUDA graph and replayed, per call (no flush between
          them): compare with tune's graph time.

Output (schema_version 1):
  {"kind": "tune.torch_baseline", "schema_version": 1,
   "device": {"name", "slug" (as tune names results/<slug>/), "compute_capability", "l2_cache_bytes"},
   "context": {"torch_version", "cuda_version", "created_at", "host", "command_line",
               "references": {problem: its reference module's path}, "allow_tf32_matmul", "allow_tf32_cudnn",
               "export": the --export folder or null},
   "method": {"events": ..., "graph": ..., "samples", "max_seconds", "graph_calls", "flush_bytes"},
   "device_peaks": {"copy_gb_per_s": device-to-device copy of 1 GiB, bytes read + written, "method"},
   "entries": [{"problem", "shape": {dim: value, dtype variable: dtype name},
                "dtypes": {tensor: dtype}, "module_dtype": the module's dtype,
                "module_parity": {"dtype", "max_abs_vs_float64", "error"},
                "eager" | "compile": {"events": TIMES | null, "graph": TIMES | null, "error": str | null,
                                      "compile_seconds" (compile only)},
                "modelnew" (with --export): {"events", "graph", "error", "tuned": bool, "variant": str,
                    "parity": {"max_abs_vs_module", "max_abs_vs_float64", "module_max_abs_vs_float64",
                               "dtype": the output's, "module_rule": {"k", "atol", "passed"} (low-precision
                               outputs: max_abs_vs_float64 <= k * module_max_abs_vs_float64 + atol),
                               "tolerance": {"atol", "rtol"}, "module_within_tolerance": the module
                               against float64, "passed": |new - ref| <= atol + rtol |ref| against float64, and
                               against the float32 module where module_within_tolerance; a low-precision
                               output's: those of the problem's tolerance.rule, as tune's parity},
                    "tune_cold_median_us": the winner's cold median in the results file (the raw kernel),
                    "op_overhead_us": events median - tune_cold_median_us (dispatch, checks, allocation)}}]}
  TIMES = {"samples", "median_us", "q1_us", "q3_us", "min_us", "mean_us"}
Exit codes: 0 done, 2 bad input, 3 no PyTorch or no CUDA device (one line says which).
"""
import argparse
import copy
import datetime
import json
import os
import pathlib
import socket
import sys

import results
from results import device_slug, dtypes
import tune_problem as tp  # tuner/python/, on sys.path through results
from torch_timing import copy_bandwidth, first_line, flush_buffer, method_record, time_events, time_graph, time_modes

HERE = pathlib.Path(__file__).resolve().parent
BUILTIN_PROBLEMS = HERE.parent / "configs"


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class NotAModule(Failure):
    """The reference defines no make_model: there is no PyTorch module to time."""


def results_in(root, gpu=None):
    """{(problem, shape JSON): the run} of the tune results under root, once each (the first file): the
    shape with its dtype defaults (tune results --json's), so that a file older than T and a newer one
    of the same shape are one shape, timed once."""
    seen = {}
    try:
        records = results.load_results([root])  # <shape>.json or .json.gz, validated by tune
    except results.InputError as e:
        raise Failure(2, str(e))
    for rec in records:
        run = rec["run"]
        if gpu and pathlib.Path(rec["file"]).parts[-3] != gpu:
            continue
        seen.setdefault((run["problem"], json.dumps(rec["shape"], sort_keys=True)), run)
    return seen


def shapes_in(root, gpu=None):
    """(problem, shape) pairs of the tune results under root, in a stable order, once each."""
    return [(p, run["shape"]) for (p, _), run in sorted(results_in(root, gpu).items())]


def winner_median(run):
    """The cold median of the run's winner (what the tuned kernel costs alone), or None."""
    name = (run.get("summary") or {}).get("winner")
    for v in run.get("variants", []):
        if v.get("name") == name and isinstance(v.get("timing"), dict):
            return v["timing"].get("median_us")
    return None


def load_export(folder):
    """The package of a `tune export torch` folder, imported (its extension loads on first use)."""
    folder = pathlib.Path(folder)
    inits = sorted(folder.glob("*/_build.py"))
    if not inits:
        raise Failure(2, f"{folder}: not a folder written by tune export torch (no <package>/_build.py)")
    package = inits[0].parent.name
    sys.path.insert(0, str(folder))
    import importlib
    try:
        return importlib.import_module(package)
    except Exception as e:
        raise Failure(2, f"{folder}: the package {package} does not import ({first_line(e)})")


def shape_text(shape):
    """B4 N64 C64 H32: the dimensions, without the private keys (_tune_median_us) riding along."""
    return " ".join(f"{k}{v}" if not isinstance(v, str) else f"{k}={v}" for k, v in shape.items()
                    if not k.startswith("_"))


def search_path(problem_paths):
    """--problem-path folders (each may be a colon list), then $TUNE_PROBLEM_PATH, then configs/."""
    dirs = [d for p in problem_paths for d in p.split(":") if d]
    dirs += [d for d in os.environ.get("TUNE_PROBLEM_PATH", "").split(":") if d]
    return [pathlib.Path(d) for d in dirs] + [BUILTIN_PROBLEMS]


class Problem:
    """A problem folder found by name on the search path, read by tune (`tune problem show` at `shape`,
    or `facts`, its object, as tune --torch's request holds it), and its reference module."""

    def __init__(self, name, dirs, shape, folder=None, facts=None):
        folder = folder or next((d / name for d in dirs if (d / name / "problem.json").is_file()), None)
        if folder is None:
            raise Failure(2, f"problem {name}: no {name}/problem.json in {', '.join(map(str, dirs))} "
                             "(pass --problem-path)")
        self.folder, self.reference = pathlib.Path(folder), pathlib.Path(folder) / "reference.py"
        try:
            self.given = facts
            facts = facts or tp.show(folder, shape)
            self.dtype_variables = list(facts["dtypes"])
            self.reference = pathlib.Path(facts["reference"] or self.reference)
            self.module = tp.load_module(self.reference, f"tune_reference_{name}")
        except tp.ProblemError as e:
            raise Failure(2, f"problem {name}: {e}")
        except Exception as e:  # the reference module itself failed to import
            raise Failure(2, f"problem {name}: {self.reference}: {first_line(e)}")
        if not callable(getattr(self.module, "make_model", None)):
            raise NotAModule(2, f"problem {name}: {self.reference} defines no make_model(shape)")

    def facts(self, shape, override=None):
        """`tune problem show` at `shape`, every dtype variable bound to `override` (--dtype) where given;
        the facts given (--one: tune's, for its one shape) where there are."""
        if self.given and not override:
            return self.given
        return tp.show(self.folder, {**shape, **{v: override for v in self.dtype_variables}} if override else shape)


def dims_of(shape):
    """The dimensions of a shape: its integer values (a dtype variable's value is a dtype name)."""
    return {k: v for k, v in shape.items() if not k.startswith("_") and not isinstance(v, str)}


def dtype_plan(facts, override=None):
    """({dtype variable: dtype}, {tensor: dtype}, the module's dtype) of the problem at a shape as tune
    reads it (Problem.facts: the variables already bound to override). override (--dtype) on a problem
    without dtype variables replaces every floating tensor's dtype. The module's dtype: the output's
    when floating, else the first floating input's or parameter's, else float32."""
    bound = {v: facts["shape"][v] for v in facts["dtypes"]}
    of = {t["name"]: t["dtype"] for t in facts["tensors"]}
    if override and not bound:
        dtypes.parse(override)
        of = {n: override if dtypes.is_floating(d) else d for n, d in of.items()}
    order = [t["name"] for t in tp.roles(facts, "output")]
    order += [t["name"] for t in facts["tensors"] if t["role"] in ("input", "parameter")]
    module = next((of[n] for n in order if dtypes.is_floating(of[n])), dtypes.DEFAULT)
    return bound, of, module


def with_dtype(shapes, name):
    """The shapes timed with --dtype NAME: one per problem and dimensions (the dtype variables all take
    NAME), the tune run in NAME first where there is one; the winner's time only from a run in NAME."""
    out = {}
    for p, shape in shapes:
        key = (p, json.dumps(dims_of(shape)))
        bound = [v for k, v in shape.items() if isinstance(v, str)]
        matches = bool(bound) and all(v == name for v in bound)
        if key not in out or (matches and not out[key][1]):
            out[key] = ((p, dict(shape, _tune_median_us=shape["_tune_median_us"] if matches else None)), matches)
    return [v[0] for _, v in sorted(out.items())]


def as_dtype(torch, array, name):
    """A drawn float32 array as a tensor of dtype `name` (rounded to nearest even for bf16/fp16)."""
    return torch.from_numpy(array).to(dtypes.torch_dtype(torch, name))


def build(torch, problem, shape, override=None, data=None):
    """The module in its dtype with the problem's parameters loaded (on the CPU), its inputs in
    order on the GPU in their dtypes, the dtype plan (dtype_plan) and tune's facts at the shape.
    data: {tensor: array} to feed it (tune's draw of the run's seed, --one); else tune's timing draw
    at seed 0."""
    dims = dims_of(shape)
    try:
        facts = problem.facts(shape, override)
        plan = dtype_plan(facts, override)
        _, of, module_dtype = plan
        if data is None:
            data = tp.draw(problem.folder, facts["shape"], 0, purpose="timing")
        module = problem.module.make_model(dict(dims))
        # Rounded to the parameter's dtype here; load_state_dict copies them into the float32 module.
        params = {t["name"]: as_dtype(torch, data[t["name"]], of[t["name"]]) for t in tp.roles(facts, "parameter")}
        module.load_state_dict(params, strict=True)
        module = module.to(dtypes.torch_dtype(torch, module_dtype))
        inputs = tuple(as_dtype(torch, data[t["name"]], of[t["name"]]).cuda() for t in tp.roles(facts, "input"))
    except Exception as e:  # a problem file or reference module at odds with itself
        raise Failure(2, f"{problem.folder} {shape_text(shape)}: {first_line(e)}")
    return module, inputs, plan, facts


def float64_module(torch, module, inputs):
    """The module and inputs in float64 (parameters and inputs as their dtypes hold them: exact), the
    reference the dtype's runs are measured against; integer and bool inputs keep their dtypes."""
    return copy.deepcopy(module).double(), tuple(x.double() if x.is_floating_point() else x for x in inputs)


def as_declared(torch, out, dtype):
    """The module's floating output stored in the output's declared dtype, as tune's reference runner
    stores it: a module that returns float32 where the kernel writes float16 is judged with the
    rounding the kernel cannot avoid (a float32 module's error made the module rule fail a ModelNew
    that tune's parity passed)."""
    return out.to(dtypes.torch_dtype(torch, dtype)) if out.is_floating_point() else out


def module_parity(torch, module, inputs, module_dtype):
    """Max |module in its dtype - module in float64| over the output, or the error that stopped it."""
    rec = {"dtype": module_dtype, "max_abs_vs_float64": None, "error": None}
    try:
        ref_module, ref_inputs = float64_module(torch, module, inputs)
        out = as_declared(torch, module(*inputs), module_dtype).double()
        rec["max_abs_vs_float64"] = (out - ref_module(*ref_inputs)).abs().max().item()
    except Exception as e:
        rec["error"] = first_line(e)
    return rec


def time_module(torch, problem, shape, modes, a, flush, data=None, override=None, log=lambda mode, rec: None,
                hold=None):
    """The module of `problem` (a Problem) at `shape` (dims and dtype variables) in its dtypes, timed
    by time_modes: (module, inputs, dtype plan, tune's facts, {mode: record}). data: tune's inputs
    ({tensor: array}) or None (tune's timing draw at seed 0); override: --dtype."""
    torch.manual_seed(0)
    module, inputs, plan, facts = build(torch, problem, shape, override, data)
    module = module.cuda().eval()
    with torch.no_grad():
        return module, inputs, plan, facts, time_modes(torch, module, inputs, modes, a, flush, log, hold)


def measure(problems, torch, problem, shape, a, flush, log, export=None):
    module, inputs, (bound, of, module_dtype), facts, times = time_module(
        torch, problems[problem], shape, ("eager", "compile"), a, flush, override=a.dtype,
        log=lambda mode, rec: log_times(log, problem, shape, mode, rec))
    # The results file's shape as it is (an older file without a dtype variable is its default, and
    # `tune report` matches entries by that shape); with --dtype, the variables as bound.
    entry = {"problem": problem, "shape": {**{k: v for k, v in shape.items() if not k.startswith("_")},
                                           **(bound if a.dtype else {})},
             "dtypes": of, "module_dtype": module_dtype}
    with torch.no_grad():
        entry["module_parity"] = module_parity(torch, module, inputs, module_dtype)
        entry.update(times)
        if export is not None and hasattr(export, problem):
            entry["modelnew"] = measure_modelnew(torch, getattr(export, problem), module, inputs, facts,
                                                 entry["shape"], a, flush, of)
            log_times(log, problem, shape, "ModelNew" + ("" if entry["modelnew"].get("tuned") else " (the module ran)"),
                      entry["modelnew"])
    return entry


def log_times(log, problem, shape, mode, rec):
    ev = rec["events"]["median_us"] if rec.get("events") else None
    gr = rec["graph"]["median_us"] if rec.get("graph") else None
    log(f"{problem} {shape_text(shape)} {mode}: events {ev and round(ev, 2)} µs, graph {gr and round(gr, 2)} µs"
        + (f" ({rec['error']})" if rec.get("error") else ""))


def tolerance_of(facts, dtype=dtypes.DEFAULT):
    """(atol, rtol) for an output of `dtype`, as tune's parity takes them (tune problem show's facts)."""
    t = facts["tolerance"][dtype]
    return t["atol"], t["rtol"]


def module_rule_of(facts, dtype):
    """(k, atol) of the module rule for an output of `dtype` (tolerance.module; tune problem show)."""
    t = facts["tolerance"][dtype]
    return t["module_k"], t["module_atol"]


def low_precision_passed(elementwise, module_rule, rule):
    """A low-precision output's verdict as tune's parity gives it under tolerance.rule: "both" (each
    rule holds), "tolerance" (the elementwise one decides) or "module" (the module rule decides)."""
    return {"both": elementwise and module_rule, "tolerance": elementwise, "module": module_rule}[rule]


def within(out, ref, atol, rtol):
    return bool(((out - ref).abs() <= atol + rtol * ref.abs()).all().item())


def modelnew_parity(torch, out, module, inputs, facts, out_dtype):
    """ModelNew's output against the module (in its dtype) and the module in float64: the elementwise
    tolerance of the output's dtype and, for a low-precision output, the module rule."""
    ref = as_declared(torch, module(*inputs), out_dtype).double()
    ref_module, ref_inputs = float64_module(torch, module, inputs)
    ref64 = ref_module(*ref_inputs)
    atol, rtol = tolerance_of(facts, out_dtype)
    out64 = out.double()
    new_err, module_err = (out64 - ref64).abs().max().item(), (ref - ref64).abs().max().item()
    rec = {"max_abs_vs_module": (out64 - ref).abs().max().item(), "max_abs_vs_float64": new_err,
           "module_max_abs_vs_float64": module_err, "dtype": out_dtype,
           "tolerance": {"atol": atol, "rtol": rtol},
           "module_within_tolerance": within(ref, ref64, atol, rtol),
           # Against the float64 module always; against the module in its dtype only where that module
           # is itself within tolerance of float64 (with --tf32 it is not: its TF32 matmuls miss float64
           # by up to 1e-3 on these problems).
           "passed": within(out64, ref64, atol, rtol)
           and (within(out64, ref, atol, rtol) or not within(ref, ref64, atol, rtol))}
    if dtypes.is_low_precision(out_dtype):
        k, katol = module_rule_of(facts, out_dtype)
        rec["module_rule"] = {"k": k, "atol": katol, "passed": new_err <= k * module_err + katol}
        # Low precision: the elementwise tolerance against float64 and the module rule, as the
        # problem's tolerance.rule combines them (it was "both" whatever the problem said).
        rec["passed"] = low_precision_passed(within(out64, ref64, atol, rtol), rec["module_rule"]["passed"],
                                             facts["tolerance"][out_dtype].get("rule", "both"))
    return rec


def measure_modelnew(torch, package_module, module, inputs, facts, shape, a, flush, of=None):
    """ModelNew beside the module: which ran, parity (the module in its dtype, in float64) and times."""
    rec = {"events": None, "graph": None, "error": None, "tuned": False, "variant": "",
           "parity": None, "tune_cold_median_us": shape.get("_tune_median_us")}
    try:
        dims = {k: v for k, v in shape.items() if not k.startswith("_")}
        # What no parameter or input tells (the package's GIVEN), from the shape timed.
        new = package_module.ModelNew(module, **{k: dims[k] for k in getattr(package_module, "GIVEN", [])})
        rec["variant"] = package_module.variant(inputs[0].device, dims)
        out = new(*inputs)
        rec["tuned"] = bool(new.last_call_tuned)
        outputs = [t["name"] for t in tp.roles(facts, "output")]
        out_dtype = (of or {}).get(outputs[0], dtypes.DEFAULT) if outputs else dtypes.DEFAULT
        rec["parity"] = modelnew_parity(torch, out, module, inputs, facts, out_dtype)

        def call():
            return new(*inputs)
        rec["events"] = time_events(torch, call, flush, a.samples, a.max_seconds)
        try:
            rec["graph"] = time_graph(torch, call, a.graph_calls, a.samples, a.max_seconds)
        except Exception as e:
            rec["error"] = "graph: " + first_line(e)
        if rec["tuned"] and rec["tune_cold_median_us"]:
            rec["op_overhead_us"] = rec["events"]["median_us"] - rec["tune_cold_median_us"]
    except Exception as e:
        rec["error"] = first_line(e)
    torch.cuda.synchronize()
    return rec


# --- tune's own use (tune --torch, docs/cli.md): one problem at one shape on tune's inputs --------

def defines_make_model(reference):
    """Whether the reference's top level defines or imports make_model (read, not run: no torch import)."""
    import ast
    try:
        tree = ast.parse(pathlib.Path(reference).read_text())
    except (OSError, SyntaxError, ValueError):
        return True  # the run itself says what is wrong with it
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "make_model":
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "make_model" for t in node.targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (n.asname or n.name) in ("make_model", "*") for n in node.names):
            return True
    return False


def probe(reference):
    """--probe REFERENCE: prints {"torch_version": its version or null, "skip": why there is nothing to
    time, or ""}, quickly: torch's version from its package metadata, make_model from the source."""
    out = {"torch_version": None, "skip": ""}
    try:
        from importlib import metadata
        out["torch_version"] = metadata.version("torch")
    except Exception:
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            out["skip"] = f"PyTorch is not installed for {sys.executable}"
        else:  # a build without package metadata: its version is read when --one imports it
            out["torch_version"] = "unknown (no package metadata)"
    if not out["skip"] and not defines_make_model(reference):
        out["skip"] = f"{reference} defines no make_model(shape): not a PyTorch module"
    print(json.dumps(out))
    return 0


def run_one(folder):
    """--one DIR: times the module of DIR/request.json (written by tune: problem folder, shape, modes,
    device, tf32, the method's settings, problem_show and each tensor as .npy, tune's timing draw) and writes
    DIR/result.json: {"status": "measured" | "skipped", "reason", "torch_version", "cuda_version",
    "device", "module_dtype", "dtypes", "tf32", "method", and per mode of "modes" its record
    (time_modes)}. A failure that is no skip ends it with its message on stderr (exit 1 or 2)."""
    folder = pathlib.Path(folder)
    req = json.loads((folder / "request.json").read_text())
    res = {"status": "skipped", "reason": ""}
    import numpy as np
    try:
        import torch
        res.update(torch_version=torch.__version__, cuda_version=torch.version.cuda)
        if not torch.cuda.is_available():
            res["reason"] = "no CUDA device is available to PyTorch"
        else:
            torch.cuda.set_device(int(req.get("device", 0)))
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = bool(req.get("tf32", False))
            problem = Problem(req["problem"], [], req["shape"], folder=pathlib.Path(req["folder"]),
                              facts=req.get("problem_show"))
            data = {t["name"]: np.load(folder / t["file"]) for t in req["tensors"]}
            a = argparse.Namespace(samples=int(req.get("samples", 200)), max_seconds=float(req.get("max_seconds", 2.0)),
                                   graph_calls=int(req.get("graph_calls", 20)))
            l2, flush = flush_buffer(torch)
            _, _, (_, of, module_dtype), _, times = time_module(torch, problem, req["shape"], req["modes"], a, flush,
                                                                data, hold=req.get("hold"))
            if "held_s" in times:
                res["held_s"] = times.pop("held_s")
            res.update(status="measured", device=torch.cuda.get_device_name(), module_dtype=module_dtype, dtypes=of,
                       tf32=torch.backends.cuda.matmul.allow_tf32, method=method_record(a, l2), **times)
    except ImportError as e:
        res["reason"] = f"PyTorch does not import for {sys.executable} ({first_line(e)})"
    except NotAModule as e:
        res["reason"] = f"{e}: not a PyTorch module"
    tmp = folder / "result.json.tmp"
    tmp.write_text(json.dumps(res, indent=1) + "\n")
    os.replace(tmp, folder / "result.json")
    return 0


def parse_args(argv):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("results", help="results folder (<gpu>/<problem>/<shape>.json): the shapes to time")
    ap.add_argument("-o", "--out", required=True, help="baseline JSON to write")
    ap.add_argument("--problem-path", action="append", default=[], metavar="DIR",
                    help="a folder of problem folders (DIR/<problem>/problem.json), searched before "
                         "$TUNE_PROBLEM_PATH and configs/; repeatable, or a colon list")
    ap.add_argument("--gpu", help="only the shapes of results/<GPU slug>/ (default: this GPU's, else all)")
    ap.add_argument("--samples", type=int, default=200, help="samples per measurement (at least 10)")
    ap.add_argument("--max-seconds", type=float, default=2.0, help="wall cap per measurement after 10 samples")
    ap.add_argument("--graph-calls", type=int, default=20, help="calls captured in the replayed CUDA graph")
    ap.add_argument("--tf32", action="store_true",
                    help="allow TF32 in matrix products (PyTorch's default is off; tune's mma variants use TF32)")
    ap.add_argument("--export", metavar="DIR",
                    help="a project written by tune export torch: time its ModelNew beside the module (parity too)")
    ap.add_argument("--dtype", metavar="NAME",
                    help=f"bind every dtype variable to NAME ({dtypes.choices()}; a problem without dtype variables: "
                         "its floating tensors); default: the shape's value, else the variable's default")
    ap.add_argument("--list", action="store_true", help="print the shapes that would be timed and stop")
    return ap.parse_args(argv)


def baseline_doc(torch, a, problems, l2):
    """The baseline file's header (the device, the context, the method, the copy peak), no entries yet."""
    name = torch.cuda.get_device_name(0)
    props = torch.cuda.get_device_properties(0)
    return {"kind": "tune.torch_baseline", "schema_version": 1,
            "device": {"name": name, "slug": device_slug(name), "compute_capability": f"{props.major}.{props.minor}",
                       "l2_cache_bytes": l2},
            "context": {"torch_version": torch.__version__, "cuda_version": torch.version.cuda,
                        "created_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "host": socket.gethostname(), "command_line": " ".join(sys.argv),
                        "references": {name: str(p.reference) for name, p in problems.items()},
                        "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                        "allow_tf32_cudnn": torch.backends.cudnn.allow_tf32, "export": a.export},
            "method": method_record(a, l2),
            "device_peaks": {"copy_gb_per_s": copy_bandwidth(torch),
                             "method": "device-to-device copy of 1 GiB (bytes read + written), CUDA events, median "
                                       "of 20"},
            "entries": []}


def import_cuda_torch():
    """torch, with a CUDA device; Failure 3 in one line when either is missing."""
    try:
        import torch
    except ImportError:
        raise Failure(3, f"PyTorch is not installed for {sys.executable}; run this on the GPU machine")
    if not torch.cuda.is_available():
        raise Failure(3, "no CUDA device is available to PyTorch; run this on the GPU machine")
    return torch


def run_baseline(a):
    """Times every shape of a.results (see the module's docstring) into a.out, written after each."""
    if a.dtype is not None:
        try:
            dtypes.parse(a.dtype)
        except ValueError as e:
            raise Failure(2, f"--dtype: {e}")
    if not pathlib.Path(a.results).is_dir():
        raise Failure(2, f"{a.results}: not a folder (give the results folder, e.g. results/)")
    if a.list:
        for problem, shape in shapes_in(a.results, a.gpu):
            print(f"{problem} {shape_text(shape)}")
        return
    torch = import_cuda_torch()
    if a.tf32:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    slug = device_slug(torch.cuda.get_device_name(0))
    gpu = a.gpu or (slug if (pathlib.Path(a.results) / slug).is_dir() else None)
    runs = results_in(a.results, gpu)
    shapes = [(p, dict(run["shape"], _tune_median_us=winner_median(run))) for (p, _), run in sorted(runs.items())]
    if a.dtype:
        shapes = with_dtype(shapes, a.dtype)
    if not shapes:
        raise Failure(2, f"{a.results}: no tune results" + (f" for {gpu}" if gpu else ""))
    dirs = search_path(a.problem_path)
    first = {p: shape for p, shape in reversed(shapes)}  # each problem read at its first shape
    problems = {name: Problem(name, dirs, first[name]) for name in sorted(first)}
    l2, flush = flush_buffer(torch)
    doc = baseline_doc(torch, a, problems, l2)
    export = load_export(a.export) if a.export else None
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for problem, shape in shapes:
        doc["entries"].append(measure(problems, torch, problem, shape, a, flush,
                                      lambda line: print(line, flush=True), export))
        tmp = out.with_suffix(".tmp")  # written after every shape: an interrupted run keeps what it measured
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if len(argv) == 2 and argv[0] in ("--probe", "--one"):
            return probe(argv[1]) if argv[0] == "--probe" else run_one(argv[1])
        run_baseline(parse_args(argv))
    except Failure as e:
        print(f"torch_baseline: {e}", file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
