#!/usr/bin/env python3
"""The dtype examples' references (issue 35) against a computation written out element by element.

    example_references_test.py REPO_ROOT

examples/rmsnorm, examples/embedding_bag and examples/softmax: reference() (numpy float64) on small
seeded data, with the inputs as tune hands them (float64 arrays; embedding_bag's int64 indices as
float64 integer values), must match loops over the definition to 1e-12; examples/row_argmax's
indices (the first on ties) must match exactly; reference() must refuse indices that are
not integers in [0, N). The tensors reference() reads are the problem.json's. Where torch imports,
make_model() is checked the same way in float64 (its state_dict names are the parameters'), and
run in bfloat16 as the module parity rule runs it (an output of the tensors' dtype, close to the
float64 one); without torch that part is skipped with a line saying so. Needs numpy only.
Last line: "N passed, M failed, K skipped"."""
import importlib.util
import json
import math
import pathlib
import sys
import traceback

import numpy as np

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]).resolve()
RTOL = 1e-12

results = []
skipped = []


def check(name, fn):
    try:
        detail = fn()
        results.append(True)
        print(f"PASS {name}" + (f": {detail}" if detail else ""))
    except Exception as e:
        results.append(False)
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        if not isinstance(e, AssertionError):
            traceback.print_exc(limit=3, file=sys.stdout)


def load(name):
    folder = ROOT / "examples" / name
    problem = json.loads((folder / "problem.json").read_text())
    path = folder / problem["reference"]["python"]
    spec = importlib.util.spec_from_file_location(f"tune_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return problem, module


def close(got, want):
    got = np.asarray(got)
    assert got.dtype == np.float64, f"dtype {got.dtype}, not float64"
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    err = np.abs(got - want).max()
    assert err <= RTOL * max(1.0, np.abs(want).max()), f"max abs error {err:.3e}"
    return f"max abs error {err:.1e}"


def names(problem, role):
    return [t["name"] for t in problem["tensors"] if t["role"] == role]


def torch_or_none():
    try:
        import torch
        return torch
    except ImportError:
        return None


def same_tensors(problem, case):
    _, params, inputs = case
    want = (names(problem, "parameter"), names(problem, "input"))
    assert (list(params), list(inputs)) == want, f"data {list(params)} {list(inputs)}, problem.json {want}"
    return f"parameters {want[0]}, inputs {want[1]}"


# ---- rmsnorm ----------------------------------------------------------------------------------

def rmsnorm_case(seed=1, m=5, k=12):
    rng = np.random.default_rng(seed)
    shape = {"M": m, "K": k, "T": "float32"}
    params = {"weight": 1 + 0.2 * rng.standard_normal(k)}
    inputs = {"x": rng.standard_normal((m, k))}
    inputs["x"][1] = 0.0  # a row of zeros: eps keeps it finite
    return shape, params, inputs


def rmsnorm_loops(shape, params, inputs):
    m, k = shape["M"], shape["K"]
    x, w = inputs["x"], params["weight"]
    out = np.empty((m, k))
    for i in range(m):
        mean_sq = sum(float(x[i, j]) ** 2 for j in range(k)) / k
        for j in range(k):
            out[i, j] = float(x[i, j]) / math.sqrt(mean_sq + 1e-6) * float(w[j])
    return out


# ---- embedding_bag ----------------------------------------------------------------------------

def embedding_bag_case(seed=2, b=4, l=3, n=7, d=5):
    rng = np.random.default_rng(seed)
    shape = {"B": b, "L": l, "N": n, "D": d, "T": "float32"}
    params = {"weight": rng.standard_normal((n, d))}
    idx = rng.integers(0, n, size=(b, l))
    idx[:, 0] = n - 1  # problem.json's parity edit: the last row
    idx[2] = 0         # a bag of one row, repeated
    inputs = {"indices": idx.astype(np.float64)}  # as tune hands numpy every input
    return shape, params, inputs


def embedding_bag_loops(shape, params, inputs):
    b, l, d = shape["B"], shape["L"], shape["D"]
    out = np.zeros((b, d))
    for i in range(b):
        for j in range(l):
            row = int(inputs["indices"][i, j])
            for c in range(d):
                out[i, c] += float(params["weight"][row, c])
    return out


def refuses_bad_indices(module):
    shape, params, inputs = embedding_bag_case()
    for bad, what in ((0.5, "a fraction"), (-1.0, "a negative index"), (float(shape["N"]), "N")):
        idx = inputs["indices"].copy()
        idx[1, 1] = bad
        try:
            module.reference(shape, params, {"indices": idx})
        except ValueError:
            continue
        raise AssertionError(f"an index of {what} was not refused")
    return "fractions, negatives and N refused"


# ---- softmax ----------------------------------------------------------------------------------

def softmax_case(seed=3, r=4, l=9):
    rng = np.random.default_rng(seed)
    shape = {"R": r, "L": l, "T": "float32"}
    x = rng.standard_normal((r, l))
    x[1] += 100.0  # problem.json's edge case: logits whose exp overflows without the max taken off
    x[2] = 0.75    # a row of one value: every output is 1/L
    return shape, {}, {"x": x}


def softmax_loops(shape, params, inputs):
    r, l = shape["R"], shape["L"]
    x = inputs["x"]
    out = np.empty((r, l))
    for i in range(r):
        m = max(float(x[i, j]) for j in range(l))
        total = sum(math.exp(float(x[i, j]) - m) for j in range(l))
        for j in range(l):
            out[i, j] = math.exp(float(x[i, j]) - m) / total
    return out


# ---- row_argmax -------------------------------------------------------------------------------

def row_argmax_case(seed=4, r=5, l=9):
    rng = np.random.default_rng(seed)
    shape = {"R": r, "L": l}
    x = rng.standard_normal((r, l))
    x[0, l - 1] = 1000.0                   # problem.json's parity edits: the maximum last,
    x[1, 1] = x[1, l - 1] = 1000.0         # and a tie, whose answer is the first index
    x[2] = 0.75                            # a row of one value: 0
    x[3] -= 50.0                           # a row below zero
    return shape, {}, {"x": x}


def row_argmax_loops(shape, params, inputs):
    x = inputs["x"]
    out = np.empty(shape["R"])
    for i in range(shape["R"]):
        best = 0
        for j in range(1, shape["L"]):
            if x[i, j] > x[i, best]:
                best = j
        out[i] = best
    return out


def exact_indices(got, want):
    got = np.asarray(got)
    assert got.dtype.kind in "iu" or (got == np.round(got)).all(), f"dtype {got.dtype}, not whole numbers"
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    assert (got == want).all(), f"indices {got.tolist()}, expected {want.tolist()}"
    return f"indices {want.astype(int).tolist()}"


# ---- torch ------------------------------------------------------------------------------------

def torch_inputs(torch, problem, inputs):
    dtypes = {t["name"]: t.get("dtype", "float32") for t in problem["tensors"]}
    # Integer tensors go to the module in their own dtype; float ones in float64 (the reference).
    return [torch.from_numpy(inputs[n].astype(np.int64)) if dtypes[n] == "int64" else torch.from_numpy(inputs[n])
            for n in names(problem, "input")]


def torch_float64(torch, problem, module, case, loops):
    shape, params, inputs = case
    model = module.make_model(shape).double()
    assert list(model.state_dict()) == names(problem, "parameter"), f"state_dict {list(model.state_dict())}"
    model.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()}, strict=True)
    model.eval()
    with torch.no_grad():
        got = model(*torch_inputs(torch, problem, inputs)).numpy()
    return close(got, loops(*case))


def torch_bfloat16(torch, problem, module, case, loops):
    """The module as the parity rule runs it in bfloat16: its output is bfloat16 and within a few
    bfloat16 roundings of the float64 result on the same (bfloat16-valued) data."""
    shape, params, inputs = case
    bf = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in params.items()}
    model = module.make_model(shape).to(torch.bfloat16)
    model.load_state_dict(bf, strict=True)
    model.eval()
    args = [a if not a.is_floating_point() else a.to(torch.bfloat16) for a in torch_inputs(torch, problem, inputs)]
    with torch.no_grad():
        out = model(*args)
    assert out.dtype == torch.bfloat16, f"module output {out.dtype}"
    data = ({k: v.double().numpy() for k, v in bf.items()},
            {n: a.double().numpy() for n, a in zip(names(problem, "input"), args)})
    want = loops(shape, *data)
    # Each rounding to bfloat16 (2^-9 relative) is at most the size of the terms summed, so the
    # bound is a few of them over the sum of |terms| (the same loops on |data|). A softmax's
    # terms are its outputs: each element is rounded once, relative to itself.
    terms = want if loops is softmax_loops else loops(shape, *({k: np.abs(v) for k, v in d.items()} for d in data))
    err = out.double().numpy() - want
    assert (np.abs(err) <= 2.0 ** -6 * terms).all(), f"bfloat16 module off by {np.abs(err).max():.3e}"
    return f"max abs error {np.abs(err).max():.1e} in bfloat16"


def main():
    torch = torch_or_none()
    print(f"repo {ROOT}; torch {'importable: make_model() checked too' if torch else 'not importable: numpy only'}")
    examples = (("rmsnorm", rmsnorm_case, rmsnorm_loops), ("embedding_bag", embedding_bag_case, embedding_bag_loops),
                ("softmax", softmax_case, softmax_loops))
    problem, module = load("row_argmax")
    check("row_argmax: the test's data has problem.json's tensors", lambda: same_tensors(problem, row_argmax_case()))
    for seed in (4, 5):
        check(f"row_argmax: numpy reference() seed {seed}",
              lambda s=seed: exact_indices(module.reference(*row_argmax_case(s)), row_argmax_loops(*row_argmax_case(s))))
    if torch is not None:
        check("row_argmax: torch make_model() float32",
              lambda: exact_indices(module.make_model({})(torch.from_numpy(row_argmax_case()[2]["x"]).float()).numpy(),
                                    row_argmax_loops(*row_argmax_case())))
    for name, case, loops in examples:
        problem, module = load(name)
        check(f"{name}: the test's data has problem.json's tensors", lambda p=problem, c=case: same_tensors(p, c()))
        for seed in (1, 2, 3):
            check(f"{name}: numpy reference() seed {seed}",
                  lambda m=module, c=case, lp=loops, s=seed: close(m.reference(*c(seed)), lp(*c(seed))))
        if name == "embedding_bag":
            check(f"{name}: reference() refuses bad indices", lambda m=module: refuses_bad_indices(m))
        if torch is None:
            skipped.append(name)
            print(f"SKIP {name}: make_model() (torch not importable)")
            continue
        check(f"{name}: torch make_model() float64", lambda m=module, p=problem, c=case, lp=loops: torch_float64(torch, p, m, c(), lp))
        check(f"{name}: torch make_model() bfloat16", lambda m=module, p=problem, c=case, lp=loops: torch_bfloat16(torch, p, m, c(), lp))
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed, {len(skipped)} skipped")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
