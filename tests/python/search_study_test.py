#!/usr/bin/env python3
"""tools/search_study.sh and tools/search_summary.py (issue 24) end to end with the fake worker:
a two-shape sweep, exhaustive and warm, on a four-variant space; the summary's figures against the
files and walls the study wrote; bad input refused in one line.

    search_study_test.py TUNE REPO_DIR OUT_DIR
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import unittest

TUNE, SRC, OUT = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
SPACE = SRC / "tests" / "fixtures" / "contact_sweep_space.json"


def summary(*args):
    return subprocess.run([sys.executable, str(SRC / "tools" / "search_summary.py"), *map(str, args)],
                          capture_output=True, text=True)


class Study(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(OUT, ignore_errors=True)
        cls.study = OUT / "study"
        r = subprocess.run(["bash", str(SRC / "tools" / "search_study.sh"), TUNE, str(cls.study),
                            "contact:--B 1 --N 16", "contact:--B 2 --N 16", "--", "--config", str(SPACE),
                            "--sanitize", "off", "--warm-explore", "1", "--jobs", "2"],
                           capture_output=True, text=True, env=dict(os.environ, TUNE_WORKER_FAKE="1"))
        assert r.returncode == 0, r.stdout + r.stderr
        cls.walls = [json.loads(line) for line in (cls.study / "walls.jsonl").read_text().splitlines()]
        # The same shapes as one tune --sweep --transfer process, the first with --search model.
        r = subprocess.run(["bash", str(SRC / "tools" / "search_study.sh"), TUNE, str(cls.study),
                            "contact:--B 1 --N 16", "contact:--B 2 --N 16", "--", "--config", str(SPACE),
                            "--sanitize", "off", "--warm-explore", "1", "--jobs", "2"],
                           capture_output=True, text=True,
                           env=dict(os.environ, TUNE_WORKER_FAKE="1", STUDY_PART="sweep",
                                    STUDY_SWEEP_ARGS="--search model --model-init 2 --model-batch 1 --model-rounds 1"))
        assert r.returncode == 0, r.stdout + r.stderr

    def test_the_warm_sweep_starts_each_later_shape_from_the_earlier_ones(self):
        self.assertEqual([(w["mode"], w["args"], w["warm_files"], w["exit"]) for w in self.walls],
                         [("exhaustive", "--B 1 --N 16", 0, 0), ("warm", "--B 1 --N 16", 0, 0),
                          ("exhaustive", "--B 2 --N 16", 0, 0), ("warm", "--B 2 --N 16", 1, 0)])
        later = json.loads((self.study / "warm" / "fake-gpu" / "contact" / "B2_N16_C64_H32.json").read_text())
        search = later["context"]["search"]
        self.assertEqual(search["strategy"], "warm")
        self.assertEqual(len(search["warm_start"]["files"]), 1)
        self.assertTrue(search["warm_start"]["files"][0].endswith("B1_N16_C64_H32.json"))
        first = json.loads((self.study / "warm" / "fake-gpu" / "contact" / "B1_N16_C64_H32.json").read_text())
        self.assertEqual(first["context"]["search"]["strategy"], "exhaustive")

    def test_the_summary_adds_up_the_study(self):
        out = OUT / "summary.json"
        r = summary(self.study, "-o", out, "--md", OUT / "summary.md", "--fast", "warm")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(out.read_text())
        self.assertEqual(len(doc["shapes"]), 2)
        self.assertEqual(doc["missing"], [])
        by = {(w["mode"], w["args"]): w["wall_ms"] / 1e3 for w in self.walls}
        for s in doc["shapes"]:
            args = {"B1_N16_C64_H32": "--B 1 --N 16", "B2_N16_C64_H32": "--B 2 --N 16"}[s["shape"]]
            self.assertAlmostEqual(s["exhaustive"]["wall_s"], by[("exhaustive", args)])
            self.assertAlmostEqual(s["fast"]["wall_s"], by[("warm", args)])
            self.assertLessEqual(s["fast"]["compiled"], s["exhaustive"]["compiled"])
            ex = json.loads(pathlib.Path(s["exhaustive"]["file"]).read_text())
            self.assertEqual(s["exhaustive"]["compiled"], len(ex["variants"]))
            self.assertAlmostEqual(s["gap"], s["fast"]["winner_median_us"] / s["exhaustive"]["winner_median_us"] - 1)
        t = doc["totals"]["all"]
        self.assertAlmostEqual(t["exhaustive_wall_s"], sum(v for (m, _), v in by.items() if m == "exhaustive"))
        self.assertAlmostEqual(t["ratio"], t["fast_wall_s"] / t["exhaustive_wall_s"])
        self.assertIn("| contact | 2 shapes |", (OUT / "summary.md").read_text())

    def test_the_sweep_half_is_one_process_whose_wall_is_the_total(self):
        sweep_line = [w for w in self.walls_now() if w["mode"] == "sweep"]
        self.assertEqual(len(sweep_line), 1)
        self.assertEqual(sweep_line[0]["exit"], 0)
        first = json.loads((self.study / "sweep" / "fake-gpu" / "contact" / "B1_N16_C64_H32.json").read_text())
        later = json.loads((self.study / "sweep" / "fake-gpu" / "contact" / "B2_N16_C64_H32.json").read_text())
        self.assertEqual(first["context"]["search"]["strategy"], "model")
        self.assertEqual(later["context"]["search"]["strategy"], "warm")
        self.assertTrue(later["context"]["search"]["warm_start"]["files"][0].endswith("B1_N16_C64_H32.json"))
        out = OUT / "sweep_summary.json"
        r = summary(self.study, "-o", out)  # sweep/ exists: the default fast half
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(out.read_text())
        self.assertEqual(doc["fast"], "sweep")
        self.assertEqual(doc["missing"], [])
        for s in doc["shapes"]:
            run = json.loads(pathlib.Path(s["fast"]["file"]).read_text())
            self.assertAlmostEqual(s["fast"]["wall_s"], run["wall_seconds"]["total"])
        t = doc["totals"]["all"]
        self.assertAlmostEqual(t["fast_wall_s"], sweep_line[0]["wall_ms"] / 1e3)
        self.assertLessEqual(t["shapes_wall_s"], t["fast_wall_s"] + 1e-9)
        self.assertAlmostEqual(t["ratio"], t["fast_wall_s"] / t["exhaustive_wall_s"])

    def walls_now(self):
        return [json.loads(line) for line in (self.study / "walls.jsonl").read_text().splitlines()]

    def test_a_missing_half_is_listed_and_bad_input_is_one_line(self):
        partial = OUT / "partial"
        shutil.copytree(self.study, partial)
        shutil.rmtree(partial / "sweep")
        (partial / "warm" / "fake-gpu" / "contact" / "B2_N16_C64_H32.json").unlink()
        r = summary(partial, "-o", OUT / "partial.json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads((OUT / "partial.json").read_text())
        self.assertEqual(doc["missing"], [{"problem": "contact", "shape": "B2_N16_C64_H32", "missing": "warm"}])
        self.assertEqual(doc["totals"]["all"]["shapes"], 1)
        for folder, needle in ((OUT / "nothing", "no exhaustive/ folder or walls.jsonl"),):
            folder.mkdir(exist_ok=True)
            r = summary(folder, "-o", OUT / "x.json")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
            self.assertIn(needle, r.stderr)
        (partial / "walls.jsonl").write_text("not json\n")
        r = summary(partial, "-o", OUT / "x.json")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("walls.jsonl: line 1", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
