#!/usr/bin/env python3
"""The longest functions of C++ and CUDA source folders, and a limit on their length (issue 23).

    tools/function_lengths.py [--top 10] [--max-lines N] FOLDER...

Prints the --top longest functions of each folder (its .cpp/.cc/.hpp/.h/.cu/.cuh/.inc files, read
recursively), in lines from the line of the function's name to its closing brace. With --max-lines,
the exit status is 1 when a function of the folders is longer than N lines (each one named), else 0;
2 on a usage error. A small brace-matching scanner, not a parser: comments, string literals and
preprocessor lines are blanked first; a function body is a brace, outside any other function body,
after a parameter list; lambdas and blocks inside a function count as part of it. A constructor's
length is counted from its last member initializer; a raw string literal holding braces would
mislead it.
"""

import argparse
import pathlib
import re
import sys

SOURCE_EXTENSIONS = (".cpp", ".cc", ".hpp", ".h", ".cu", ".cuh", ".inc")

_NAME = r"(operator\s*(?:\(\)|[^\s(]+)|[A-Za-z_]\w*)"
_FUNCTION_HEAD = re.compile(_NAME + r"\s*\(([^()]|\([^()]*\))*\)\s*(const|noexcept|override|final|mutable|&|\s)*"
                            r"(->\s*[^{};]*)?$")
_NOT_A_FUNCTION = re.compile(r"(namespace|struct|class|union|enum)\b")


def strip_code(text):
    """The text with comments and string/char literals blanked (line structure kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', text)


def functions(text):
    """[(lines, name, first line (1-based))] of every function of a source file, in the order they end."""
    code = strip_code(text)
    kinds, stmt, stmt_at, found = [], "", 0, []
    line, opened = 0, {}
    for ch in code:
        if ch == "\n":
            line += 1
        if ch == "{":
            head = re.sub(r"\s+", " ", stmt).strip()
            kind = "other"
            if "fn" not in kinds and not _NOT_A_FUNCTION.match(head.split("<")[0].strip() or "x") \
                    and not re.match(r'extern\s*""\s*$', head):
                m = _FUNCTION_HEAD.search(head)
                if m and m.group(1) not in ("if", "for", "while", "switch", "catch"):
                    kind = "fn"
                    # the line of the name: count the newlines up to its last occurrence in the statement
                    name = re.sub(r"\s+", "", m.group(1))
                    at = stmt.rfind(name + "(")
                    at = stmt.rfind(name) if at < 0 else at
                    opened[len(kinds)] = (stmt_at + stmt[:at].count("\n"), name)
            kinds.append(kind if "fn" not in kinds else "inner")
            stmt, stmt_at = "", line
        elif ch == "}":
            if kinds and kinds.pop() == "fn":
                start, name = opened.pop(len(kinds))
                found.append((line - start + 1, name, start + 1))
            stmt, stmt_at = "", line
        elif ch == ";" and "fn" not in kinds:
            stmt, stmt_at = "", line
        else:
            if not stmt.strip():
                stmt, stmt_at = "", line
            stmt += ch
    return found


def longest_function(text):
    """(lines, name) of the longest function of a source file; (0, "-") when it has none."""
    return max(((n, name) for n, name, _ in functions(text)), default=(0, "-"))


def folder_functions(folder):
    """[(lines, "path:line", name)] of every function of the folder's sources, longest first."""
    out = []
    for f in sorted(pathlib.Path(folder).rglob("*")):
        if f.is_file() and f.suffix in SOURCE_EXTENSIONS:
            out += [(n, f"{f.as_posix()}:{at}", name) for n, name, at in functions(f.read_text(errors="replace"))]
    return sorted(out, key=lambda t: (-t[0], t[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="source folders (read recursively)")
    ap.add_argument("--top", type=int, default=10, help="functions printed per folder (default 10)")
    ap.add_argument("--max-lines", type=int, default=None, help="exit 1 when a function is longer than this")
    args = ap.parse_args()
    over = []
    for folder in args.folders:
        if not pathlib.Path(folder).is_dir():
            ap.error(f"{folder}: not a folder")
        found = folder_functions(folder)
        print(f"{folder}: {len(found)} functions, the longest:")
        for n, where, name in found[:args.top]:
            print(f"  {n:5}  {name}  {where}")
        if args.max_lines is not None:
            over += [t for t in found if t[0] > args.max_lines]
    for n, where, name in over:
        print(f"function_lengths: {where}: {name} is {n} lines, more than --max-lines {args.max_lines}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
