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
import os
import pathlib
import shutil
import signal
import sys

from analysis import (BASELINE_SPREAD_PCT, analyse, count, dims_text, fmt, gpu_of, left_out_text, load_torch,
                      md_table, params_text, ratio_text, shape_text, summary_tables, x)
from charts import _plt, chart_distribution, chart_portability, chart_sensitivity, chart_shapes
from floors import (DATASHEET_PEAKS, MEASURED_PEAKS, RATES, compute_rate, floors, load_peaks,  # noqa: F401
                    output_dtype, uses_tensor_cores)
from pytorch import exported_winner, modelnew_over_compile, torch_speedups  # noqa: F401
from results import InputError


# ---------------------------------------------------------------------------------------------
# The document: blocks rendered as markdown and as HTML

def cards_text(runs):
    """How many GPUs the results come from, told apart by card (device UUID), and of which models:
    "2 GPUs (2 × NVIDIA H200)"; compile-only results, which ran on none, are counted apart."""
    cards, compile_only = {}, set()
    for path, run in runs:
        dev = run.get("device")
        if not dev:
            compile_only.add(path.parts[-3])
            continue
        card = (dev["name"], dev["uuid"]) if dev["uuid"] else (gpu_of(path, run)[1], path.parts[-3])
        cards[card] = card[0]
    models = {}
    for name in cards.values():
        models[name] = models.get(name, 0) + 1
    text = count(len(cards), "GPU")
    if models:
        text += " (" + ", ".join(f"{n} × {name}" if n > 1 else name for name, n in sorted(models.items())) + ")"
    if compile_only:
        text += f" and {count(len(compile_only), 'compile-only folder')}"
    return text


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
                        for slot in torch.values() for t in slot["files"] for c in [t["doc"].get("context", {})]]))
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


# The charts' file names begin so (charts.py); a chart of an earlier report that this one did not
# draw (a problem or shape no longer in the results) is removed from OUT_DIR/charts.
CHART_PREFIXES = ("distribution_", "sensitivity_", "shapes_", "portability_")
STAGE = ".report.tmp."


def _writer_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_dead_stages(out):
    """The staging folders (and the temporary files of tune before round 9) that a report killed
    mid-write left in out: nothing else would remove them, and a folder of reports shipped or served
    as it is would carry them. A live report's stage stays."""
    for p in out.glob(STAGE + "*"):
        pid = p.name[len(STAGE):]
        if pid.isdigit() and not _writer_alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)
    for name in ("report.md", "report.html", "report.json"):
        (out / f".{name}.tmp").unlink(missing_ok=True)


def write_outputs(out, files, stage):
    """[(name, text)] and the charts drawn into stage/charts, moved into out whole: all encoded first
    and written into stage, then each renamed over its name (charts first, the documents that show
    them last), so that a report that fails or is killed keeps the earlier report's files, and each
    file is the earlier one or the new one, never a part. Charts of an earlier report that this one
    did not draw are removed last. Returns the number of this report's charts."""
    encoded = [(name, text.encode("utf-8")) for name, text in files]
    for name, data in encoded:
        (stage / name).write_bytes(data)
    drawn = sorted(p.name for p in (stage / "charts").glob("*.png")) if (stage / "charts").is_dir() else []
    # Once the files move in, the report finishes: a stop now would leave some new files beside old
    # ones. A Ctrl-C or SIGTERM from here on is let go (the report is done a moment later).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return _move_in(out, stage, encoded, drawn)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _move_in(out, stage, encoded, drawn):
    if drawn:
        (out / "charts").mkdir(exist_ok=True)
    for name in drawn:
        os.replace(stage / "charts" / name, out / "charts" / name)
    for name, _ in encoded:
        os.replace(stage / name, out / name)
    if (out / "charts").is_dir():
        for p in (out / "charts").glob("*.png"):
            if p.name.startswith(CHART_PREFIXES) and p.name not in drawn:
                p.unlink(missing_ok=True)
    return len(drawn)


class Stopped(BaseException):
    """Ctrl-C or SIGTERM: the report stops, its files not written (the earlier report's stay). Not an
    Exception: `except Exception` (an internal error) does not take it."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _on_stop(signum, frame):
    # The first stop only: the terminal's Ctrl-C reaches tune and this process both, and tune passes
    # its own on; a second one must not break the cleanup of the first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Stopped(signum)


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
    stops = {sig: signal.signal(sig, _on_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _report(a)
    except Stopped as e:
        print(f"tune: report interrupted ({'Ctrl-C' if e.signum == signal.SIGINT else 'SIGTERM'}); nothing written, "
              f"the files in {a.out} are as they were", file=sys.stderr)
        return 128 + e.signum
    finally:
        for sig, previous in stops.items():
            signal.signal(sig, previous)


def _report(a):
    try:
        root = pathlib.Path(a.results)
        if not root.is_dir():
            raise InputError(f"{root}: not a folder (give the results folder, e.g. results/)")
        out = pathlib.Path(a.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"-o {out}: cannot create the output folder ({e.strerror})")
        remove_dead_stages(out)
        torch = load_torch(root, a.torch)
        left_out = []
        # The charts are drawn into a folder of this report's own, and moved into out/charts with the
        # documents once all of them are made (write_outputs).
        stage = out / f"{STAGE}{os.getpid()}"
        try:
            stage.mkdir()
            blocks, data = build(root, stage, load_peaks(a.peaks, torch), torch, allow_synthetic=a.allow_synthetic,
                                 left_out=left_out)
            charts = write_outputs(out, [("report.md", render_md(blocks)), ("report.html", render_html(blocks, stage)),
                                         ("report.json", json.dumps(data, indent=1, allow_nan=False) + "\n")], stage)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
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
    print(f"report: {out / 'report.md'}, {out / 'report.html'}, {charts} charts")
    if left_out:
        print("report: " + left_out_text(left_out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
