#!/usr/bin/env python3
"""Do the kernels that a template change did not leave byte-identical run as fast? (issue 23)

Where tools/cubin_identity.py finds kernels whose machine code changed, the issue asks that
their H200 medians agree within noise. This script times them: the "before" and the "after" build
of each, alternately, and beside that the before build against itself (the A/A noise floor).

    # here (no GPU): the before tree and the variants to time, from cubin_identity's --json
    tools/cubin_identity.py --problem scene_graph --kernel sg_cluster --json /tmp/ci.json ...
    tools/median_check.py --export-before .median-before --identity /tmp/ci.json [--max 6]
    # on the GPU machine, from the repository root (.device/ and .median-before/ carried):
    tools/median_check.py --before .median-before [--rounds 3] [--part K/N] [--tune .device/bin/tune] [--out DIR]
    tools/median_check.py --before .median-before --dry-run     # the commands, nothing run

--export-before writes the before tree (configs/, examples/, kernel_templates/ of a git revision,
default the merge-base of HEAD and main, by `git archive`) into a folder, with variants.json: the
variants to time, per problem and shape (the differing kernels of --identity: those whose resources
of record first, then those whose resources changed, then by the change in instruction count; at
most --max per shape, or --variant
'B=4,N=24,P=12|strategy=fused,mapping=cluster,...' given by hand, repeatable).

On the GPU, per problem and shape, two problem folders (copies of the problem, their template and
include_dirs in the before tree and in this tree; tools/cubin_identity.py pinned_problem) whose
space is pinned by one more constraint to the variants and the problem's baseline; then
`tune --problem FOLDER --SHAPE.. --sanitize off --no-cache --keep-spills --out DIR` for each, alternately, --rounds
times (B A B A ...; and one more before run, so that the A/A pairs are as many as the B/A pairs).
Per variant: the median of the before runs' cold medians (variants[].timing.median_us), of the
after runs', their difference in %, and the A/A floor: the largest difference between the medians
of two before runs. A variant is "within noise" when |after - before| <= max(A/A floor, --floor %).
--compile-only does the same without timing (a check of the folders and pins on a machine without
a GPU). Writes a table to stdout and, with --out, median_check.json there.
Exit status: 0 when every variant is within noise (or --dry-run, --compile-only, --export-before),
1 when any is not, 2 on a usage error or a tune run that failed.
"""
import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import cubin_identity as ci  # noqa: E402  (the before tree, the pinned problem folders, the shape arguments)


def die(msg):
    print(f"median_check: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- the variants
def shape_of_stem(stem):
    """'B4_N24_D96_heads4_P16' -> 'B=4,N=24,D=96,heads=4,P=16' (a results file's name)."""
    parts = [re.fullmatch(r"([A-Za-z_]*?[A-Za-z])(\d+)", p) for p in stem.split("_")]
    if not all(parts):
        die(f"{stem}: not a shape name like B4_N24_P16")
    return ",".join(f"{m.group(1)}={m.group(2)}" for m in parts)


def differing(identity, limit):
    """{problem: {shape: [variant names]}} of the kernels of a cubin_identity --json that differ:
    changed resources first, then by the change in instruction count, at most limit per shape."""
    rows = [r for r in json.loads(pathlib.Path(identity).read_text())["rows"] if not (r["same_text"] and r["same_resources"])]
    rows.sort(key=lambda r: (r["role"] not in ("winner", "baseline"), r["same_resources"],
                             -abs(r["instructions"][1] - r["instructions"][0])))
    out = {}
    for r in rows:
        names = out.setdefault(r["problem"], {}).setdefault(shape_of_stem(r["shape"]), [])
        if r["variant"] not in names and len(names) < limit:
            names.append(r["variant"])
    return out


def by_hand(variants, problem):
    out = {}
    for v in variants:
        shape, bar, name = v.partition("|")
        if not bar:
            die(f"--variant {v}: expected SHAPE|NAME, e.g. 'B=4,N=24,P=12|strategy=fused,...'")
        out.setdefault(problem, {}).setdefault(shape, []).append(name)
    return out


def export_before(args):
    dest = pathlib.Path(args.export_before)
    if dest.exists() and any(dest.iterdir()):
        die(f"--export-before {dest}: not empty")
    dest.mkdir(parents=True, exist_ok=True)
    rev = args.rev or subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True,
                                     check=True).stdout.strip()
    ci.export_rev(rev, dest)
    variants = by_hand(args.variant, args.problem) if args.variant else differing(args.identity, args.max) if args.identity else {}
    if not variants:
        die("nothing to time: give --identity (a cubin_identity --json) or --variant")
    (dest / "variants.json").write_text(json.dumps({"rev": rev, "variants": variants}, indent=1))
    count = sum(len(v) for shapes in variants.values() for v in shapes.values())
    print(f"{dest}: the tree at {rev[:12]} and {count} variants in {sum(len(s) for s in variants.values())} shapes")
    return 0


# ---------------------------------------------------------------- pinning and running
def pin(name):
    """'strategy=fused,block=256,smem_w=false' -> 'strategy == fused && block == 256 && smem_w == 0'."""
    terms = []
    for part in name.split(","):
        key, _, value = part.partition("=")
        terms.append(f"{key} == {({'true': '1', 'false': '0'}).get(value, value)}")
    return "(" + " && ".join(terms) + ")"


def pinned_folders(before, problem, names, tmp):
    """The before and after problem folders, their space the variants and the baseline."""
    spec = json.loads((ci.problem_dir(ROOT, problem) / "problem.json").read_text())
    baseline = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in spec["baseline"].items())
    constraint = " || ".join(pin(n) for n in names + [baseline])
    return {side: ci.pinned_problem(tree, problem, [], pathlib.Path(tmp, side), constraint)
            for side, tree in (("before", before), ("after", ROOT))}


def tune_run(args, folder, shape, dest):
    # --keep-spills: a pinned variant that spills is timed too (tune prunes spilling variants before
    # timing otherwise, and the kernels a change touched most are often those).
    cmd = [args.tune, "--problem", str(folder), *ci.shape_args(shape), "--sanitize", "off", "--no-cache", "--keep-spills",
           "--out", str(dest)]
    if args.compile_only:
        cmd.append("--compile-only")
    print("  $ " + " ".join(cmd), flush=True)
    if args.dry_run:
        return None
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        die(f"exit {got.returncode}: {(got.stderr or got.stdout).strip()[-2000:]}")
    files = sorted(pathlib.Path(dest).rglob("*.json"))
    if not files:
        die(f"{dest}: no results file")
    doc = json.loads(files[0].read_text())
    return {v["name"]: (v.get("timing") or {}).get("median_us", v.get("status")) for v in doc["variants"]}


def measure(args, before, problem, shape, names, tmp):
    """{side: [ {variant: median_us} per run ]}: B A B A ... B."""
    folders = pinned_folders(before, problem, names, pathlib.Path(tmp, "folders"))
    order = ["before", "after"] * args.rounds + ["before"]
    runs = {"before": [], "after": []}
    for n, side in enumerate(order):
        got = tune_run(args, folders[side], shape, pathlib.Path(tmp, f"run{n}.{side}"))
        if got is not None:
            missing = [v for v in names if v not in got]
            if missing:
                die(f"{problem} {shape} ({side}): the pin let through {sorted(got)}, not {missing}")
            print(f"    {len(got)} variants: the {len(names)} pinned and the baseline", flush=True)
        runs[side].append(got)
    return runs


def verdicts(args, problem, shape, names, runs):
    rows = []
    for name in names:
        b = [r.get(name) for r in runs["before"]]
        a = [r.get(name) for r in runs["after"]]
        if not all(isinstance(x, float) for x in b + a):  # a status (skipped, incorrect, ...) where a median should be
            rows.append(dict(problem=problem, shape=shape, variant=name, error="not timed in every run", before=b, after=a))
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        aa = max(abs(x - y) / min(x, y) * 100 for i, x in enumerate(b) for y in b[i + 1:])
        delta = (ma - mb) / mb * 100
        rows.append(dict(problem=problem, shape=shape, variant=name, before=b, after=a, median_before=mb, median_after=ma,
                         delta_pct=delta, aa_pct=aa, within_noise=abs(delta) <= max(aa, args.floor)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--export-before", help="here: write the before tree and variants.json into this folder, then stop")
    ap.add_argument("--rev", help="with --export-before: the git revision (default: merge-base of HEAD and main)")
    ap.add_argument("--identity", help="with --export-before: a cubin_identity.py --json; its differing kernels are timed")
    ap.add_argument("--variant", action="append", default=[], help="with --export-before: 'SHAPE|NAME' (repeatable)")
    ap.add_argument("--max", type=int, default=4, help="with --identity: most variants per shape (default 4)")
    ap.add_argument("--problem", default="scene_graph", help="with --variant: its problem (default scene_graph)")
    ap.add_argument("--before", help="the folder --export-before wrote")
    ap.add_argument("--rounds", type=int, default=3, help="before/after pairs per shape (default 3)")
    ap.add_argument("--part", default="1/1", help="K/N: only the shapes i with i %% N == K - 1 (a device call each)")
    ap.add_argument("--floor", type=float, default=1.0, help="smallest difference in %% called beyond noise (default 1)")
    ap.add_argument("--tune", default=str(ROOT / ".device" / "bin" / "tune"))
    ap.add_argument("--out", help="write median_check.json here")
    ap.add_argument("--dry-run", action="store_true", help="print the tune commands, run nothing")
    ap.add_argument("--compile-only", action="store_true", help="tune --compile-only: check folders and pins, time nothing")
    args = ap.parse_args()
    if args.export_before:
        return export_before(args)
    if not args.before:
        die("give --before FOLDER (from --export-before) or --export-before FOLDER")
    before = pathlib.Path(args.before)
    plan = json.loads((before / "variants.json").read_text())
    if args.rounds < 1:
        die("--rounds must be at least 1")
    part, _, parts = args.part.partition("/")
    if not (part.isdigit() and parts.isdigit() and 1 <= int(part) <= int(parts)):
        die(f"--part {args.part}: expected K/N with 1 <= K <= N")
    todo = [(p, s, names) for p, shapes in plan["variants"].items() for s, names in shapes.items()]
    todo = [t for i, t in enumerate(todo) if i % int(parts) == int(part) - 1]
    rows = []
    with tempfile.TemporaryDirectory(prefix="median_check.") as tmp:
        for n, (problem, shape, names) in enumerate(todo):
            print(f"{problem} {shape}: {len(names)} variants", flush=True)
            runs = measure(args, before, problem, shape, names, pathlib.Path(tmp, f"{problem}.{n}"))
            if not (args.dry_run or args.compile_only):
                rows += verdicts(args, problem, shape, names, runs)
    if args.dry_run or args.compile_only:
        print("no timings (--dry-run or --compile-only)")
        return 0
    print("\nproblem shape | variant | before median us (runs) | after | delta % | A/A % | within noise")
    for r in rows:
        if "error" in r:
            print(f"{r['problem']} {r['shape']} | {r['variant']} | ERROR {r['error']}: {r['before']} {r['after']}")
            continue
        print(f"{r['problem']} {r['shape']} | {r['variant']} | {r['median_before']:.3f} ({', '.join(f'{x:.3f}' for x in r['before'])}) | "
              f"{r['median_after']:.3f} ({', '.join(f'{x:.3f}' for x in r['after'])}) | {r['delta_pct']:+.2f} | {r['aa_pct']:.2f} | "
              f"{'yes' if r['within_noise'] else 'NO'}")
    bad = [r for r in rows if not r.get("within_noise")]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} variants within noise (|delta| <= max(A/A, {args.floor} %)); "
          f"before: {plan.get('rev', args.before)[:12]}")
    if args.out:
        pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.out, "median_check.json").write_text(json.dumps(dict(rev=plan.get("rev"), rows=rows), indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
