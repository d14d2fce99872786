"""A problem folder as the Python tools see it (docs/problem-format.md): its problem.json, its
reference module, its tensors and edits, and seeded tensor data drawn from them.

Used by scripts/make_goldens.py and report/torch_baseline.py. Needs numpy only."""
import importlib.util
import json
import math
import pathlib
import re
import sys
import tempfile

import numpy as np

# tuner/python/dtypes.py (a checkout) or share/tune/python/ (installed): the one Python dtype table.
for _d in (pathlib.Path(__file__).resolve().parent.parent / "tuner" / "python",
           pathlib.Path(__file__).resolve().parent.parent / "python"):
    if (_d / "dtypes.py").is_file() and str(_d) not in sys.path:
        sys.path.insert(0, str(_d))
import dtypes  # noqa: E402
import tune_bin  # noqa: E402


class ProblemError(Exception):
    pass


def load_problem(folder):
    """(problem.json as a dict, or {} where the folder has none; the folder as a Path)."""
    folder = pathlib.Path(folder)
    if folder.is_file():
        folder = folder.parent
    path = folder / "problem.json"
    if not path.is_file():
        if not folder.is_dir():
            raise ProblemError(f"{folder}: not a problem folder")
        return {}, folder
    try:
        return json.loads(path.read_text()), folder
    except ValueError as e:
        raise ProblemError(f"{path}: not valid JSON ({e})")


def reference_path(problem, folder):
    name = (problem.get("reference") or {}).get("python", "reference.py")
    return pathlib.Path(folder) / name


def load_module(path, name=None):
    """Imports a Python file by path under a name of its own (two folders' reference.py don't clash).
    Its folder goes first on sys.path, as tune's reference runner puts it (tuner/python/
    reference_runner.py), so that a reference importing a file beside it works here as in tune."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: no such file")
    name = name or "tune_reference_" + re.sub(r"\W", "_", str(path.resolve().parent.name))
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problem_name(problem, folder):
    return problem.get("problem") or pathlib.Path(folder).name


def tensors_and_edits(problem, folder):
    """problem.json's "tensors" (in draw order) and "edits"."""
    if not problem.get("tensors"):
        raise ProblemError(f"{pathlib.Path(folder) / 'problem.json'}: no \"tensors\" list")
    return problem["tensors"], problem.get("edits", [])


# Expressions: the muParser syntax problem files use in shapes, fan-ins, edits and conditions,
# translated to Python (&& || ! ^ and the conditional a ? b : c) and evaluated over the dims and
# loop variables only.
_FUNCS = {"min": min, "max": max, "abs": abs, "sqrt": math.sqrt, "cdiv": lambda a, b: -(-a // b)}


def _conditional(text):
    """`c ? a : b` (right-associative, lowest precedence) at the top level of text -> Python."""
    q = text.find("?")
    if q < 0:
        return text
    depth = 0
    for i in range(q + 1, len(text)):
        depth += {"?": 1, ":": -1}.get(text[i], 0)
        if depth < 0:
            return (f"(({_conditional(text[q + 1:i])}) if ({text[:q]}) else ({_conditional(text[i + 1:])}))")
    raise ProblemError(f"{text!r}: '?' without its ':'")


def _to_python(text):
    """Parenthesised groups (and function arguments) first, then the conditional at this level."""
    out, i = [], 0
    while i < len(text):
        if text[i] == ")":
            raise ProblemError(f"{text!r}: unbalanced ')'")
        if text[i] != "(":
            out.append(text[i])
            i += 1
            continue
        depth, parts, start = 0, [], i + 1
        for j in range(i, len(text)):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 1 and text[j] == ",":
                parts.append(text[start:j])
                start = j + 1
            if depth == 0:
                parts.append(text[start:j])
                break
        else:
            raise ProblemError(f"{text!r}: unbalanced '('")
        out.append("(" + ", ".join(_to_python(p) for p in parts) + ")")
        i = j + 1
    return _conditional("".join(out))


def evaluate(expr, names):
    if isinstance(expr, (bool, int, float)):
        return expr
    text = str(expr)
    py = text.replace("&&", " and ").replace("||", " or ").replace("^", "**")
    py = _to_python(re.sub(r"!(?!=)", " not ", py))
    try:
        return eval(py, {"__builtins__": {}}, {**_FUNCS, **names})  # names are dims and loop variables only
    except Exception as e:
        raise ProblemError(f"expression {text!r}: {e}")


def evaluate_int(expr, names):
    v = evaluate(expr, names)
    if float(v) != int(v):
        raise ProblemError(f"expression {expr!r} = {v}: not an integer")
    return int(v)


def tensor_shape(tensor, dims):
    return tuple(evaluate_int(e, dims) for e in tensor["shape"])


def _bf16_round(values):
    """float64 values to the nearest bfloat16 (ties to even), as tune's round_to does: through float32
    rounded to odd (no double rounding), then float32's bits rounded to their upper 16, ties to even."""
    shape = np.shape(values)
    v = np.atleast_1d(np.asarray(values, dtype=np.float64)).ravel()
    f = v.astype(np.float32)
    bits = f.view(np.uint32).copy()
    inexact = np.isfinite(v) & np.isfinite(f) & (f.astype(np.float64) != v)
    bits[inexact & (np.abs(f.astype(np.float64)) > np.abs(v))] -= np.uint32(1)
    bits[inexact] |= np.uint32(1)
    finite = np.isfinite(bits.view(np.float32))
    rounded = bits.astype(np.uint64) + np.uint64(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)).astype(np.uint64)
    bits[finite] = ((rounded[finite] >> np.uint64(16)) << np.uint64(16)).astype(np.uint32)
    return bits.view(np.float32).astype(np.float64).reshape(shape)


def round_to(dtype, values):
    """float64 values as `dtype` holds them (tune's round_to, dtype.hpp): floating ones to nearest, ties
    to even, from the double directly; integers truncated; bool 1 or 0."""
    v = np.asarray(values, dtype=np.float64)
    if dtype == "float64":
        return v
    if dtype == "bfloat16":
        return _bf16_round(v)
    if dtypes.is_floating(dtype):
        with np.errstate(over="ignore"):  # beyond the dtype's range: inf, as tune rounds it
            return v.astype(dtypes.numpy_dtype(dtype)).astype(np.float64)
    if dtype == "bool":
        return (v != 0).astype(np.float64)
    t = np.where(np.isfinite(v), np.trunc(v), 0.0)
    if dtype == "int64":  # host data holds int64 as doubles
        return t
    info = np.iinfo(dtypes.numpy_dtype(dtype))
    wrap = (t < info.min) | (t > info.max)  # out of range: the two's-complement wrap, as the device sees it
    t[wrap] = np.fmod(t[wrap], 2.0 ** 64).astype(np.int64).astype(dtypes.numpy_dtype(dtype))
    return t


_FLOAT_INITS = ("normal", "uniform", "linear", "layernorm_weight", "layernorm_bias")


def _draw(rng, init, n, dims, dtype="float32"):
    """n values of `init` as tune draws them (problem.cpp): float inits as float32, then rounded to the
    tensor's dtype; index uniform in [0, high) and integers in [low, high) as floor(u * span);
    bernoulli u < p. `rng` is a numpy Generator (tune's own numbers: tune_draw)."""
    kind, args = (init, {}) if isinstance(init, str) else (init.get("kind"), init)
    if kind in _FLOAT_INITS and not dtypes.is_floating(dtype):
        raise ProblemError(f"init {kind!r} draws real numbers; the tensor is {dtype}")
    if kind in ("index", "integers") and (dtypes.is_floating(dtype) or dtype == "bool"):
        raise ProblemError(f"init {kind!r} draws integers; the tensor is {dtype}")
    if kind == "normal":
        values = args.get("mean", 0.0) + args.get("std", 1.0) * rng.standard_normal(n)
    elif kind == "uniform":
        values = rng.uniform(args.get("low", -1.0), args.get("high", 1.0), n)
    elif kind == "linear":
        bound = 1.0 / math.sqrt(evaluate(args["fan_in"], dims))
        values = rng.uniform(-bound, bound, n)
    elif kind == "layernorm_weight":
        values = 1.0 + 0.2 * rng.standard_normal(n)
    elif kind == "layernorm_bias":
        values = 0.2 * rng.standard_normal(n)
    elif kind == "constant":
        value = float(args.get("value", 0.0))
        values = np.full(n, float(np.float32(value)) if dtypes.is_floating(dtype) else value)
    elif kind == "bernoulli":
        return (rng.random(n) < args.get("p", 0.5)).astype(np.float64)
    elif kind == "index":
        high = evaluate_int(args["high"], dims)
        if high < 1:
            raise ProblemError(f"index init high {args['high']!r} = {high} at this shape; it must be at least 1")
        return np.floor(rng.random(n) * high)
    elif kind == "integers":
        low, high = float(args["low"]), float(args["high"])
        return low + np.floor(rng.random(n) * (high - low))
    else:
        raise ProblemError(f"unknown init {init!r}")
    return round_to(dtype, np.asarray(values, dtype=np.float64).astype(np.float32))


def apply_edit(arrays, edit, dims, of=None):
    name = edit["tensor"]
    if name not in arrays:
        raise ProblemError(f"edit of {name!r}: not a drawn tensor")
    if "when" in edit and not evaluate(edit["when"], dims):
        return
    target = arrays[name]
    loops = list(edit.get("for", {}).items())
    bounds = [range(evaluate_int(bound, dims)) for _, bound in loops]
    for values in np.ndindex(*[len(b) for b in bounds]) if bounds else [()]:
        names = {**dims, **{var: int(v) for (var, _), v in zip(loops, values)}}
        index = tuple(evaluate_int(e, names) for e in edit["index"])
        if len(index) != target.ndim or any(not 0 <= i < s for i, s in zip(index, target.shape)):
            raise ProblemError(f"edit of {name!r}: index {index} outside its shape {target.shape}")
        # Rounded to the tensor's dtype as tune rounds it (float32: 0.1 is 0.100000001...), so the
        # golden case is the input tune's reference sees.
        target[index] = float(round_to((of or {}).get(name, "float32"), evaluate(edit["value"], names)))


def tensor_dtype(tensor, bound):
    """A tensor's dtype with the dtype variables `bound` ({"T": "bfloat16"}); float32 where its
    variable is not bound (callers that draw float32 data for every dtype)."""
    d = tensor.get("dtype", dtypes.DEFAULT)
    if d in bound or d in dtypes.DTYPES:
        return dtypes.of_tensor(tensor, bound)
    return dtypes.DEFAULT


def draw(tensors, edits, dims, seed, purposes=("always", "parity"), dtype=np.float64, bound=None):
    """{name: array of the values its dtype holds, as `dtype`} for every parameter and input, in draw
    order: numpy's default_rng seeded with `seed` (not tune's numbers: tune_draw gives those) draws
    each tensor element by element, row-major, each
    value rounded to the tensor's dtype (its dtype variable's value in `bound`); then the edits whose
    purpose is in `purposes` apply in order (their values rounded to the tensor's dtype too)."""
    rng = np.random.default_rng(seed)
    arrays, of = {}, {}
    for t in tensors:
        if t.get("role") not in ("parameter", "input"):
            continue
        shape = tensor_shape(t, dims)
        of[t["name"]] = tensor_dtype(t, bound or {})
        try:
            values = _draw(rng, t.get("init", "normal"), int(np.prod(shape, dtype=np.int64)), dims, of[t["name"]])
        except ProblemError as e:
            raise ProblemError(f"tensor {t['name']!r}: {e}")
        arrays[t["name"]] = values.astype(np.float64).reshape(shape)
    for e in edits:
        if e.get("purpose", "always") in purposes:
            apply_edit(arrays, e, dims, of)
    return {k: v.astype(dtype, copy=False) for k, v in arrays.items()}


def tune_draw(folder, shape, seed, purpose="parity"):
    """{name: float64 array} of the parameters and inputs tune draws for the problem folder at `shape`
    ({"B": 3, "T": "bfloat16"}) and `seed`: `tune problem draw` (docs/cli.md), tune's own numbers,
    edits of `purpose` (parity: the golden and parity data) applied, each value its dtype's."""
    with tempfile.TemporaryDirectory() as out:
        args = ["problem", "draw", "--problem", str(pathlib.Path(folder).resolve()), "--seed", str(seed),
                "--purpose", purpose, "--out", out]
        for k, v in shape.items():
            args += [f"--{k}", str(v)]
        r = tune_bin.run(args, ProblemError)
        if r.returncode != 0:
            raise ProblemError(tune_bin.refusal(r, f"tune problem draw exited {r.returncode}"))
        index = json.loads((pathlib.Path(out) / "index.json").read_text())
        return {t["name"]: np.load(pathlib.Path(out) / t["file"]).astype(np.float64).reshape(t["shape"])
                for t in index["tensors"]}


def roles(tensors, role):
    return [t for t in tensors if t.get("role") == role]
