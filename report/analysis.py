"""The tune report's reading and analysis: results and torch baselines loaded, each (problem,
shape) group's winners, floors, spreads and portability across GPUs, and the run summary tables
(also printed by report/summary.py). report/report.py renders them; report/charts.py draws them."""
import json
import math
import pathlib
import statistics

import results
from floors import floors, output_dtype
from pytorch import torch_speedups
from results import InputError, dtypes


# ---------------------------------------------------------------------------------------------
# Reading results

def shape_text(shape):
    return " ".join(f"{k}{v}" if not isinstance(v, str) else f"{k}={v}" for k, v in shape.items())


def dims_text(shape):
    """The shape without its dtype variables (the dtype column says those)."""
    return " ".join(f"{k}{v}" for k, v in shape.items() if not isinstance(v, str))


def tensor_dtypes(run):
    """{tensor: dtype} of context.tensors; {} for a file older than dtypes (every tensor float32)."""
    return {t.get("name"): t.get("dtype", dtypes.DEFAULT) for t in (run.get("context") or {}).get("tensors") or []}


def dtype_text(run):
    """The dtype column: the shape's dtype variables ("T=bfloat16"), else the output's dtype."""
    bound = [f"{k}={v}" for k, v in run["shape"].items() if isinstance(v, str)]
    return ", ".join(bound) if bound else output_dtype(run)


def shape_tag(shape):
    return "_".join(f"{k}{v}" for k, v in shape.items())


def params_text(params):
    return ", ".join(f"{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in params.items())


class ResultPath(type(pathlib.Path())):
    """A results file's path, with what tune computed for it (results.load_results): device_slug,
    not_measured (why its timings were not measured on a GPU; None when they were), shape (the run's
    with the dtype variables it lacks at their defaults: two files of one shape have one, however
    written) and dtype_defaults (the problem's dtype variables at their defaults)."""
    device_slug = None
    not_measured = None
    shape = None
    dtype_defaults = None


def load(root, allow_synthetic=True, left_out=None):
    """Yields (path, run) for every tune result file under root (<gpu>/<problem>/<shape>.json or .json.gz), each
    validated by tune's own reader (tune results --json); other JSON files there are passed over.
    A run not measured on a GPU (a compile-only sweep, the fake worker) is left out unless allow_synthetic:
    (path, why) appended to left_out, so that the measured ones beside it are still reported."""
    for rec in results.load_results([root]):
        path, run = ResultPath(rec["file"]), rec["run"]
        path.device_slug = rec["device_slug"]
        path.not_measured = rec["not_measured"]
        path.shape, path.dtype_defaults = rec["shape"], rec.get("dtype_defaults") or {}
        if (run["context"].get("shard") or {}).get("split") == "variants":
            raise InputError(f"{path}: context.shard: one shard of a shape's variants (tune --shard); combine "
                             "the shards with tune merge and report on its --out folder")
        why = rec["not_measured"]
        if why and not allow_synthetic:
            if left_out is not None:
                left_out.append((path, why))
            continue
        yield path, run


def left_out_text(left_out):
    """One line: how many files were left out as not measured on a GPU, where, and why."""
    by_why = {}
    for path, why in left_out:
        by_why.setdefault(why, set()).add(str(path.parent.parent))
    parts = [f"{count(sum(1 for _, w in left_out if w == why), 'file')} under {', '.join(sorted(dirs))} ({why})"
             for why, dirs in by_why.items()]
    return (f"left out {count(len(left_out), 'result file')} not measured on a GPU: " + "; ".join(parts) +
            "; pass --allow-synthetic to report them too (marked synthetic)")


def gpu_of(path, run):
    """(slug, name) of the run's GPU; the slug as tune computed it (load), else the results folder."""
    return (getattr(path, "device_slug", None) or path.parts[-3],
            run["device"]["name"] if run.get("device") else "none (compile only)")


def registers(v):
    """The most registers of the variant's kernels, from their resources, as tune computes it; None unknown."""
    regs = [r["registers"] for r in (v.get("resources") or {}).values() if r["registers"] >= 0]
    return max(regs) if regs else None


def median_us(v):
    return v["timing"]["median_us"] if v and v.get("timing") else None


def usable_median(v):
    """A passed variant's cold median that is a finite, positive number (null, written for NaN, is not)."""
    m = (v.get("timing") or {}).get("median_us") if v["status"] == "passed" else None
    return isinstance(m, (int, float)) and not isinstance(m, bool) and math.isfinite(m) and m > 0


def passed(run):
    """The passed variants that can be ranked: a median that is null, infinite, zero or negative never
    wins, ties or takes part in a comparison (tune's pick_winner leaves them out too)."""
    return [v for v in run["variants"] if usable_median(v)]


def load_torch(root, extra):
    """Torch baseline files keyed by GPU slug: RESULTS_DIR/<gpu>/torch_baseline.json plus extra. Several
    files of one GPU add up, entry by entry (problem and shape); a later file's entry replaces an
    earlier one's; "path" and "doc" are the last file's, "files" each file's in turn (the report lists them)."""
    files = sorted(pathlib.Path(root).glob("*/torch_baseline.json")) + [pathlib.Path(p) for p in extra]
    out = {}
    for path in files:
        doc = results.read_checked(path, results.validate_torch_baseline)
        slot = out.setdefault(results.device_slug(doc["device"]["name"]), {"entries": {}, "files": []})
        slot.update({"path": str(path), "doc": doc})
        slot["files"].append({"path": str(path), "doc": doc})
        for e in doc.get("entries") or []:  # the latest last: torch_entry takes the last that matches
            slot["entries"].pop((e["problem"], shape_tag(e["shape"])), None)
            slot["entries"][(e["problem"], shape_tag(e["shape"]))] = e
    return out


def torch_entry(slot, problem, shape, defaults):
    """The torch baseline entry (of one GPU's load_torch slot) of problem at shape (a results listing's,
    dtype defaults included): an entry's shape is taken with the dtype variables it lacks at their
    defaults, as a results file's is (torch_baseline.py writes the results file's shape as it is, so
    a file older than dtypes gave entries without T). The last such entry; None without one."""
    found = None
    for (p, _), e in (slot or {}).get("entries", {}).items():
        if p == problem and {**defaults, **e["shape"]} == shape:
            found = e
    return found


# ---------------------------------------------------------------------------------------------
# The numbers


def ratio_text(d):
    """The winner over its largest floor, saying which floor that is: "1.33x (FP32 compute)"."""
    return x(d["ratio_to_floor"]) + (f" ({d['floors']['bound']})" if d["ratio_to_floor"] is not None else "")


def analyse(root, peaks, torch, allow_synthetic=False, left_out=None):
    groups = {}  # (problem, tag) -> {"shape", "problem", "gpus": {slug: {...}}}
    runs = []
    for path, run in load(root, allow_synthetic, left_out):
        slug, name = gpu_of(path, run)
        runs.append((path, run))
        if not run.get("timed"):
            continue
        # Keyed by the shape with its dtype defaults (a file older than T is its default); "shape" is the
        # first file's as written.
        g = groups.setdefault((run["problem"], shape_tag(path.shape)),
                              {"problem": run["problem"], "shape": run["shape"], "gpus": {}, "cards": {}})
        # One file per card and shape: a second would stand in for the first, or show one card as two.
        card = (name, run["device"]["uuid"] or path.parts[-3])
        if card in g["cards"] or path.parts[-3] in g["gpus"]:
            other = g["cards"].get(card) or g["gpus"][path.parts[-3]]["file"]
            raise InputError(f"{path}: shape: {run['problem']} {shape_text(path.shape)} on {name} is in {other} "
                             "too; keep one results file per card and shape")
        g["cards"][card] = str(path)
        s = run["summary"]
        by = {v["name"]: v for v in run["variants"]}
        # An interrupted run names the best it had timed, which its gate may not have checked: no winner here
        # (tune header and tune export refuse it too) until --resume finishes the run.
        interrupted = (run["context"].get("search") or {}).get("interrupted")
        win = None if interrupted else by.get(s.get("winner") or "")
        base = by.get(s.get("baseline") or "")
        fl = floors(run, peaks.get(slug), win["params"] if win else None)
        t = torch_entry(torch.get(slug), run["problem"], path.shape, path.dtype_defaults)
        wt = win["timing"] if win and win.get("timing") else None
        # Keyed by the results folder: two cards of one model (one slug) write to folders of their own.
        g["gpus"][path.parts[-3]] = {
            "gpu": name, "slug": slug, "uuid": (run.get("device") or {}).get("uuid"), "file": str(path), "run": run,
            "winner": win["name"] if win else None, "winner_params": win["params"] if win else None,
            "median_us": wt["median_us"] if wt else None, "noise": wt.get("noise") if wt else None,
            "batch_us": wt.get("batch_mean_us") if wt else None, "graph_us": wt.get("graph_mean_us") if wt else None,
            "baseline": base["name"] if base else None, "baseline_us": median_us(base),
            "speedup_over_baseline": (median_us(base) / wt["median_us"]) if wt and median_us(base) else None,
            "floors": fl, "peak_source": (peaks.get(slug) or {}).get("source"),
            "ratio_to_floor": wt["median_us"] / fl["larger_us"] if wt and fl and fl["larger_us"] > 0 else None,
            "work": run.get("work"), "dtype": dtype_text(run), "tensor_dtypes": tensor_dtypes(run),
            "torch": torch_speedups(wt, run.get("torch"), t, win["params"] if win else None),
            "times": {v["name"]: v["timing"]["median_us"] for v in passed(run)},
            "status": {v["name"]: v["status"] for v in run["variants"]},
        }
    # Cards of one model are told apart in the tables by their folder ("NVIDIA H200 [h200-3f2a9c01]"),
    # or, where one folder holds the records of several cards, by the folder and the card's UUID
    # ("NVIDIA H200 [h200 c74c7f93]"): the folder alone would name them all alike.
    uuids, per_folder = {}, {}
    for g in groups.values():
        for key, d in g["gpus"].items():
            uuids.setdefault(d["gpu"], set()).add(d["uuid"])
            per_folder.setdefault((d["gpu"], key), set()).add(d["uuid"])
    for g in groups.values():
        for key, d in g["gpus"].items():
            if len(uuids[d["gpu"]]) > 1:
                card = (d["uuid"] or "").removeprefix("GPU-")[:8]
                shared = len(per_folder[(d["gpu"], key)]) > 1 and card
                d["gpu"] = f"{d['gpu']} [{key} {card}]" if shared else f"{d['gpu']} [{key}]"
        g["portability"] = portability(g["gpus"]) if len(g["gpus"]) >= 2 else None
        g["card_spread"] = card_spread(g["gpus"])
    return runs, dict(sorted(groups.items()))


def spread_pct(values):
    """max / min - 1, in %, of the values that exist; None with fewer than two."""
    v = [t for t in values if t is not None]
    return (max(v) / min(v) - 1) * 100 if len(v) >= 2 and min(v) > 0 else None


def card_spread(gpus):
    """Cards of one model (same device name, different UUIDs) that measured this shape: each card's
    winner and its median, the spread of those medians, and for each card's winner config its
    median on every card of the model with the spread (max / min - 1, %)."""
    models = {}
    for key, d in gpus.items():
        models.setdefault(d["run"]["device"]["name"] if d["run"].get("device") else None, []).append(key)
    out = []
    for model, keys in sorted(models.items(), key=lambda m: str(m[0])):
        if model is None or len({gpus[k]["uuid"] for k in keys}) < 2:
            continue
        configs = []
        for c in dict.fromkeys(gpus[k]["winner"] for k in keys if gpus[k]["winner"]):
            on = {k: gpus[k]["times"].get(c) for k in keys}
            configs.append({"config": c, "winner_on": [k for k in keys if gpus[k]["winner"] == c], "on": on,
                            "spread_pct": spread_pct(on.values())})
        out.append({"model": model,
                    "cards": [{"card": k, "uuid": gpus[k]["uuid"], "winner": gpus[k]["winner"],
                               "median_us": gpus[k]["median_us"], "baseline_us": gpus[k]["baseline_us"]}
                              for k in keys],
                    "winner_median_spread_pct": spread_pct(gpus[k]["median_us"] for k in keys),
                    "configs": configs, "baseline": baseline_spread(gpus, keys)})
    return out


# Cards of one model time one config alike; their baselines further apart than this (or than the
# two measurements' own spread, if larger) say one card ran slower: clocks, power, heat or other load.
BASELINE_SPREAD_PCT = 5.0


def baseline_spread(gpus, keys):
    """The baseline config's cold median on each card of one model, the spread of the slowest over the
    fastest (max / min - 1, %) and whether it is beyond noise: above the larger of BASELINE_SPREAD_PCT
    and the two cards' relative half interquartile ranges added. None without two timed baselines of
    one config."""
    timed = {k: gpus[k] for k in keys if gpus[k]["baseline_us"]}
    if len(timed) < 2 or len({d["baseline"] for d in timed.values()}) != 1:
        return None
    lo = min(timed, key=lambda k: timed[k]["baseline_us"])
    hi = max(timed, key=lambda k: timed[k]["baseline_us"])

    def half_iqr_pct(d):
        t = {v["name"]: v for v in d["run"]["variants"]}[d["baseline"]]["timing"]
        q1, q3 = t.get("q1_us"), t.get("q3_us")
        return (q3 - q1) / (2 * t["median_us"]) * 100 if q1 is not None and q3 is not None else 0.0

    spread = spread_pct([timed[lo]["baseline_us"], timed[hi]["baseline_us"]])
    threshold = max(BASELINE_SPREAD_PCT, half_iqr_pct(timed[lo]) + half_iqr_pct(timed[hi]))
    return {"config": timed[lo]["baseline"], "on": {k: d["baseline_us"] for k, d in timed.items()},
            "fastest": lo, "slowest": hi, "spread_pct": spread, "threshold_pct": threshold,
            "beyond_noise": spread > threshold}


def portability(gpus):
    """Each GPU's winner as measured on every GPU (loss = its time / that GPU's winner's time), and
    the config with the smallest worst-case loss among those measured on all of them."""
    best = {slug: d["median_us"] or min(d["times"].values()) for slug, d in gpus.items() if d["times"]}
    matrix = {}
    for src, d in gpus.items():
        if not d["winner"]:
            continue
        row = {}
        for dst, e in gpus.items():
            t = e["times"].get(d["winner"])
            row[dst] = ({"us": t, "loss": t / best[dst]} if t is not None else
                        {"us": None, "loss": None, "status": e["status"].get(d["winner"], "not measured")})
        matrix[src] = {"config": d["winner"], "on": row}
    common = set.intersection(*(set(d["times"]) for d in gpus.values()))
    candidates = sorted((max(gpus[s]["times"][c] / best[s] for s in gpus), c) for c in common)
    robust = None
    if candidates:
        worst, name = candidates[0]
        robust = {"config": name, "worst_loss": worst,
                  "loss": {s: gpus[s]["times"][name] / best[s] for s in gpus}}
    return {"matrix": matrix, "most_portable": robust, "configs_measured_everywhere": len(common)}


# ---------------------------------------------------------------------------------------------
# Run summary tables (also printed by report/summary.py)

def strategy_key(params):
    return ", ".join(f"{k}={params[k]}" for k in ("strategy", "mapping") if k in params)


def fmt(x, spec=".2f", none="—"):
    return none if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def summary_tables(runs):
    """The run table (one row per results file) and the best variant per strategy of each run."""
    head = ["GPU", "problem", "shape", "dtype", "variants", "passed parity", "compile wall s",
            "compile s per variant (median)", "tune wall s", "baseline cold median µs", "winner cold median µs",
            "winner graph µs", "speedup", "empty kernel cold µs", "file"]
    rows, detail = [], []
    for path, run in runs:
        by = {v["name"]: v for v in run["variants"]}
        ok = passed(run)
        compile_s = [v["compile_seconds"] for v in run["variants"] if v.get("compile_seconds")]
        s = run["summary"]
        win, base = by.get(s.get("winner") or ""), by.get(s.get("baseline") or "")
        fl = run.get("harness_floor") or {}
        _, gpu = gpu_of(path, run)
        rows.append([gpu, run["problem"], dims_text(run["shape"]), dtype_text(run), str(len(run["variants"])),
                     str(sum(v["status"] == "passed" for v in run["variants"])),
                     fmt((run.get("wall_seconds") or {}).get("compile"), ".1f"),
                     fmt(statistics.median(compile_s) if compile_s else None),
                     fmt((run.get("wall_seconds") or {}).get("total"), ".1f"),
                     fmt(median_us(base)), fmt(median_us(win)),
                     fmt(win["timing"].get("graph_mean_us") if win and win.get("timing") else None),
                     fmt(s.get("speedup_over_baseline")) + ("x" if s.get("speedup_over_baseline") else ""),
                     fmt(fl.get("empty_kernel_cold_us")), f"`{path}`"])
        best = {}
        for v in ok:
            k = strategy_key(v["params"])
            if k not in best or v["timing"]["median_us"] < best[k]["timing"]["median_us"]:
                best[k] = v
        # A space without a strategy or mapping parameter (a user's problem) has one key, "": its table
        # would be one row of a blank strategy, the winner again.
        if best and set(best) != {""}:
            detail.append((f"**{run['problem']} {shape_text(run['shape'])}** on {gpu}: best cold median per strategy",
                           ["strategy", "cold median µs", "graph µs per call", "registers", "config"],
                           [[k, fmt(v["timing"]["median_us"]), fmt(v["timing"].get("graph_mean_us")),
                             fmt(registers(v), "d"), v["name"]]
                            for k, v in sorted(best.items(), key=lambda kv: kv[1]["timing"]["median_us"])]))
    return (head, rows), detail


def md_cell(text):
    """A markdown table cell: a `|` escaped (GFM splits cells at one even inside a code span), a line
    break as a space (it would end the row)."""
    return " ".join(str(text).replace("|", "\\|").splitlines())


def md_table(head, rows):
    lines = ["| " + " | ".join(map(md_cell, head)) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    return "\n".join(lines + ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows])


def summary_markdown(root):
    runs = list(load(root))
    (head, rows), detail = summary_tables(runs)
    parts = [md_table(head, rows)]
    for title, h, r in detail:
        parts += [title, md_table(h, r)]
    return "\n\n".join(parts)


def x(v, spec=".2f"):
    return fmt(v, spec) + "x" if v is not None else "—"


def count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"
