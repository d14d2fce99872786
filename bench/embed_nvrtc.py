#!/usr/bin/env python3
"""Writes <problem>_nvrtc.hpp for bench/: what tune's NVRTC build of the entries of record needs at
the bench's start-up, with nothing read from disk at run time (the bench runs on another machine):

  - the kernel template's text and its headers, as tune hands them to NVRTC (Space::load_sources):
    the problem's "template", and every .cuh/.h/.hpp/.inc/.cu file of the template's folder and of
    the problem's "include_dirs", each by its path relative to that folder (kSources);
  - per results file (shape_name = its stem): the NVRTC options its timings were measured with
    (context.compile_options) and the finalists of its strict re-measure (the variants that have a
    search_timing, fastest search median first: the order tune interleaves them; only for the
    results named by --interleave), each with its launches (name expression, grid, block, dynamic
    shared memory) and its strict and search medians;
  - under TUNE_BENCH_FINALIST_KERNELS, nvcc's instantiations of those finalists (the translation unit
    includes the template first), for the interleave mode's nvcc build.

Usage: embed_nvrtc.py --problem P --problem-json configs/P/problem.json --out H [--depfile D]
                      [--interleave STEM]... results.json...
--depfile: the files read (template, headers, results) as a Makefile rule, so the build reruns this
when a header changes (CMake's add_custom_command DEPFILE).
"""
import argparse
import gzip
import json
import os
import pathlib
import re


def stem(path):
    """The results file's shape stem: B4_N64_C64_H32 of B4_N64_C64_H32.json or .json.gz."""
    name = pathlib.Path(path).name
    return name[:-len(".json.gz")] if name.endswith(".json.gz") else pathlib.Path(name).stem


def read_results(path):
    """A results file, .json or the .json.gz a result of record over 256 KB is kept as."""
    data = pathlib.Path(path).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


HEADER_EXTENSIONS = (".cuh", ".h", ".hpp", ".inc", ".cu")  # tuner/src/space/space.cpp is_header


# The CUDA types of tune's dtypes (tune/dtype.hpp), for the template arguments a dtype variable gives.
CUDA_TYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float", "float64": "double",
              "int8": "signed char", "int32": "int", "int64": "long long", "uint8": "unsigned char", "bool": "bool"}


def with_dtype_defaults(doc, spec):
    """A results file older than its problem's dtype variables (no "T" in its shape) was tuned in each
    variable's default: its kernels' name expressions get the default's CUDA type where the launch's
    template_args name the variable, as tune lowers them now (issue 35)."""
    dtypes = spec.get("dtypes", {})
    missing = {k: v["default"] for k, v in dtypes.items() if k not in doc.get("shape", {}) and "default" in v}
    if not missing:
        return
    by_kernel = {ln["kernel"]: ln.get("template_args", []) for ln in spec.get("launches", [])}
    for v in doc.get("variants", []):
        for ln in v.get("launches", []):
            name, _, args = ln["kernel"].partition("<")
            targs = by_kernel.get(name)
            if targs is None or not args:
                continue
            values = args.rstrip(">").split(",")
            if len(values) != len([t for t in targs if t not in missing]):
                continue
            it = iter(values)
            full = [CUDA_TYPES[missing[t]] if t in missing else next(it) for t in targs]
            ln["kernel"] = f"{name}<{','.join(full)}>"


def kernel_sources(problem_json):
    """(template path, [(include name, path)]) as tune's Space::load_sources finds them."""
    folder = problem_json.parent
    spec = json.loads(problem_json.read_text())
    main = (folder / spec["template"]).resolve()
    headers, seen = [], set()
    for root in [main.parent] + [(folder / d).resolve() for d in spec.get("include_dirs", [])]:
        found = sorted(f for f in root.rglob("*")
                       if f.is_file() and f.suffix in HEADER_EXTENSIONS and f.resolve() != main)
        for f in found:
            name = f.relative_to(root).as_posix()
            if name not in seen:
                seen.add(name)
                headers.append((name, f))
    return main, headers


INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*")([^"\n]+)(")', re.M)


def nvrtc_sources(problem_json):
    """(template name, template text, [(include name, text)]) as tune hands them to NVRTC
    (tuner/src/space/sources.cpp, resolve_includes): NVRTC matches an #include's name literally, so
    a quoted #include of a header relative to the including file ("../pairs.cuh") is rewritten to
    the header's name, looked up as a C preprocessor does (beside the including file first, then in
    the template's folder and each "include_dirs" folder)."""
    main, headers = kernel_sources(problem_json)
    spec = json.loads(problem_json.read_text())
    roots = [main.parent] + [(problem_json.parent / d).resolve() for d in spec.get("include_dirs", [])]
    by_path = {path.resolve(): name for name, path in headers}

    def resolved(including, text):
        def name_of(m):
            for candidate in [including.parent / m.group(2)] + [r / m.group(2) for r in roots]:
                real = pathlib.Path(os.path.normpath(candidate))
                if real.exists():
                    return m.group(1) + by_path.get(real.resolve(), m.group(2)) + m.group(3)
            return m.group(0)
        return INCLUDE.sub(name_of, text)

    return (main.name, resolved(main, main.read_text()),
            [(name, resolved(path, path.read_text())) for name, path in headers])


def raw_literal(text, delim):
    """text as adjacent raw string literals of at most ~4 KB each (compilers limit one literal)."""
    assert f"){delim}\"" not in text
    pieces, chunk = [], ""
    for line in text.splitlines(keepends=True):
        if len(chunk) + len(line) > 4000 and chunk:
            pieces.append(f'R"{delim}({chunk}){delim}"')
            chunk = ""
        chunk += line
    pieces.append(f'R"{delim}({chunk}){delim}"')
    return pieces


def c_string(s):
    return json.dumps(s)  # a JSON string of ASCII text is a valid C string literal


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--problem-json", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--depfile")
    ap.add_argument("--interleave", action="append", default=[],
                    help="results stem whose finalists are listed (and instantiated by nvcc); others list none")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    template, header_files = kernel_sources(pathlib.Path(a.problem_json))
    _, template_text, headers = nvrtc_sources(pathlib.Path(a.problem_json))
    delim = "tune_src"
    ns = a.problem.replace("-", "_")
    h = [f"// Generated by bench/embed_nvrtc.py from {template.name}, its headers and the results of {a.problem}. "
         "Do not edit.",
         "#pragma once", "", '#include "nvrtc.hpp"', "", "namespace tune_bench_nvrtc {", f"namespace {ns} {{", "",
         f"inline constexpr const char kTemplateName[] = {c_string(template.name)};",
         "// The template's text, in pieces of at most ~4 KB (adjacent literals concatenate).",
         "inline constexpr const char kTemplateSource[] ="]
    h += raw_literal(template_text, delim)
    h[-1] += ";"
    for k, (name, text) in enumerate(headers):
        h += [f"// {name}", f"inline constexpr const char kHeader{k}[] ="] + raw_literal(text, delim)
        h[-1] += ";"
    n = len(headers)
    names = ", ".join(c_string(x) for x, _ in headers) or "nullptr"
    sources = ", ".join(f"kHeader{k}" for k in range(n)) or "nullptr"
    h += [f"inline constexpr const char* kHeaderNames[{max(n, 1)}] = {{{names}}};",
          f"inline constexpr const char* kHeaderSources[{max(n, 1)}] = {{{sources}}};",
          "inline constexpr ::tune_bench::RtcSources kSources{kTemplateName, kTemplateSource, "
          f"{n}, kHeaderNames, kHeaderSources}};"]
    h += ["", "struct FinalistLaunch {", "  const char* name_expression;", "  unsigned grid[3];",
          "  unsigned block[3];", "  unsigned dynamic_smem_bytes;", "};", "",
          "struct Finalist {", "  const char* name;", "  bool baseline;",
          "  double strict_median_us;  // the interleaved strict re-measure",
          "  double search_median_us;  // timed alone during the search", "  int launch_count;",
          "  FinalistLaunch launches[4];", "};", "",
          "struct Record {", "  const char* shape_name;  // the results file stem",
          "  int option_count;", "  const char* options[16];  // context.compile_options",
          "  int finalist_count;", "  Finalist finalists[16];", "};", ""]
    records, exprs = [], []
    spec = json.loads(pathlib.Path(a.problem_json).read_text())
    for path in sorted(a.results, key=stem):
        d = read_results(path)
        with_dtype_defaults(d, spec)
        opts = d.get("context", {}).get("compile_options", [])[:16]
        fins = [v for v in d.get("variants", []) if v.get("search_timing") and v.get("timing")][:16]
        # tune re-measures the top few in order of their search median (fastest_passed, stable on
        # the variants' order), the baseline appended last when it is not among them.
        fins.sort(key=lambda v: v["search_timing"]["median_us"])
        if stem(path) not in a.interleave:
            fins = []
        fs = []
        for v in fins:
            ls = v.get("launches", [])[:4]
            lt = ", ".join("{%s, {%s}, {%s}, %d}" % (c_string(ln["kernel"]), ", ".join(map(str, ln["grid"])),
                                                     ", ".join(map(str, ln["block"])), ln.get("dynamic_smem_bytes", 0))
                           for ln in ls)
            exprs += [ln["kernel"] for ln in ls]
            fs.append("    {%s, %s, %.4f, %.4f, %d, {%s}}" % (
                c_string(v["name"]), "true" if v.get("baseline") else "false", v["timing"]["median_us"],
                v["search_timing"]["median_us"], len(ls), lt))
        records.append("  {%s, %d, {%s}, %d, {\n%s}}" % (
            c_string(stem(path)), len(opts), ", ".join(map(c_string, opts)), len(fs), ",\n".join(fs)))
    h += [f"inline constexpr int kRecordCount = {len(records)};",
          f"inline const Record kRecords[{len(records)}] = {{", ",\n".join(records), "};", ""]
    # nvcc's instantiation of every finalist's kernels, by name expression.
    uniq = list(dict.fromkeys(exprs))
    h += ["#ifdef TUNE_BENCH_FINALIST_KERNELS",
          "// nvcc's instantiations of the finalists' kernels, by name expression (the template is included first).",
          "struct NvccKernel {", "  const char* name_expression;", "  const void* kernel;", "};",
          f"inline const NvccKernel kNvccKernels[{max(len(uniq), 1)}] = {{"]
    h += [f"    {{{c_string(e)}, reinterpret_cast<const void*>(&{e})}}," for e in uniq] or ["    {nullptr, nullptr},"]
    h += ["};", f"inline constexpr int kNvccKernelCount = {len(uniq)};", "#endif", "",
          f"}}  // namespace {ns}", "}  // namespace tune_bench_nvrtc", ""]
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    new = "\n".join(h)
    if not out.exists() or out.read_text() != new:
        out.write_text(new)
    if a.depfile:
        read = [template] + [f for _, f in header_files] + [pathlib.Path(r).resolve() for r in a.results]
        pathlib.Path(a.depfile).write_text(f"{out}: " + " ".join(str(f).replace(" ", "\\ ") for f in read) + "\n")


if __name__ == "__main__":
    main()
