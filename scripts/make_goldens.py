#!/usr/bin/env python3
"""Writes a golden case of a problem folder: seeded parameters and inputs and the float64 output of
the folder's reference module, in the format `tune verify` reads (docs/problem-format.md).

    scripts/make_goldens.py --problem configs/contact --shape B=3,N=5,C=8,H=4 --seed 0 -o FILE.json
    scripts/make_goldens.py --problem examples/rmsnorm --shape M=4,K=64,T=bfloat16 -o FILE.json

tune is the one reader of the folder's problem.json (issue 38): `tune problem show --json` gives the
problem at the shape (its tensors, their dtypes and shapes, its reference module; a dtype variable's
value comes from --shape T=bfloat16, else its default; dims the shape leaves out take the problem's
defaults; a shape the problem refuses is refused in tune's words) and `tune problem draw` the data:
the parameters and inputs tune draws at --seed, with the edits of purpose parity (a golden case is a
parity case), each value one its dtype holds exactly. Each tensor is written with its "dtype", and
the dtype variables in "shape". tune is $TUNE_BIN, else <prefix>/bin/tune of the install this script
is part of (<prefix>/share/tune/scripts/make_goldens.py), else build/tuner/tune of this checkout, else
tune on PATH. The reference's folder is on sys.path, as in tune, so it may import a file beside it. The
output is the PyTorch module's (make_model, run in float64) where torch imports, else the numpy
reference()'s, said on stderr; --backend chooses. Exit codes: 0 written, 2 bad input, 3 numpy or the
backend asked for is missing."""
import argparse
import json
import os
import pathlib
import sys

try:
    import numpy as np
except ImportError:
    # The first python3 on PATH (a virtual environment, pyenv, conda) may lack numpy: say which one
    # and what to run instead, not a traceback.
    print(f"make_goldens: numpy does not import for {sys.executable}; run this script with a Python that has it "
          "(/usr/bin/python3 scripts/make_goldens.py ... with Debian's python3-numpy, or pip install numpy)",
          file=sys.stderr)
    sys.exit(3)

# The Python side of tune: tuner/python/ of a checkout (this file in scripts/), or python/ beside
# this file's folder in an install (<prefix>/share/tune/scripts/ and <prefix>/share/tune/python/).
HERE = pathlib.Path(__file__).resolve().parent
for modules in (HERE.parent / "tuner" / "python", HERE.parent / "python"):
    if (modules / "tune_problem.py").is_file():
        sys.path.insert(0, str(modules))
        break
import dtypes  # noqa: E402
import tune_problem as tp  # noqa: E402


def parse_shape(text):
    """{name: value} of DIM=VALUE,...,T=bfloat16, as given: tune checks them (tune problem show)."""
    shape = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = (p.strip() for p in item.partition("="))
        if not sep:
            raise tp.ProblemError(f"--shape: {item!r} is not DIM=VALUE")
        if name in shape:
            raise tp.ProblemError(f"--shape: {name} is given twice ({shape[name]} and {value}); give each once")
        shape[name] = value
    return shape


def run_torch(module, shape, params, inputs, of):
    import torch

    def tensor(name, a):  # integer and bool tensors in their own dtype (nn.EmbeddingBag's int64 indices)
        d = of[name]
        return torch.from_numpy(a if dtypes.is_floating(d) else a.astype(dtypes.numpy_dtype(d)))

    model = module.make_model(shape).double()
    model.load_state_dict({k: tensor(k, v) for k, v in params.items()}, strict=True)
    model.eval()
    with torch.no_grad():
        out = model(*(tensor(k, v) for k, v in inputs.items()))
    return out.detach().cpu().numpy()  # in its dtype: an int64 output past 2^53 is exact only as int64


def choose_backend(module, wanted):
    has_torch_model = hasattr(module, "make_model")
    has_numpy = hasattr(module, "reference")
    try:
        import torch  # noqa: F401
        torch_ok = True
    except ImportError:
        torch_ok = False
    if wanted == "torch" and not (torch_ok and has_torch_model):
        raise tp.ProblemError("--backend torch: " + ("torch does not import" if not torch_ok
                                                     else "the reference module has no make_model"))
    if wanted == "numpy" and not has_numpy:
        raise tp.ProblemError("--backend numpy: the reference module has no reference()")
    if wanted != "auto":
        return wanted
    if torch_ok and has_torch_model:
        return "torch"
    if has_numpy:
        print("make_goldens: " + ("torch does not import" if not torch_ok else "no make_model")
              + "; the output is the numpy reference()'s", file=sys.stderr)
        return "numpy"
    raise tp.ProblemError("the reference module has no make_model usable here and no reference()")


def reference_output(module, backend, shape, params, inputs, of, out_dtype):
    """The reference's output, refused as tune refuses it (docs/problem-format.md): a reference that
    raises, returns complex values or a value that is not finite stops with one line. A float output's
    values in float64; an integer or bool output's as Python ints, exactly (an int64 past 2^53 too)."""
    try:
        raw = run_torch(module, shape, params, inputs, of) if backend == "torch" else \
            np.asarray(module.reference(shape, params, inputs))
    except Exception as e:  # the reference's own error, whatever it is: quoted, as tune quotes it
        first = (str(e).strip().splitlines() or [""])[0]
        raise tp.ProblemError(f"the {backend} reference raised {type(e).__name__}: {first}; fix the reference")
    if np.iscomplexobj(raw):
        raise tp.ProblemError(f"the {backend} reference returned complex values ({raw.dtype}); "
                              "it must return real ones")
    try:
        out = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise tp.ProblemError(f"the {backend} reference returned {raw.dtype} values, not numbers ({e})")
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise tp.ProblemError(f"the {backend} reference's output is {out.ravel()[bad[0]]} at element {bad[0]} "
                              f"({bad.size} not finite); a reference must be finite")
    if dtypes.is_floating(out_dtype):
        return out
    return integer_output(np.asarray(raw), backend, out_dtype)


# Significand bits of the floats a reference may return: past them a float no longer says which
# integer an integer output holds (tune's reference_runner refuses them the same way).
SIGNIFICAND_BITS = {"float16": 11, "float32": 24, "float64": 53}


def integer_output(raw, backend, out_dtype):
    """An integer or bool output's values as Python ints of the reference's own integers (numpy's
    float64 would round an int64 past 2^53), same shape; floats only where they are integers exactly."""
    if raw.dtype.kind in "biu":
        return np.array(raw.tolist(), dtype=object).reshape(raw.shape) if raw.size else raw.astype(np.int64)
    bits = SIGNIFICAND_BITS.get(raw.dtype.name, 53)
    past = np.flatnonzero(np.abs(raw.astype(np.float64)) > 2.0 ** bits)
    if past.size:
        raise tp.ProblemError(f"the {backend} reference returned {raw.dtype} values past 2^{bits} for the {out_dtype} "
                              f"output (the first {raw.ravel()[past[0]]!r} at element {past[0]}), where {raw.dtype} "
                              "does not hold every integer; compute and return it as integers (an np.int64 array)")
    return raw.astype(np.float64)  # a non-integer is refused by unholdable, as tune refuses it


def write(out, doc):
    """doc written to out through a temporary file beside it, or one line (ProblemError) why not."""
    if out.is_dir():
        raise tp.ProblemError(f"-o {out}: is a folder; name the golden JSON file to write")
    tmp = out.with_name(out.name + ".tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc, allow_nan=False) + "\n")
        os.replace(tmp, out)
    except OSError as e:
        if tmp.parent.is_dir():
            tmp.unlink(missing_ok=True)
        raise tp.ProblemError(f"-o {out}: cannot be written ({e.strerror or e}); check the path and its permissions")


def golden(folder, shape_text, seed, backend="auto"):
    facts = tp.show(folder, parse_shape(shape_text))  # the problem at this shape, as tune reads it
    if not facts["reference"]:
        raise tp.ProblemError(f"{facts['folder']}: no reference.py (problem.json reference.python) for the output")
    module = tp.load_module(facts["reference"])
    data = tp.draw(folder, facts["shape"], seed)
    of = {t["name"]: t["dtype"] for t in facts["tensors"]}
    params = {t["name"]: data[t["name"]].astype(np.float64) for t in tp.roles(facts, "parameter")}
    inputs = {t["name"]: data[t["name"]].astype(np.float64) for t in tp.roles(facts, "input")}
    outputs = tp.roles(facts, "output")
    if len(outputs) != 1:
        raise tp.ProblemError(f"{len(outputs)} tensors of role output; exactly one expected")
    shape = facts["shape"]  # the golden's "shape": {"M": 64, "T": "bfloat16"}, as results files hold it
    backend = choose_backend(module, backend)
    out_dtype = outputs[0]["dtype"]
    out = reference_output(module, backend, shape, params, inputs, of, out_dtype)
    expected = tuple(outputs[0]["shape"])
    if out.shape != expected:
        raise tp.ProblemError(f"the {backend} reference returned shape {out.shape}, not {expected}")
    for i, v in enumerate(out.ravel().tolist()):  # a value no kernel storing the output's dtype can match
        why = dtypes.unholdable(out_dtype, v)
        if why:
            raise tp.ProblemError(f"the {backend} reference's output is {v} at element {i}, which its dtype "
                                  f"{out_dtype} cannot hold: {why}")

    def entry(name, a):  # each value's shortest decimal: JSON doubles round-trip exactly; integers as integers
        floating = dtypes.is_floating(of[name])
        return {"shape": list(a.shape), "dtype": of[name],
                "data": (a if floating else a.astype(np.int64)).ravel().tolist()}

    return {"problem": facts["problem"], "shape": shape,
            "params": {k: entry(k, v) for k, v in params.items()},
            "inputs": {k: entry(k, v) for k, v in inputs.items()},
            "output": output_entry(out, out_dtype)}, backend


def output_entry(out, out_dtype):
    """A float output's float64 values; an integer or bool output's integers as JSON integers, in its
    own dtype, so that tune verify compares them exactly (as doubles an int64 past 2^53 is not itself)."""
    if dtypes.is_floating(out_dtype):
        return {"shape": list(out.shape), "dtype": "float64", "data": out.ravel().tolist()}
    return {"shape": list(out.shape), "dtype": out_dtype, "data": [int(v) for v in out.ravel().tolist()]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", required=True, help="problem folder (or its problem.json)")
    ap.add_argument("--shape", required=True,
                    help="DIM=VALUE,... e.g. B=3,N=5,C=8,H=4; a dtype variable too: M=64,T=bfloat16 (else its default)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generator drawing every tensor (default 0)")
    ap.add_argument("-o", "--out", required=True, help="golden JSON file to write")
    ap.add_argument("--backend", choices=("auto", "torch", "numpy"), default="auto",
                    help="the output's reference: the PyTorch module, the numpy function, or torch where it imports")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out)
    try:
        doc, backend = golden(a.problem, a.shape, a.seed, a.backend)
        write(out, doc)
    except tp.ProblemError as e:
        print(f"make_goldens: {e}", file=sys.stderr)
        return 3 if "does not import" in str(e) else 2
    print(f"{out}: {doc['problem']} {' '.join(f'{k}{v}' for k, v in doc['shape'].items())} seed {a.seed} ({backend})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
