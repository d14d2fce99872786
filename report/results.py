"""Reading tune result files for the report scripts: the same validation tune's own readers run
(tuner/src/io/validate.cpp), rule for rule, so a hand-edited file is refused the same way by
`tune header`, `tune merge`, `tune check` and `tune report` (issue 22, item 11).
tests/report/readers_test.py holds the two to the same verdicts on a table of hand-edits.

An error is one line: "<file>: <JSON path>: <what is wrong>; <what to do>" (InputError).
"""
import json
import math
import os
import pathlib
import sys
import zlib

# tuner/python/dtypes.py (a checkout) or share/tune/python/ (installed): the one Python dtype table.
for _d in (pathlib.Path(__file__).resolve().parent.parent / "tuner" / "python",
           pathlib.Path(__file__).resolve().parent.parent / "python"):
    if (_d / "dtypes.py").is_file() and str(_d) not in sys.path:
        sys.path.insert(0, str(_d))
import dtypes  # noqa: E402

RESTORE = "restore what tune wrote, or re-tune"
SCHEMA_VERSION = 1
# The widest tie band of tune's winner rule (pick_winner).
TIE_BAND_CAP = 0.05
STATUSES = ("pending", "compiled", "passed", "incorrect", "compile_failed", "launch_failed", "crashed", "timeout",
            "skipped", "unsafe")
INT_MAX, INT64_MAX, UINT32_MAX, UINT64_MAX = 2**31 - 1, 2**63 - 1, 2**32 - 1, 2**64 - 1
PROBLEM_FILE_MARK = " (problem)"
CONFIGS = pathlib.Path(__file__).resolve().parent.parent / "configs"


class InputError(Exception):
    pass


class _Bad(Exception):
    def __init__(self, at, what, remedy=RESTORE):
        super().__init__(f"{at}: {what}; {remedy}")


def _brief(v):
    s = json.dumps(v)
    return s[:57] + "..." if len(s) > 60 else s


def _member(at, key):
    return f"{at}.{key}" if at else key


def _field(obj, at, key, required):
    if key in obj:
        return obj[key]
    if required:
        raise _Bad(_member(at, key), "missing")
    return None


def _object(obj, at, key, required, nullable=False):
    v = _field(obj, at, key, required)
    if v is None and (key not in obj or nullable):
        return None
    if not isinstance(v, dict):
        raise _Bad(_member(at, key), f"{_brief(v)} is not an object")
    return v


def _array(obj, at, key, required):
    v = _field(obj, at, key, required)
    if key in obj and not isinstance(v, list):
        raise _Bad(_member(at, key), f"{_brief(v)} is not an array")
    return v


def _text(obj, at, key, required, non_empty=False):
    if key not in obj:
        _field(obj, at, key, required)
        return
    v = obj[key]
    if not isinstance(v, str):
        raise _Bad(_member(at, key), f"{_brief(v)} is not a string")
    if non_empty and not v:
        raise _Bad(_member(at, key), "is empty")


def _boolean(obj, at, key, required):
    if key not in obj:
        _field(obj, at, key, required)
    elif not isinstance(obj[key], bool):
        raise _Bad(_member(at, key), f"{_brief(obj[key])} is not true or false")


def _strings(obj, at, key, required):
    v = _array(obj, at, key, required)
    for i, s in enumerate(v or []):
        if not isinstance(s, str):
            raise _Bad(f"{_member(at, key)}[{i}]", f"{_brief(s)} is not a string")


def _objects(obj, at, key):
    """(JSON path, item) of an optional array of objects."""
    for i, item in enumerate(_array(obj, at, key, False) or []):
        where = f"{_member(at, key)}[{i}]"
        if not isinstance(item, dict):
            raise _Bad(where, f"{_brief(item)} is not an object")
        yield where, item


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _integer_value(v, at, lo, hi):
    if not _is_int(v) or not -2**63 <= v <= INT64_MAX:
        raise _Bad(at, f"{_brief(v)} is not an integer")
    if not lo <= v <= hi:
        raise _Bad(at, f"{v} is below {lo}" if hi == INT64_MAX else f"{v} is outside {lo} to {hi}")
    return v


def _integer(obj, at, key, required, lo=0, hi=INT_MAX):
    if key not in obj:
        _field(obj, at, key, required)
        return lo
    return _integer_value(obj[key], _member(at, key), lo, hi)


def _number(obj, at, key, required, nullable, rng):
    """rng: "any", "non-negative" or "positive"."""
    if key not in obj:
        _field(obj, at, key, required)
        return None
    v, where = obj[key], _member(at, key)
    if v is None:
        if not nullable:
            raise _Bad(where, "null is not a number")
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _Bad(where, f"{_brief(v)} is not a number")
    x = float(v)
    if not math.isfinite(x):
        raise _Bad(where, f"{_brief(v)} is not a finite number")
    if rng == "positive" and not x > 0:
        raise _Bad(where, f"{_brief(v)} is not a positive number")
    if rng == "non-negative" and x < 0:
        raise _Bad(where, f"{_brief(v)} is negative")
    return x


def _numbers(obj, at, keys):
    for k in keys:
        _number(obj, at, k, False, True, "non-negative")


def _one_of(obj, at, key, required, allowed):
    _text(obj, at, key, required)
    if key in obj and obj[key] not in allowed:
        raise _Bad(_member(at, key), f"\"{obj[key]}\" is not one of {', '.join(allowed)}")


def _seed(obj, at):
    s = _field(obj, at, "seed", True)
    if not _is_int(s) or not 0 <= s <= UINT64_MAX:
        raise _Bad(_member(at, "seed"), f"{_brief(s)} is not an integer from 0 to 2^64-1")


def _parity(p, at):
    _number(p, at, "atol", True, False, "non-negative")
    _number(p, at, "rtol", True, False, "non-negative")
    _seed(p, at)
    for k in ("elements", "mismatches", "non_finite"):
        _integer(p, at, k, True, 0, INT64_MAX)
    _integer(p, at, "worst_index", True, -1, INT64_MAX)
    _numbers(p, at, ("max_abs_error", "max_rel_error"))
    _number(p, at, "worst_value", False, True, "any")
    _number(p, at, "worst_reference", False, True, "any")
    _text(p, at, "output_hash", False)
    # Minor 6 (issue 35): the output's dtype and the rules it was judged by.
    _one_of(p, at, "dtype", False, DTYPES)
    _one_of(p, at, "rule", False, ("both", "tolerance", "module"))
    _boolean(p, at, "tolerance_passed", False)
    _number(p, at, "module_max_abs_error", False, True, "non-negative")
    _number(p, at, "module_k", False, False, "non-negative")
    _number(p, at, "module_atol", False, False, "non-negative")
    if p.get("module_passed") is not None:
        _boolean(p, at, "module_passed", False)


DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool")


def _parity_failed(p):
    """Why a parity record does not pass the rules it names ("" when it does), as tune judges: the
    elementwise rule unless the rule is "module" and the module rule was applied; the module rule
    when applied and the rule is not "tolerance"."""
    rule = p.get("rule", "both")
    module_applies = isinstance(p.get("module_passed"), bool) and rule != "tolerance"
    if p["elements"] <= 0:
        return f"{p['mismatches']} of {p['elements']} outputs mismatched"
    if module_applies and not p["module_passed"]:
        return f"the module rule failed (module_passed false, rule {rule})"
    if not (module_applies and rule == "module") and p["mismatches"] != 0:
        return f"{p['mismatches']} of {p['elements']} outputs mismatched"
    return ""


def _timing(t, at, measured):
    _text(t, at, "profile", True)
    if "unit" in t:
        _one_of(t, at, "unit", False, ("microseconds",))
    _integer(t, at, "samples", True, 1 if measured else 0)
    _number(t, at, "median_us", True, not measured, "positive" if measured else "non-negative")
    _numbers(t, at, ("min_us", "q1_us", "mean_us", "q3_us", "max_us", "stddev_us", "noise", "robust_noise",
                     "gpu_seconds", "batch_mean_us", "graph_mean_us"))
    last, last_value = None, 0.0
    for k in ("min_us", "q1_us", "median_us", "q3_us", "max_us"):
        if t.get(k) is None:
            continue
        x = float(t[k])
        if last and x < last_value * (1 - 1e-9):
            raise _Bad(_member(at, k), f"{_brief(t[k])} is below {last} ({last_value:g}); the statistics of one "
                                       "sample set are ordered")
        last, last_value = k, x
    _text(t, at, "stop_reason", True)
    _integer(t, at, "batch_launches", False)
    _integer(t, at, "throttle_retries", False)
    clocks = _object(t, at, "clocks", False)
    if clocks is not None:
        where = _member(at, "clocks")
        _boolean(clocks, where, "available", False)
        _integer(clocks, where, "sm_mhz_start", False)
        _integer(clocks, where, "sm_mhz_end", False)
        _strings(clocks, where, "reasons", False)
        _boolean(clocks, where, "throttled", False)
    m = _object(t, at, "method_ms", False)
    if m is not None:
        _numbers(m, _member(at, "method_ms"), ("warmup", "cold", "batch", "graph", "clocks"))


def _gate(g, at):
    _one_of(g, at, "verdict", True, ("safe", "unsafe", "incorrect", "unchecked"))
    _text(g, at, "reason", False)
    _strings(g, at, "tools", False)
    _strings(g, at, "not_run", False)
    _strings(g, at, "cached", False)  # minor 6
    if g["verdict"] == "unchecked" and not g.get("not_run"):
        raise _Bad(_member(at, "not_run"), "empty, but the verdict is unchecked (it names the checks that could not run)")
    for where, f in _objects(g, at, "findings"):
        _text(f, where, "tool", True)
        _text(f, where, "kind", False)
        _strings(f, where, "report", False)
    _integer(g, at, "findings_left_out", False)
    for where, inp in _objects(g, at, "inputs"):
        _text(inp, where, "name", True)
        _parity(_object(inp, where, "parity", True), _member(where, "parity"))
    _integer(g, at, "launches", False)
    _boolean(g, at, "deterministic", False)
    _text(g, at, "determinism", False)
    _numbers(g, at, ("seconds",))


def _fault(f, at):
    _text(f, at, "kind", True)
    for k in ("signal", "cuda_error", "phase", "message"):
        _text(f, at, k, False)
    _integer(f, at, "exit_code", False, -2**31, INT_MAX)
    _numbers(f, at, ("deadline_s",))


def _launch(l, at, ran):
    """ran: the launch ran (a passed or unsafe variant's), so each size is at least 1."""
    if not isinstance(l, dict):
        raise _Bad(at, f"{_brief(l)} is not an object")
    _text(l, at, "kernel", True, True)
    for k in ("grid", "block"):
        dim = _array(l, at, k, True)
        if len(dim) != 3:
            raise _Bad(_member(at, k), f"{_brief(dim)} does not hold 3 sizes")
        for i in range(3):
            _integer_value(dim[i], f"{_member(at, k)}[{i}]", 1 if ran else 0, UINT32_MAX)
    _integer(l, at, "dynamic_smem_bytes", False, 0, UINT32_MAX)


def _resources(r, at):
    for kernel, res in r.items():
        where = _member(at, kernel)
        if not isinstance(res, dict):
            raise _Bad(where, f"{_brief(res)} is not an object")
        _integer(res, where, "registers", True, -1)
        for k in ("spill_store_bytes", "spill_load_bytes", "stack_frame_bytes", "static_smem_bytes"):
            _integer(res, where, k, True)
        _integer(res, where, "barriers", False)
        _text(res, where, "source", False)


def _device(d, at):
    _integer(d, at, "ordinal", True)
    _text(d, at, "name", True, True)
    _text(d, at, "slug", False)
    _text(d, at, "uuid", True)
    _text(d, at, "compute_capability", True)
    cc = d["compute_capability"]
    major, dot, minor = cc.partition(".")
    digits = lambda s: 0 < len(s) <= 3 and all(c in "0123456789" for c in s)
    if not dot or not digits(major) or not digits(minor):
        raise _Bad(_member(at, "compute_capability"), f"\"{cc}\" does not look like 9.0")
    for k in ("sm_count", "max_threads_per_block", "max_sm_clock_khz", "memory_clock_khz", "memory_bus_bits"):
        _integer(d, at, k, True)
    for k in ("max_shared_memory_per_block_optin_bytes", "l2_cache_bytes", "memory_bytes"):
        _integer(d, at, k, True, 0, INT64_MAX)
    _text(d, at, "driver_cuda_version", True)


def _context(ctx, at):
    for k in ("tool_version", "git_commit", "command_line", "started_at", "nvrtc_version", "arch"):
        _text(ctx, at, k, True)
    _strings(ctx, at, "compile_options", True)
    for k in ("finished_at", "host", "cuda_header_version", "config_file", "source_hash", "reference", "reference_identity",
              "compile_cache"):
        _text(ctx, at, k, False)
    _integer(ctx, at, "jobs", False, 1)
    s = _object(ctx, at, "search", False)
    if s is not None:
        where = _member(at, "search")
        _one_of(s, where, "strategy", False, ("exhaustive", "random", "halving", "random+halving", "warm", "warm+halving",
                                                    "model", "warm+model"))
        _integer(s, where, "budget", False)
        _integer(s, where, "valid_configurations", False, 0, INT64_MAX)
        _number(s, where, "time_budget_s", False, False, "non-negative")
        _boolean(s, where, "stopped_by_time_budget", False)
        _boolean(s, where, "interrupted", False)
        def refine_of(parent, at):  # the local search after a warm start or a model
            r = _object(parent, at, "refine", False)
            if r is not None:
                for key in ("top", "rounds", "added"):
                    _integer(r, _member(at, "refine"), key, True, 0)
        w = _object(s, where, "warm_start", False)
        if w is not None:
            warm = _member(where, "warm_start")
            _strings(w, warm, "files", True)
            _number(w, warm, "keep", True, False, "positive")
            _integer(w, warm, "promising", True, 0)
            _integer(w, warm, "explored", True, 0)
            refine_of(w, warm)
        m = _object(s, where, "model", False)
        if m is not None:
            model = _member(where, "model")
            _text(m, model, "library", True)
            for key in ("initial", "rounds", "added"):
                _integer(m, model, key, True, 0)
            _text(m, model, "stop", True)
            refine_of(m, model)
    i = _object(ctx, at, "isolation", False)
    if i is not None:
        where = _member(at, "isolation")
        _text(i, where, "worker", False)
        _numbers(i, where, ("first_variant_timeout_s", "variant_timeout_s"))
        _text(i, where, "timeout_rule", False)
        _integer(i, where, "worker_starts", False)
        _strings(i, where, "test_hooks", False)
    j = _object(ctx, at, "journal", False)
    if j is not None:
        _text(j, _member(at, "journal"), "file", False)
        _integer(j, _member(at, "journal"), "resumed_variants", False)
    s = _object(ctx, at, "shard", False, True)
    if s is not None:
        where = _member(at, "shard")
        count = _integer(s, where, "count", True, 1)
        _integer(s, where, "index", True, 0, count - 1)
        _one_of(s, where, "split", True, ("items", "variants"))
        items = _integer(s, where, "items", True, 1, INT64_MAX)
        _integer(s, where, "item", True, 0, items - 1)
        _text(s, where, "run_key", True)
        _integer(s, where, "variants", False, 0, INT64_MAX)
        _integer(s, where, "baseline_index", False, -1, INT64_MAX)
    g = _object(ctx, at, "gate", False)
    if g is not None:
        where = _member(at, "gate")
        for k in ("mode", "sanitizer", "sanitizer_version", "note", "could_not_run"):
            _text(g, where, k, False)
        _boolean(g, where, "allow_unchecked", False)
        _strings(g, where, "tools", False)
        _strings(g, where, "inputs", False)
        for k in ("launches", "rounds", "gated", "unsafe", "incorrect", "unchecked"):
            _integer(g, where, k, False)
        _numbers(g, where, ("wall_s", "share_of_run"))
        # Minor 6 (issue 37): the verdict cache and the gate's parts.
        for k in ("cache", "baseline_rule"):
            _text(g, where, k, False)
        _boolean(g, where, "fresh", False)
        for k in ("checks", "cache_hits", "cache_misses", "jobs"):
            _integer(g, where, k, False, 0)
        _numbers(g, where, ("outputs_s", "reference_s"))
        for k in ("tool_s", "finalist_s", "parts_s"):
            m = _object(g, where, k, False)
            if m is not None:
                _numbers(m, _member(where, k), tuple(m))


def problem_dims(problem, config_file):
    """The dims of the problem as tune finds it ($TUNE_PROBLEM_PATH, then the built-in configs/, else the
    problem file the run recorded), or None when it is not found here."""
    dirs = [pathlib.Path(d) for d in os.environ.get("TUNE_PROBLEM_PATH", "").split(":") if d] + [CONFIGS]
    files = [d / problem / "problem.json" for d in dirs]
    if config_file.endswith(PROBLEM_FILE_MARK):
        files.append(pathlib.Path(config_file[:-len(PROBLEM_FILE_MARK)]))
    for k, f in enumerate(files):
        if f.is_file():
            try:
                doc = read_json(f)
                if k == len(dirs) and doc.get("problem") != problem:
                    return None  # the recorded file describes another problem (tune refuses it)
                dims = doc["shape"]["dims"]
                return dims if isinstance(dims, list) else None
            except (InputError, KeyError, TypeError):
                return None
    return None


def shape_value(v, at):
    """A value of a "shape": a dimension (an integer >= 1) or a dtype variable's dtype, by its name."""
    if isinstance(v, str):
        try:
            return dtypes.parse(v)
        except ValueError as e:
            raise _Bad(at, str(e))
    return _integer_value(v, at, 1, INT64_MAX)


def _shape(run):
    s = _object(run, "", "shape", True)
    if not s:
        raise _Bad("shape", "has no dimensions")
    for k, v in s.items():
        shape_value(v, f"shape.{k}")
    config = run["context"].get("config_file", "")
    dims = problem_dims(run["problem"], config)
    if dims is not None and dims != [k for k, v in s.items() if not isinstance(v, str)]:
        raise _Bad("shape", f"has the dimensions {', '.join(s)}, but problem {run['problem']} has {', '.join(dims)}")


def _variant(v, at):
    if not isinstance(v, dict):
        raise _Bad(at, f"{_brief(v)} is not an object")
    _text(v, at, "name", True, True)
    params = _object(v, at, "params", True)
    for k, p in params.items():
        if not isinstance(p, (str, int, float, bool)):
            raise _Bad(_member(_member(at, "params"), k), f"{_brief(p)} is not a string, number or true/false")
    # A variant's name is its parameters' (Space::name): an edit of one shows in the other.
    named = ",".join(f"{k}={p if isinstance(p, str) else json.dumps(p)}" for k, p in params.items())
    if v["name"] != named:
        raise _Bad(_member(at, "name"), f"\"{v['name']}\" is not the name of its params (\"{named}\"); a name and its "
                                        "params are one configuration")
    _boolean(v, at, "baseline", False)
    _text(v, at, "status", True)
    status = v["status"]
    if status not in STATUSES:
        raise _Bad(_member(at, "status"), f"\"{status}\" is not a status (passed, incorrect, unsafe, compile_failed, "
                                          "launch_failed, crashed, timeout, skipped, compiled, pending)")
    _text(v, at, "reason", False)
    _text(v, at, "log_excerpt", False)
    _numbers(v, at, ("compile_seconds", "load_seconds", "first_launch_ms", "evaluate_ms", "parity_ms", "unload_ms"))
    _boolean(v, at, "compile_cached", False)
    _integer(v, at, "max_registers", False, -1)
    _integer(v, at, "spill_bytes", False)
    for i, l in enumerate(_array(v, at, "launches", False) or []):
        _launch(l, f"{at}.launches[{i}]", status in ("passed", "unsafe"))
    r = _object(v, at, "resources", False)
    if r is not None:
        _resources(r, _member(at, "resources"))
    t = _object(v, at, "throughput", False)
    if t is not None:
        _numbers(t, _member(at, "throughput"), ("gigabytes_per_second", "gigaflop_per_second"))

    measured = status in ("passed", "unsafe")
    p = _object(v, at, "parity", False, True)
    if p is not None:
        _parity(p, _member(at, "parity"))
    t = _object(v, at, "timing", False, True)
    if t is not None:
        _timing(t, _member(at, "timing"), measured)
    s = _object(v, at, "search_timing", False, True)
    if s is not None:
        _timing(s, _member(at, "search_timing"), False)
    f = _object(v, at, "fault", False, True)
    if f is not None:
        _fault(f, _member(at, "fault"))
    g = _object(v, at, "gate", False, True)
    if g is not None:
        _gate(g, _member(at, "gate"))

    if measured:
        if t is None:
            raise _Bad(_member(at, "timing"), f"missing, but the status is {status} (a timed variant)")
        if p is None:
            raise _Bad(_member(at, "parity"), f"missing, but the status is {status} (parity passed)")
        why = _parity_failed(p)
        if why:
            raise _Bad(_member(at, "parity"), f"{why}, but the status is {status}")
    verdict = g["verdict"] if g is not None else ""
    if status == "unsafe" and verdict != "unsafe":
        raise _Bad(_member(at, "gate"), f"verdict {verdict}, but the status is unsafe" if g is not None
                   else "missing, but the status is unsafe (the gate's findings)")
    if status == "passed" and verdict in ("unsafe", "incorrect"):
        raise _Bad(_member(at, "status"), f"\"passed\", but the gate's verdict is {verdict}")


def _torch(t, at):
    """The results file's torch record (schema minor 7, issue 36), as tune's validate_torch_record."""
    _one_of(t, at, "status", True, ("measured", "cached", "skipped", "failed"))
    for k in ("reason", "torch_version", "device", "module_dtype"):
        _text(t, at, k, False)
    _strings(t, at, "modes", False)
    _boolean(t, at, "tf32", False)
    _object(t, at, "method", False)
    _number(t, at, "seconds", False, True, "non-negative")
    if t["status"] in ("skipped", "failed") and not t.get("reason"):
        raise _Bad(_member(at, "reason"), f"empty, but the status is {t['status']} (it says why)")
    present = False
    for mode in ("eager", "compile"):
        m = _object(t, at, mode, False, True)
        if m is None:
            continue
        present = True
        where = _member(at, mode)
        for method in ("graph", "events"):
            times = _object(m, where, method, False, True)
            if times is not None:
                _number(times, _member(where, method), "median_us", True, False, "positive")
                _integer(times, _member(where, method), "samples", False)
        if m.get("error") is not None:
            _text(m, where, "error", False)
        _number(m, where, "compile_seconds", False, True, "non-negative")
    if t["status"] in ("measured", "cached") and not present:
        raise _Bad(at, f"status {t['status']}, but neither eager nor compile is recorded")


def validate(run):
    """Raises _Bad naming the first JSON path that is not what tune writes."""
    if not isinstance(run, dict):
        raise _Bad("(top level)", "not a JSON object (not a tune result file)")
    if run.get("kind") != "tune.result":
        raise _Bad("kind", f"{_brief(run.get('kind'))} is not \"tune.result\" (not a tune result file)")
    sv = _field(run, "", "schema_version", True)
    if not _is_int(sv) or sv != SCHEMA_VERSION:
        raise _Bad("schema_version", f"{_brief(sv)} is not supported (this tune reads {SCHEMA_VERSION})",
                   "regenerate the file with this tune")
    _integer(run, "", "schema_minor_version", False)
    _text(run, "", "problem", True, True)
    _context(_object(run, "", "context", True), "context")
    _shape(run)
    _seed(run, "")
    _boolean(run, "", "timed", True)
    _text(run, "", "untimed_reason", False)
    _boolean(run, "", "complete", False)
    timed = run["timed"]
    dev = _object(run, "", "device", True, True)
    if dev is not None:
        _device(dev, "device")
    if timed and dev is None:
        raise _Bad("device", "null in a timed result (the device it was measured on)")
    if timed:  # a timed run compiles for its device (arch_name): headers file it under that arch
        cc = dev["compute_capability"]
        if run["context"]["arch"] != "sm_" + cc.replace(".", "", 1):
            raise _Bad("device.compute_capability", f"\"{cc}\" is not the device context.arch "
                                                    f"{run['context']['arch']} was compiled for")
    work = _object(run, "", "work", True)
    _number(work, "work", "flop_per_call", True, False, "non-negative")
    _number(work, "work", "bytes_per_call", True, False, "non-negative")
    h = _object(run, "", "harness_floor", False, True)
    if h is not None:
        for k in ("empty_kernel_cold_us", "empty_kernel_batch_us", "empty_kernel_graph_us"):
            _number(h, "harness_floor", k, False, True, "non-negative")
    w = _object(run, "", "wall_seconds", False)
    if w is not None:
        _numbers(w, "wall_seconds", ("compile", "measure", "total"))
    t = _object(run, "", "torch", False, True)
    if t is not None:
        _torch(t, "torch")

    variants = _array(run, "", "variants", True)
    index, baseline, baseline_at = {}, None, ""
    for i, v in enumerate(variants):
        at = f"variants[{i}]"
        _variant(v, at)
        name = v["name"]
        if name in index:
            j = index[name]
            raise _Bad(at + ".name", f"\"{name}\" is also the name of variants[{j}]"
                                     f"{'' if v == variants[j] else ', with different contents'}; keep one record per "
                                     "variant")
        index[name] = i
        if v.get("baseline", False):
            if baseline is not None:
                raise _Bad(at + ".baseline", f"true, but {baseline_at} is the baseline already")
            baseline, baseline_at = v, at

    s = _object(run, "", "summary", True)
    _text(s, "summary", "winner_rule", False)
    _integer(s, "summary", "variants", False, 0, INT64_MAX)
    _object(s, "summary", "by_status", False)

    def named(key):
        v = s.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise _Bad(_member("summary", key), f"{_brief(v)} is not a variant name or null")
        if v not in index:
            raise _Bad(_member("summary", key), f"\"{v}\" is not among the variants")
        return variants[index[v]]

    winner, base = named("winner"), named("baseline")
    if base is not baseline:
        raise _Bad("summary.baseline", f"does not name {baseline_at} (the variant marked baseline)" if baseline
                   else "names a variant that is not marked baseline")
    median = lambda v: float(v["timing"]["median_us"])
    if winner is not None:
        name = winner["name"]
        if not timed:
            raise _Bad("summary.winner", f"\"{name}\" in an untimed (compile-only) result")
        if winner["status"] != "passed":
            raise _Bad("summary.winner", f"\"{name}\" has status {winner['status']}; a winner passed parity and was timed")
        fastest, fastest_name = median(winner), name
        # The variants that may win (may_win): passed, and not unchecked unless the run allows it.
        allow_unchecked = run["context"].get("gate", {}).get("allow_unchecked", False) is True
        unchecked = lambda v: isinstance(v.get("gate"), dict) and v["gate"]["verdict"] == "unchecked"
        # An unchecked variant wins only by consent (--allow-unchecked), which the context records.
        if unchecked(winner) and not allow_unchecked:
            raise _Bad("summary.winner", f"\"{name}\" is unchecked by the gate, but context.gate.allow_unchecked is not "
                                         "true (an unchecked variant wins only with --allow-unchecked)")
        for v in variants:
            if v["status"] == "passed" and (allow_unchecked or not unchecked(v)) and median(v) < fastest:
                fastest, fastest_name = median(v), v["name"]
        if median(winner) > fastest * (1 + TIE_BAND_CAP):
            raise _Bad("summary.winner", f"\"{name}\" ({median(winner):g} us) is more than {TIE_BAND_CAP * 100:g} % "
                                         f"slower than \"{fastest_name}\" ({fastest:g} us): not the winner the rule picks")
    speedup = _number(s, "summary", "speedup_over_baseline", False, True, "positive")
    if speedup is not None:
        if winner is None or base is None or base["status"] != "passed":
            raise _Bad("summary.speedup_over_baseline", "given without a winner and a baseline that passed")
        expected = median(base) / median(winner)
        if not math.isfinite(expected) or abs(speedup - expected) > 1e-9 * expected:
            raise _Bad("summary.speedup_over_baseline",
                       f"{speedup:g} is not the baseline's median over the winner's ({expected:g})")


def _timed(m, at):
    """A torch_baseline.py measurement: null, or an object whose median_us is a positive number."""
    if m is not None:
        _number(m, at, "median_us", True, False, "positive")


def validate_torch_baseline(doc):
    """A file of report/torch_baseline.py (its docstring defines it), as far as the report reads it."""
    if not isinstance(doc, dict) or doc.get("kind") != "tune.torch_baseline":
        raise _Bad("kind", "not \"tune.torch_baseline\" (not a torch baseline file)", "pass a file torch_baseline.py wrote")
    if not _is_int(doc.get("schema_version")) or doc["schema_version"] != 1:
        raise _Bad("schema_version", f"{_brief(doc.get('schema_version'))} is not supported (this report reads 1)",
                   "regenerate it with report/torch_baseline.py")
    _text(_object(doc, "", "device", True), "device", "name", True, True)
    _object(doc, "", "context", False)
    peaks = _object(doc, "", "device_peaks", False, True)
    if peaks is not None:
        _number(peaks, "device_peaks", "copy_gb_per_s", False, True, "positive")
    for where, e in _objects(doc, "", "entries"):
        _text(e, where, "problem", True, True)
        shape = _object(e, where, "shape", True)
        for k, v in shape.items():
            shape_value(v, f"{where}.shape.{k}")
        for mode in ("eager", "compile", "modelnew"):
            m = _object(e, where, mode, False, True)
            if m is None:
                continue
            at = _member(where, mode)
            _timed(_object(m, at, "events", False, True), _member(at, "events"))
            _timed(_object(m, at, "graph", False, True), _member(at, "graph"))
            if m.get("error") is not None:
                _text(m, at, "error", False)
            if mode != "modelnew":
                continue
            _boolean(m, at, "tuned", True)
            _text(m, at, "variant", False)
            _number(m, at, "tune_cold_median_us", False, True, "positive")
            _number(m, at, "op_overhead_us", False, True, "any")
            parity = _object(m, at, "parity", False, True)
            if parity is not None:
                pat = _member(at, "parity")
                _numbers(parity, pat, ("max_abs_vs_module", "max_abs_vs_float64", "module_max_abs_vs_float64"))
                _boolean(parity, pat, "passed", True)


def validate_peaks(doc):
    """--peaks: {slug: {"copy_gb_per_s": positive, "fp32_gflop_per_s": positive, "source": text}}."""
    if not isinstance(doc, dict):
        raise _Bad("(top level)", "not an object keyed by GPU slug", "see tune report --help")
    for slug, p in doc.items():
        if not isinstance(p, dict):
            raise _Bad(slug, f"{_brief(p)} is not an object", "give copy_gb_per_s and fp32_gflop_per_s")
        for k in ("copy_gb_per_s", "fp32_gflop_per_s"):
            _number(p, slug, k, True, False, "positive")
        for k in ("hbm_gb_per_s", "fp64_gflop_per_s", "tf32_tensor_gflop_per_s", "bf16_tensor_gflop_per_s",
                  "fp16_tensor_gflop_per_s"):
            _number(p, slug, k, False, False, "positive")
        _text(p, slug, "source", False)


def read_checked(path, validate):
    """A JSON file validated by `validate`; InputError "<file>: <JSON path>: <what>; <what to do>"."""
    return check(path, read_json(path), validate)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text):
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"number {text} is out of range")
    return x


def _int(text):
    """An integer literal as tune's JSON reader takes it: beyond 64 bits, a double."""
    n = int(text)
    return n if -2**63 <= n <= UINT64_MAX else _finite_float(text)


def parse(text):
    """JSON as tune's reader takes it: no NaN or Infinity, no number beyond a double's range."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_int)


# The most bytes a JSON file may hold, decompressed, as tune's readers take it (io/json_file.hpp):
# a gzip bomb is refused before it fills the memory.
MAX_BYTES = 256 << 20


def _read_bounded(path):
    too_large = InputError(f"{path}: holds more than {MAX_BYTES >> 20} MiB (decompressed); tune's JSON files are far "
                           "smaller: is it the right file?")
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise too_large
    if data[:2] != b"\x1f\x8b":
        return data
    parts, size = [], 0
    while data:  # gzip members one after the other, as gzip -d reads them
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            parts.append(d.decompress(data, MAX_BYTES + 1 - size))
        except zlib.error as e:
            raise OSError(f"not a valid gzip file ({e})")
        size += len(parts[-1])
        if size > MAX_BYTES:
            raise too_large
        if not d.eof:
            raise OSError("a truncated gzip file")
        data = d.unused_data
    return b"".join(parts)


def read_json(path):
    """A JSON file, or the gzip of one (results of record over 256 KB are kept as <shape>.json.gz),
    as tune's readers take it: at most MAX_BYTES decompressed."""
    try:
        data = _read_bounded(path)
        return parse(data.decode())
    except OSError as e:  # gzip.BadGzipFile is one
        raise InputError(f"{path}: cannot be read ({e.strerror or e})")
    except (ValueError, RecursionError, EOFError) as e:
        raise InputError(f"{path}: not valid JSON ({e})")


def result_files(root):
    """<root>/<gpu>/<problem>/<shape>.json and .json.gz, in path order (candidates: other JSON files
    there are for the caller to pass over). <shape>.json beside <shape>.json.gz is refused, as tune
    refuses it: a tune run that replaces a .json.gz removes it."""
    files = sorted(list(pathlib.Path(root).glob("*/*/*.json")) + list(pathlib.Path(root).glob("*/*/*.json.gz")))
    for f in files:
        gz = f.with_name(f.name + ".gz")
        if f.suffix == ".json" and gz in files:
            raise InputError(f"{f} and {gz.name}: two results files of one shape; keep one (a tune run that "
                             "replaces the .json.gz removes it)")
    return files


def check(path, doc, rules=None):
    """Validates a parsed file (a results file unless `rules` is given); raises InputError
    "<file>: <path>: <what>; <what to do>"."""
    try:
        (rules or validate)(doc)
    except _Bad as e:
        raise InputError(f"{path}: {e}")
    return doc


def device_slug(name):
    """The folder name tune gives a GPU (tuner/src/cuda/device.cpp, device_slug)."""
    s = "".join(c.lower() if c.isascii() and c.isalnum() else "-" for c in name)
    for drop in ("nvidia-", "geforce-", "tesla-", "quadro-"):
        if s.startswith(drop):
            s = s[len(drop):]
    out = ""
    for c in s:
        if not (c == "-" and (not out or out[-1] == "-")):
            out += c
    return out.rstrip("-") or "gpu"


def is_result(doc):
    return isinstance(doc, dict) and doc.get("kind") == "tune.result"
