#!/usr/bin/env python3
"""Builds a planted-defect problem folder: a copy of a built-in problem whose kernel template has
one known defect, for showing that the correctness gate (sanitizers, determinism, parity on more
inputs) catches what parity on one launch lets through.

    tools/plant.py NAME OUTDIR

NAME is a plant of tests/plants/ (tests/plants/NAME.json) or the path of a plant file. OUTDIR
becomes a problem folder (docs/problem-format.md) that `tune --problem OUTDIR ...` runs:
problem.json (the built-in one, named after the plant, its template the planted copy, no golden),
the template folder's headers with the one edit, reference.py, affected.json (the same problem with
the plant's "affects" constraint added: `--config OUTDIR/affected.json` tunes only the variants the
defect is in) and PLANTED.md (what was changed, with the diff).

A plant file (tests/plants/README.md):
    {"problem": "contact", "description": "...", "kind": "race", "caught_by": "racecheck",
     "file": "contact.cuh", "find": "<exact text>", "replace": "<text>",
     "shape": {"B": 4, "N": 64}, "affects": "mapping == warp_tile"}
`find` must occur exactly once in the shipped file; otherwise nothing is written and the script
exits 2 with one line. Python 3 standard library only."""
import difflib
import json
import pathlib
import shutil
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
PLANTS = REPO / "tests" / "plants"
REQUIRED = ("problem", "description", "kind", "caught_by", "file", "find", "replace")
OPTIONAL = ("shape", "affects", "_comment")
KINDS = ("race", "missing-sync", "out-of-bounds", "divergent-sync", "uninitialized", "nondeterminism", "wrong-result")
TOOLS = ("racecheck", "memcheck", "synccheck", "initcheck", "determinism", "parity")
# The files of a template folder that tune passes to NVRTC as headers (docs/problem-format.md).
HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".inc")


class PlantError(Exception):
    pass


def plant_path(name):
    p = pathlib.Path(name)
    if p.suffix == ".json" or p.is_file():
        return p
    return PLANTS / f"{name}.json"


def load_plant(path):
    if not path.is_file():
        known = ", ".join(sorted(f.stem for f in PLANTS.glob("*.json")))
        raise PlantError(f"{path}: no such plant (tests/plants has: {known})")
    try:
        plant = json.loads(path.read_text())
    except ValueError as e:
        raise PlantError(f"{path}: not valid JSON ({e})")
    if not isinstance(plant, dict):
        raise PlantError(f"{path}: the top level must be a JSON object")
    for key in REQUIRED:
        if not isinstance(plant.get(key), str) or (key != "replace" and not plant[key]):
            raise PlantError(f"{path}: '{key}' must be a non-empty string" if key != "replace"
                             else f"{path}: 'replace' must be a string")
    unknown = sorted(set(plant) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise PlantError(f"{path}: unknown key '{unknown[0]}' (known: {', '.join(REQUIRED + OPTIONAL[:-1])})")
    if plant["kind"] not in KINDS:
        raise PlantError(f"{path}: kind '{plant['kind']}' is not one of {', '.join(KINDS)}")
    if plant["caught_by"] not in TOOLS:
        raise PlantError(f"{path}: caught_by '{plant['caught_by']}' is not one of {', '.join(TOOLS)}")
    if "shape" in plant and not (isinstance(plant["shape"], dict)
                                 and all(isinstance(v, int) and v > 0 for v in plant["shape"].values())):
        raise PlantError(f"{path}: 'shape' must map dimensions to positive integers, e.g. {{\"B\": 4, \"N\": 64}}")
    if "affects" in plant and (not isinstance(plant["affects"], str) or not plant["affects"]):
        raise PlantError(f"{path}: 'affects' must be a constraint expression, e.g. \"mapping == warp_tile\"")
    if plant["find"] == plant["replace"]:
        raise PlantError(f"{path}: 'replace' equals 'find': that plants nothing")
    return plant


def shipped(plant, where):
    """(problem.json as a dict, its folder, the template folder, the shipped file to plant in)."""
    folder = REPO / "configs" / plant["problem"]
    problem_file = folder / "problem.json"
    if not problem_file.is_file():
        raise PlantError(f"{where}: problem '{plant['problem']}' has no {problem_file.relative_to(REPO)}")
    problem = json.loads(problem_file.read_text())
    template_dir = (folder / problem["template"]).resolve().parent
    target = (template_dir / plant["file"]).resolve()
    if template_dir not in target.parents or not target.is_file():
        raise PlantError(f"{where}: 'file' {plant['file']} is not a file of the template folder "
                         f"{template_dir.relative_to(REPO)}")
    return problem, folder, template_dir, target


def rel(path):
    return str(pathlib.Path(path).resolve().relative_to(REPO))


def check_out_dir(out):
    """OUTDIR must be new, empty, or an earlier planted folder (rebuilt in place)."""
    if out.exists() and not out.is_dir():
        raise PlantError(f"{out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "PLANTED.md").is_file():
        raise PlantError(f"{out}: not empty and not a planted folder (no PLANTED.md); choose a new folder")


def planted_md(name, plant, plant_file, target, diff, out):
    shape = plant.get("shape", {})
    flags = " ".join(f"--{k} {v}" for k, v in shape.items()) or "--<dims>"
    source = rel(plant_file) if REPO in plant_file.resolve().parents else str(plant_file)
    lines = [
        f"# PLANTED DEFECT: {name}",
        "",
        f"This folder is a planted-defect copy of the built-in problem `{plant['problem']}`, made by",
        f"`tools/plant.py` from {source}. Its kernel template has one deliberate bug; it exists to",
        "show that tune's correctness gate catches what parity on one launch lets through. Never ship",
        "a result or header tuned from it.",
        "",
        f"- kind: {plant['kind']}",
        f"- should be caught by: {plant['caught_by']}",
    ]
    if shape:
        lines.append(f"- shape to run it at: {flags}")
    if "affects" in plant:
        lines.append(f"- variants with the defect: `{plant['affects']}` (the others compile the shipped code)")
    lines += ["", plant["description"], "", "## Run it", "", "```", f"tune --problem {out} {flags}", "```", ""]
    if "affects" in plant:
        lines += ["Only the variants with the defect (the baseline is not one of them, so no speedup is reported):",
                  "", "```", f"tune --problem {out} --config {out / 'affected.json'} {flags}", "```", ""]
    lines += [
        f"The problem is named `{name}`, so its results go to `results/<gpu>/{name}/` and never mix with",
        f"`{plant['problem']}`'s. The golden cases of `configs/{plant['problem']}/golden/` check the reference,",
        "which is unchanged, so none are copied.",
        "",
        f"## The change to {rel(target)}",
        "",
        "```diff",
        diff.rstrip("\n"),
        "```",
        "",
    ]
    return "\n".join(lines)


def build(name, out):
    path = plant_path(name)
    plant = load_plant(path)
    name = path.stem
    problem, folder, template_dir, target = shipped(plant, path)
    text = target.read_text()
    count = text.count(plant["find"])
    if count != 1:
        raise PlantError(f"{path}: 'find' occurs {count} times in {rel(target)} (it must occur exactly once)")
    planted = text.replace(plant["find"], plant["replace"])
    check_out_dir(out)

    # Stage everything in a sibling folder, then swap it in: a failure leaves OUTDIR as it was.
    out = out.resolve()
    stage = out.with_name(out.name + ".plant-tmp")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        main_template = (folder / problem["template"]).resolve()
        for f in sorted(template_dir.rglob("*")):
            if f.is_file() and (f.suffix in HEADER_SUFFIXES or f == main_template):
                dest = stage / f.relative_to(template_dir)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
        # The headers of include_dirs, by the names tune gives them (relative to their folder), beside
        # the template's: the planted folder needs no include_dirs (a template-folder header wins a
        # name clash, as in tune).
        for d in problem.pop("include_dirs", []):
            root = (folder / d).resolve()
            for f in sorted(root.rglob("*")):
                dest = stage / f.relative_to(root)
                if f.is_file() and f.suffix in HEADER_SUFFIXES and not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, dest)
        (stage / plant["file"]).write_text(planted)

        ref = (problem.get("reference") or {}).get("python")
        if ref:
            shutil.copyfile(folder / ref, stage / pathlib.Path(ref).name)
            problem["reference"]["python"] = pathlib.Path(ref).name
        problem["problem"] = name
        problem["description"] = f"PLANTED DEFECT ({plant['kind']}, see PLANTED.md): " + problem.get("description", "")
        problem["template"] = pathlib.Path(problem["template"]).name
        problem.pop("golden", None)
        (stage / "problem.json").write_text(json.dumps(problem, indent=2) + "\n")
        if "affects" in plant:
            affected = json.loads(json.dumps(problem))
            affected["description"] = f"PLANTED DEFECT, only the variants with the defect: {plant['affects']}"
            affected["constraints"] = affected.get("constraints", []) + [plant["affects"]]
            (stage / "affected.json").write_text(json.dumps(affected, indent=2) + "\n")

        diff = "".join(difflib.unified_diff(text.splitlines(keepends=True), planted.splitlines(keepends=True),
                                            f"a/{rel(target)}", f"b/{plant['file']}", n=3))
        (stage / "PLANTED.md").write_text(planted_md(name, plant, path, target, diff, out))

        if out.exists():
            shutil.rmtree(out)
        stage.rename(out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 3:
        print("usage: tools/plant.py NAME OUTDIR (NAME: a plant of tests/plants/, or a plant file)", file=sys.stderr)
        return 2
    try:
        out = build(argv[1], pathlib.Path(argv[2]))
    except PlantError as e:
        print(f"plant.py: {e}", file=sys.stderr)
        return 2
    print(f"planted {plant_path(argv[1]).stem} in {out} (see {out / 'PLANTED.md'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
