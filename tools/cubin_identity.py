#!/usr/bin/env python3
"""Proof that a change to the kernel templates changes no machine code (issue 23).

    tools/cubin_identity.py [--before REV|DIR] [--after DIR] [--problem contact --problem scene_graph]
                              [--results results/h200] [--sample-results DIR]... [--sample 6] [--kernel K]... [--seed 23]
                              [--shape 'B=4,N=24,P=12']... [--no-extra-shapes]
                              [--rename-before PATTERN REPLACEMENT]... [--jobs 2] [--tune build/tuner/tune]
                              [--cache DIR] [--json F] [--verbose]

"Before" is a git revision (default: the merge-base of HEAD and main), exported with `git archive`
(its configs/, examples/ and kernel_templates/), or a folder holding such a tree; "after" is a tree
(default: this working tree, uncommitted changes included). Both are compiled with NVRTC as tune
compiles a variant (tuner/src/space/space.cpp, load_sources; tuner/src/compile/nvrtc.cpp): the
problem's template (problem.json "template") is the program, every .cuh/.h/.hpp/.inc/.cu file of
the template's folder and of "include_dirs" a header named by its path relative to that folder,
one program per variant with its launches' name expressions, and the options its results file
records (context.compile_options: -arch=sm_90 -std=c++17 --ptxas-options=-v -lineinfo).

The variants compiled, per problem:
  (a) the winner and the baseline of every results file of record (<results>/<problem>/*.json[.gz]),
      lowered by today's tune (`tune header`, as compare_builds.py reads it; without a tune binary,
      the records' own launches);
  (b) a seeded sample of --sample other variants per shape of each results file in <results> and
      in every --sample-results folder (default: also <results>/search/exhaustive), drawn from the
      variants the record compiled, lowered by today's tune at the record's shape (`tune export nvrtc
      --all-variants` on the "after" tree's problem: tune is the problem format's one reader; a record
      older than a dtype variable gets the variable's default), round-robin over the kernel families
      (the launches' kernel names) so that
      every strategy a shape reached is drawn (--kernel: only variants launching that kernel);
  (c) a seeded sample of --sample variants at each extra shape that no record holds (--shape,
      repeatable; default for scene_graph: EXTRA_SHAPES below, with P % 8 != 0 and odd N, which the
      records never reach), drawn by tune itself: `tune --problem COPY --compile-only --budget
      --sample --seed` on a copy of the problem folder (the "after" tree's) whose constraints, with
      --kernel, also require the launch "when" of one of those kernels; the variants are those
      the run's results file lists, lowered by that tune (needs a tune binary, as (a)).

A template argument renumbered between the trees (issue 38: sg_cluster's ATTN, 2 for attnquad
before the knob attention, 1 for attention quad after) is compiled in the before tree as
--rename-before rewrites the name expression (re.sub, in order; e.g. --rename-before
'^(sg_cluster<.*),1>$' '\\1,2>'): its kernel's mangled name differs, its machine code must not.

Compared per kernel: the bytes of its .text section (the machine code), and the resources ptxas
reports (registers, stack, spills, static shared memory). Not compared: the line tables and the
rest of the ELF: -lineinfo records file names and line numbers, which change whenever code moves
between lines or headers, without changing one instruction.
Also printed: the longest function (in lines, signature to closing brace) of each kernel header
of both trees. Exit status: 0 when every kernel's .text is identical, 1 when any differs, 2 on a
usage or build error (a name expression that does not compile in one of the trees included).
"""
import argparse
import concurrent.futures
import glob
import gzip
import hashlib
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import compare_builds as cb  # noqa: E402  (its NVRTC binding, CUBIN reader, ptxas parser and header reader)
from function_lengths import longest_function  # noqa: E402  (the brace-matching scanner)
sys.path.insert(0, str(ROOT / "bench"))
import embed_nvrtc  # noqa: E402  (the headers of a template, as tune hands them to NVRTC: tune export nvrtc)

HEADER_EXTENSIONS = (".cuh", ".h", ".hpp", ".inc", ".cu")  # space.cpp is_header
PROBLEM_FOLDERS = ("configs", "examples")
# Shapes no results file of record holds, sampled by default (c): the FP32 relation MLP of
# sg_cluster (P % 8 != 0; a P = 12 change once passed the records unnoticed), odd N, and a
# tensor-core MLP beside rows that do not fill a tile.
EXTRA_SHAPES = {
    "scene_graph": ["B=4,N=24,D=96,heads=4,P=12", "B=2,N=23,D=96,heads=4,P=20", "B=3,N=17,D=64,heads=4,P=16"],
}


def die(msg):
    print(f"cubin_identity: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- the trees
def export_rev(rev, dest):
    """The folders the kernels are made of at a git revision, under dest."""
    got = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "--", *PROBLEM_FOLDERS, "kernel_templates"],
                         capture_output=True)
    if got.returncode != 0:
        die(f"git archive {rev}: {got.stderr.decode().strip()}")
    tar = pathlib.Path(dest, "tree.tar")
    tar.write_bytes(got.stdout)
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(dest)
    tar.unlink()
    return pathlib.Path(dest)


def problem_dir(tree, problem):
    for folder in PROBLEM_FOLDERS:
        d = pathlib.Path(tree, folder, problem)
        if (d / "problem.json").exists():
            return d
    return None


def kernel_sources(args, tree, problem):
    """(main name, main text, [(header name, text)]) as tune hands them to NVRTC (`tune export nvrtc`,
    through bench/embed_nvrtc.py, which the bench's NVRTC build reads them with)."""
    d = problem_dir(tree, problem)
    if d is None:
        die(f"no problem.json for {problem} under {tree}/{{{','.join(PROBLEM_FOLDERS)}}}")
    tune = tune_binary(args)
    if not tune:
        die("the kernels' sources are read by tune (tune export nvrtc): build it, or pass --tune")
    return embed_nvrtc.kernel_sources(tune, d)


# ---------------------------------------------------------------- the variants
def read_record(path):
    data = pathlib.Path(path).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def results_of(folder, problem):
    return sorted(glob.glob(os.path.join(folder, problem, "*.json")) + glob.glob(os.path.join(folder, problem, "*.json.gz")))


def tune_binary(args):
    return args.tune or next((str(p) for p in [ROOT / "build" / "tuner" / "tune"] if p.exists()), None) or shutil.which("tune")


def of_record(args, problem):
    """[(shape, role, [name expressions], options)] of the winners and baselines of record."""
    files = results_of(args.results, problem)
    if not files:
        return []
    out = []
    tune = tune_binary(args)
    lowered = {}
    if tune:
        with tempfile.TemporaryDirectory() as tmp:
            header = pathlib.Path(tmp, "h.hpp")
            got = subprocess.run([tune, "header", *files, "-o", str(header)], capture_output=True, text=True)
            if got.returncode != 0:
                die(f"tune header {problem}: {got.stderr.strip()}")
            for shape, role, exprs in cb.header_kernels(header.read_text()):
                lowered[(shape, role)] = exprs
    for f in files:
        doc = read_record(f)
        shape = pathlib.Path(f).name.split(".json")[0]
        winner = doc.get("summary", {}).get("winner")
        for v in doc.get("variants", []):
            for role, hit in (("winner", v.get("name") == winner), ("baseline", bool(v.get("baseline")))):
                if hit:
                    exprs = lowered.get((shape, role)) or [l["kernel"] for l in v.get("launches", [])]
                    out.append((shape, role, exprs, doc["context"]["compile_options"], v["name"]))
    return out


def lowered_records(args, problem, files):
    """{results file: its record as `tune export nvrtc --all-variants` gives it}: the compile options
    and every variant, in the record's order, with its status and its kernels' name expressions as
    today's tune lowers its configuration at the record's shape (a record older than a dtype
    variable of the problem names its kernels with the variable's default type, issue 35)."""
    if not files:
        return {}
    d = problem_dir(args.after, problem)
    if d is None:
        die(f"no problem.json for {problem} under {args.after}/{{{','.join(PROBLEM_FOLDERS)}}}")
    cmd = [tune_binary(args), "export", "nvrtc", "--all-variants", "--problem", str(d), *files]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        die(f"{' '.join(cmd[:5])} ...: exit {got.returncode}\n{got.stderr.strip()[-2000:]}")
    return {r["file"]: r for r in json.loads(got.stdout)["records"]}


def sampled(args, problem, taken, folders=None, label=None):
    """A seeded sample of other compiled variants per shape, round-robin over kernel families
    (label: the role's text, default the results file's path)."""
    out = []
    if folders is None:
        folders = list(dict.fromkeys(os.path.realpath(f) for f in [args.results] + args.sample_results))
    for folder in folders:
        files = results_of(folder, problem)
        records = lowered_records(args, problem, files)
        for f in files:
            doc = records[f]
            shape = pathlib.Path(f).name.split(".json")[0]
            rel = os.path.relpath(f, ROOT)
            families = {}
            for v in doc["variants"]:
                exprs = tuple(l["name_expression"] for l in v["launches"])
                compiled = v["status"] != "compile_failed" and "compile" not in v["reason"][:20]
                wanted = not args.kernel or any(e.split("<")[0] in args.kernel for e in exprs)
                if exprs and compiled and wanted and exprs not in taken:
                    fam = tuple(e.split("<")[0] for e in exprs)
                    families.setdefault(fam, []).append(v)
            rng = random.Random(f"{args.seed}/{problem}/{shape}/{os.path.basename(os.path.dirname(os.path.dirname(f)))}")
            pools = [rng.sample(vs, len(vs)) for _, vs in sorted(families.items())]
            rng.shuffle(pools)
            picked = 0
            while picked < args.sample and any(pools):
                for pool in pools:
                    if pool and picked < args.sample:
                        v = pool.pop()
                        exprs = tuple(l["name_expression"] for l in v["launches"])
                        if exprs in taken:
                            continue
                        taken.add(exprs)
                        role = f"sample ({label or rel})"
                        out.append((shape, role, list(exprs), doc["compile_options"], v["name"]))
                        picked += 1
    return out


# ---------------------------------------------------------------- extra shapes (c)
def pinned_problem(tree, problem, kernels, dest, constraint=None):
    """A copy of the problem folder at dest whose template and include_dirs point into tree and
    whose constraints, with kernels, also require the "when" of a launch of one of them (and,
    with constraint, that expression; tools/median_check.py pins variants so)."""
    src = problem_dir(tree, problem)
    shutil.copytree(src, dest)
    spec = json.loads((src / "problem.json").read_text())
    spec["template"] = str((src / spec["template"]).resolve())
    spec["include_dirs"] = [str((src / d).resolve()) for d in spec.get("include_dirs", [])]
    if kernels:
        whens = [l.get("when", "true") for l in spec.get("launches", []) if l.get("kernel") in kernels]
        if not whens:
            die(f"--kernel {' '.join(kernels)}: no launch of {problem} runs it")
        spec.setdefault("constraints", []).append(" || ".join(f"({w})" for w in whens))
    if constraint:
        spec.setdefault("constraints", []).append(constraint)
    pathlib.Path(dest, "problem.json").write_text(json.dumps(spec, indent=1))
    return pathlib.Path(dest)


def shape_args(shape):
    """'B=4,N=24,P=12' -> ['--B', '4', '--N', '24', '--P', '12']."""
    out = []
    for part in shape.split(","):
        name, eq, value = part.strip().partition("=")
        if not eq or not name or not value:
            die(f"--shape {shape}: expected NAME=VALUE,... (e.g. B=4,N=24,P=12)")
        out += [f"--{name}", value]
    return out


def extra_shape_folders(args, problem, tree, tmp):
    """Per extra shape, a folder of results as results_of reads them (<folder>/<problem>/*.json),
    written by `tune --compile-only --budget --sample` on the pinned copy of the problem."""
    shapes = args.shape if args.shape is not None else ([] if args.no_extra_shapes else EXTRA_SHAPES.get(problem, []))
    if not shapes:
        return []
    tune = tune_binary(args)
    if not tune:
        die(f"--shape (or {problem}'s default extra shapes; --no-extra-shapes skips them) needs a tune binary: --tune")
    folder = pinned_problem(tree, problem, args.kernel, pathlib.Path(tmp, f"problem.{problem}"))
    out = []
    for n, shape in enumerate(shapes):
        dest = pathlib.Path(tmp, f"extra.{problem}.{n}")
        cmd = [tune, "--problem", str(folder), *shape_args(shape), "--compile-only", "--budget", str(args.sample),
               "--seed", str(args.seed), "--jobs", str(args.jobs), "--out", str(dest)]
        got = subprocess.run(cmd, capture_output=True, text=True)
        if got.returncode != 0:
            die(f"{' '.join(cmd)}: exit {got.returncode}\n{(got.stderr or got.stdout).strip()[-2000:]}")
        files = sorted(dest.rglob("*.json")) + sorted(dest.rglob("*.json.gz"))
        if not files:
            die(f"{' '.join(cmd)}: wrote no results file under {dest}")
        out.append((shape, files[0].parent.parent))
    return out


# ---------------------------------------------------------------- compiling, cached
def compile_cached(nvrtc, cache, sources, exprs, options):
    """{mangled: (.text bytes, resources)} and the lowered names, from the cache or NVRTC."""
    name, main, headers = sources
    h = hashlib.sha256()
    for part in [nvrtc.version, name, main, *[x for hh in headers for x in hh], "\0", *exprs, "\0", *options]:
        h.update(part.encode() + b"\0")
    key = h.hexdigest()
    hit = cache / key[:2] / (key + ".json") if cache else None
    if hit and hit.exists():
        got = json.loads(hit.read_text())
        return {m: (bytes.fromhex(t), r) for m, (t, r) in got["kernels"].items()}, got["lowered"]
    cubin, log, lowered = nvrtc.compile(main, name, headers, exprs, options)
    sections, res = cb.elf_sections(cubin), cb.parse_ptxas(log)
    kernels = {m: (cb.kernel_code(sections, m) or b"", res.get(m, {})) for m in lowered}
    if hit:
        hit.parent.mkdir(parents=True, exist_ok=True)
        tmp = hit.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"lowered": lowered, "kernels": {m: (t.hex(), r) for m, (t, r) in kernels.items()}}))
        tmp.replace(hit)
    return kernels, lowered


# ---------------------------------------------------------------- longest functions
def longest_report(tree):
    out = {}
    for f in sorted(pathlib.Path(tree, "kernel_templates").rglob("*")):
        if f.is_file() and f.suffix in HEADER_EXTENSIONS:
            out[f.relative_to(tree).as_posix()] = longest_function(f.read_text())
    return out


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=None, help="git revision or tree folder (default: merge-base of HEAD and main)")
    ap.add_argument("--after", default=str(ROOT), help="tree folder (default: this working tree)")
    ap.add_argument("--problem", action="append", help="problem (repeatable; default: contact, scene_graph)")
    ap.add_argument("--results", default=str(ROOT / "results" / "h200"), help="results of record of one GPU")
    ap.add_argument("--sample-results", action="append", default=None,
                    help="more results folders to sample variants from (default: <results>/search/exhaustive)")
    ap.add_argument("--sample", type=int, default=6,
                    help="other variants per shape and results file, one kernel family after another (default 6)")
    ap.add_argument("--kernel", action="append", default=[],
                    help="sample only variants that launch this kernel (repeatable; e.g. sg_cluster)")
    ap.add_argument("--seed", default="23")
    ap.add_argument("--shape", action="append", default=None,
                    help="an extra shape to sample --sample variants at, drawn by tune (repeatable; "
                         "e.g. 'B=4,N=24,D=96,heads=4,P=12'; default: EXTRA_SHAPES of the problem)")
    ap.add_argument("--no-extra-shapes", action="store_true", help="sample no extra shapes (without --shape)")
    ap.add_argument("--rename-before", nargs=2, action="append", default=[], metavar=("PATTERN", "REPLACEMENT"),
                    help="rewrite each name expression so (Python re.sub) before compiling it in the before tree "
                         "(repeatable): a template argument renumbered between the trees")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--tune", default=None, help="tune binary for `tune header` (default: build/tuner/tune, else PATH)")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "tune", "cubin_identity"),
                    help="cache of compiled kernels keyed by sources, expressions and options ('' for none)")
    ap.add_argument("--json", default=None, help="also write every row as JSON here")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every kernel, not only those that differ")
    args = ap.parse_args()
    if args.sample_results is None:
        args.sample_results = [d for d in [os.path.join(args.results, "search", "exhaustive")] if os.path.isdir(d)]
    problems = args.problem or ["contact", "scene_graph"]
    home = cb.cuda_home()
    nvrtc = cb.Nvrtc(home)
    cache = pathlib.Path(args.cache) if args.cache else None

    tmp = tempfile.TemporaryDirectory(prefix="cubin_identity.")
    before = args.before
    if before is None:
        before = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True,
                                check=True).stdout.strip()
    if pathlib.Path(before).is_dir():
        before_tree, before_name = pathlib.Path(before), before
    else:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", before], capture_output=True, text=True)
        if rev.returncode != 0:
            die(f"--before {before}: neither a folder nor a git revision")
        before_tree, before_name = export_rev(before, tmp.name), f"git {rev.stdout.strip()}"
    after_tree = pathlib.Path(args.after)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "kernel_templates", "configs", "examples"],
                           capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    after_name = f"{after_tree}" + (f" (HEAD {head}{', uncommitted changes' if dirty else ''})" if after_tree == ROOT else "")
    print(f"before: {before_name}\nafter:  {after_name}\nNVRTC {nvrtc.version}; jobs {args.jobs}; "
          f"sample {args.sample} per shape (seed {args.seed}); compared: .text bytes and ptxas resources per kernel\n")

    jobs = []
    for problem in problems:
        srcs = {"before": kernel_sources(args, before_tree, problem), "after": kernel_sources(args, after_tree, problem)}
        record = of_record(args, problem)
        taken = {tuple(e) for _, _, e, _, _ in record}
        extra = []
        for shape, folder in extra_shape_folders(args, problem, after_tree, tmp.name):
            extra += sampled(args, problem, taken, [folder], label=f"extra shape {shape}")
        for shape, role, exprs, options, vname in record + sampled(args, problem, taken) + extra:
            jobs.append(dict(problem=problem, shape=shape, role=role, exprs=exprs, options=options, variant=vname, srcs=srcs))

    # tune hands NVRTC the toolkit's cuda_bf16.h and cuda_fp16.h where a template includes them
    # (compile.hpp, with_cuda_headers; NVRTC 13 has none of its own): here NVRTC reads them from the
    # toolkit, so a bfloat16 kernel compiles (examples/embedding_bag) and tune_common.cuh takes the
    # types from cuda_bf16.h, not its fallback, as in tune's build.
    toolkit = [f"--include-path={pathlib.Path(home, 'include')}"] if home else []

    def exprs_of(side, exprs):
        for pattern, replacement in (args.rename_before if side == "before" else []):
            exprs = [re.sub(pattern, replacement, e) for e in exprs]
        return exprs

    def run(job):
        got = {}
        for side in ("before", "after"):
            try:
                got[side] = compile_cached(nvrtc, cache, job["srcs"][side], exprs_of(side, job["exprs"]),
                                           job["options"] + toolkit)
            except RuntimeError as e:
                return job, None, f"{side}: {str(e)[:2000]}"
        return job, got, None

    rows, errors = [], []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for n, (job, got, err) in enumerate(pool.map(run, jobs), 1):
            print(f"[{n}/{len(jobs)}] {job['problem']}/{job['shape']} {job['role']}: {' '.join(job['exprs'])}"
                  + (f"  ERROR {err.splitlines()[0]}" if err else ""), flush=True)
            if err:
                errors.append((job, err))
                continue
            (kb, lb), (ka, la) = got["before"], got["after"]
            for expr, mb, ma in zip(job["exprs"], lb, la):
                tb, rb = kb[mb]
                ta, ra = ka[ma]
                rows.append(dict(problem=job["problem"], shape=job["shape"], role=job["role"], variant=job["variant"],
                                 kernel=expr, mangled=ma, same_name=mb == ma, same_text=tb == ta and len(ta) > 0,
                                 same_resources=rb == ra, instructions=(len(tb) // 16, len(ta) // 16),
                                 resources=(rb, ra)))

    print("\nproblem/shape | role | kernel | identical .text | same resources | instructions before/after")
    for r in rows:
        if args.verbose or not (r["same_text"] and r["same_resources"]):
            b, a = r["instructions"]
            print(f"{r['problem']}/{r['shape']} | {r['role']} | {r['kernel']} | {'yes' if r['same_text'] else 'NO'} | "
                  f"{'yes' if r['same_resources'] else 'NO ' + json.dumps(r['resources'])} | {b}" + ("" if a == b else f"/{a}"))
    for job, err in errors:
        print(f"\nERROR {job['problem']}/{job['shape']} {job['role']} {' '.join(job['exprs'])}:\n{err}")

    print("\nlongest function per kernel header (lines, name): before -> after")
    lb, la = longest_report(before_tree), longest_report(after_tree)
    for f in sorted(set(lb) | set(la)):
        b, a = lb.get(f), la.get(f)
        fmt = lambda x: "-" if x is None else f"{x[0]} ({x[1]})"  # noqa: E731
        print(f"  {f}: {fmt(b)} -> {fmt(a)}")

    same = sum(r["same_text"] for r in rows)
    distinct = len({(r["mangled"], tuple(r["resources"][1].items())) for r in rows})
    variants = len(jobs) - len(errors)
    kernels_of = lambda pred: sum(1 for r in rows if pred(r))  # noqa: E731
    rec = kernels_of(lambda r: r["role"] in ("winner", "baseline"))
    print(f"\n{same} of {len(rows)} kernels identical .text ({distinct} distinct instantiations; "
          f"{rec} of the winners and baselines of record, {len(rows) - rec} sampled, "
          f"{kernels_of(lambda r: r['role'].startswith('sample (extra shape'))} of them at extra shapes) in {variants} variants; "
          f"{kernels_of(lambda r: r['same_resources'])} with the same resources; {len(errors)} variants failed to compile")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(dict(before=before_name, after=after_name, rows=[
            {k: v for k, v in r.items()} for r in rows], errors=[(j["exprs"], e) for j, e in errors],
            longest={"before": lb, "after": la}), indent=1))
    if errors:
        return 2
    return 0 if same == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
