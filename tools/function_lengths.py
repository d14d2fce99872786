#!/usr/bin/env python3
"""The longest functions of C++, CUDA and Python sources, and limits on function and file length
(issues 23, 38).

    tools/function_lengths.py [--top 10] [--max-lines N] [--max-file-lines N] [--debt FILE] PATH...

Prints the --top longest functions of each PATH (a file, or a folder's .cpp/.cc/.hpp/.h/.cu/.cuh/.inc
and .py files, read recursively), in lines from the line of the function's name (Python: its `def`)
to its closing brace (Python: its last line). With --max-lines, a function longer than N lines is an
offender; with --max-file-lines, a file longer than N lines. The exit status is 1 when there is an
offender that --debt does not allow (each one named), else 0; 2 on a usage error.

--debt FILE lists the offenders allowed for now, one a line: `path[:function] LINES` (# comments).
Each may stay at most as long as listed: one that got longer, or an offender not listed, fails. The
list may only shrink: a listed item now within the limit, or shorter, is named so the line can be
removed or lowered. Python functions are measured with `ast`; C++/CUDA with the scanner below. A small brace-matching scanner, not a parser: comments, string literals and
preprocessor lines are blanked first; a function body is a brace, outside any other function body,
after a parameter list; lambdas and blocks inside a function count as part of it. A constructor's
length is counted from its last member initializer; raw string literals (R"(...)") are blanked like
other literals (issue 38).
"""

import argparse
import ast
import pathlib
import re
import sys

SOURCE_EXTENSIONS = (".cpp", ".cc", ".hpp", ".h", ".cu", ".cuh", ".inc")

_NAME = r"(operator\s*(?:\(\)|[^\s(]+)|[A-Za-z_]\w*)"
_FUNCTION_HEAD = re.compile(_NAME + r"\s*\(([^()]|\([^()]*\))*\)\s*(const|noexcept|override|final|mutable|&|\s)*"
                            r"(->\s*[^{};]*)?$")
_NOT_A_FUNCTION = re.compile(r"(namespace|struct|class|union|enum)\b")


_LITERALS = re.compile(r'(?P<raw>\b(?:u8|u|U|L)?R"(?P<delim>[^()\\ \n]{0,16})\(.*?\)(?P=delim)")'
                       r'|(?P<block>/\*.*?\*/)|(?P<line>//[^\n]*)'
                       r'|(?P<str>"(?:\\.|[^"\\\n])*")|(?P<chr>\'(?:\\.|[^\'\\\n])*\')', re.S)


def strip_code(text):
    """The text with comments and string/char literals blanked (line structure kept). One scan from the
    left, so a "//" inside a string or a quote inside a raw string literal (R"(...)") is text."""
    def blank(m):
        newlines = "\n" * m.group(0).count("\n")
        if m.group("block"):
            return re.sub(r"[^\n]", " ", m.group(0))
        if m.group("line"):
            return ""
        return '""' + newlines
    text = _LITERALS.sub(blank, text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M)


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


PYTHON_EXTENSIONS = (".py",)


def python_functions(text, path="<text>"):
    """[(lines, name, first line)] of every function and method of a Python file (nested ones too)."""
    tree = ast.parse(text, filename=str(path))
    return [(n.end_lineno - n.lineno + 1, n.name, n.lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def longest_function(text):
    """(lines, name) of the longest function of a C++/CUDA source file; (0, "-") when it has none."""
    return max(((n, name) for n, name, _ in functions(text)), default=(0, "-"))


def source_files(path):
    """The C++/CUDA and Python files of a path (a file, or a folder read recursively), sorted."""
    p = pathlib.Path(path)
    found = [p] if p.is_file() else sorted(p.rglob("*"))
    return [f for f in found if f.is_file() and f.suffix in SOURCE_EXTENSIONS + PYTHON_EXTENSIONS]


def file_functions(f):
    """[(lines, "path:line", name)] of one source file."""
    text = f.read_text(errors="replace")
    found = python_functions(text, f) if f.suffix in PYTHON_EXTENSIONS else functions(text)
    return [(n, f"{f.as_posix()}:{at}", name) for n, name, at in found]


def folder_functions(folder):
    """[(lines, "path:line", name)] of every function of the folder's sources, longest first."""
    out = []
    for f in source_files(folder):
        out += file_functions(f)
    return sorted(out, key=lambda t: (-t[0], t[1]))


def read_debt(path):
    """{"path" or "path:function": allowed lines} of a --debt file."""
    debt = {}
    for k, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise ValueError(f"{path}:{k}: expected `path[:function] LINES`, got {line!r}")
        debt[parts[0]] = int(parts[1])
    return debt


def offenders(paths, max_lines, max_file_lines):
    """{key: (lines, where, what)} of the functions over max_lines and files over max_file_lines; the
    key is `path:function` (the longest of a name) or `path`."""
    out = {}
    for path in paths:
        for f in source_files(path):
            if max_file_lines is not None:
                n = len(f.read_text(errors="replace").splitlines())
                if n > max_file_lines:
                    out[f.as_posix()] = (n, f.as_posix(), f"the file is {n} lines, more than {max_file_lines}")
            if max_lines is None:
                continue
            for n, where, name in file_functions(f):
                key = f"{f.as_posix()}:{name}"
                if n > max_lines and n > out.get(key, (0,))[0]:
                    out[key] = (n, where, f"{name} is {n} lines, more than {max_lines}")
    return out


def check_debt(found, debt):
    """(failures, notes): offenders the debt does not allow, and debt lines that can shrink."""
    failures, notes = [], []
    for key, (n, where, what) in sorted(found.items()):
        if key not in debt:
            failures.append(f"{where}: {what} (a new offender: shorten it)")
        elif n > debt[key]:
            failures.append(f"{where}: {what}, and longer than the {debt[key]} its debt line allows (shorten it)")
        elif n < debt[key]:
            notes.append(f"{key}: {n} lines now, its debt line says {debt[key]}: lower it")
    notes += [f"{key}: within the limit now: remove its debt line" for key in sorted(set(debt) - set(found))]
    return failures, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="source files or folders (read recursively)")
    ap.add_argument("--top", type=int, default=10, help="functions printed per path (default 10)")
    ap.add_argument("--max-lines", type=int, default=None, help="a function longer than this is an offender")
    ap.add_argument("--max-file-lines", type=int, default=None, help="a file longer than this is an offender")
    ap.add_argument("--debt", default=None, help="the offenders allowed for now (path[:function] LINES a line)")
    args = ap.parse_args()
    for path in args.paths:
        if not pathlib.Path(path).exists():
            ap.error(f"{path}: no such file or folder")
    try:
        debt = read_debt(args.debt) if args.debt else {}
    except (OSError, ValueError) as e:
        ap.error(str(e))
    for path in args.paths:
        found = folder_functions(path)
        print(f"{path}: {len(found)} functions, the longest:")
        for n, where, name in found[:args.top]:
            print(f"  {n:5}  {name}  {where}")
    failures, notes = check_debt(offenders(args.paths, args.max_lines, args.max_file_lines), debt)
    for line in notes:
        print(f"function_lengths: note: {line}")
    for line in failures:
        print(f"function_lengths: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
