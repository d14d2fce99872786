"""Reading tune result files for the report scripts, through tune itself: `tune results --json`
validates each file with tune's one reader (tuner/src/record/validate.cpp) and hands the records over
with the fields readers need computed (device_slug, shape_tag, the shape with its dtype defaults,
measured_on_gpu). A hand-edited file is refused the same way by every reader, in tune's words.
The formats only Python writes (report/torch_baseline.py's files, --peaks) are validated here.

An error is one line: "<file>: <JSON path>: <what is wrong>; <what to do>" (InputError).
"""
import json
import math
import pathlib
import sys
import zlib

# tuner/python/dtypes.py (a checkout) or share/tune/python/ (installed): the one Python dtype table.
for _d in (pathlib.Path(__file__).resolve().parent.parent / "tuner" / "python",
           pathlib.Path(__file__).resolve().parent.parent / "python"):
    if (_d / "dtypes.py").is_file() and str(_d) not in sys.path:
        sys.path.insert(0, str(_d))
import dtypes  # noqa: E402
import tune_bin  # noqa: E402

INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
HERE = pathlib.Path(__file__).resolve().parent


class InputError(Exception):
    pass


class _Bad(Exception):
    def __init__(self, at, what, remedy="restore what tune wrote, or re-tune"):
        super().__init__(f"{at}: {what}; {remedy}")


def load_results(paths):
    """The records of `tune results --json PATHS` (docs/cli.md): for each tune result file under the
    folders (<gpu>/<problem>/<shape>.json or .json.gz, in path order; other JSON files passed over) or
    given as files, {"file", "run" (as written), "device_slug", "shape_tag", "shape", "problem_found",
    "measured_on_gpu", "not_measured"}. A file tune refuses raises InputError with tune's one line."""
    r = tune_bin.run(["results", "--json", *map(str, paths)], InputError)
    if r.returncode == 2:
        raise InputError(tune_bin.refusal(r, "tune refused the results"))
    if r.returncode != 0:
        raise RuntimeError(f"{r.args[0]} results --json exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)["records"]


def _brief(v):
    s = json.dumps(v)
    return s[:57] + "..." if len(s) > 60 else s


def _member(at, key):
    return f"{at}.{key}" if at else key


def _field(obj, at, key, required):
    if key in obj:
        return obj[key]
    if required:
        raise _Bad(_member(at, key), "missing")
    return None


def _object(obj, at, key, required, nullable=False):
    v = _field(obj, at, key, required)
    if v is None and (key not in obj or nullable):
        return None
    if not isinstance(v, dict):
        raise _Bad(_member(at, key), f"{_brief(v)} is not an object")
    return v


def _array(obj, at, key, required):
    v = _field(obj, at, key, required)
    if key in obj and not isinstance(v, list):
        raise _Bad(_member(at, key), f"{_brief(v)} is not an array")
    return v


def _text(obj, at, key, required, non_empty=False):
    if key not in obj:
        _field(obj, at, key, required)
        return
    v = obj[key]
    if not isinstance(v, str):
        raise _Bad(_member(at, key), f"{_brief(v)} is not a string")
    if non_empty and not v:
        raise _Bad(_member(at, key), "is empty")


def _boolean(obj, at, key, required):
    if key not in obj:
        _field(obj, at, key, required)
    elif not isinstance(obj[key], bool):
        raise _Bad(_member(at, key), f"{_brief(obj[key])} is not true or false")


def _objects(obj, at, key):
    """(JSON path, item) of an optional array of objects."""
    for i, item in enumerate(_array(obj, at, key, False) or []):
        where = f"{_member(at, key)}[{i}]"
        if not isinstance(item, dict):
            raise _Bad(where, f"{_brief(item)} is not an object")
        yield where, item


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _integer_value(v, at, lo, hi):
    if not _is_int(v) or not -2**63 <= v <= INT64_MAX:
        raise _Bad(at, f"{_brief(v)} is not an integer")
    if not lo <= v <= hi:
        raise _Bad(at, f"{v} is below {lo}" if hi == INT64_MAX else f"{v} is outside {lo} to {hi}")
    return v


def _number(obj, at, key, required, nullable, rng):
    """rng: "any", "non-negative" or "positive"."""
    if key not in obj:
        _field(obj, at, key, required)
        return None
    v, where = obj[key], _member(at, key)
    if v is None:
        if not nullable:
            raise _Bad(where, "null is not a number")
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _Bad(where, f"{_brief(v)} is not a number")
    x = float(v)
    if not math.isfinite(x):
        raise _Bad(where, f"{_brief(v)} is not a finite number")
    if rng == "positive" and not x > 0:
        raise _Bad(where, f"{_brief(v)} is not a positive number")
    if rng == "non-negative" and x < 0:
        raise _Bad(where, f"{_brief(v)} is negative")
    return x


def _numbers(obj, at, keys):
    for k in keys:
        _number(obj, at, k, False, True, "non-negative")


def shape_value(v, at):
    """A value of a "shape": a dimension (an integer >= 1) or a dtype variable's dtype, by its name."""
    if isinstance(v, str):
        try:
            return dtypes.parse(v)
        except ValueError as e:
            raise _Bad(at, str(e))
    return _integer_value(v, at, 1, INT64_MAX)


def _timed(m, at):
    """A torch_baseline.py measurement: null, or an object whose median_us is a positive number."""
    if m is not None:
        _number(m, at, "median_us", True, False, "positive")


def validate_torch_baseline(doc):
    """A file of report/torch_baseline.py (its docstring defines it), as far as the report reads it."""
    if not isinstance(doc, dict) or doc.get("kind") != "tune.torch_baseline":
        raise _Bad("kind", "not \"tune.torch_baseline\" (not a torch baseline file)", "pass a file torch_baseline.py wrote")
    if not _is_int(doc.get("schema_version")) or doc["schema_version"] != 1:
        raise _Bad("schema_version", f"{_brief(doc.get('schema_version'))} is not supported (this report reads 1)",
                   "regenerate it with report/torch_baseline.py")
    _text(_object(doc, "", "device", True), "device", "name", True, True)
    _object(doc, "", "context", False)
    peaks = _object(doc, "", "device_peaks", False, True)
    if peaks is not None:
        _number(peaks, "device_peaks", "copy_gb_per_s", False, True, "positive")
    for where, e in _objects(doc, "", "entries"):
        _text(e, where, "problem", True, True)
        shape = _object(e, where, "shape", True)
        for k, v in shape.items():
            shape_value(v, f"{where}.shape.{k}")
        for mode in ("eager", "compile", "modelnew"):
            m = _object(e, where, mode, False, True)
            if m is None:
                continue
            at = _member(where, mode)
            _timed(_object(m, at, "events", False, True), _member(at, "events"))
            _timed(_object(m, at, "graph", False, True), _member(at, "graph"))
            if m.get("error") is not None:
                _text(m, at, "error", False)
            if mode != "modelnew":
                continue
            _boolean(m, at, "tuned", True)
            _text(m, at, "variant", False)
            _number(m, at, "tune_cold_median_us", False, True, "positive")
            _number(m, at, "op_overhead_us", False, True, "any")
            parity = _object(m, at, "parity", False, True)
            if parity is not None:
                pat = _member(at, "parity")
                _numbers(parity, pat, ("max_abs_vs_module", "max_abs_vs_float64", "module_max_abs_vs_float64"))
                _boolean(parity, pat, "passed", True)


def validate_peaks(doc):
    """--peaks: {slug: {"copy_gb_per_s": positive, "fp32_gflop_per_s": positive, "source": text}}."""
    if not isinstance(doc, dict):
        raise _Bad("(top level)", "not an object keyed by GPU slug", "see tune report --help")
    for slug, p in doc.items():
        if not isinstance(p, dict):
            raise _Bad(slug, f"{_brief(p)} is not an object", "give copy_gb_per_s and fp32_gflop_per_s")
        for k in ("copy_gb_per_s", "fp32_gflop_per_s"):
            _number(p, slug, k, True, False, "positive")
        for k in ("hbm_gb_per_s", "fp64_gflop_per_s", "tf32_tensor_gflop_per_s", "bf16_tensor_gflop_per_s",
                  "fp16_tensor_gflop_per_s"):
            _number(p, slug, k, False, False, "positive")
        _text(p, slug, "source", False)


def read_checked(path, validate):
    """A JSON file validated by `validate`; InputError "<file>: <JSON path>: <what>; <what to do>"."""
    return check(path, read_json(path), validate)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text):
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"number {text} is out of range")
    return x


def _int(text):
    """An integer literal as tune's JSON reader takes it: beyond 64 bits, a double."""
    n = int(text)
    return n if -2**63 <= n <= UINT64_MAX else _finite_float(text)


def _no_lone_surrogate(doc):
    """Every string of doc, keys too, is Unicode text: Python's reader takes an escape such as "\\ud800"
    alone, which is no character (tune's reader refuses it, and so would writing it out as UTF-8)."""
    pending = [doc]
    while pending:
        v = pending.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"the string {_brief(v)} holds a lone UTF-16 surrogate escape, which is no character")
        elif isinstance(v, dict):
            pending += list(v) + list(v.values())
        elif isinstance(v, list):
            pending += v


def parse(text):
    """JSON as tune's reader takes it: no NaN or Infinity, no number beyond a double's range, no lone
    surrogate escape in a string."""
    doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_int)
    _no_lone_surrogate(doc)
    return doc


# The most bytes a JSON file may hold, decompressed, as tune's readers take it (core/json_file.hpp):
# a gzip bomb is refused before it fills the memory.
MAX_BYTES = 256 << 20


def _read_bounded(path):
    too_large = InputError(f"{path}: holds more than {MAX_BYTES >> 20} MiB (decompressed); tune's JSON files are far "
                           "smaller: is it the right file?")
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise too_large
    if data[:2] != b"\x1f\x8b":
        return data
    parts, size = [], 0
    while data:  # gzip members one after the other, as gzip -d reads them
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            parts.append(d.decompress(data, MAX_BYTES + 1 - size))
        except zlib.error as e:
            raise OSError(f"not a valid gzip file ({e})")
        size += len(parts[-1])
        if size > MAX_BYTES:
            raise too_large
        if not d.eof:
            raise OSError("a truncated gzip file")
        data = d.unused_data
    return b"".join(parts)


def read_json(path):
    """A JSON file, or the gzip of one (results of record over 256 KB are kept as <shape>.json.gz),
    as tune's readers take it: at most MAX_BYTES decompressed."""
    try:
        data = _read_bounded(path)
        return parse(data.decode())
    except OSError as e:  # gzip.BadGzipFile is one
        raise InputError(f"{path}: cannot be read ({e.strerror or e})")
    except (ValueError, RecursionError, EOFError) as e:
        raise InputError(f"{path}: not valid JSON ({e})")


def check(path, doc, rules):
    """Validates a parsed file by `rules`; raises InputError "<file>: <path>: <what>; <what to do>"."""
    try:
        rules(doc)
    except _Bad as e:
        raise InputError(f"{path}: {e}")
    return doc


def device_slug(name):
    """The folder name tune gives a GPU (tuner/src/cuda/device.cpp, device_slug), for a device named by
    PyTorch or a torch baseline file; a results file's comes computed by tune (load_results)."""
    s = "".join(c.lower() if c.isascii() and c.isalnum() else "-" for c in name)
    for drop in ("nvidia-", "geforce-", "tesla-", "quadro-"):
        if s.startswith(drop):
            s = s[len(drop):]
    out = ""
    for c in s:
        if not (c == "-" and (not out or out[-1] == "-")):
            out += c
    return out.rstrip("-") or "gpu"
