#!/usr/bin/env python3
"""The NVRTC build (what tune times) and the nvcc build (what bench/ and every consumer of the
generated headers runs) of every entry of record, side by side, on the CPU (issue 21).

    tools/compare_builds.py [--results results/h200] [--problem contact --problem scene_graph]
                              [--tune build/tuner/tune] [--nvrtc-options "..."] [--diff 20] [--json F]

For each problem: `tune header` merges <results>/<problem>/*.json into <problem>_tuned.hpp, as the
bench's build does; nvcc compiles bench/src/<problem>.cu to one CUBIN with the bench's flags
(CMake Release: -O3 -DNDEBUG, C++17, sm_<arch>, and tune::kernels' -Xcicc=--sharedmem32=0: without
it nvcc keeps shared-memory addresses 32-bit where NVRTC keeps them 64-bit); NVRTC compiles each winner's and baseline's name
expression from kernel_templates/<problem>/ as tune does (the template is the program, the other
files of its folder its headers), with the options each results file records in
context.compile_options (the options its timings were measured with), or --nvrtc-options.

Each kernel of the two CUBINs is then compared: the .text bytes (equal bytes: the same machine
code), registers, stack frame, spills, static shared memory (ptxas -v of both builds), the
instruction count, and, with cuobjdump on PATH (or in the CUDA toolkit, or the pip package
nvidia-cuda-cuobjdump with nvidia-cuda-nvdisasm), how many instructions of the normalized SASS
(addresses, encodings and branch targets stripped) differ, line by line and by opcode alone
(register renaming aside); then the kernel's other sections (.nv.info, its parameter bank
.nv.constant0, its static shared memory .nv.shared: what the driver reads when it loads and
launches the kernel), byte by byte. Two more columns: whether the template at the record's commit
(context.git_commit), compiled with the record's own instantiations and options, is today's
machine code (the header instantiates today's template, so a changed one means the bench runs
other code than tune timed), and the record's strict re-measure and search-profile medians.
Exit status: 0 when every kernel is the same machine code in both builds, 1 when any differs,
2 on a usage or build error.
"""
import argparse
import ctypes
import ctypes.util
import difflib
import glob
import gzip
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# CMAKE_CUDA_FLAGS_RELEASE, the bench's target properties (bench/CMakeLists.txt) and tune::kernels'
# interface option (cmake/Package.cmake): 64-bit shared-memory addresses, as NVRTC keeps them.
BENCH_NVCC_FLAGS = ["-O3", "-DNDEBUG", "-std=c++17", "-Xcicc=--sharedmem32=0"]
BENCH_INTERLEAVE = ["contact/B4_N64_C64_H32"]  # bench/CMakeLists.txt's TUNE_BENCH_INTERLEAVE default


def die(msg):
    print(f"compare_builds: {msg}", file=sys.stderr)
    sys.exit(2)


def cuda_home():
    for cand in [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]:
        if cand and pathlib.Path(cand, "bin", "nvcc").exists():
            return pathlib.Path(cand)
    nvcc = shutil.which("nvcc")
    return pathlib.Path(nvcc).resolve().parent.parent if nvcc else None


def find_tool(name, home):
    hit = shutil.which(name)
    if hit:
        return hit
    if home and pathlib.Path(home, "bin", name).exists():
        return str(pathlib.Path(home, "bin", name))
    # pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm puts them under nvidia/cu*/bin.
    for site in sys.path:
        for hit in glob.glob(os.path.join(site, "nvidia", "cu*", "bin", name)):
            return hit
    return None


# ---------------------------------------------------------------- NVRTC, as tuner/src/compile/nvrtc.cpp calls it
class Nvrtc:
    def __init__(self, home):
        paths = [str(p) for p in sorted(pathlib.Path(home, "lib64").glob("libnvrtc.so*"))] if home else []
        found = ctypes.util.find_library("nvrtc")
        if found:
            paths.append(found)
        for p in paths:
            try:
                self.lib = ctypes.CDLL(p)
                break
            except OSError:
                continue
        else:
            die("libnvrtc not found (set CUDA_HOME)")
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"{major.value}.{minor.value}"

    def _check(self, r, what):
        if r != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(r).decode()}")

    def compile(self, source, name, headers, expressions, options):
        """(cubin bytes, log, lowered names) of one program, or RuntimeError with the log."""
        lib = self.lib
        prog = ctypes.c_void_p()
        n = len(headers)
        texts = (ctypes.c_char_p * max(n, 1))(*[t.encode() for _, t in headers])
        names = (ctypes.c_char_p * max(n, 1))(*[h.encode() for h, _ in headers])
        self._check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), n,
                                           texts if n else None, names if n else None), "nvrtcCreateProgram")
        try:
            for e in expressions:
                self._check(lib.nvrtcAddNameExpression(prog, e.encode()), "nvrtcAddNameExpression")
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            r = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            log = log.value.decode(errors="replace")
            if r != 0:
                raise RuntimeError(f"NVRTC failed ({lib.nvrtcGetErrorString(r).decode()}):\n{log}")
            self._check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            cubin = ctypes.create_string_buffer(size.value)
            self._check(lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            lowered = []
            for e in expressions:
                p = ctypes.c_char_p()
                self._check(lib.nvrtcGetLoweredName(prog, e.encode(), ctypes.byref(p)), "nvrtcGetLoweredName")
                lowered.append(p.value.decode())
            return cubin.raw, log, lowered
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ---------------------------------------------------------------- CUBIN (ELF64) reading
def elf_sections(data):
    """{section name: (header fields, bytes)} of an ELF64 little-endian file."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 CUBIN")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        heads.append(dict(name=name, type=typ, offset=off, size=size, info=info))
    strtab = heads[shstrndx]
    names = data[strtab["offset"]:strtab["offset"] + strtab["size"]]
    out = {}
    for h in heads:
        end = names.index(b"\0", h["name"])
        body = b"" if h["type"] == 8 else data[h["offset"]:h["offset"] + h["size"]]  # 8: NOBITS
        out[names[h["name"]:end].decode()] = (h, body)
    return out


def kernel_code(sections, mangled):
    """The machine code of one kernel (.text.<name>; 16 bytes an instruction on sm_70 and later)."""
    text = sections.get(".text." + mangled)
    return None if text is None else text[1]


def kernel_attributes(sections, mangled):
    """The kernel's sections other than its machine code ({name: bytes}; the size alone, as bytes of
    its decimal, for a NOBITS one): .nv.info.<name> (attributes the driver reads at launch: parameter
    layout, barriers, register count, max threads...; its records also hold section indices, which
    differ with the ELF layout), .nv.constant0.<name> (its parameter bank), .nv.shared.<name>
    (static shared memory, with the 1 KB a module can reserve per kernel), and any other section
    named after it."""
    out = {}
    for name, (head, body) in sections.items():
        if name.endswith("." + mangled) and name != ".text." + mangled:
            key = name[:-len(mangled) - 1]
            if head["type"] == 8:
                out[key] = str(head["size"]).encode()
            else:
                out[key] = body
    return out


def sections_differing(a, b):
    """The sections of one kernel that differ between the NVRTC (a) and nvcc (b) builds; of the same
    length, how many bytes differ; for .nv.shared (NOBITS) both sizes."""
    out = []
    for n in sorted(set(a) | set(b)):
        x, y = a.get(n), b.get(n)
        if x == y:
            continue
        if n == ".nv.shared":
            out.append(f".nv.shared ({(x or b'none').decode()} / {(y or b'none').decode()} bytes)")
        elif x is not None and y is not None and len(x) == len(y):
            out.append(f"{n} ({sum(p != q for p, q in zip(x, y))} of {len(x)} bytes)")
        else:
            out.append(f"{n} ({'none' if x is None else len(x)} / {'none' if y is None else len(y)} bytes)")
    return out


def parse_ptxas(log):
    """{mangled: resources} from ptxas -v output (the same parse as tune's parse_ptxas_report)."""
    out, current = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line) or re.search(r"Function properties for (\S+)", line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        r = out[current]
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            r["stack"], r["spill_st"], r["spill_ld"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            r["registers"] = int(m.group(1))
            r.setdefault("smem", 0)
        m = re.search(r"(\d+) bytes smem", line)
        if m and "Used" in line:
            r["smem"] = int(m.group(1))
    return out


def sass(cuobjdump, cubin_path, mangled):
    """Normalized SASS of one kernel: one instruction per line, no addresses, encodings or
    branch-target values (they move when any earlier instruction does)."""
    text = subprocess.run([cuobjdump, "-sass", "-fun", mangled, cubin_path], capture_output=True, text=True,
                          check=True).stdout
    lines = []
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;?\s*(/\*.*\*/)?\s*$", line)
        if not m:
            continue
        ins = re.sub(r"\s+", " ", m.group(1)).rstrip(" ;")
        ins = re.sub(r"\b(BRA|BSSY|CALL\.\w+|BRX|SSY|PBK|JMP)\b(.*?)0x[0-9a-f]+", r"\1\2<target>", ins)
        lines.append(ins)
    return lines


# ---------------------------------------------------------------- the entries of record, through the bench's header
def header_kernels(header_text):
    """[(shape_name, role, [name expressions])] in the header's entry order."""
    # An entry opens with its device's name and ends its first line with the shape name and dims,
    # then its dtype variables (DType::bfloat16, issue 35).
    shapes = re.findall(r'^\s*\{"[^"\n]*",[^\n]*?"([^"\n]+)", \{[\w:, ]+\},?\s*$', header_text, re.M)
    out = []
    for role, array in (("winner", "kWinnerKernels"), ("baseline", "kBaselineKernels")):
        m = re.search(array + r"\[kEntryCount\]\[kMaxLaunches\] = \{(.*?)\n\};", header_text, re.S)
        if not m:
            die(f"no {array} in the generated header")
        rows = re.findall(r"^\s*\{(.*)\},?\s*$", m.group(1), re.M)
        if len(rows) != len(shapes):
            die(f"{array}: {len(rows)} rows for {len(shapes)} entries")
        for shape, row in zip(shapes, rows):
            exprs = re.findall(r"&::([A-Za-z_]\w*<[^>]*>)", row)
            out.append((shape, role, exprs))
    order = {s: i for i, s in enumerate(shapes)}
    out.sort(key=lambda e: (order[e[0]], e[1] != "winner"))
    return out


def record_of(results_dir, problem, shape):
    """The results file's context and its winner's and baseline's variant records."""
    path = pathlib.Path(results_dir, problem, shape + ".json")
    if not path.exists():
        path = path.with_name(path.name + ".gz")  # a result of record over 256 KB is kept compressed
    try:
        data = path.read_bytes()
        doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    except (OSError, ValueError, EOFError):
        return {}, {}
    winner = doc.get("summary", {}).get("winner")
    roles = {}
    for v in doc.get("variants", []):
        if v.get("baseline"):
            roles["baseline"] = v
        if v.get("name") == winner:
            roles["winner"] = v
    return doc.get("context", {}), roles


def template_at(commit, problem):
    """The template's text at a commit (either layout the repository has had), or None."""
    for path in (f"kernel_templates/{problem}/{problem}.cuh", f"kernel_templates/{problem}.cuh"):
        got = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True)
        if got.returncode == 0:
            return got.stdout
    return None


def template_sources(problem):
    """(main name, main text, [(header name, text)]) as tune's Space::load_sources reads them: the
    problem's template, every header of its folder and of its include_dirs by relative path, their
    #includes rewritten to those names (bench/embed_nvrtc.py finds them the same way for the bench's NVRTC build)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import embed_nvrtc  # noqa: E402
    return embed_nvrtc.nvrtc_sources(ROOT / "configs" / problem / "problem.json")


def k_first(row, rows):
    """Whether the row is its variant's first launch (a record's timing is of all its launches)."""
    return next(r for r in rows if (r["problem"], r["shape"], r["role"]) == (row["problem"], row["shape"], row["role"])) is row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "results" / "h200"), help="results folder of one GPU")
    ap.add_argument("--problem", action="append", help="problem (repeatable; default: contact, scene_graph: what bench/ builds)")
    ap.add_argument("--tune", default=None, help="the tune binary (default: build/tuner/tune, else tune on PATH)")
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--nvrtc-options", default=None,
                    help="NVRTC options for every entry, space-separated (default: each results file's context.compile_options)")
    ap.add_argument("--nvcc-flags", default=" ".join(BENCH_NVCC_FLAGS), help="nvcc flags besides -arch and -I (default: the bench's)")
    ap.add_argument("--work", default=None, help="keep the CUBINs, logs and SASS here (default: a temporary folder)")
    ap.add_argument("--diff", type=int, default=0, help="print up to N differing SASS lines per kernel")
    ap.add_argument("--json", default=None, help="also write the table as JSON here")
    args = ap.parse_args()

    home = cuda_home()
    nvcc = find_tool("nvcc", home)
    if not nvcc:
        die("nvcc not found (put the CUDA toolkit's bin on PATH or set CUDA_HOME)")
    tune = args.tune or next((str(p) for p in [ROOT / "build" / "tuner" / "tune"] if p.exists()), None) or shutil.which("tune")
    if not tune:
        die("no tune binary (build it, or pass --tune)")
    cuobjdump = find_tool("cuobjdump", home) if find_tool("nvdisasm", home) else None
    nvrtc = Nvrtc(home)
    problems = args.problem or ["contact", "scene_graph"]
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="compare_builds."))
    work.mkdir(parents=True, exist_ok=True)
    nvcc_version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(f"nvcc: {nvcc} ({nvcc_version}) flags: {args.nvcc_flags} -arch=sm_{args.arch}")
    print(f"NVRTC {nvrtc.version}; options: {args.nvrtc_options or 'each results file context.compile_options'}")
    print(f"SASS: {cuobjdump or 'no cuobjdump + nvdisasm: machine-code bytes and resources only'}; files: {work}\n")

    rows, differs = [], False
    for problem in problems:
        results = sorted(glob.glob(os.path.join(args.results, problem, "*.json")) +
                         glob.glob(os.path.join(args.results, problem, "*.json.gz")))
        if not results:
            die(f"no results in {args.results}/{problem}/")
        header = work / f"{problem}_tuned.hpp"
        subprocess.run([tune, "header", *results, "-o", str(header)], check=True, capture_output=True)
        # <problem>_nvrtc.hpp, which the bench's translation unit includes (its finalist kernels: the
        # default TUNE_BENCH_INTERLEAVE's, as bench/CMakeLists.txt writes it).
        interleave = [a for item in BENCH_INTERLEAVE if item.startswith(problem + "/")
                      for a in ("--interleave", item.split("/", 1)[1])]
        subprocess.run([sys.executable, str(ROOT / "bench" / "embed_nvrtc.py"), "--problem", problem, "--problem-json",
                        str(ROOT / "configs" / problem / "problem.json"), "--out",
                        str(work / f"{problem}_nvrtc.hpp"), *interleave, *results], check=True, capture_output=True)
        # nvcc: the bench's translation unit, as bench/CMakeLists.txt builds it.
        nvcc_cubin = work / f"{problem}.nvcc.cubin"
        cmd = [nvcc, "-cubin", f"-arch=sm_{args.arch}", *args.nvcc_flags.split(), "-Xptxas", "-v",
               "-I", str(ROOT / "bench" / "src"), "-I", str(work),
               "-I", str(ROOT / "kernel_templates"),  # tune::kernels' include directories: "contact/contact.cuh",
               "-I", str(ROOT / "kernel_templates" / "common"),  # and "tune_common.cuh"
               str(ROOT / "bench" / "src" / f"{problem}.cu"), "-o", str(nvcc_cubin)]
        print(f"[{problem}] nvcc: {' '.join(cmd[1:])}", flush=True)
        built = subprocess.run(cmd, capture_output=True, text=True)
        if built.returncode != 0:
            die(f"nvcc failed:\n{built.stderr}")
        (work / f"{problem}.nvcc.log").write_text(built.stdout + built.stderr)
        nvcc_res = parse_ptxas(built.stdout + built.stderr)
        nvcc_sections = elf_sections(nvcc_cubin.read_bytes())
        name, source, headers = template_sources(problem)
        for shape, role, exprs in header_kernels(header.read_text()):
            context, records = record_of(args.results, problem, shape)
            options = args.nvrtc_options.split() if args.nvrtc_options else context.get("compile_options")
            if not options:
                die(f"{problem}/{shape}.json records no compile_options; pass --nvrtc-options")
            print(f"[{problem}] NVRTC {shape} {role}: {' '.join(exprs)}", flush=True)
            cubin, log, lowered = nvrtc.compile(source, name, headers, exprs, options)
            rtc_path = work / f"{problem}.{shape}.{role}.nvrtc.cubin"
            rtc_path.write_bytes(cubin)
            rtc_res = parse_ptxas(log)
            rtc_sections = elf_sections(cubin)
            # What tune measured: the record's own instantiations of the template at the record's
            # commit, with the record's options (the template may have changed since).
            record_code = None
            commit = context.get("git_commit", "").split("-")[0]
            old = template_at(commit, problem) if commit else None
            record_exprs = [l["kernel"] for l in records.get(role, {}).get("launches", [])]
            if old is not None and len(record_exprs) == len(exprs):
                try:
                    rc, _, rl = nvrtc.compile(old, name, headers, record_exprs, context.get("compile_options", options))
                    record_code = [kernel_code(elf_sections(rc), m) for m in rl]
                except RuntimeError as e:
                    print(f"  the template at {commit} does not compile: {str(e).splitlines()[0]}")
            for k, (expr, mangled) in enumerate(zip(exprs, lowered)):
                a, b = kernel_code(rtc_sections, mangled), kernel_code(nvcc_sections, mangled)
                if a is None or b is None:
                    die(f"{mangled} missing from the {'NVRTC' if a is None else 'nvcc'} CUBIN")
                ra, rb = rtc_res.get(mangled, {}), nvcc_res.get(mangled, {})
                row = dict(problem=problem, shape=shape, role=role, kernel=expr, mangled=mangled, options=options,
                           same_code=a == b,
                           other_sections_differing=sections_differing(kernel_attributes(rtc_sections, mangled),
                                                                       kernel_attributes(nvcc_sections, mangled)),
                           nvrtc=dict(instructions=len(a) // 16, **ra),
                           nvcc=dict(instructions=len(b) // 16, **rb),
                           median_us=(records.get(role, {}).get("timing") or {}).get("median_us"),
                           search_median_us=(records.get(role, {}).get("search_timing") or {}).get("median_us"),
                           record_commit=context.get("git_commit"))
                if record_code is not None:
                    rec = record_code[k]
                    row["record_source"] = "same" if rec == a else f"changed ({len(rec) // 16} instr)"
                if cuobjdump and not row["same_code"]:
                    sa, sb = sass(cuobjdump, rtc_path, mangled), sass(cuobjdump, nvcc_cubin, mangled)
                    ops = lambda s: [re.sub(r"^@!?U?P\w+ ", "", i).split(" ")[0] for i in s]  # noqa: E731
                    sm = difflib.SequenceMatcher(None, sa, sb, autojunk=False)
                    row["sass_lines_differing"] = sum(max(i2 - i1, j2 - j1) for t, i1, i2, j1, j2 in sm.get_opcodes() if t != "equal")
                    om = difflib.SequenceMatcher(None, ops(sa), ops(sb), autojunk=False)
                    row["opcodes_differing"] = sum(max(i2 - i1, j2 - j1) for t, i1, i2, j1, j2 in om.get_opcodes() if t != "equal")
                    if args.diff:
                        shown = [d for d in difflib.unified_diff(sa, sb, "nvrtc", "nvcc", n=0, lineterm="")
                                 if d[:1] in "+-" and d[:3] not in ("---", "+++")]
                        row["diff"] = shown[:args.diff]
                differs |= not row["same_code"]
                rows.append(row)

    fields = [("registers", "regs"), ("instructions", "instr"), ("stack", "stack"), ("spill_st", "spill st"), ("smem", "smem")]
    print("\nNVRTC / nvcc where they differ; record source: the record's template (its commit) built by NVRTC against today's")
    print(" | ".join(["entry", "role", "kernel", "same code"] + [f"{h}" for _, h in fields] +
                     ["SASS diff lines / opcodes", "other sections differing", "record source", "record us: timing / search (strict re-measure / search profile; one call)"]))
    for r in rows:
        cells = [f"{r['problem']}/{r['shape']}", r["role"], r["kernel"].split("<")[0], "yes" if r["same_code"] else "NO"]
        for key, _ in fields:
            x, y = r["nvrtc"].get(key, "?"), r["nvcc"].get(key, "?")
            cells.append(f"{x}" if x == y else f"{x}/{y}")
        cells.append("-" if r["same_code"] else f"{r.get('sass_lines_differing', '?')} / {r.get('opcodes_differing', '?')}")
        cells.append(", ".join(r["other_sections_differing"]) or "none")
        cells.append(r.get("record_source", "n/a"))
        t, q = r.get("median_us"), r.get("search_median_us")
        cells.append(("-" if t is None else f"{t:.2f}") + " / " + ("-" if q is None else f"{q:.2f}") if k_first(r, rows) else "")
        print(" | ".join(str(c) for c in cells))
        for d in r.get("diff", []):
            print("      " + d)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(dict(nvcc=nvcc_version, nvcc_flags=args.nvcc_flags, nvrtc=nvrtc.version,
                                                           rows=rows), indent=1))
    same = sum(r["same_code"] for r in rows)
    print(f"\n{same} of {len(rows)} kernels are the same machine code in both builds; "
          f"{sum(not r['other_sections_differing'] for r in rows)} of {len(rows)} also have the same other sections "
          "(.nv.info, .nv.constant0, .nv.shared of the kernel)")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
