#!/usr/bin/env python3
"""Every reader of results refuses a hand-edited file the same way (issue 22, item 11): the table of
hand-edits in tests/fixtures/results/mutations.json, each applied to the valid (SYNTHETIC)
tests/fixtures/results/contact_B4_N64_C64_H32.json, goes through tune header, tune merge, tune
check, tune report, and the report scripts run alone (report.py, summary.py, torch_baseline.py
--list). Each must exit 2 with one line "tune: <file>: <JSON path>: ..." (or the scripts' own
prefix), no traceback, and write nothing; a file kept as .json.gz is read as the .json is. The files of record under results/ pass the Python
validation (the C++ one: Records.EveryResultOfRecordPassesTheValidation).

    readers_test.py TUNE_EXE SOURCE_DIR OUT_DIR
"""
import copy
import concurrent.futures
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import unittest

TUNE, SRC, OUT = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
FIX = SRC / "tests" / "fixtures" / "results"
TABLE = json.loads((FIX / "mutations.json").read_text())
BASE_TEXT = (FIX / TABLE["base"]).read_text()
PY = sys.executable
sys.path.insert(0, str(SRC / "report"))
import results  # noqa: E402  (report/results.py, the Python side of the validation)

FOLDER_READERS = {"report", "report.py", "summary.py", "torch_baseline.py"}
GPU = "synthetic-gpu-a-fixture"  # the folder tune gives the fixture's device


def pointer(doc, path):
    """(parent, key) of a JSON pointer in doc."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    last = parts[-1]
    return node, int(last) if isinstance(node, list) else last


def apply(m):
    """The text of the base file with mutation m applied."""
    if "raw" in m:
        old, new = m["raw"]
        assert old in BASE_TEXT, old
        return BASE_TEXT.replace(old, new, 1) + m.get("append_text", "")
    if "truncate" in m:
        return BASE_TEXT[:int(len(BASE_TEXT) * m["truncate"])]
    doc = json.loads(BASE_TEXT)
    for path, value in m.get("set", {}).items():
        parent, key = pointer(doc, path)
        parent[key] = value
    for path in m.get("remove", []):
        parent, key = pointer(doc, path)
        del parent[key]
    for path, value in m.get("append", {}).items():
        parent, key = pointer(doc, path)
        if isinstance(value, dict) and "copy" in value:
            src, at = pointer(doc, value["copy"])
            item = copy.deepcopy(src[at])
            for p, v in value.get("set", {}).items():
                q, k = pointer(item, p)
                q[k] = v
            value = item
        parent[key].append(value)
    return json.dumps(doc, indent=1)


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)


def readers(folder, file, out):
    """name -> command line, for a results folder holding file at <gpu>/contact/<shape>.json."""
    return {
        # The base file is a synthetic fixture: header and report take it only with --allow-synthetic.
        "header": [TUNE, "header", str(file), "-o", str(out / "x.hpp"), "--allow-synthetic"],
        "merge": [TUNE, "merge", str(file), "--out", str(out / "merged")],
        "check": [TUNE, "check", str(file)],
        "report": [TUNE, "report", str(folder), "-o", str(out / "report"), "--allow-synthetic"],
        "report.py": [PY, str(SRC / "report" / "report.py"), str(folder), "-o", str(out / "report_py"), "--allow-synthetic"],
        "summary.py": [PY, str(SRC / "report" / "summary.py"), str(folder)],
        "torch_baseline.py": [PY, str(SRC / "report" / "torch_baseline.py"), str(folder), "-o", str(out / "t.json"),
                              "--list"],
    }


def place(name, text):
    folder = OUT / name / "results"
    file = folder / GPU / "contact" / "B4_N64_C64_H32.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    return folder, file, OUT / name / "out"


class Readers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(OUT, ignore_errors=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TUNE_WORKER")}
        jobs = []
        for i, m in enumerate(TABLE["mutations"]):
            folder, file, out = place(f"m{i:02d}", apply(m))
            for reader, args in readers(folder, file, out).items():
                jobs.append((i, reader, file, out, args))
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            done = pool.map(lambda j: (j, run(j[4], env)), jobs)
            cls.results = {(j[0], j[1]): (j[2], j[3], r) for j, r in done}

    def test_the_base_file_is_read_by_every_reader(self):
        folder, file, out = place("base", BASE_TEXT)
        for reader, args in readers(folder, file, out).items():
            if reader == "check":
                continue  # it would gate the variants: a GPU's work
            r = run(args)
            self.assertEqual(r.returncode, 0, f"{reader}: {r.stdout}{r.stderr}")

    def test_the_base_file_kept_as_json_gz_is_read_by_every_reader_and_a_hand_edit_refused(self):
        # Results of record over 256 KB are kept as <shape>.json.gz (issue 23): every reader takes
        # one as it takes the .json, and refuses a hand-edited one naming the .json.gz.
        m = next(m for m in TABLE["mutations"] if not m.get("valid") and not m.get("folder_skips") and "set" in m)
        for name, text, code in (("base_gz", BASE_TEXT, 0), ("edit_gz", apply(m), 2)):
            folder, file, out = place(name, text)
            gz = file.with_name(file.name + ".gz")
            gz.write_bytes(gzip.compress(text.encode()))
            file.unlink()
            for reader, args in readers(folder, gz, out).items():
                if reader == "check" and code == 0:
                    continue  # it would gate the variants: a GPU's work
                with self.subTest(reader=reader, file=name):
                    r = run(args)
                    said = (r.stdout + r.stderr).strip()
                    self.assertEqual(r.returncode, code, f"{reader}: {said}")
                    if code:
                        self.assertIn(f"{gz}: {m['field']}", r.stderr, said)
                        self.assertNotIn("Traceback", said)

    def test_every_hand_edit_is_refused_by_every_reader_naming_the_file_and_field(self):
        for i, m in enumerate(TABLE["mutations"]):
            for reader in readers(OUT, OUT, OUT):
                with self.subTest(mutation=m["what"], reader=reader):
                    file, out, r = self.results[(i, reader)]
                    said = (r.stdout + r.stderr).strip()
                    self.assertNotIn("Traceback", said)
                    if m.get("folder_skips") and reader in FOLDER_READERS:
                        continue  # a report folder's readers take only tune results: the file is passed over
                    if m.get("valid"):  # an edit that leaves a valid file: read as the base is
                        if reader != "check":  # which would gate the variants: a GPU's work
                            self.assertEqual(r.returncode, 0, said)
                        continue
                    self.assertEqual(r.returncode, 2, said)
                    self.assertEqual(len(r.stderr.strip().splitlines()), 1, said)
                    field = m["field"]
                    needle = f"{file}: {field}" + ("" if field == "not valid JSON" else ":")
                    self.assertIn(needle, r.stderr, said)
                    if reader == "header":
                        self.assertFalse((out / "x.hpp").exists())
                    if reader == "merge":
                        self.assertFalse((out / "merged").exists())

    def test_the_files_of_record_pass_the_python_validation(self):
        n = 0
        for p in sorted((SRC / "results").rglob("*.json*")):
            if not (p.name.endswith(".json") or p.name.endswith(".json.gz")):
                continue
            text = gzip.open(p).read().decode() if p.suffix == ".gz" else p.read_text()
            doc = results.parse(text)
            if results.is_result(doc):
                results.check(p, doc)
                n += 1
        self.assertGreaterEqual(n, 12)  # the files of record (issue 23: no run folders)


    def test_a_gzip_bomb_is_refused_before_it_fills_the_memory(self):
        """Issue 34, #18: 4 MB of gzip holding 4 GiB was decompressed whole."""
        bomb = OUT / "bomb" / "bomb.json.gz"
        bomb.parent.mkdir(parents=True, exist_ok=True)
        member = gzip.compress(b" " * (1 << 24), compresslevel=1)  # gzip members one after the other: one stream
        bomb.write_bytes(member * (results.MAX_BYTES // (1 << 24) + 1) + gzip.compress(b"{}"))
        with self.assertRaises(results.InputError) as e:
            results.read_json(bomb)
        self.assertIn(f"{bomb}: holds more than 256 MiB (decompressed)", str(e.exception))
        bomb.unlink()

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
