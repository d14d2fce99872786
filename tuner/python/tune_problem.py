"""A problem folder as tune reads it, for the Python tools (scripts/make_goldens.py,
report/torch_baseline.py): `tune problem show --json` (its folder, reference, tensors with their
dtypes and shapes at a shape, edge cases, tolerances; docs/cli.md), `tune problem draw` (the tensors
tune draws, as numpy arrays) and the import of its reference module. tune is problem.json's one
reader (issue 38): nothing here reads that file, evaluates its expressions or draws its data."""
import importlib.util
import json
import pathlib
import re
import sys
import tempfile

import tune_bin


class ProblemError(Exception):
    pass


def problem_arg(problem):
    """--problem's value: a folder (or its problem.json) that exists, absolute; else a problem's name."""
    path = pathlib.Path(problem)
    return str(path.resolve()) if path.exists() else str(problem)


def shape_args(shape):
    """["--B", "3", "--T", "bfloat16"] of {"B": 3, "T": "bfloat16"}; private keys (_tune_median_us) left out."""
    return [a for k, v in shape.items() if not k.startswith("_") for a in (f"--{k}", str(v))]


def _tune(args):
    r = tune_bin.run(args, ProblemError)
    if r.returncode != 0:
        raise ProblemError(tune_bin.refusal(r, f"tune {' '.join(args[:2])} exited {r.returncode}"))
    return r


def show(problem, shape):
    """`tune problem show --json` at `shape` ({"B": 3, "T": "bfloat16"}; what it leaves out takes the
    problem's defaults): {"problem", "folder", "reference", "shape", "dtypes", "tensors": [{"name",
    "role", "dtype", "shape"}], "edge_cases", "tolerance": {dtype: {"atol", "rtol", "module_k",
    "module_atol", "rule"}}}. ProblemError with tune's line for a problem or shape tune refuses."""
    args = ["problem", "show", "--json", "--problem", problem_arg(problem), *shape_args(shape)]
    return json.loads(_tune(args).stdout)


def draw(problem, shape, seed, purpose="parity"):
    """{name: numpy array} of the parameters and inputs tune draws at `shape` and `seed` (`tune problem
    draw`): edits of `purpose` applied (parity: the golden and parity data; timing: plain inputs),
    each value its dtype's, in the .npy dtype tune writes (bfloat16 as float32, which holds it)."""
    import numpy as np
    with tempfile.TemporaryDirectory() as out:
        _tune(["problem", "draw", "--problem", problem_arg(problem), "--seed", str(seed), "--purpose", purpose,
               "--out", out, *shape_args(shape)])
        index = json.loads((pathlib.Path(out) / "index.json").read_text())
        return {t["name"]: np.load(pathlib.Path(out) / t["file"]).reshape(t["shape"]) for t in index["tensors"]}


def roles(facts, role):
    """The tensors of `role` ("parameter", "input", "output") of show's facts, in tune's order."""
    return [t for t in facts["tensors"] if t["role"] == role]


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
