#!/usr/bin/env python3
"""The tune report: winners, floors, baselines and portability across GPUs and shapes.

    python3 report/report.py RESULTS_DIR -o OUT_DIR [--peaks FILE] [--torch FILE]...
    (or: tune report RESULTS_DIR -o OUT_DIR ..., which runs this script)

Reads RESULTS_DIR/<gpu>/<problem>/<shape>.json (tune results) and, when present,
RESULTS_DIR/<gpu>/torch_baseline.json (written by report/torch_baseline.py on that GPU).
Writes OUT_DIR/report.md, OUT_DIR/report.html (the same content, charts inline),
OUT_DIR/charts/*.png and OUT_DIR/report.json (the numbers of the tables, for tools and tests).

Floors (docs/cli.md, tune report): bytes per call over the copy bandwidth, FLOP per call over the
compute rate that fits the winner: FP32 (FP64 for a float64 output), or the tensor-core rate of its
output's dtype (BF16/FP16, TF32 for float32) when the winner uses tensor cores (uses_tensor_cores).
The result files do not carry those device peaks; they come from --peaks (JSON keyed by GPU
slug: {"h200": {"copy_gb_per_s": 4200, "fp32_gflop_per_s": 60200, "source": "..."}, optionally
"fp64_gflop_per_s", "tf32_tensor_gflop_per_s", "bf16_tensor_gflop_per_s", "fp16_tensor_gflop_per_s"}),
else from the tables below: numbers measured on real devices first, then the vendor's datasheet.
"""
import argparse
import base64
import html
import json
import math
import pathlib
import statistics
import sys

import results
from floors import (DATASHEET_PEAKS, MEASURED_PEAKS, RATES, compute_rate, floors, load_peaks,  # noqa: F401
                    output_dtype, uses_tensor_cores)
from pytorch import exported_winner, modelnew_over_compile, torch_speedups  # noqa: F401
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
    """A results file's path, with what tune computed for it (results.load_results): device_slug, and
    not_measured (why its timings were not measured on a GPU; None when they were)."""
    device_slug = None
    not_measured = None


def load(root, allow_synthetic=True, left_out=None):
    """Yields (path, run) for every tune result file under root (<gpu>/<problem>/<shape>.json or .json.gz), each
    validated by tune's own reader (tune results --json); other JSON files there are passed over.
    A run not measured on a GPU (a compile-only sweep, the fake worker) is left out unless allow_synthetic:
    (path, why) appended to left_out, so that the measured ones beside it are still reported."""
    for rec in results.load_results([root]):
        path, run = ResultPath(rec["file"]), rec["run"]
        path.device_slug = rec["device_slug"]
        path.not_measured = rec["not_measured"]
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
    """Torch baseline files keyed by GPU slug: RESULTS_DIR/<gpu>/torch_baseline.json plus extra."""
    files = sorted(pathlib.Path(root).glob("*/torch_baseline.json")) + [pathlib.Path(p) for p in extra]
    out = {}
    for path in files:
        doc = results.read_checked(path, results.validate_torch_baseline)
        out[results.device_slug(doc["device"]["name"])] = {
            "path": str(path), "doc": doc,
            "entries": {(e["problem"], shape_tag(e["shape"])): e for e in doc.get("entries") or []}}
    return out


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
        g = groups.setdefault((run["problem"], shape_tag(run["shape"])),
                              {"problem": run["problem"], "shape": run["shape"], "gpus": {}, "cards": {}})
        # One file per card and shape: a second would stand in for the first, or show one card as two.
        card = (name, run["device"]["uuid"] or path.parts[-3])
        if card in g["cards"] or path.parts[-3] in g["gpus"]:
            other = g["cards"].get(card) or g["gpus"][path.parts[-3]]["file"]
            raise InputError(f"{path}: shape: {run['problem']} {shape_text(run['shape'])} on {name} is in {other} "
                             "too; keep one results file per card and shape")
        g["cards"][card] = str(path)
        s = run["summary"]
        by = {v["name"]: v for v in run["variants"]}
        win = by.get(s.get("winner") or "")
        base = by.get(s.get("baseline") or "")
        fl = floors(run, peaks.get(slug), win["params"] if win else None)
        t = torch.get(slug, {}).get("entries", {}).get((run["problem"], shape_tag(run["shape"])))
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
    # Cards of one model are told apart by their folder in the tables ("NVIDIA H200 [h200-3f2a9c01]").
    uuids = {}
    for g in groups.values():
        for d in g["gpus"].values():
            uuids.setdefault(d["gpu"], set()).add(d["uuid"])
    for g in groups.values():
        for key, d in g["gpus"].items():
            if len(uuids[d["gpu"]]) > 1:
                d["gpu"] = f"{d['gpu']} [{key}]"
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
        if best:
            detail.append((f"**{run['problem']} {shape_text(run['shape'])}** on {gpu}: best cold median per strategy",
                           ["strategy", "cold median µs", "graph µs per call", "registers", "config"],
                           [[k, fmt(v["timing"]["median_us"]), fmt(v["timing"].get("graph_mean_us")),
                             fmt(registers(v), "d"), v["name"]]
                            for k, v in sorted(best.items(), key=lambda kv: kv[1]["timing"]["median_us"])]))
    return (head, rows), detail


def md_table(head, rows):
    return "\n".join(["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"] +
                     ["| " + " | ".join(r) + " |" for r in rows])


def summary_markdown(root):
    runs = list(load(root))
    (head, rows), detail = summary_tables(runs)
    parts = [md_table(head, rows)]
    for title, h, r in detail:
        parts += [title, md_table(h, r)]
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Charts

def _plt():
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"the report needs matplotlib for {sys.executable} (Debian: apt-get install "
                         "python3-matplotlib; scripts/setup.sh installs it)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})
    return plt


def _save(fig, out, name):
    path = out / "charts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt
    plt.close(fig)
    return f"charts/{name}"


def chart_distribution(plt, g, out):
    import numpy as np
    from matplotlib.ticker import MaxNLocator
    gpus = [(s, d) for s, d in g["gpus"].items() if d["times"]]
    if not gpus:
        return None
    fig, axes = plt.subplots(len(gpus), 1, figsize=(8, 2.6 * len(gpus)), squeeze=False, sharex=True)
    every = [t for _, d in gpus for t in d["times"].values()]
    lo, hi = min(every), max(every)
    for s, d in gpus:
        if d["floors"]:
            lo = min(lo, d["floors"]["larger_us"])
        lo = min(lo, (d["run"].get("harness_floor") or {}).get("empty_kernel_cold_us") or lo)
    bins = np.geomspace(lo * 0.95, hi * 1.05, 30)
    for ax, (slug, d) in zip(axes[:, 0], gpus):
        ax.hist(list(d["times"].values()), bins=bins, color="#8da0cb", edgecolor="white")
        if d["baseline_us"]:
            ax.axvline(d["baseline_us"], color="#d95f02", ls="--", lw=2, label=f"baseline {d['baseline_us']:.1f} µs")
        if d["median_us"]:
            ax.axvline(d["median_us"], color="#1b9e77", lw=2, label=f"winner {d['median_us']:.1f} µs")
        if d["floors"]:
            ax.axvline(d["floors"]["larger_us"], color="black", ls=":", lw=1.5,
                       label=f"floor ({d['floors']['bound']}) {d['floors']['larger_us']:.1f} µs")
        empty = (d["run"].get("harness_floor") or {}).get("empty_kernel_cold_us")
        if empty:
            ax.axvline(empty, color="gray", ls="-.", lw=1, label=f"empty kernel (cold) {empty:.1f} µs")
        ax.set_xscale("log")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("variants")
        ax.set_title(f"{d['gpu']}: {len(d['times'])} variants that passed parity", fontsize=9)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    axes[-1, 0].set_xlabel("cold median time per call (µs, L2 flushed; log scale)")
    fig.suptitle(f"{g['problem']} {shape_text(g['shape'])}: distribution of variant times")
    fig.tight_layout()
    return _save(fig, out, f"distribution_{g['problem']}_{shape_tag(g['shape'])}.png")


def sensitivity(run):
    """Per parameter with two or more values: value -> (median, min) cold time over passed variants."""
    ok = passed(run)
    out = {}
    for p in (ok[0]["params"] if ok else {}):
        by = {}
        for v in ok:
            by.setdefault(json.dumps(v["params"].get(p)), []).append(v["timing"]["median_us"])
        if len(by) >= 2:
            order = sorted(by, key=lambda k: (0, json.loads(k), "") if isinstance(json.loads(k), (int, float))
                           and not isinstance(json.loads(k), bool) else (1, 0, k))
            out[p] = {k: (statistics.median(by[k]), min(by[k]), len(by[k])) for k in order}
    return out


def chart_sensitivity(plt, g, slug, out):
    sens = sensitivity(g["gpus"][slug]["run"])
    if not sens:
        return None
    n = len(sens)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.7 * rows), squeeze=False)
    for ax, (p, vals) in zip(axes.flat, sens.items()):
        labels = [k.strip('"') for k in vals]
        x = range(len(labels))
        ax.bar(x, [m for m, _, _ in vals.values()], color="#8da0cb", label="median")
        ax.plot(x, [b for _, b, _ in vals.values()], "o", color="#1b9e77", label="best")
        ax.set_xticks(list(x), [f"{label}\n({c})" for label, (_, _, c) in zip(labels, vals.values())], fontsize=8)
        ax.set_title(p, fontsize=9)
        ax.set_ylabel("cold time per call (µs)")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{g['gpus'][slug]['gpu']}, {g['problem']} {shape_text(g['shape'])}: median and best cold time "
                 "per parameter value (variant count in brackets)", fontsize=9)
    fig.tight_layout()
    return _save(fig, out, f"sensitivity_{slug}_{g['problem']}_{shape_tag(g['shape'])}.png")


def chart_shapes(plt, problem, groups, out):
    from matplotlib.ticker import FuncFormatter
    gs = sorted((g for g in groups if g["problem"] == problem),
                key=lambda g: min((d["work"] or {}).get("bytes_per_call", 0) for d in g["gpus"].values()))
    slugs = sorted({s for g in gs for s in g["gpus"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(gs) + 3), 4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = list(range(len(gs)))
    for i, slug in enumerate(slugs):
        c = colors[i % len(colors)]
        name = next(g["gpus"][slug]["gpu"] for g in gs if slug in g["gpus"])

        def series(f):
            return [f(g["gpus"][slug]) if slug in g["gpus"] else None for g in gs]
        for ys, style, what in ((series(lambda d: d["median_us"]), "o-", "winner"),
                                (series(lambda d: d["baseline_us"]), "s--", "baseline"),
                                (series(lambda d: d["floors"]["larger_us"] if d["floors"] else None), "v:", "floor")):
            pts = [(xi, y) for xi, y in zip(x, ys) if y]
            if pts:
                ax.plot(*zip(*pts), style, color=c, label=f"{name}: {what}", alpha=0.6 if what == "baseline" else 1)
    ax.set_xticks(x, [shape_text(g["shape"]).replace(" ", "\n", 1) for g in gs], fontsize=8)
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel("shape (ordered by bytes per call)")
    ax.set_ylabel("cold median time per call (µs, log scale)")
    ax.set_title(f"{problem}: time vs shape, with the largest floor (bytes/bandwidth, FLOP/FP32 rate or launch)",
                 fontsize=9)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _save(fig, out, f"shapes_{problem}.png")


def chart_portability(plt, g, out):
    """Loss (time / that GPU's winner's time) of each GPU's winner and of the most portable config."""
    import numpy as np
    port, gpus = g["portability"], g["gpus"]
    slugs = list(gpus)
    rows = [(f"winner on {gpus[s]['gpu']}", m["config"]) for s, m in port["matrix"].items()]
    if port["most_portable"] and port["most_portable"]["config"] not in [c for _, c in rows]:
        rows.append(("smallest worst-case loss", port["most_portable"]["config"]))
    ref = {s: gpus[s]["median_us"] or min(gpus[s]["times"].values(), default=1.0) for s in slugs}
    loss = np.array([[gpus[s]["times"][c] / ref[s] if c in gpus[s]["times"] else np.nan
                      for s in slugs] for _, c in rows])
    fig, ax = plt.subplots(figsize=(2.2 * len(slugs) + 4, 0.6 * len(rows) + 1.6))
    finite = loss[np.isfinite(loss)]
    cmap = plt.get_cmap("Reds").copy()
    cmap.set_bad("#dddddd")
    top = max(1.5, finite.max() if finite.size else 1.5)
    im = ax.imshow(np.ma.masked_invalid(loss), cmap=cmap, vmin=1.0, vmax=top, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(slugs)):
            ax.text(j, i, "not measured" if np.isnan(loss[i, j]) else f"{loss[i, j]:.2f}x", ha="center", va="center",
                    fontsize=8, color="white" if loss[i, j] > 1 + 0.6 * (top - 1) else "black")
    ax.set_xticks(range(len(slugs)), [f"measured on\n{gpus[s]['gpu']}" for s in slugs], fontsize=8)
    ax.set_yticks(range(len(rows)), [f"{label}\n{c}" for label, c in rows], fontsize=7)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="loss: cold time / that GPU's winner (x)")
    ax.set_title(f"{g['problem']} {shape_text(g['shape'])}: portability of each GPU's winner", fontsize=9)
    return _save(fig, out, f"portability_{g['problem']}_{shape_tag(g['shape'])}.png")


# ---------------------------------------------------------------------------------------------
# The document: blocks rendered as markdown and as HTML

def x(v, spec=".2f"):
    return fmt(v, spec) + "x" if v is not None else "—"


def count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def cards_text(runs):
    """How many GPUs the results come from, told apart by card (device UUID; the results folder for a
    compile-only run, which has no device), and of which models: "2 GPUs (2 × NVIDIA H200)"."""
    cards = {}
    for path, run in runs:
        dev = run.get("device")
        card = (dev["name"], dev["uuid"]) if dev and dev["uuid"] else (gpu_of(path, run)[1], path.parts[-3])
        cards[card] = card[0]
    models = {}
    for name in cards.values():
        models[name] = models.get(name, 0) + 1
    return (count(len(cards), "GPU") + " (" +
            ", ".join(f"{n} × {name}" if n > 1 else name for name, n in sorted(models.items())) + ")")


def baseline_spread_text(m):
    b = m["baseline"]
    rule = (f"the larger of {BASELINE_SPREAD_PCT:g} % and the two measurements' relative half interquartile "
            f"ranges added: {b['threshold_pct']:.1f} %")
    if not b["beyond_noise"]:
        return f"Baseline `{b['config']}` on the cards: {b['spread_pct']:.1f} % apart, within noise ({rule})."
    return (f"**Baseline spread beyond noise:** the baseline `{b['config']}` took {b['on'][b['slowest']]:.2f} µs on "
            f"`{b['slowest']}` and {b['on'][b['fastest']]:.2f} µs on `{b['fastest']}`, {b['spread_pct']:.1f} % apart "
            f"({rule}). Cards of one model time one config alike: look at the slower card's clocks, power and "
            "temperature or other load on it, and compare these cards' winners with care.")


def _intro_blocks(root, runs, groups, left_out):
    """The report's title and opening paragraphs: what was read, how times and floors are taken, what
    is synthetic or left out. Returns (blocks, synthetic)."""
    blocks = [("h1", "tune report"),
              ("p", f"Results from `{root}`: {count(len(runs), 'file')}, "
                    f"{count(len(groups), 'problem and shape pair')} "
                    f"on {cards_text(runs)}. Times are per call in microseconds (µs): "
                    "cold = median of CUDA-event samples with L2 flushed before each; batch = back-to-back launches; "
                    "graph = CUDA-graph replay. Noise = standard deviation / mean of the cold samples. Floors "
                    "(docs/cli.md): bytes per call (in the tensors' dtypes) over copy bandwidth and FLOP per call "
                    "over the "
                    "compute rate that fits the winner (FP32; FP64 for a float64 output; the tensor-core rate of the "
                    "output's dtype, TF32 for float32, when the winner uses tensor cores), and the "
                    "launch floor: an empty kernel timed by the same cold method (the run's harness floor), below "
                    "which no call is timed; the ratio is the winner's cold median over the largest of them, and "
                    "says which bounds it (memory, the compute rate or launch).")]
    synthetic = [(path, path.not_measured) for path, _ in runs if path.not_measured]
    if synthetic:
        blocks.append(("p", f"**SYNTHETIC: {count(len(synthetic), 'file')} of these results were not measured on a "
                            "GPU** (--allow-synthetic): " + "; ".join(f"`{p}` ({w})" for p, w in synthetic) +
                            ". Their numbers are made up or absent; ship nothing from them."))
    if left_out:
        blocks.append(("p", "**Left out:** " + left_out_text(left_out).replace("left out ", "", 1) + "."))
    return blocks, synthetic


def _summary_blocks(groups, peaks, torch, used):
    """The summary table across problems and shapes, the device peaks and the PyTorch baselines."""
    blocks = []
    blocks.append(("h2", "Summary"))
    blocks.append(("p", "Against PyTorch, graph against graph: the winner's CUDA-graph time per call against the "
                        "module's CUDA-graph median (tune --torch in the run itself, else a torch_baseline.py file), "
                        "and ModelNew against torch.compile timed in one process by torch_baseline.py --export "
                        "(where it exported this file's winner)."))
    blocks.append(("table", ["problem, shape", "dtype", "GPU", "winner cold µs", "winner / largest floor",
                             "speedup over baseline", "winner graph µs", "torch.compile graph µs",
                             "winner over torch.compile (graph)", "winner over eager (graph)",
                             "ModelNew over torch.compile (graph)"],
                   [[f"{g['problem']} {dims_text(g['shape'])}", d["dtype"], d["gpu"], fmt(d["median_us"]),
                     ratio_text(d),
                     x(d["speedup_over_baseline"]), fmt(d["graph_us"]), fmt(t["compile"]["graph_us"] if t else None),
                     x(t["compile"]["speedup_graph"] if t else None), x(t["eager"]["speedup_graph"] if t else None),
                     x(modelnew_over_compile(t))]
                    for g in groups.values() for d in g["gpus"].values() for t in [d["torch"]]]))
    flagged = [f"{g['problem']} {shape_text(g['shape'])} on {m['model']} ({m['baseline']['spread_pct']:.1f} %)"
               for g in groups.values() for m in g["card_spread"] if m["baseline"] and m["baseline"]["beyond_noise"]]
    if flagged:
        blocks.append(("p", "**Baseline spread between cards of one model beyond noise:** " + "; ".join(flagged) +
                            ". See the card-to-card sections below."))
    blocks.append(("h2", "Device peaks used for the floors"))
    rate_keys = [RATES[k][0] for k in ("fp32", "fp64", "tf32_tensor", "bf16_tensor", "fp16_tensor")]
    blocks.append(("table", ["GPU", "copy bandwidth GB/s", "FP32 GFLOP/s", "FP64 GFLOP/s", "TF32 tensor GFLOP/s",
                             "BF16 tensor GFLOP/s", "FP16 tensor GFLOP/s", "source"],
                   [[s, fmt(peaks[s].get("copy_gb_per_s"), ".0f")] + [fmt(peaks[s].get(k), ".0f") for k in rate_keys]
                    + [peaks[s].get("source", "")] if s in peaks else
                    [s] + ["—"] * 6 + ["no peak numbers: pass --peaks FILE ({slug: {copy_gb_per_s, fp32_gflop_per_s}})"]
                    for s in used]))
    if torch:
        blocks.append(("h2", "PyTorch baselines"))
        blocks.append(("table", ["GPU", "file", "torch", "TF32 in matmul", "measured at"],
                       [[t["doc"]["device"]["name"], f"`{t['path']}`", str(c.get("torch_version", "—")),
                         str(c.get("allow_tf32_matmul", "—")).lower(), str(c.get("created_at", "—"))]
                        for t in torch.values() for c in [t["doc"].get("context", {})]]))
    return blocks


def _shape_rows(g):
    """The per-GPU rows of one problem and shape: (winner rows, PyTorch rows, ModelNew rows)."""
    rows, trows, mrows = [], [], []
    for slug, d in g["gpus"].items():
        f = d["floors"]
        rows.append([d["gpu"], f"`{params_text(d['winner_params'])}`" if d["winner_params"] else "—",
                     fmt(d["median_us"]),
                     fmt(d["noise"] * 100 if d["noise"] is not None else None, ".1f") + " %",
                     fmt(d["batch_us"]), fmt(d["graph_us"]),
                     fmt(f["bytes_us"] if f else None), fmt(f["flop_us"] if f else None),
                     fmt(f["launch_us"] if f else None), ratio_text(d), fmt(d["baseline_us"]),
                     x(d["speedup_over_baseline"])])
        if d["torch"]:
            t = d["torch"]
            source = "this run (tune --torch)" if t["source"] == "results" else "torch_baseline.py"
            trows.append([d["gpu"], source]
                         + [c for m in ("eager", "compile") for c in (
                             fmt(t[m]["events_us"]) if not t[m]["error"] else f"failed: {t[m]['error']}",
                             fmt(t[m]["graph_us"]), x(t[m]["speedup_graph"]))])
            mn = t.get("modelnew")
            if mn:
                par = mn["parity"]
                ran = "the module (no tuned entry)"
                if mn["tuned"]:
                    ran = "tuned" if mn["variant"] == d["winner"] else (
                        f"tuned: `{mn['variant']}` (the export's results, not this file's winner)")
                mrows.append([d["gpu"], ran,
                              fmt(mn["events_us"]) if not mn["error"] else f"failed: {mn['error']}",
                              fmt(mn["graph_us"]), x(mn["over_eager_events"]), x(mn["over_compile_events"]),
                              x(mn["over_eager_graph"]), x(mn["over_compile_graph"]), fmt(mn["op_overhead_us"]),
                              (f"{par['max_abs_vs_float64']:.1e} ({'pass' if par['passed'] else 'FAIL'})"
                               if par else "—")])
    return rows, trows, mrows


def _shape_tables(rows, trows, mrows):
    """The tables of one problem and shape: timings and floors, against PyTorch, ModelNew."""
    blocks = []
    blocks.append(("table", ["GPU", "winner", "cold median µs", "noise", "batch µs", "graph µs",
                             "bytes floor µs", "FLOP floor µs", "launch floor µs", "winner / largest floor",
                             "baseline cold µs",
                             "speedup over baseline"], rows))
    if trows:
        blocks.append(("p", "Against PyTorch on the same GPU, graph against graph (the winner's CUDA-graph "
                            "time against the module's CUDA-graph replay); the module's events times (one "
                            "call between CUDA events, L2 flushed, launch overhead included) are shown "
                            "but set against nothing of the winner's:"))
        blocks.append(("table", ["GPU", "measured by", "eager µs (events)", "eager µs (graph)",
                                 "winner over eager (graph)", "torch.compile µs (events)",
                                 "torch.compile µs (graph)", "winner over torch.compile (graph)"], trows))
    if mrows:
        blocks.append(("p", "ModelNew (`tune export torch`, the tuned kernels as a PyTorch op) in the same "
                            "process as eager and torch.compile, on the same inputs, timed the same way; op "
                            "overhead: its events median minus the winner's cold median (dispatch, checks, "
                            "allocation); parity: max abs error against the float64 module:"))
        blocks.append(("table", ["GPU", "ran", "ModelNew µs (events)", "ModelNew µs (graph)",
                                 "over eager (events)", "over torch.compile (events)", "over eager (graph)",
                                 "over torch.compile (graph)", "op overhead µs", "parity vs float64"], mrows))
    return blocks


def _portability_blocks(problem, g, plt, out, charts):
    """Each GPU's winner as measured on the others, and the most portable config."""
    blocks = []
    port = g["portability"]
    if port:
        slugs = list(g["gpus"])
        prow = []
        for src, m in port["matrix"].items():
            prow.append([f"{g['gpus'][src]['gpu']} winner `{m['config']}`"] + [
                f"{fmt(c['us'])} µs ({x(c['loss'])} loss)" if c["us"] is not None else
                ("not measured" if c["status"] == "not measured" else f"not timed ({c['status']})")
                for c in (m["on"][dst] for dst in slugs)])
        blocks.append(("p", "Portability: each GPU's winner as measured on the others (loss = its cold "
                            "median there / that GPU's own winner)."))
        blocks.append(("table", ["config"] + [f"on {g['gpus'][s]['gpu']}" for s in slugs], prow))
        r = port["most_portable"]
        blocks.append(("p", f"Smallest worst-case loss over the {len(slugs)} GPUs, among the "
                            f"{port['configs_measured_everywhere']} configs measured on all of them: "
                            + (f"`{r['config']}`, worst case {x(r['worst_loss'])} ("
                               + ", ".join(f"{g['gpus'][s]['gpu']} {x(r['loss'][s])}" for s in slugs) + ")."
                               if r else "none (no config was measured on every GPU).")))
        if charts:
            blocks.append(("img", chart_portability(plt, g, out),
                           f"{problem} {shape_text(g['shape'])}: portability"))
    return blocks


def _card_spread_blocks(g):
    """Card-to-card spread of the cards of one model that measured this shape."""
    blocks = []
    for m in g["card_spread"]:
        keys = [c["card"] for c in m["cards"]]
        blocks.append(("p", f"Card-to-card spread: {len(keys)} cards of {m['model']} measured this shape "
                            "(spread = max / min − 1 of the cold medians)."))
        blocks.append(("table", ["card", "UUID", "winner", "winner cold µs", "baseline cold µs"],
                       [[f"`{c['card']}`", f"`{c['uuid']}`", f"`{c['winner']}`" if c["winner"] else "—",
                         fmt(c["median_us"]), fmt(c["baseline_us"])] for c in m["cards"]]
                       + [["all cards", "", "spread of the medians", fmt(m["winner_median_spread_pct"]) + " %",
                           fmt(m["baseline"]["spread_pct"] if m["baseline"] else None) + " %"]]))
        if m["baseline"]:
            blocks.append(("p", baseline_spread_text(m)))
        blocks.append(("table", ["config", "winner on"] + [f"on `{k}` µs" for k in keys] + ["spread"],
                       [[f"`{c['config']}`", ", ".join(f"`{k}`" for k in c["winner_on"])]
                        + [fmt(c["on"][k]) for k in keys] + [fmt(c["spread_pct"]) + " %"]
                        for c in m["configs"]]))
    return blocks


def _shape_blocks(problem, g, plt, out, charts):
    """The section of one problem and shape."""
    blocks = [("h3", f"{problem} {shape_text(g['shape'])}")]
    first = next(iter(g["gpus"].values()))
    blocks.append(("p", f"dtype {first['dtype']}; tensors: " + (", ".join(
        f"{n} {t}" for n, t in first["tensor_dtypes"].items()) or "float32 (a file older than dtypes)")
        + "; the compute floor's rate: " + (first["floors"] or {}).get("compute_rate", "—") + "."))
    blocks += _shape_tables(*_shape_rows(g))
    blocks += _portability_blocks(problem, g, plt, out, charts)
    blocks += _card_spread_blocks(g)
    if charts:
        blocks.append(("img", chart_distribution(plt, g, out),
                       f"{problem} {shape_text(g['shape'])}: distribution"))
        for slug in g["gpus"]:
            img = chart_sensitivity(plt, g, slug, out)
            if img:
                blocks.append(("img", img, f"{slug} {problem} {shape_text(g['shape'])}: parameter sensitivity"))
    return blocks


def build(root, out, peaks, torch, charts=True, allow_synthetic=False, left_out=None):
    left_out = [] if left_out is None else left_out
    runs, groups = analyse(root, peaks, torch, allow_synthetic, left_out)
    if not runs and left_out:
        raise InputError(f"{root}: no results measured on a GPU to report; " + left_out_text(left_out))
    if not runs:
        raise InputError(f"{root}: no tune results (<gpu>/<problem>/<shape>.json) found")
    plt = _plt() if charts else None
    blocks, synthetic = _intro_blocks(root, runs, groups, left_out)
    used = sorted({d["slug"] for g in groups.values() for d in g["gpus"].values()})
    blocks += _summary_blocks(groups, peaks, torch, used)
    data = {"groups": [], "peaks": {s: peaks[s] for s in used if s in peaks},
            "synthetic": [{"file": str(p), "why": w} for p, w in synthetic],
            "left_out": [{"file": str(p), "why": w} for p, w in left_out]}
    problems = sorted({g["problem"] for g in groups.values()})
    for problem in problems:
        blocks.append(("h2", f"Problem `{problem}`"))
        if charts:
            blocks.append(("img", chart_shapes(plt, problem, groups.values(), out), f"{problem}: time vs shape"))
        for (p, tag), g in groups.items():
            if p != problem:
                continue
            blocks += _shape_blocks(problem, g, plt, out, charts)
            data["groups"].append({"problem": problem, "shape": g["shape"], "portability": g["portability"],
                                   "card_spread": g["card_spread"],
                                   "gpus": {s: {k: v for k, v in d.items() if k not in ("run", "times", "status")}
                                            for s, d in g["gpus"].items()}})
    (head, rows), detail = summary_tables(runs)
    blocks += [("h2", "Runs"), ("table", head, rows)]
    for title, h, r in detail:
        blocks += [("p", title), ("table", h, r)]
    return blocks, data


def render_md(blocks):
    parts = []
    for b in blocks:
        if b[0] in ("h1", "h2", "h3"):
            parts.append("#" * int(b[0][1]) + " " + b[1])
        elif b[0] == "p":
            parts.append(b[1])
        elif b[0] == "table":
            parts.append(md_table(b[1], b[2]))
        elif b[0] == "img" and b[1]:
            parts.append(f"![{b[2]}]({b[1]})")
    return "\n\n".join(parts) + "\n"


def inline(text):
    """Markdown inline code and bold to HTML, everything else escaped."""
    out, code = [], False
    for i, piece in enumerate(text.split("`")):
        if code:
            out.append(f"<code>{html.escape(piece)}</code>")
        else:
            bold = piece.split("**")
            out.append("".join(f"<b>{html.escape(s)}</b>" if j % 2 else html.escape(s) for j, s in enumerate(bold)))
        code = not code
    return "".join(out)


def render_html(blocks, out):
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8"><title>tune report</title><style>',
             "body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
             "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
             "font-size:13px;text-align:left}code{font-size:12px}img{max-width:100%}",
             "</style></head><body>"]
    for b in blocks:
        if b[0] in ("h1", "h2", "h3"):
            parts.append(f"<{b[0]}>{inline(b[1])}</{b[0]}>")
        elif b[0] == "p":
            parts.append(f"<p>{inline(b[1])}</p>")
        elif b[0] == "table":
            parts.append("<table><tr>" + "".join(f"<th>{inline(h)}</th>" for h in b[1]) + "</tr>" +
                         "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in b[2]) +
                         "</table>")
        elif b[0] == "img" and b[1]:
            png = base64.b64encode((out / b[1]).read_bytes()).decode()
            parts.append(f'<p><img alt="{html.escape(b[2])}" src="data:image/png;base64,{png}"></p>')
    return "\n".join(parts + ["</body></html>"]) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tune report", description=__doc__.split("\n")[0])
    ap.add_argument("results", help="results folder (<gpu>/<problem>/<shape>.json)")
    ap.add_argument("-o", "--out", required=True, help="output folder for report.md, report.html, charts/")
    ap.add_argument("--peaks", help="JSON keyed by GPU slug: copy_gb_per_s, fp32_gflop_per_s, source")
    ap.add_argument("--torch", action="append", default=[],
                    help="torch baseline JSON (report/torch_baseline.py); "
                         "RESULTS/<gpu>/torch_baseline.json is read too")
    ap.add_argument("--allow-synthetic", action="store_true",
                    help="report results not measured on a GPU (fake GPU, compile-only) too, marked synthetic; "
                         "without it they are left out, and a line says which")
    a = ap.parse_args(argv)
    try:
        root = pathlib.Path(a.results)
        if not root.is_dir():
            raise InputError(f"{root}: not a folder (give the results folder, e.g. results/)")
        out = pathlib.Path(a.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"-o {out}: cannot create the output folder ({e.strerror})")
        torch = load_torch(root, a.torch)
        left_out = []
        blocks, data = build(root, out, load_peaks(a.peaks, torch), torch, allow_synthetic=a.allow_synthetic,
                             left_out=left_out)
        (out / "report.md").write_text(render_md(blocks))
        (out / "report.html").write_text(render_html(blocks, out))
        (out / "report.json").write_text(json.dumps(data, indent=1) + "\n")
    except InputError as e:
        print(f"tune: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # writing the output (a read-only folder, a full disk): bad input, as for tune header
        print(f"tune: -o {a.out}: cannot write {e.filename or 'the report'} ({e.strerror or e}); pass -o a folder you "
              "can write", file=sys.stderr)
        return 2
    except Exception as e:  # a bug, not bad input (that is InputError): one line, as tune says it
        print(f"tune: internal error in the report: {type(e).__name__}: {e}", file=sys.stderr)
        return 4
    print(f"report: {out / 'report.md'}, {out / 'report.html'}, {len(list((out / 'charts').glob('*.png')))} charts")
    if left_out:
        print("report: " + left_out_text(left_out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
