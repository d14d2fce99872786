#!/usr/bin/env python3
"""tuner/python/reference_runner.py with dtypes (issue 35): integer inputs reach make_model's module
in their own dtype (torch.int64), float ones in float64; numpy's reference() gets float64 arrays; a
dtype variable's value in the shape (a string) is passed through; with request.json's
"module_run": "also" or "only" and a low-precision tensor, the module runs in the tensors' dtypes
and writes module_out.npy ("only": no out.npy), its output stored in the output's declared dtype
(a module that returns float32 where the kernel writes float16 is rounded as the kernel is). The torch parts are skipped, with the reason, where
torch does not import.

    module_run_test.py REPO_ROOT

Needs numpy. Last line: "N passed, M failed, K skipped"."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]).resolve()
RUNNER = ROOT / "tuner" / "python" / "reference_runner.py"
try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

MODULE = '''
import json, os
import numpy as np

def reference(shape, params, inputs):
    assert all(a.dtype == np.float64 for a in list(params.values()) + list(inputs.values())), "numpy gets float64"
    assert shape["T"] == "bfloat16" and shape["N"] == 4, shape
    return (inputs["x"] * params["w"])[inputs["idx"].astype(np.int64)]

def make_model(shape):
    import torch

    class Gather(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(shape["N"]))

        def forward(self, x, idx):
            seen = os.path.join(os.environ["SEEN_DIR"], "seen.jsonl")
            with open(seen, "a") as f:
                f.write(json.dumps({"x": str(x.dtype), "idx": str(idx.dtype), "w": str(self.w.dtype)}) + "\\n")
            return (x * self.w)[idx]

    return Gather()
'''

# A module that ignores the output's dtype: float32 inputs, a float32 result, where the problem's
# output (as the kernel writes it) is float16.
WIDE_MODULE = '''
def reference(shape, params, inputs):
    return inputs["x"] * 3.0

def make_model(shape):
    import torch

    class Triple(torch.nn.Module):
        def forward(self, x):
            return x * 3.0

    return Triple()
'''
WIDE_X = np.array([0.1, 1.2345, -7.77, 1000.3], dtype=np.float32)

results = []


def check(name, fn):
    try:
        detail = fn()
        if detail and detail.startswith("SKIP"):
            results.append(None)
            print(f"{detail} {name}")
        else:
            results.append(True)
            print(f"PASS {name}" + (f": {detail}" if detail else ""))
    except Exception as e:
        results.append(False)
        print(f"FAIL {name}: {type(e).__name__}: {e}")


def folder(module_run):
    d = pathlib.Path(tempfile.mkdtemp(prefix="tune_module_run_"))
    (d / "reference.py").write_text(MODULE)
    w = np.array([1.0, 0.5, -2.0, 0.3333333], dtype=np.float32)
    # bfloat16 values, stored as float32 (which holds them exactly), as tune writes them
    x = np.array([1.0078125, -3.015625, 0.1005859375, 7.0], dtype=np.float32)
    idx = np.array([3, 0, 0, 2], dtype=np.int64)
    np.save(d / "t0.npy", w)
    np.save(d / "t1.npy", x)
    np.save(d / "t2.npy", idx)
    request = {"problem": "gather", "shape": {"N": 4, "T": "bfloat16"}, "module_run": module_run,
               "tensors": [{"name": "w", "role": "parameter", "shape": [4], "dtype": "bfloat16", "file": "t0.npy"},
                           {"name": "x", "role": "input", "shape": [4], "dtype": "bfloat16", "file": "t1.npy"},
                           {"name": "idx", "role": "input", "shape": [4], "dtype": "int64", "file": "t2.npy"}],
               "output": {"name": "out", "shape": [4], "dtype": "bfloat16", "file": "out.npy"}}
    (d / "request.json").write_text(json.dumps(request))
    return d


def run(d, backend):
    env = dict(os.environ, TUNE_REFERENCE_BACKEND=backend, SEEN_DIR=str(d))
    r = subprocess.run([sys.executable, str(RUNNER), str(d / "reference.py"), str(d)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr.strip().splitlines()[-1:] or r.returncode
    seen = d / "seen.jsonl"
    return [json.loads(line) for line in seen.read_text().splitlines()] if seen.exists() else []


def expected():
    w = np.array([1.0, 0.5, -2.0, 0.3333333], dtype=np.float32).astype(np.float64)
    x = np.array([1.0078125, -3.015625, 0.1005859375, 7.0], dtype=np.float64)
    return (x * w)[[3, 0, 0, 2]]


def numpy_reference_with_a_dtype_variable():
    d = folder("also")
    run(d, "numpy")
    out = np.load(d / "out.npy")
    assert out.dtype == np.float64 and np.array_equal(out, expected()), out
    assert (d / "module_out.npy").exists() == HAVE_TORCH, "module_out.npy exactly where torch imports"
    return "" if HAVE_TORCH else "the module run skipped: torch does not import"


def module_only_writes_no_reference():
    d = folder("only")
    run(d, "numpy")
    assert not (d / "out.npy").exists(), "module_run only: the float64 reference is tune's"
    assert (d / "module_out.npy").exists() == HAVE_TORCH


def integer_inputs_reach_the_module_as_int64():
    if not HAVE_TORCH:
        return "SKIP (torch does not import in " + sys.executable + ")"
    d = folder("also")
    seen = run(d, "torch")
    assert seen[0] == {"x": "torch.float64", "idx": "torch.int64", "w": "torch.float64"}, seen[0]
    assert seen[1] == {"x": "torch.bfloat16", "idx": "torch.int64", "w": "torch.bfloat16"}, seen[1]
    out, module = np.load(d / "out.npy"), np.load(d / "module_out.npy")
    assert np.allclose(out, expected(), rtol=1e-12), out
    assert np.allclose(module, out, rtol=2e-2) and module.dtype == np.float64, module
    assert not np.array_equal(module, out), "the bf16 run rounds (w[3] = 0.3333333 is not a bfloat16)"


def no_module_run_when_not_asked():
    if not HAVE_TORCH:
        return "SKIP (torch does not import in " + sys.executable + ")"
    d = folder("no")
    seen = run(d, "torch")
    assert len(seen) == 1 and not (d / "module_out.npy").exists(), seen


def wide_module_output_is_stored_in_the_outputs_dtype():
    if not HAVE_TORCH:
        return "SKIP (torch does not import in " + sys.executable + ")"
    d = pathlib.Path(tempfile.mkdtemp(prefix="tune_module_run_"))
    (d / "reference.py").write_text(WIDE_MODULE)
    np.save(d / "t0.npy", WIDE_X)
    request = {"problem": "triple", "shape": {"N": 4, "U": "float16"}, "module_run": "only",
               "tensors": [{"name": "x", "role": "input", "shape": [4], "dtype": "float32", "file": "t0.npy"}],
               "output": {"name": "out", "shape": [4], "dtype": "float16", "file": "out.npy"}}
    (d / "request.json").write_text(json.dumps(request))
    run(d, "torch")
    module = np.load(d / "module_out.npy")
    want = (WIDE_X * np.float32(3.0)).astype(np.float16).astype(np.float64)
    assert np.array_equal(module, want), f"{module} is not the float32 result stored in float16 ({want})"


def run_failing(body, backend=""):
    """The runner on a float32 problem of one input x (4,) whose reference.py is `body`: its last line."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="tune_module_run_"))
    (d / "reference.py").write_text(body)
    np.save(d / "t0.npy", WIDE_X)
    request = {"problem": "p", "shape": {"N": 4}, "module_run": "no",
               "tensors": [{"name": "x", "role": "input", "shape": [4], "dtype": "float32", "file": "t0.npy"}],
               "output": {"name": "out", "shape": [4], "dtype": "float32", "file": "out.npy"}}
    (d / "request.json").write_text(json.dumps(request))
    env = dict(os.environ, TUNE_REFERENCE_BACKEND=backend)
    r = subprocess.run([sys.executable, str(RUNNER), str(d / "reference.py"), str(d)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and not (d / "out.npy").exists(), (r.returncode, r.stderr[-300:])
    return r.stderr.strip().splitlines()[-1]


def a_function_that_is_none_is_named():
    """Adversarial round 7: `reference = np.zeros(4)` or `make_model = 42` read as "defines no
    reference(...)"; a module of make_model alone without torch failed on "No module named 'torch'"."""
    line = run_failing("import numpy as np\nreference = np.zeros(4)\n")
    assert "its reference is not a function but a value of type ndarray; define reference(shape, params, inputs)" in line, line
    line = run_failing("make_model = 42\n")
    assert "its make_model is not a function but a value of type int; define make_model(shape)" in line, line
    if HAVE_TORCH:
        return "the torch-less case skipped: torch imports"
    line = run_failing("def make_model(shape):\n    raise RuntimeError('not reached')\n")
    assert f"make_model(shape) needs PyTorch, which {sys.executable} cannot import" in line, line
    assert "define reference(shape, params, inputs) in numpy" in line, line


def a_coarse_model_output_is_refused():
    """A make_model whose float64 run returns float16 (a .half() inside) judges a float32 output coarsely."""
    if not HAVE_TORCH:
        return "SKIP (torch does not import in " + sys.executable + ")"
    module = WIDE_MODULE.replace("return x * 3.0\n\n    return", "return (x * 3.0).half()\n\n    return")
    assert ".half()" in module
    line = run_failing(module, "torch")
    assert "returned float16 values, coarser than the output 'out' (float32)" in line, line


def a_module_that_changes_its_inputs_leaves_the_next_runs_alone():
    """Adversarial round 7: an input the module run takes in its own dtype (an int64 index) shared
    memory with the array the float64 run takes next, so a forward that changes its inputs in place
    (idx.zero_()) gave the float64 reference other inputs. On the CPU, where no .to("cuda") copies."""
    if not HAVE_TORCH:
        return "SKIP (torch does not import in " + sys.executable + ")"
    d = folder("also")
    body = MODULE.replace("return (x * self.w)[idx]", "out = (x * self.w)[idx]\n            idx.zero_()\n"
                          "            return out")
    assert "idx.zero_()" in body
    (d / "reference.py").write_text(body)
    env = dict(os.environ, TUNE_REFERENCE_BACKEND="torch", SEEN_DIR=str(d), CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, str(RUNNER), str(d / "reference.py"), str(d)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr.strip().splitlines()[-1:]
    out = np.load(d / "out.npy")
    assert np.array_equal(out, expected()), f"{out}: the float64 run took the module run's changed index"


check("numpy's reference gets float64 arrays and the shape's dtype variable", numpy_reference_with_a_dtype_variable)
check("module_run only writes module_out.npy and no out.npy", module_only_writes_no_reference)
check("integer inputs reach make_model as int64, the module runs in bfloat16", integer_inputs_reach_the_module_as_int64)
check("no module run unless asked", no_module_run_when_not_asked)
check("a module's float32 result is stored in the float16 output's dtype", wide_module_output_is_stored_in_the_outputs_dtype)
check("a reference or make_model that is no function, or needs torch, is named", a_function_that_is_none_is_named)
check("a model output coarser than the output is refused", a_coarse_model_output_is_refused)
check("a module that changes its inputs leaves the next runs alone",
      a_module_that_changes_its_inputs_leaves_the_next_runs_alone)
passed, failed, skipped = results.count(True), results.count(False), results.count(None)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
