"""A problem folder as the Python tools see it (docs/problem-format.md): its problem.json, its
reference module, its tensors and edits, and seeded tensor data drawn from them.

Used by scripts/make_goldens.py and report/torch_baseline.py. Needs numpy only."""
import importlib.util
import json
import math
import pathlib
import re
import sys

import numpy as np


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


def _draw(rng, init, n, dims):
    kind, args = (init, {}) if isinstance(init, str) else (init.get("kind"), init)
    if kind == "normal":
        return args.get("mean", 0.0) + args.get("std", 1.0) * rng.standard_normal(n)
    if kind == "uniform":
        return rng.uniform(args.get("low", -1.0), args.get("high", 1.0), n)
    if kind == "linear":
        bound = 1.0 / math.sqrt(evaluate(args["fan_in"], dims))
        return rng.uniform(-bound, bound, n)
    if kind == "layernorm_weight":
        return 1.0 + 0.2 * rng.standard_normal(n)
    if kind == "layernorm_bias":
        return 0.2 * rng.standard_normal(n)
    if kind == "constant":
        return np.full(n, float(args.get("value", 0.0)))
    if kind == "bernoulli":
        return (rng.random(n) < args.get("p", 0.5)).astype(np.float64)
    raise ProblemError(f"unknown init {init!r}")


def apply_edit(arrays, edit, dims):
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
        # Rounded to float32 as the drawn values are: tune edits float32 buffers, so a golden case
        # made from an unrounded 0.1 would not be the input tune's reference sees.
        target[index] = float(np.float32(evaluate(edit["value"], names)))


def draw(tensors, edits, dims, seed, purposes=("always", "parity"), dtype=np.float64):
    """{name: array of float32 values, held as `dtype`} for every parameter and input, in draw
    order: one numpy generator seeded with `seed` draws each tensor element by element, row-major;
    then the edits whose purpose is in `purposes` apply in order (their values rounded to float32 too)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for t in tensors:
        if t.get("role") not in ("parameter", "input"):
            continue
        shape = tensor_shape(t, dims)
        values = _draw(rng, t.get("init", "normal"), int(np.prod(shape, dtype=np.int64)), dims)
        arrays[t["name"]] = values.astype(np.float32).astype(dtype, copy=False).reshape(shape)
    for e in edits:
        if e.get("purpose", "always") in purposes:
            apply_edit(arrays, e, dims)
    return arrays


def roles(tensors, role):
    return [t for t in tensors if t.get("role") == role]
