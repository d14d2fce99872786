#!/usr/bin/env python3
"""The sweep study's table (issue 24): exhaustive against fast tunes of the same shapes.

    tools/search_summary.py STUDY_DIR -o SUMMARY.json [--md SUMMARY.md] [--within 2] [--fast sweep|warm]

STUDY_DIR is what tools/search_study.sh wrote: the exhaustive/ results folder, the fast half's
(sweep/: one `tune --sweep --transfer` process; warm/: a process per shape with --warm-start),
results as <gpu>/<problem>/<shape>.json or .json.gz, and walls.jsonl. A shape is named by its results
file's tag (B4_N64_C64_H32, B2_N512_C64_H32_bfloat16: tune's Shape::tag; schema_version 3, where 2
wrote "B4 N64 C64 H32"). --fast chooses the half
(default: sweep/ where it exists). Per shape and strategy: the wall seconds (of the tune process;
in a sweep, of the shape's run as its record says), variants compiled (not refused before
compiling) and measured (checked on the GPU), the winner and its cold median, and its gap to the
exhaustive winner: across the two processes, and in the same call (the exhaustive winner as the
fast run timed it; 0 where both named the same variant), which decides "within"; per problem and overall: the summed walls and their ratio (overall, for a
sweep: the sweep process's wall, start-up and all), and whether every fast winner is within
--within % of the exhaustive one. A shape that either half lacks is listed as missing, not
dropped. Exit status: 0 done, 2 bad input (one line).
"""
import argparse
import gzip
import json
import pathlib
import sys

from replay_study import fmt  # the same "—" for a missing figure

NOT_COMPILED = {"skipped", "pending"}
NOT_MEASURED = NOT_COMPILED | {"compile_failed", "compiled"}


class Bad(Exception):
    pass


def read_json(path):
    try:
        text = gzip.open(path, "rt").read() if path.name.endswith(".gz") else path.read_text()
        return json.loads(text)
    except (OSError, ValueError, EOFError) as e:
        raise Bad(f"{path}: {e}")


def shape_tag(path):
    """tune's tag of the results file's shape (Shape::tag, B4_N64_C64_H32_bfloat16): the file's name
    without .json or .json.gz, as tune names a results file."""
    return path.name.removesuffix(".gz").removesuffix(".json")


def runs_of(folder):
    """(problem, shape tag) -> the run, from every results file under folder."""
    out = {}
    for path in sorted(folder.rglob("*.json*")):
        if not (path.name.endswith(".json") or path.name.endswith(".json.gz")) or ".journal" in path.name:
            continue
        doc = read_json(path)
        if not isinstance(doc, dict) or doc.get("kind") != "tune.result":
            continue
        key = (doc["problem"], shape_tag(path))
        if key in out:
            raise Bad(f"{path}: {key[0]} {key[1]} is in {out[key]['path']} too; one result per shape and half")
        doc["path"] = str(path)
        out[key] = doc
    return out


def winner(run):
    name = run["summary"].get("winner")
    for v in run["variants"]:
        if v["name"] == name and v.get("timing"):
            return name, v["timing"]["median_us"]
    return None, None


def describe(run, wall_s):
    name, median = winner(run)
    return {"file": run["path"], "wall_s": wall_s, "recorded_wall_s": (run.get("wall_seconds") or {}).get("total"),
            "variants": len(run["variants"]),
            "compiled": sum(1 for v in run["variants"] if v["status"] not in NOT_COMPILED),
            "measured": sum(1 for v in run["variants"] if v["status"] not in NOT_MEASURED),
            "strategy": (run.get("context") or {}).get("search", {}).get("strategy"),
            "warm_start": (run.get("context") or {}).get("search", {}).get("warm_start"),
            "winner": name, "winner_median_us": median}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("study", help="the folder tools/search_study.sh wrote")
    ap.add_argument("-o", "--out", required=True, help="summary JSON to write")
    ap.add_argument("--md", help="a markdown table beside it")
    ap.add_argument("--within", type=float, default=2.0, help="percent a fast winner may be slower than the exhaustive one")
    ap.add_argument("--fast", choices=("sweep", "warm"), help="the fast half (default: sweep/ where it exists, else warm/)")
    a = ap.parse_args()
    try:
        study = pathlib.Path(a.study)
        if not (study / "exhaustive").is_dir() or not (study / "walls.jsonl").is_file():
            raise Bad(f"{study}: no exhaustive/ folder or walls.jsonl; pass the folder tools/search_study.sh wrote")
        fast = a.fast or ("sweep" if (study / "sweep").is_dir() else "warm")
        walls, reused, sweep_wall = {}, set(), None
        for k, line in enumerate((study / "walls.jsonl").read_text().splitlines()):
            try:
                w = json.loads(line)
                if w["mode"] == "sweep":
                    sweep_wall = w["wall_ms"] / 1e3
                    continue
                walls[(w["mode"], w["problem"], " ".join(w["args"].split()))] = w["wall_ms"] / 1e3
                if w.get("reused") == "exhaustive":  # the sweep's first shape: the exhaustive run itself
                    reused.add((w["mode"], w["problem"], " ".join(w["args"].split())))
            except (ValueError, KeyError, TypeError) as e:
                raise Bad(f"{study / 'walls.jsonl'}: line {k + 1}: {e}; it is written by tools/search_study.sh")
        halves = {m: runs_of(study / m) if (study / m).is_dir() else {} for m in ("exhaustive", fast)}
        if fast == "sweep" and sweep_wall is None:
            raise Bad(f"{study / 'walls.jsonl'}: no line of mode sweep (the sweep process's wall); "
                      "run tools/search_study.sh with STUDY_PART=sweep")

        def is_run_of(key, mode, run):
            # walls.jsonl keys a run by its command-line args ("--B 4 --N 64"); match on the shape's
            # dimensions given there.
            m, problem, args = key
            given = dict(zip(args.split()[::2], args.split()[1::2]))
            return m == mode and problem == run["problem"] and all(
                str(run["shape"].get(k.lstrip("-"))) == v for k, v in given.items() if k.lstrip("-") in run["shape"])

        def wall_of(mode, run):
            if mode == "sweep":  # one process: the shape's run as its record says
                return (run.get("wall_seconds") or {}).get("total")
            return next((s for key, s in walls.items() if is_run_of(key, mode, run)), None)

        shapes, missing = [], []
        for key in sorted(set(halves["exhaustive"]) | set(halves[fast])):
            ex, warm = halves["exhaustive"].get(key), halves[fast].get(key)
            first = bool(ex) and not warm and any(is_run_of(r, fast, ex) for r in reused)
            if first:
                warm = ex  # the warm sweep began with this shape's exhaustive tune: the same run, counted on both sides
            if not ex or not warm:
                missing.append({"problem": key[0], "shape": key[1], "missing": "exhaustive" if not ex else fast})
                continue
            e, w = describe(ex, wall_of("exhaustive", ex)), describe(warm, wall_of("exhaustive" if first else fast, warm))
            gap = (w["winner_median_us"] / e["winner_median_us"] - 1) if w["winner_median_us"] and e["winner_median_us"] else None
            # The same call: the exhaustive winner as the fast run itself timed it (0 where both named
            # the same configuration): two processes differ by a few % on one kernel (contact B4 N24:
            # 5.504 and 5.728 us for the same variant), one process's figures compare like with like.
            same = e["winner"] is not None and e["winner"] == w["winner"]
            theirs = next((v["timing"]["median_us"] for v in warm["variants"]
                           if v["name"] == e["winner"] and v.get("timing") and v["status"] == "passed"), None)
            gap_same_call = 0.0 if same else (w["winner_median_us"] / theirs - 1 if theirs and w["winner_median_us"] else None)
            measure = gap_same_call if gap_same_call is not None else gap
            shapes.append({"problem": key[0], "shape": key[1], "exhaustive": e, "fast": w, "gap": gap,
                           "same_winner": same, "gap_same_call": gap_same_call,
                           "within": measure is not None and measure <= a.within / 100, "first_of_sweep": first})
        totals = {}
        for problem in sorted({s["problem"] for s in shapes}) + ["all"]:
            mine = [s for s in shapes if problem in ("all", s["problem"])]
            ex = sum(s["exhaustive"]["wall_s"] or 0 for s in mine)
            wm = sum(s["fast"]["wall_s"] or 0 for s in mine)
            shapes_wall = wm
            if problem == "all" and fast == "sweep" and not missing:
                wm = sweep_wall  # the whole process: start-up, the baselines compiled ahead, every shape
            later = [s for s in mine if not s["first_of_sweep"]]
            ex_later = sum(s["exhaustive"]["wall_s"] or 0 for s in later)
            wm_later = sum(s["fast"]["wall_s"] or 0 for s in later)
            totals[problem] = {"shapes": len(mine), "exhaustive_wall_s": ex, "fast_wall_s": wm,
                               "shapes_wall_s": shapes_wall,
                               "ratio": wm / ex if ex else None, "all_within": all(s["within"] for s in mine),
                               # the shapes tuned with --warm-start (not the sweep's first, tuned exhaustively)
                               "warm_started": {"shapes": len(later), "exhaustive_wall_s": ex_later,
                                                "fast_wall_s": wm_later, "ratio": wm_later / ex_later if ex_later else None}}
        doc = {"kind": "tune.search_summary", "schema_version": 3, "within_percent": a.within, "fast": fast,
               "shapes": shapes, "missing": missing, "totals": totals}
        pathlib.Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
        if a.md:
            rows = [f"| problem | shape | exhaustive wall s | compiled / measured | winner µs | {fast} wall s | "
                    "compiled / measured | winner µs | gap | gap, same call |", "|" + " --- |" * 10]
            for s in shapes:
                e, w = s["exhaustive"], s["fast"]
                rows.append(f"| {s['problem']} | {s['shape']} | {fmt(e['wall_s'])} | {e['compiled']} / {e['measured']} | "
                            f"{fmt(e['winner_median_us'], '.3f')} | {fmt(w['wall_s'])} | {w['compiled']} / {w['measured']} | "
                            f"{fmt(w['winner_median_us'], '.3f')} | {fmt(100 * s['gap'] if s['gap'] is not None else None, '+.2f')} % | "
                            + ("the same variant |" if s["same_winner"] else
                               "not timed there |" if s["gap_same_call"] is None else f"{100 * s['gap_same_call']:+.2f} % |"))
            for problem, t in totals.items():
                rows.append(f"| {problem} | {t['shapes']} shapes | {fmt(t['exhaustive_wall_s'])} | | | {fmt(t['fast_wall_s'])} "
                            f"| | | ratio {fmt(t['ratio'], '.2f')}, {'all' if t['all_within'] else 'not all'} within "
                            f"{a.within:g} % | |")
                ws = t["warm_started"]
                if ws["shapes"] < t["shapes"]:
                    rows.append(f"| {problem} | {ws['shapes']} warm-started | {fmt(ws['exhaustive_wall_s'])} | | | "
                                f"{fmt(ws['fast_wall_s'])} | | | ratio {fmt(ws['ratio'], '.2f')} | |")
            rows += [f"| {m['problem']} | {m['shape']} | missing: {m['missing']} | | | | | | | |" for m in missing]
            pathlib.Path(a.md).write_text("\n".join(rows) + "\n")
        t = totals["all"]
        print(f"search_summary: {t['shapes']} shapes, exhaustive {fmt(t['exhaustive_wall_s'])} s, {fast} {fmt(t['fast_wall_s'])} s "
              f"(ratio {fmt(t['ratio'], '.2f')}), {'every' if t['all_within'] else 'not every'} {fast} winner within {a.within:g} %"
              + (f"; {len(missing)} shape(s) missing a half" if missing else ""))
    except Bad as e:
        print(f"search_summary: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
