#!/usr/bin/env python3
"""The problem folders' float64 references against their golden cases, and make_goldens.py.

    reference_test.py REPO_ROOT

For every golden file under configs/*/golden/ and examples/*/golden/, the folder's reference.py
(reference.python of its problem.json) is loaded by path and its numpy reference() run on the
golden's parameters and inputs: max |ref - golden| <= 1e-9 |golden| + 1e-12 elementwise (the goldens
are PyTorch's float64 output; the atol only covers elements cancelling to ~0). Where torch imports,
make_model() is checked the same way (.double(), load_state_dict strict, eval, no_grad). Then
scripts/make_goldens.py writes a small case per folder (numpy backend, no torch needed) that must
have the golden format, float32-valued data, its edits applied, and match reference() exactly.
Needs numpy only (/usr/bin/python3 with Debian's python3-numpy). Last line: "N passed, M failed"."""
import importlib.util
import gzip
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

RTOL, ATOL = 1e-9, 1e-12
ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]).resolve()
# A small shape per built-in problem for the make_goldens round trip.
SMALL = {"contact": "B=2,N=3,C=8,H=4", "scene_graph": "B=2,N=4,D=8,heads=2,P=4"}

results = []


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


def load_reference(folder):
    problem_json = folder / "problem.json"
    problem = json.loads(problem_json.read_text()) if problem_json.is_file() else {}
    path = folder / (problem.get("reference") or {}).get("python", "reference.py")
    spec = importlib.util.spec_from_file_location(f"tune_reference_{folder.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return problem, module


def arrays(section):
    return {k: np.asarray(v["data"], dtype=np.float64).reshape(v["shape"]) for k, v in section.items()}


def compare(got, want):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"shape {got.shape}, golden {want.shape}"
    assert np.all(np.isfinite(got)), "non-finite values"
    diff = np.abs(got - want)
    rel = diff / np.maximum(np.abs(want), np.finfo(np.float64).tiny)
    ok = diff <= ATOL + RTOL * np.abs(want)
    text = f"max abs {diff.max():.3e}, max rel {rel.max():.3e}"
    assert ok.all(), f"{text}; worst index {np.unravel_index(np.argmax(diff - RTOL * np.abs(want)), want.shape)}"
    return text


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def run_torch(module, shape, params, inputs):
    import torch
    model = module.make_model(shape).double()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()}, strict=True)
    model.eval()
    with torch.no_grad():
        return model(*(torch.from_numpy(v) for v in inputs.values())).numpy()


def golden_cases(path, has_torch):
    folder = path.parent.parent
    rel = path.relative_to(ROOT)
    problem, module = load_reference(folder)
    doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    want = np.asarray(doc["output"]["data"], dtype=np.float64).reshape(doc["output"]["shape"])
    params, inputs = arrays(doc["params"]), arrays(doc["inputs"])

    def numpy_case():
        assert doc["problem"] == problem.get("problem", folder.name), f"golden of problem {doc['problem']}"
        assert doc["output"].get("dtype") == "float64", f"output dtype {doc['output'].get('dtype')}"
        return compare(module.reference(doc["shape"], params, inputs), want)

    check(f"{rel} numpy reference()", numpy_case)
    if has_torch and hasattr(module, "make_model"):
        check(f"{rel} torch make_model()", lambda: compare(run_torch(module, doc["shape"], params, inputs), want))


def round_trip(folder, shape):
    problem, module = load_reference(folder)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "g.json"
        cmd = [sys.executable, str(ROOT / "scripts" / "make_goldens.py"), "--problem", str(folder), "--shape", shape,
               "--seed", "7", "--backend", "numpy", "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        doc = json.loads(out.read_text())
        again = pathlib.Path(tmp) / "h.json"
        r = subprocess.run(cmd[:-1] + [str(again)], capture_output=True, text=True)
        assert r.returncode == 0 and again.read_text() == out.read_text(), "the same seed gave other data"
    assert list(doc) == ["problem", "shape", "params", "inputs", "output"], list(doc)
    assert doc["problem"] == problem.get("problem", folder.name)
    assert doc["output"]["dtype"] == "float64"
    params, inputs = arrays(doc["params"]), arrays(doc["inputs"])
    for name, a in {**params, **inputs}.items():
        assert np.array_equal(a.astype(np.float32).astype(np.float64), a), f"{name}: not float32 values"
    if hasattr(module, "make_model") and torch_available():
        names = list(module.make_model(doc["shape"]).state_dict())
        assert names == list(params), f"state_dict {names}, golden {list(params)}"
    if "edge_mask" in inputs:  # a 0/1 mask with the parity edits' fully masked row(s)
        m = inputs["edge_mask"]
        assert set(np.unique(m)) <= {0.0, 1.0}, "edge_mask not 0/1"
        assert (m.sum(axis=-1) == 0).any(), "no fully masked row"
    want = np.asarray(doc["output"]["data"]).reshape(doc["output"]["shape"])
    got = module.reference(doc["shape"], params, inputs)
    assert np.array_equal(got, want), "output differs from reference()"
    return f"{' '.join(f'{k}{v}' for k, v in doc['shape'].items())}, output {tuple(want.shape)}"


def refusals():
    """make_goldens.py refuses, in one line and exit 2, what tune refuses (adversarial round 5): a
    reference that raises, returns NaN or complex values or a value the output's dtype cannot hold
    (adversarial round 6), and an -o it cannot write; nothing left behind."""
    src = ROOT / "examples" / "rmsnorm"
    body = "    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w\n"
    cases = {"raise": ('    raise ValueError("bad reference")\n', "reference raised ValueError: bad reference"),
             "nan": ("    r = " + body[11:] + "    r[0, 0] = np.nan\n    return r\n", "nan at element 0"),
             "complex": (body.replace(" * w\n", " * w * (1 + 1j)\n"), "returned complex values (complex128)"),
             # adversarial round 6: a float16 output's 70000 is infinite in the kernel's store
             "big": (body.replace(" * w\n", " * w * 0 + 70000\n"), "is 70000.0 at element 0, which its dtype "
                     "float16 cannot hold: beyond float16's largest value")}
    shapes = {"big": "M=2,K=4,T=float16"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        runs = []
        for name, (new, said) in cases.items():
            shutil.copytree(src, tmp / name, ignore=shutil.ignore_patterns("golden"))
            ref = tmp / name / "reference.py"
            text = ref.read_text().replace("def make_model(shape):", "def _unused(shape):")
            assert body in text, "examples/rmsnorm/reference.py changed: update this test"
            ref.write_text(text.replace(body, new))
            runs.append((tmp / name, tmp / f"g_{name}.json", said, shapes.get(name, "M=2,K=4")))
        (tmp / "adir").mkdir()
        (tmp / "afile").write_text("")
        runs += [(src, tmp / "adir", "-o " + str(tmp / "adir") + ": is a folder", "M=2,K=4"),
                 (src, tmp / "afile" / "g.json", "-o " + str(tmp / "afile" / "g.json") + ": cannot be written",
                  "M=2,K=4")]
        for folder, out, said, shape in runs:
            r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_goldens.py"), "--problem", str(folder),
                                "--shape", shape, "--backend", "numpy", "-o", str(out)],
                               capture_output=True, text=True)
            errors = [ln for ln in r.stderr.splitlines()
                      if ln.startswith("make_goldens: ") and "the output is the" not in ln]
            assert r.returncode == 2 and len(errors) == 1 and said in errors[0] and "Traceback" not in r.stderr, \
                (said, r.returncode, r.stderr)
            left = sorted(p.name for p in tmp.iterdir() if p.name.endswith(".tmp") or p.name.startswith("g_"))
            assert not left, f"{said}: left behind {left}"
    return f"{len(runs)} refused"


def without_numpy():
    """make_goldens.py run by a Python without numpy (the first python3 on PATH may be pyenv's or a
    virtual environment's, as the docs' `python3 scripts/make_goldens.py` runs it) says which Python
    and what to run in one line, exit 3 (adversarial round 7: it was a traceback)."""
    script = ROOT / "scripts" / "make_goldens.py"
    code = ("import runpy, sys; sys.modules['numpy'] = None; "
            f"sys.argv = [{str(script)!r}, '--problem', 'x', '--shape', 'M=2', '-o', 'g.json']; "
            f"runpy.run_path({str(script)!r}, run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    lines = r.stderr.splitlines()
    assert r.returncode == 3 and len(lines) == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    said = f"make_goldens: numpy does not import for {sys.executable}; run this script with a Python that has it"
    assert lines[0].startswith(said), lines
    return "one line, exit 3"


def main():
    has_torch = torch_available()
    print(f"repo {ROOT}; torch {'importable: make_model() checked too' if has_torch else 'not importable: numpy only'}")
    # <case>.json, or the <case>.json.gz a golden over 100 KB is kept as (gzip -9 -n, as results of record)
    goldens = sorted(p for pattern in ("configs/*/golden/*.json*", "examples/*/golden/*.json*") for p in ROOT.glob(pattern)
                     if p.name.endswith((".json", ".json.gz")))
    check("golden files found", lambda: f"{len(goldens)}" if goldens else (_ for _ in ()).throw(
        AssertionError("no golden files under configs/*/golden or examples/*/golden")))
    for path in goldens:
        golden_cases(path, has_torch)
    for name, shape in SMALL.items():
        folder = ROOT / "configs" / name
        if folder.is_dir():
            check(f"make_goldens.py {folder.relative_to(ROOT)} {shape}", lambda f=folder, s=shape: round_trip(f, s))
    check("make_goldens.py refusals", refusals)
    check("make_goldens.py without numpy", without_numpy)
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
