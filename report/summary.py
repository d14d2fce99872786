#!/usr/bin/env python3
"""Markdown summary of tune result files: one row per (GPU, problem, shape), then the best
variant of each strategy. Reads results/<gpu>/<problem>/<shape>.json; prints to stdout.

    python3 report/summary.py results/
"""
import json
import pathlib
import statistics
import sys


def load(root):
    for path in sorted(pathlib.Path(root).glob("*/*/*.json")):
        with open(path) as f:
            run = json.load(f)
        if run.get("kind") == "tune.result":
            yield path, run


def strategy_key(params):
    return ", ".join(f"{k}={params[k]}" for k in ("strategy", "mapping") if k in params)


def main(root):
    rows, detail = [], []
    for path, run in load(root):
        variants = run["variants"]
        by = {v["name"]: v for v in variants}
        passed = [v for v in variants if v["status"] == "passed"]
        compile_s = [v["compile_seconds"] for v in variants if v["compile_seconds"]]
        shape = " ".join(f"{k}{v}" for k, v in run["shape"].items())
        s = run["summary"]
        win = by.get(s["winner"]) if s["winner"] else None
        base = by.get(s["baseline"]) if s["baseline"] else None
        floor = run.get("harness_floor") or {}
        gpu = run["device"]["name"] if run["device"] else "none (compile only)"
        rows.append(
            f"| {gpu} | {run['problem']} | {shape} | {len(variants)} | {len(passed)} "
            f"| {run['wall_seconds']['compile']:.1f} | {statistics.median(compile_s) if compile_s else 0:.2f} "
            f"| {run['wall_seconds']['total']:.1f} "
            f"| {base['timing']['median_us'] if base and base['timing'] else float('nan'):.2f} "
            f"| {win['timing']['median_us'] if win else float('nan'):.2f} "
            f"| {win['timing'].get('graph_mean_us', float('nan')) if win else float('nan'):.2f} "
            f"| {s['speedup_over_baseline'] or float('nan'):.2f}x "
            f"| {floor.get('empty_kernel_cold_us', float('nan')):.2f} | `{path}` |")
        best = {}
        for v in passed:
            k = strategy_key(v["params"])
            if k not in best or v["timing"]["median_us"] < best[k]["timing"]["median_us"]:
                best[k] = v
        detail.append(f"\n**{run['problem']} {shape}** on {gpu}: best cold median per strategy\n")
        detail.append("| strategy | cold median µs | graph µs per call | registers | config |")
        detail.append("| --- | --- | --- | --- | --- |")
        for k, v in sorted(best.items(), key=lambda kv: kv[1]["timing"]["median_us"]):
            detail.append(f"| {k} | {v['timing']['median_us']:.2f} | {v['timing'].get('graph_mean_us') or float('nan'):.2f} "
                          f"| {v['max_registers']} | {v['name']} |")
    print("| GPU | problem | shape | variants | passed parity | compile wall s | compile s per variant (median) "
          "| tune wall s | baseline cold median µs | winner cold median µs | winner graph µs | speedup "
          "| empty kernel cold µs | file |")
    print("| --- " * 14 + "|")
    print("\n".join(rows))
    print("\n".join(detail))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results")
