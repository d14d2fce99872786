#!/usr/bin/env python3
"""Writes a golden case of a problem folder: seeded parameters and inputs and the float64 output of
the folder's reference module, in the format `tune verify` reads (docs/problem-format.md).

    scripts/make_goldens.py --problem configs/contact --shape B=3,N=5,C=8,H=4 --seed 0 -o FILE.json
    scripts/make_goldens.py --problem examples/rmsnorm --shape M=4,K=64,T=bfloat16 -o FILE.json

The tensors (names, shapes, init) and edits come from the folder's problem.json ("tensors",
"edits"). tune draws them at --seed (`tune problem draw`: the very data tune draws; --generator numpy
for numpy's generator, the goldens under configs/ were made with it), in order, element by element,
row-major; float inits are drawn as float32 and rounded to the tensor's dtype (a dtype variable's
value comes from --shape T=bfloat16, else its default), integer ones (index, integers) and bernoulli
drawn as tune draws them; then the edits apply, their values rounded to the tensor's dtype too (parity
ones included: a golden case is a parity case). Each tensor is written with its "dtype", and the
dtype variables in "shape"; every value is one its dtype holds exactly. The reference's
folder is on sys.path, as in tune, so it may import a file beside it. The
output is the PyTorch module's (make_model, run in float64) where torch imports, else the numpy
reference()'s, said on stderr; --backend chooses. Dims the shape leaves out take problem.json's
defaults. Exit codes: 0 written, 2 bad input, 3 the backend asked for is missing."""
import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import problem_folder as pf  # noqa: E402


def parse_shape(text, problem):
    """{dim: int} then {dtype variable: name} from DIM=VALUE,...,T=bfloat16; problem.json's defaults
    fill what the text leaves out."""
    spec = problem.get("shape", {})
    variables = pf.dtypes.variables(problem)
    dims, given = dict(spec.get("defaults", {})), {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = (p.strip() for p in item.partition("="))
        if not sep:
            raise pf.ProblemError(f"--shape: {item!r} is not DIM=VALUE")
        if name in variables:
            given[name] = value
            continue
        try:
            dims[name] = int(value)
        except ValueError:
            raise pf.ProblemError(f"--shape: {item!r}: the value is not an integer")
    order = spec.get("dims") or list(dims)
    missing = [d for d in order if d not in dims]
    unknown = [d for d in dims if d not in order]
    if missing or unknown:
        raise pf.ProblemError(f"--shape: dims {', '.join(order)} expected"
                              + (f"; missing {', '.join(missing)}" if missing else "")
                              + (f"; unknown {', '.join(unknown)}" if unknown else ""))
    try:
        bound = pf.dtypes.bind(problem, given)
    except ValueError as e:
        raise pf.ProblemError(f"--shape: {e}")
    return {d: dims[d] for d in order}, bound


def expression_names(dims, bound):
    """What an expression of the file sees: the dims, each dtype variable (its dtype's name, compared
    with the dtype names as constants) and its `<var>_bytes`."""
    names = {**dims, **{n: n for n in pf.dtypes.DTYPES}, **bound}
    names.update({f"{var}_bytes": pf.dtypes.size(d) for var, d in bound.items()})
    return names


def run_torch(module, shape, params, inputs, of):
    import torch

    def tensor(name, a):  # integer and bool tensors in their own dtype (nn.EmbeddingBag's int64 indices)
        d = of[name]
        return torch.from_numpy(a if pf.dtypes.is_floating(d) else a.astype(pf.dtypes.numpy_dtype(d)))

    model = module.make_model(shape).double()
    model.load_state_dict({k: tensor(k, v) for k, v in params.items()}, strict=True)
    model.eval()
    with torch.no_grad():
        out = model(*(tensor(k, v) for k, v in inputs.items()))
    return out.detach().cpu().numpy().astype(np.float64)


def choose_backend(module, wanted):
    has_torch_model = hasattr(module, "make_model")
    has_numpy = hasattr(module, "reference")
    try:
        import torch  # noqa: F401
        torch_ok = True
    except ImportError:
        torch_ok = False
    if wanted == "torch" and not (torch_ok and has_torch_model):
        raise pf.ProblemError("--backend torch: " + ("torch does not import" if not torch_ok
                                                     else "the reference module has no make_model"))
    if wanted == "numpy" and not has_numpy:
        raise pf.ProblemError("--backend numpy: the reference module has no reference()")
    if wanted != "auto":
        return wanted
    if torch_ok and has_torch_model:
        return "torch"
    if has_numpy:
        print("make_goldens: " + ("torch does not import" if not torch_ok else "no make_model")
              + "; the output is the numpy reference()'s", file=sys.stderr)
        return "numpy"
    raise pf.ProblemError("the reference module has no make_model usable here and no reference()")


def golden(folder, shape_text, seed, backend="auto", generator="tune"):
    problem, folder = pf.load_problem(folder)
    module = pf.load_module(pf.reference_path(problem, folder))
    tensors, edits = pf.tensors_and_edits(problem, folder)
    dims, bound = parse_shape(shape_text, problem)
    names = expression_names(dims, bound)
    for c in problem.get("shape", {}).get("constraints", []):
        if not pf.evaluate(c["expr"], names):
            raise pf.ProblemError(f"--shape: {c.get('message', c['expr'])}")
    data = pf.tune_draw(folder, {**dims, **bound}, seed) if generator == "tune" else \
        pf.draw(tensors, edits, dims, seed, bound=bound)
    of = {t["name"]: pf.tensor_dtype(t, bound) for t in tensors}
    params = {t["name"]: data[t["name"]] for t in pf.roles(tensors, "parameter")}
    inputs = {t["name"]: data[t["name"]] for t in pf.roles(tensors, "input")}
    outputs = pf.roles(tensors, "output")
    if len(outputs) != 1:
        raise pf.ProblemError(f"{len(outputs)} tensors of role output; exactly one expected")
    shape = {**dims, **bound}  # the golden's "shape": {"M": 64, "T": "bfloat16"}, as results files hold it
    backend = choose_backend(module, backend)
    out = run_torch(module, shape, params, inputs, of) if backend == "torch" else \
        np.asarray(module.reference(shape, params, inputs), dtype=np.float64)
    expected = pf.tensor_shape(outputs[0], dims)
    if out.shape != expected:
        raise pf.ProblemError(f"the {backend} reference returned shape {out.shape}, not {expected}")

    def entry(name, a):  # each value's shortest decimal: JSON doubles round-trip exactly; integers as integers
        floating = pf.dtypes.is_floating(of[name])
        return {"shape": list(a.shape), "dtype": of[name],
                "data": (a if floating else a.astype(np.int64)).ravel().tolist()}

    return {"problem": pf.problem_name(problem, folder), "shape": shape,
            "params": {k: entry(k, v) for k, v in params.items()},
            "inputs": {k: entry(k, v) for k, v in inputs.items()},
            "output": {"shape": list(out.shape), "dtype": "float64", "data": out.ravel().tolist()}}, backend


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", required=True, help="problem folder (or its problem.json)")
    ap.add_argument("--shape", required=True,
                    help="DIM=VALUE,... e.g. B=3,N=5,C=8,H=4; a dtype variable too: M=64,T=bfloat16 (else its default)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generator drawing every tensor (default 0)")
    ap.add_argument("-o", "--out", required=True, help="golden JSON file to write")
    ap.add_argument("--backend", choices=("auto", "torch", "numpy"), default="auto",
                    help="the output's reference: the PyTorch module, the numpy function, or torch where it imports")
    ap.add_argument("--generator", choices=("tune", "numpy"), default="tune",
                    help="tune: the data tune draws at this seed (tune problem draw); numpy: numpy's default_rng "
                         "(faster for large shapes; the goldens made before issue 35 used it)")
    a = ap.parse_args(argv)
    try:
        doc, backend = golden(a.problem, a.shape, a.seed, a.backend, a.generator)
    except pf.ProblemError as e:
        print(f"make_goldens: {e}", file=sys.stderr)
        return 3 if "does not import" in str(e) else 2
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc) + "\n")
    os.replace(tmp, out)
    print(f"{out}: {doc['problem']} {' '.join(f'{k}{v}' for k, v in doc['shape'].items())} seed {a.seed} ({backend})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
