#!/usr/bin/env python3
"""Markdown summary of tune result files: one row per (GPU, problem, shape), then the best
variant of each strategy. Reads results/<gpu>/<problem>/<shape>.json; prints to stdout.
The same tables close the full report (report/report.py, `tune report`); report/analysis.py makes them.

    python3 report/summary.py results/
"""
import sys

from analysis import summary_markdown
from results import InputError

if __name__ == "__main__":
    try:
        print(summary_markdown(sys.argv[1] if len(sys.argv) > 1 else "results"))
    except InputError as e:
        print(f"summary: {e}", file=sys.stderr)
        sys.exit(2)
