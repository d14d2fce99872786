"""Where the Python side finds the tune binary it calls (tune results --json, tune problem draw):
$TUNE_BIN (tune report sets it to itself), else <prefix>/bin/tune of an installed copy (this file
in <prefix>/share/tune/python/), else build/tuner/tune of a checkout (this file in tuner/python/),
else tune on PATH. None when there is none; the caller says so in its own words."""
import os
import pathlib
import shutil
import subprocess

HERE = pathlib.Path(__file__).resolve().parent


def tune_binary():
    if os.environ.get("TUNE_BIN"):
        return os.environ["TUNE_BIN"]
    for exe in (HERE.parents[2] / "bin" / "tune", HERE.parents[1] / "build" / "tuner" / "tune"):
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    return shutil.which("tune")


NOT_FOUND = "tune not found: set TUNE_BIN to the tune binary (build/tuner/tune of a checkout), or put tune on PATH"


def run(args, error):
    """`tune ARGS` with its output captured; `error` (an exception class) raised in one line when
    there is no tune or it cannot start. The caller reads the return code (refusal gives its line)."""
    exe = tune_binary()
    if not exe:
        raise error(NOT_FOUND)
    try:
        return subprocess.run([exe, *args], capture_output=True, text=True)
    except OSError as e:
        raise error(f"{exe}: cannot run ({e.strerror or e}); set TUNE_BIN to the tune binary")


def refusal(r, fallback):
    """The one line a tune that exited non-zero said last, without its "tune: " prefix."""
    line = (r.stderr.strip().splitlines() or [fallback])[-1]
    return line[len("tune: "):] if line.startswith("tune: ") else line
