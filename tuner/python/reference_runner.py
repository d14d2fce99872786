"""tune's reference runner: runs a problem folder's reference.py on the data tune drew.

Usage (by tune, out of process): python3 reference_runner.py MODULE.py DIR
DIR holds request.json and one .npy file per parameter and input (in its dtype; bfloat16 as float32,
which holds it exactly); the runner writes DIR/out.npy (float64, the output tensor's shape), for an
int64 output also DIR/out_int64.npy (its exact integers, which float64 loses past 2^53), and
DIR/result.json ({"backend": ...}). A result of another shape, or not real, is refused. Processes
the reference leaves behind are killed, also when it ends its process at once (os._exit): the
reference runs in a child of the runner, which waits for it and kills what is left.
The module defines reference(shape, params, inputs) (numpy, float64 arrays) and/or make_model(shape)
(PyTorch: float tensors in float64, integer and bool inputs in their own dtype);
TUNE_REFERENCE_BACKEND=numpy|torch chooses, else PyTorch when it imports and numpy otherwise.
request.json's "module_run" ("no", "also", "only"): with "also" or "only", where make_model exists,
torch imports and some tensor is bfloat16 or float16, the module also runs in the tensors' dtypes
(module.to(dtype), inputs cast to their declared dtypes; on CUDA when available, else the CPU) and
DIR/module_out.npy gets its output as float64 (the module rule of parity). "only" skips the float64
reference (tune computed it itself).
Errors go to stderr, one line last, and the exit code is non-zero."""
import importlib.util
import json
import os
import sys


def fail(msg):
    sys.stdout.flush()  # the reference's own prints first: the last line of stderr is tune's message
    sys.stderr.write(msg.rstrip() + "\n")
    sys.exit(1)


def exception_line(e, lines=3, limit=200):
    """The exception's type and the first lines of its message, on one line of at most about limit
    characters: tune quotes the last line of stderr, which a message of several lines would leave
    without its type and its first (usually telling) line."""
    said = [line.strip() for line in str(e).splitlines() if line.strip()]
    text = " / ".join(said[:lines]) + (" / ..." if len(said) > lines else "")
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


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


def real_output(out, module_path, name, want, np, out_dtype="float64"):
    """The reference's result as float64 of exactly the output's shape, or one line saying why not."""
    if out is None:
        fail(f"{module_path}: the reference returned None; return a float array of the output '{name}', "
             f"shape {want}")
    given = out
    if isinstance(out, dict):
        fail(f"{module_path}: the reference returned a dict, not an array; return the output '{name}' alone, "
             f"an array of shape {want}")
    if not isinstance(out, np.ndarray):
        try:
            out = np.asarray(out)
        except Exception as e:  # a ragged list, ...
            if isinstance(given, tuple):
                out = None
            else:
                fail(f"{module_path}: the reference returned {type(given).__name__}, not an array ({e})")
        if isinstance(given, tuple) and (out is None or tuple(out.shape) != want):
            fail(f"{module_path}: the reference returned a tuple of {len(given)} item(s), not an array; return the "
                 f"output '{name}' alone, an array of shape {want}")
    if out.dtype.kind == "c":
        fail(f"{module_path}: the reference returned complex values ({out.dtype}); the output '{name}' is real")
    if out.dtype.kind not in "biuf":
        fail(f"{module_path}: the reference returned an array of {out.dtype} ({type(given).__name__}); "
             f"return a float array of the output '{name}'")
    if tuple(out.shape) != want:
        fail(f"{module_path}: the reference returned shape {tuple(out.shape)}, the output '{name}' has shape {want}")
    check_unmasked(out, module_path, name, np)
    check_precision(out.dtype.name, out_dtype, module_path, name)
    out = np.ma.getdata(out)
    check_integers_held(out, out.dtype.name, out_dtype, module_path, name, np)
    return np.ascontiguousarray(out, dtype=np.float64), exact_int64(out, out_dtype, module_path, name, np)


def check_integers_held(out, got, out_dtype, module_path, name, np):
    """An integer output judged by floats past their significand (2^53 in float64, 2^24 in float32):
    there neighbouring integers round to one value, so the reference no longer says which integer it
    means, and a kernel that computes the exact one would be failed."""
    bits = SIGNIFICAND_BITS.get(got)
    if bits is None or out_dtype in SIGNIFICAND_BITS or out_dtype == "bool" or out.size == 0:
        return
    with np.errstate(invalid="ignore"):
        past = np.isfinite(out) & (np.abs(out.astype(np.float64)) > 2.0 ** bits)
    if past.any():
        first = tuple(int(i) for i in np.argwhere(past)[0])
        fail(f"{module_path}: the reference returned {got} values past 2^{bits} for the {out_dtype} output '{name}' "
             f"(the first {out[first]!r} at {first}), where {got} does not hold every integer; compute and "
             f"return it as integers (an np.int64 array)")


def exact_int64(out, out_dtype, module_path, name, np):
    """An int64 output's values exactly (int64), which the float64 out.npy cannot carry past 2^53;
    None for other outputs, or where the values are no integers (tune refuses them in one line)."""
    if out_dtype != "int64":
        return None
    if out.dtype.kind == "u" and out.size and int(out.max()) > 2 ** 63 - 1:
        first = tuple(int(i) for i in np.argwhere(out > 2 ** 63 - 1)[0])
        fail(f"{module_path}: the reference output '{name}' is {int(out[first])} at {first}, beyond int64's range "
             f"[-2^63, 2^63); wrap or clamp it as the kernel's int64 arithmetic does")
    if out.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            if not (np.isfinite(out).all() and (np.trunc(out) == out).all()):
                return None
    return np.ascontiguousarray(out, dtype=np.int64)


def check_unmasked(out, module_path, name, np):
    """A masked array's masked elements hold whatever its data has there: tune reads no mask."""
    mask = np.ma.getmaskarray(out) if isinstance(out, np.ma.MaskedArray) else None
    if mask is not None and mask.any():
        first = tuple(int(i) for i in np.argwhere(mask)[0])
        fail(f"{module_path}: the reference returned a masked array with {int(mask.sum())} masked element(s) "
             f"(the first at {first}), which tune cannot compare; fill them with what the kernel writes there "
             f"(.filled(value)) for the output '{name}'")


# Significand bits of each floating dtype: a reference coarser than the output it judges would fail
# a correct kernel (a float16 reference of a float32 output is off by 5e-4, five times float32's rtol).
SIGNIFICAND_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53, "longdouble": 64, "float128": 64}


def check_precision(got, out_dtype, module_path, name):
    have, need = SIGNIFICAND_BITS.get(got), SIGNIFICAND_BITS.get(out_dtype)
    if have is not None and need is not None and have < need:
        fail(f"{module_path}: the reference returned {got} values, coarser than the output '{name}' ({out_dtype}) "
             f"they judge; compute and return it in float64")


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
    with open(os.path.join(folder, "request.json")) as f:
        request = json.load(f)
    if request.get("module_run") == "only" and not torch_available():
        return  # no module run without torch; tune's own float64 reference needs nothing from here
    try:
        import numpy as np
    except ImportError:
        fail(f"the reference needs numpy, which {sys.executable} lacks: install it (pip install numpy, or Debian's "
             "python3-numpy) or set TUNE_PYTHON to a Python that has it")
    shape = {k: (v if isinstance(v, str) else int(v)) for k, v in request["shape"].items()}
    params, inputs, raw, dtypes = {}, {}, {}, {}
    for t in request["tensors"]:
        a = np.load(os.path.join(folder, t["file"]))
        raw[t["name"]] = a
        dtypes[t["name"]] = t.get("dtype", "float32")
        (params if t["role"] == "parameter" else inputs)[t["name"]] = a.astype(np.float64)
    dtypes[request["output"]["name"]] = request["output"].get("dtype", "float32")
    module = call("its import", module_path, load_module, module_path)
    module_run = request.get("module_run", "no")
    if module_run != "no" and callable(getattr(module, "make_model", None)) and torch_available() \
            and any(d in LOW_PRECISION for d in dtypes.values()):
        out = run_module_in_dtypes(module, module_path, shape, request, raw, dtypes)
        out = real_output(out, module_path, request["output"]["name"], tuple(request["output"]["shape"]), np)[0]
        np.save(os.path.join(folder, "module_out.npy"), out)
    if module_run == "only":
        return
    # Defined, not necessarily callable: a reference that is no function is named as such below.
    has_numpy = getattr(module, "reference", None) is not None
    has_torch = getattr(module, "make_model", None) is not None
    choice = os.environ.get("TUNE_REFERENCE_BACKEND", "")
    if choice not in ("", "numpy", "torch"):
        fail(f"TUNE_REFERENCE_BACKEND={choice!r} is not numpy or torch")
    if not choice:
        choice = "torch" if has_torch and (torch_available() or not has_numpy) else "numpy"
    check_backend(module, module_path, choice)
    result = {"backend": choice}
    if choice == "torch":
        import torch
        model = make_double(call("make_model", module_path, module.make_model, dict(shape)), torch)
        state = {k: torch.from_numpy(v) for k, v in params.items()}
        check_state(model, state, module_path)
        model.load_state_dict(state, strict=True)
        model.eval()
        # Float inputs in float64; integer and bool inputs in their own dtype (an index stays int64).
        args = [torch_input(raw[t["name"]], dtypes[t["name"]], "float64", torch)
                for t in request["tensors"] if t["role"] == "input"]
        name = request["output"]["name"]
        out = forward(model, args, module_path, torch, output=(name, dtypes[name]))
        result["torch_version"] = torch.__version__
    else:
        out = call("reference()", module_path, module.reference, dict(shape), params, inputs)
    out, exact = real_output(out, module_path, request["output"]["name"], tuple(request["output"]["shape"]), np,
                             dtypes[request["output"]["name"]])
    np.save(os.path.join(folder, "out.npy"), out)
    if exact is not None:
        np.save(os.path.join(folder, "out_int64.npy"), exact)
    with open(os.path.join(folder, "result.json"), "w") as f:
        json.dump(result, f)


def check_backend(module, module_path, choice):
    """The function the chosen backend calls exists and can run, or one line that says what to do."""
    fn, signature = ("reference", "reference(shape, params, inputs)") if choice == "numpy" else \
        ("make_model", "make_model(shape)")
    what = getattr(module, fn, None)
    if what is None:
        fail(f"{module_path} defines no {signature} for {'numpy' if choice == 'numpy' else 'PyTorch'}")
    if not callable(what):
        fail(f"{module_path}: its {fn} is not a function but a value of type {type(what).__name__}; define {signature}")
    if choice == "torch" and not torch_available():
        fail(f"{module_path}: make_model(shape) needs PyTorch, which {sys.executable} cannot import: install torch "
             "there, set TUNE_PYTHON to a Python that has it, or define reference(shape, params, inputs) in numpy")


# The one name table of tune's Python side: a dtype of tune (PyTorch's names) to torch's attribute.
TORCH_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
                "int8": "int8", "int32": "int32", "int64": "int64", "uint8": "uint8", "bool": "bool"}
LOW_PRECISION = ("bfloat16", "float16")
FLOATING = ("float16", "bfloat16", "float32", "float64")


def torch_input(array, dtype, float_as, torch):
    """A tensor of a .npy array: integer and bool ones in their own dtype, float ones as float_as
    (float64 for the reference, the declared dtype for the module run)."""
    if dtype not in TORCH_DTYPES:
        fail(f"request.json: unknown dtype {dtype!r}")
    target = float_as if dtype in FLOATING else dtype
    import numpy as np
    # A copy always: a tensor of the array's own dtype would share its memory, and a forward that
    # changes its inputs in place would change what the next run (the float64 reference) takes.
    return torch.from_numpy(np.ascontiguousarray(array)).to(getattr(torch, TORCH_DTYPES[target]), copy=True)


def check_state(model, state, module_path):
    only_problem, only_module = diff_keys(model.state_dict().keys(), state.keys())
    if only_problem or only_module:
        fail(f"{module_path}: make_model's state_dict does not match the problem's parameters "
             f"(only in problem.json: {', '.join(only_problem) or 'none'}; "
             f"only in the module: {', '.join(only_module) or 'none'})")


def forward(model, args, module_path, torch, store_as=None, output=None):
    """The model's output as float64 (an integer one of the float64 reference run in its own
    dtype); with store_as, a floating output of another dtype stored in that one first (the output
    tensor's declared dtype, as the kernel stores it)."""
    import numpy as np
    with torch.no_grad():
        out = call("forward", module_path, model, *args)
    if out is None:
        fail(f"{module_path}: the model's forward returned None; return the output as a tensor")
    if not isinstance(out, torch.Tensor):
        fail(f"{module_path}: the model returned {type(out).__name__}, not a tensor")
    if out.is_complex():
        fail(f"{module_path}: the model returned complex values ({out.dtype}); the output is real")
    if store_as is not None and out.is_floating_point() and out.dtype != store_as:
        out = out.to(store_as)
    got = str(out.dtype).split(".")[-1]
    if output and out.is_floating_point():  # the float64 reference run: (the output's name, its dtype)
        check_precision(got, output[1], module_path, output[0])
        check_integers_held(out.detach().cpu().double().numpy(), got, output[1], module_path, output[0], np)
    out = out.detach().cpu()
    # An integer tensor keeps its dtype: an int64 output past 2^53 is exact only as int64.
    return out.numpy() if output and not out.is_floating_point() else out.double().numpy()


def run_module_in_dtypes(module, module_path, shape, request, raw, dtypes):
    """The user's module as they run it in low precision: model.to(dtype) (its floating parameters),
    each parameter then in its declared dtype, inputs cast to theirs; CUDA when available. Its
    output is stored in the output's declared dtype: a module that returns float32 where the kernel
    writes float16 is judged with the rounding the kernel cannot avoid."""
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out_dtype = dtypes[request["output"]["name"]]
    low = out_dtype if out_dtype in LOW_PRECISION else next(d for d in dtypes.values() if d in LOW_PRECISION)
    model = call("make_model", module_path, module.make_model, dict(shape))
    if not isinstance(model, torch.nn.Module):
        raise TypeError("make_model(shape) must return a torch.nn.Module")
    model = model.to(device=device, dtype=getattr(torch, TORCH_DTYPES[low]))
    params = [t for t in request["tensors"] if t["role"] == "parameter"]
    state = {t["name"]: torch_input(raw[t["name"]], dtypes[t["name"]], dtypes[t["name"]], torch) for t in params}
    check_state(model, state, module_path)
    model.load_state_dict(state, strict=True)
    owned = dict(model.named_parameters())
    owned.update(dict(model.named_buffers()))
    for name, t in state.items():  # a parameter declared in another dtype than the module's keeps it
        if name in owned and owned[name].dtype != t.dtype and t.is_floating_point():
            owned[name].data = owned[name].data.to(t.dtype)
    model.eval()
    args = [torch_input(raw[t["name"]], dtypes[t["name"]], dtypes[t["name"]], torch).to(device)
            for t in request["tensors"] if t["role"] == "input"]
    return forward(model, args, module_path, torch, getattr(torch, TORCH_DTYPES[out_dtype]))


def make_double(model, torch):
    if not isinstance(model, torch.nn.Module):
        raise TypeError("make_model(shape) must return a torch.nn.Module")
    return model.double()


def diff_keys(have, want):
    have, want = set(have), set(want)
    return sorted(want - have), sorted(have - want)


def run_main():
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # one line for tune, the traceback above it
        import traceback
        traceback.print_exc()
        fail(exception_line(e))  # tune says "<module> failed: " before it
    finally:
        kill_leftovers()


def die_with_parent():
    """SIGKILL when the runner that waits for this child dies (PR_SET_PDEATHSIG), as the runner
    itself dies with tune."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def run_in_child():
    """Runs the reference in a child and waits for it. A reference that ends its process at once
    (os._exit) skips the cleanup in run_main, and the processes it started would be orphans of a
    subreaper that is gone: reparented to init, they would outlive tune. The runner, a subreaper
    that outlives the child, takes them, kills them, and ends as the child ended."""
    become_subreaper()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        die_with_parent()
        if os.getppid() != parent:  # the runner died before the line above
            os._exit(1)
        run_main()
        return
    while True:
        try:
            status = os.waitpid(pid, 0)[1]
            break
        except InterruptedError:
            continue
    kill_leftovers()
    if os.WIFSIGNALED(status):  # tune reports the signal: end by it too
        import signal
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    run_in_child()
