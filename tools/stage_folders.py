#!/usr/bin/env python3
"""The stage folders of tuner/src (issue 38): the folder list reads as the pipeline, and no two
stages reach into each other's private headers.

    tools/stage_folders.py [--graph] SRC

SRC is tuner/src. Every folder directly under it must be a stage of STAGES (a file of a new concern
goes into the stage that does that job; an empty folder, which git
does not keep, is passed over). A private include, `#include "stage/file.hpp"`, is an
arrow from the including file's stage to that stage; the arrows between stages may form no cycle.
The public headers (tune/*.hpp) are the library's API and are not counted. --graph prints the
arrows. The exit status is 1 when a check fails (each failure named), else 0.
"""

import argparse
import pathlib
import re
import sys

# The pipeline, in order, then the folders shared below every stage.
STAGES = ("problem", "space", "compile", "worker", "measure", "gate", "search", "run", "record", "ship",
          "cli", "core", "cuda")
SOURCE_EXTENSIONS = (".cpp", ".hpp", ".h", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"', re.MULTILINE)


def arrows(src):
    """{(from_stage, to_stage): [file, ...]} of the private includes between stages."""
    found = {}
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCE_EXTENSIONS or not path.is_file():
            continue
        stage = path.relative_to(src).parts[0]
        for target in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            if target in STAGES and target != stage:
                files = found.setdefault((stage, target), [])
                if str(path.relative_to(src)) not in files:
                    files.append(str(path.relative_to(src)))
    return found


def cycle_through(edges, start):
    """A list of stages from start back to start along edges, or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, route = stack.pop()
        for a, b in edges:
            if a != node:
                continue
            if b == start:
                return route + [b]
            if b not in seen:
                seen.add(b)
                stack.append((b, route + [b]))
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=pathlib.Path)
    parser.add_argument("--graph", action="store_true", help="print the arrows between stages")
    args = parser.parse_args()
    if not args.src.is_dir():
        print(f"{args.src}: not a folder; pass tuner/src", file=sys.stderr)
        return 2
    failures = [f"tuner/src/{d.name}/ is no stage folder; move its files into one of: {', '.join(STAGES)}"
                for d in sorted(args.src.iterdir())
                if d.is_dir() and d.name not in STAGES and any(f.is_file() for f in d.rglob("*"))]
    edges = arrows(args.src)
    if args.graph:
        for (a, b), files in sorted(edges.items()):
            print(f"{a} -> {b}: {', '.join(files)}")
    for stage in STAGES:
        route = cycle_through(edges, stage)
        if route:
            steps = "; ".join(f"{a} -> {b} ({edges[(a, b)][0]})" for a, b in zip(route, route[1:]))
            failures.append(f"include cycle between stage folders: {steps}; move what both need below one of them")
            break
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
