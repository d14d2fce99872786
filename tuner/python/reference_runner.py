"""tune's reference runner: runs a problem folder's reference.py on the data tune drew.

Usage (by tune, out of process): python3 reference_runner.py MODULE.py DIR
DIR holds request.json and one float32 .npy file per parameter and input; the runner writes
DIR/out.npy (float64, the output tensor's shape) and DIR/result.json ({"backend": ...}).
The module defines reference(shape, params, inputs) (numpy) and/or make_model(shape) (PyTorch);
TUNE_REFERENCE_BACKEND=numpy|torch chooses, else PyTorch when it imports and numpy otherwise.
Errors go to stderr, one line last, and the exit code is non-zero."""
import importlib.util
import json
import os
import sys


def fail(msg):
    sys.stderr.write(msg.rstrip() + "\n")
    sys.exit(1)


def load_module(path):
    spec = importlib.util.spec_from_file_location("tune_problem_reference", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    return module


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def main():
    if len(sys.argv) != 3:
        fail("usage: reference_runner.py MODULE.py DIR")
    module_path, folder = sys.argv[1], sys.argv[2]
    try:
        import numpy as np
    except ImportError:
        fail(f"the reference needs numpy, which {sys.executable} lacks: install it (pip install numpy, or Debian's "
             "python3-numpy) or set TUNE_PYTHON to a Python that has it")
    with open(os.path.join(folder, "request.json")) as f:
        request = json.load(f)
    shape = {k: int(v) for k, v in request["shape"].items()}
    params, inputs = {}, {}
    for t in request["tensors"]:
        a = np.load(os.path.join(folder, t["file"])).astype(np.float64)
        (params if t["role"] == "parameter" else inputs)[t["name"]] = a
    module = load_module(module_path)
    has_numpy = callable(getattr(module, "reference", None))
    has_torch = callable(getattr(module, "make_model", None))
    choice = os.environ.get("TUNE_REFERENCE_BACKEND", "")
    if choice not in ("", "numpy", "torch"):
        fail(f"TUNE_REFERENCE_BACKEND={choice!r} is not numpy or torch")
    if not choice:
        choice = "torch" if has_torch and (torch_available() or not has_numpy) else "numpy"
    if choice == "numpy" and not has_numpy:
        fail(f"{module_path} defines no reference(shape, params, inputs) for numpy")
    if choice == "torch" and not has_torch:
        fail(f"{module_path} defines no make_model(shape) for PyTorch")
    result = {"backend": choice}
    if choice == "torch":
        import torch
        model = make_double(module.make_model(dict(shape)), torch)
        state = {k: torch.from_numpy(v) for k, v in params.items()}
        only_problem, only_module = diff_keys(model.state_dict().keys(), state.keys())
        if only_problem or only_module:
            fail(f"{module_path}: make_model's state_dict does not match the problem's parameters "
                 f"(only in problem.json: {', '.join(only_problem) or 'none'}; "
                 f"only in the module: {', '.join(only_module) or 'none'})")
        model.load_state_dict(state, strict=True)
        model.eval()
        with torch.no_grad():
            out = model(*[torch.from_numpy(inputs[t["name"]]) for t in request["tensors"] if t["role"] == "input"])
        out = out.detach().cpu().double().numpy()
        result["torch_version"] = torch.__version__
    else:
        out = np.asarray(module.reference(dict(shape), params, inputs), dtype=np.float64)
    want = tuple(request["output"]["shape"])
    if out.size != int(np.prod(want, dtype=np.int64)):
        fail(f"{module_path}: the reference returned shape {tuple(out.shape)}, the output "
             f"'{request['output']['name']}' has shape {want}")
    np.save(os.path.join(folder, "out.npy"), np.ascontiguousarray(out.reshape(want), dtype=np.float64))
    with open(os.path.join(folder, "result.json"), "w") as f:
        json.dump(result, f)


def make_double(model, torch):
    if not isinstance(model, torch.nn.Module):
        raise TypeError("make_model(shape) must return a torch.nn.Module")
    return model.double()


def diff_keys(have, want):
    have, want = set(have), set(want)
    return sorted(want - have), sorted(have - want)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # one line for tune, the traceback above it
        import traceback
        traceback.print_exc()
        fail(f"reference failed: {type(e).__name__}: {e}")
