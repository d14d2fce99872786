#!/usr/bin/env python3
"""Compares two results folders (tune's <gpu>/<problem>/<shape>.json layout): the same files, and
the same records apart from what differs between any two runs (timestamps, hosts, wall and
compile seconds, compile-cache hits, the command line, the journal's path). Exit 1 with the differences otherwise.

usage: compare_results.py EXPECTED_DIR ACTUAL_DIR
"""
import json
import pathlib
import sys

VOLATILE_CONTEXT = {"started_at", "finished_at", "host", "command_line"}
VOLATILE_VARIANT = {"compile_seconds", "compile_cached", "load_seconds", "first_launch_ms", "evaluate_ms", "parity_ms",
                    "unload_ms"}


def normalized(path):
    j = json.loads(path.read_text())
    for k in VOLATILE_CONTEXT:
        j["context"].pop(k, None)
    j["context"].get("journal", {}).pop("file", None)  # a path in the folder each run wrote to
    j.pop("wall_seconds", None)
    for v in j["variants"]:
        for k in VOLATILE_VARIANT:
            v.pop(k, None)
    return j


def diff(a, b, where, out):
    if type(a) is not type(b):
        out.append(f"{where}: {a!r} vs {b!r}")
    elif isinstance(a, dict):
        if list(a) != list(b):
            out.append(f"{where}: keys {list(a)} vs {list(b)}")
        for k in a.keys() & b.keys():
            diff(a[k], b[k], f"{where}.{k}", out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} vs {len(b)} entries")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{where}[{i}]", out)
    elif a != b:
        out.append(f"{where}: {a!r} vs {b!r}")


def main():
    expected, actual = map(pathlib.Path, sys.argv[1:3])
    files = lambda d: sorted(p.relative_to(d) for p in d.rglob("*") if p.is_file())
    problems = []
    if files(expected) != files(actual):
        problems.append(f"files differ: {files(expected)} vs {files(actual)}")
    for rel in files(expected):
        if rel.suffix == ".json" and (actual / rel).exists():
            diff(normalized(expected / rel), normalized(actual / rel), str(rel), problems)
        elif rel.suffix == ".hpp" and (actual / rel).exists():
            strip = lambda t: [l for l in t.splitlines() if "finished" not in l and "host" not in l]
            if strip((expected / rel).read_text()) != strip((actual / rel).read_text()):
                problems.append(f"{rel}: headers differ")
    if problems:
        print("\n".join(problems[:40]))
        return 1
    print(f"{len(files(expected))} files equal (apart from timestamps, hosts, wall and compile seconds, cache hits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
