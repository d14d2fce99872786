"""tune's reference runner: runs a problem folder's reference.py on the data tune drew.

Usage (by tune, out of process): python3 reference_runner.py MODULE.py DIR
DIR holds request.json and one float32 .npy file per parameter and input; the runner writes
DIR/out.npy (float64, the output tensor's shape) and DIR/result.json ({"backend": ...}). A result of
another shape, or not real, is refused. Processes the reference leaves behind are killed.
The module defines reference(shape, params, inputs) (numpy) and/or make_model(shape) (PyTorch);
TUNE_REFERENCE_BACKEND=numpy|torch chooses, else PyTorch when it imports and numpy otherwise.
Errors go to stderr, one line last, and the exit code is non-zero."""
import importlib.util
import json
import os
import sys


def fail(msg):
    sys.stdout.flush()  # the reference's own prints first: the last line of stderr is tune's message
    sys.stderr.write(msg.rstrip() + "\n")
    sys.exit(1)


def call(what, module_path, fn, *args):
    """Runs the module's code; a sys.exit() in it is a failure, not an exit without a result."""
    try:
        return fn(*args)
    except SystemExit as e:
        fail(f"{module_path} called sys.exit({e.code!r}) in {what}; a reference returns its output")


def children(pid):
    """The processes whose parent is pid (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def become_subreaper():
    """tune starts the runner as a child subreaper; this makes it one also when $TUNE_PYTHON is a
    wrapper that runs Python as its child: an orphan of the reference comes to the runner."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def kill_leftovers():
    """Kills every process the reference left behind. tune starts the runner as a child subreaper
    (PR_SET_CHILD_SUBREAPER), so an orphan of the reference, also one in a session of its own, is
    the runner's child by now; a child still running is killed and its own children come next."""
    import signal
    for _ in range(64):
        left = children(os.getpid())
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


def real_output(out, module_path, name, want, np):
    """The reference's result as float64 of exactly the output's shape, or one line saying why not."""
    if not isinstance(out, np.ndarray):
        try:
            out = np.asarray(out)
        except Exception as e:  # a ragged list, ...
            fail(f"{module_path}: the reference returned {type(out).__name__}, not an array ({e})")
    if out.dtype.kind == "c":
        fail(f"{module_path}: the reference returned complex values ({out.dtype}); the output '{name}' is real")
    if out.dtype.kind not in "biuf":
        fail(f"{module_path}: the reference returned an array of {out.dtype} ({type(out).__name__}); "
             f"return a float array of the output '{name}'")
    if tuple(out.shape) != want:
        fail(f"{module_path}: the reference returned shape {tuple(out.shape)}, the output '{name}' has shape {want}")
    return np.ascontiguousarray(out, dtype=np.float64)


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
    become_subreaper()
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
    module = call("its import", module_path, load_module, module_path)
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
        model = make_double(call("make_model", module_path, module.make_model, dict(shape)), torch)
        state = {k: torch.from_numpy(v) for k, v in params.items()}
        only_problem, only_module = diff_keys(model.state_dict().keys(), state.keys())
        if only_problem or only_module:
            fail(f"{module_path}: make_model's state_dict does not match the problem's parameters "
                 f"(only in problem.json: {', '.join(only_problem) or 'none'}; "
                 f"only in the module: {', '.join(only_module) or 'none'})")
        model.load_state_dict(state, strict=True)
        model.eval()
        with torch.no_grad():
            out = call("forward", module_path, model,
                       *[torch.from_numpy(inputs[t["name"]]) for t in request["tensors"] if t["role"] == "input"])
        if not isinstance(out, torch.Tensor):
            fail(f"{module_path}: the model returned {type(out).__name__}, not a tensor")
        if out.is_complex():
            fail(f"{module_path}: the model returned complex values ({out.dtype}); the output is real")
        out = out.detach().cpu().double().numpy()
        result["torch_version"] = torch.__version__
    else:
        out = call("reference()", module_path, module.reference, dict(shape), params, inputs)
    out = real_output(out, module_path, request["output"]["name"], tuple(request["output"]["shape"]), np)
    np.save(os.path.join(folder, "out.npy"), out)
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
    finally:
        kill_leftovers()
