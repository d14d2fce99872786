#!/usr/bin/env python3
"""tune report on the SYNTHETIC fixtures (tests/fixtures/report/, two made-up GPUs): the tables'
numbers against values worked out by hand from make_synthetic.py, and every chart a valid PNG.
Also the parts of report/torch_baseline.py that need no GPU.

    report_test.py TUNE_EXE SOURCE_DIR OUT_DIR
"""
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import unittest

TUNE, SRC, OUT = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
os.environ["TUNE_BIN"] = TUNE  # report.py and torch_baseline.py run here read results through this tune
FIX = SRC / "tests" / "fixtures" / "report"
A, B = "synthetic-gpu-a", "synthetic-gpu-b"
S1, S2 = {"B": 1, "N": 64, "C": 64, "H": 32}, {"B": 2, "N": 64, "C": 64, "H": 32}


def tune(*args):
    """tune with args; a report takes the synthetic fixtures here with --allow-synthetic."""
    if args and args[0] == "report":
        args = (*args, "--allow-synthetic")
    return subprocess.run([TUNE, *args], capture_output=True, text=True)


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(OUT, ignore_errors=True)
        r = tune("report", str(FIX / "synthetic"), "-o", str(OUT), "--peaks", str(FIX / "synthetic_peaks.json"))
        assert r.returncode == 0, r.stdout + r.stderr
        cls.md = (OUT / "report.md").read_text()
        cls.html = (OUT / "report.html").read_text()
        data = json.loads((OUT / "report.json").read_text())
        cls.g = {json.dumps(g["shape"]): g for g in data["groups"]}

    def group(self, shape):
        return self.g[json.dumps(shape)]

    def test_a_space_without_strategies_has_no_table_per_strategy(self):
        # Round 7: a problem without a strategy or mapping parameter (embedding_bag, a user's) got a
        # "best cold median per strategy" table of one row whose strategy cell was blank.
        sys.path.insert(0, str(SRC / "report"))
        import analysis
        run = {"problem": "p", "shape": {"N": 8}, "device": {"name": "G"}, "summary": {}, "variants": [
            {"name": f"block={b}", "params": {"block": b}, "status": "passed", "timing": {"median_us": m}}
            for b, m in ((64, 2.0), (128, 1.0))]}
        path = pathlib.Path("r/g/p/N8.json")
        self.assertEqual(analysis.summary_tables([(path, run)])[1], [])
        for v, k in zip(run["variants"], ("thread", "warp")):
            v["params"]["strategy"] = k
        (title, _, rows), = analysis.summary_tables([(path, run)])[1]
        self.assertEqual([r[0] for r in rows], ["strategy=warp", "strategy=thread"])

    def test_floors_ratios_and_speedups(self):
        # (shape, gpu) -> bytes floor, FLOP floor, winner / larger floor, speedup over baseline
        expected = {(0, A): (200.0, 300.0, 400 / 300, 800 / 400), (0, B): (100.0, 200.0, 300 / 200, 500 / 300),
                    (1, A): (400.0, 600.0, 650 / 600, 1000 / 650), (1, B): (200.0, 400.0, 500 / 400, 800 / 500)}
        for (i, gpu), (fb, ff, ratio, speedup) in expected.items():
            d = self.group((S1, S2)[i])["gpus"][gpu]
            self.assertAlmostEqual(d["floors"]["bytes_us"], fb)
            self.assertAlmostEqual(d["floors"]["flop_us"], ff)
            self.assertAlmostEqual(d["ratio_to_floor"], ratio)
            self.assertAlmostEqual(d["speedup_over_baseline"], speedup)
        self.assertIn("| Synthetic GPU A | `strategy=warp, block=64` | 400.00 | 1.0 % | 380.00 | 360.00 | 200.00 "
                      "| 300.00 | 5.00 | 1.33x (FP32 compute) | 800.00 | 2.00x |", self.md)
        self.assertIn("| Synthetic GPU B | `strategy=warp, block=64` | 500.00 | 1.0 % | 475.00 | 450.00 | 200.00 "
                      "| 400.00 | 5.00 | 1.25x (FP32 compute) | 800.00 | 1.60x |", self.md)

    def test_the_gpus_are_counted_with_their_models(self):
        self.assertIn("4 files, 2 problem and shape pairs on 2 GPUs (Synthetic GPU A, Synthetic GPU B).", self.md)
        one = OUT / "one_gpu"
        shutil.copytree(FIX / "synthetic" / A, one / A)
        (one / A / "torch_baseline.json").unlink()
        r = tune("report", str(one), "-o", str(OUT / "one_gpu_out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 files, 2 problem and shape pairs on 1 GPU (Synthetic GPU A).",
                      (OUT / "one_gpu_out" / "report.md").read_text())

    def test_two_models_have_no_card_to_card_spread(self):
        self.assertTrue(all(g["card_spread"] == [] for g in self.g.values()))
        self.assertNotIn("Card-to-card", self.md)

    def test_summary_rows(self):
        # One method per comparison (issue 36): the winner's graph time against the module's graph median;
        # GPU A's from its torch_baseline.json, GPU B's at B2 from the results file's own torch record.
        self.assertIn("| contact B1 N64 C64 H32 | float32 | Synthetic GPU A | 400.00 | 1.33x (FP32 compute) | 2.00x "
                      "| 360.00 | 720.00 | 2.00x | 3.00x | — |", self.md)
        self.assertIn("| contact B2 N64 C64 H32 | float32 | Synthetic GPU B | 500.00 | 1.25x (FP32 compute) | 1.60x "
                      "| 450.00 | 900.00 | 2.00x | 3.00x | — |", self.md)
        self.assertIn("| contact B1 N64 C64 H32 | float32 | Synthetic GPU B | 300.00 | 1.50x (FP32 compute) | 1.67x "
                      "| 270.00 | — | — | — | — |", self.md)
        # The cold median is never set against PyTorch's events any more.
        for old in ("over PyTorch eager |", "speedup_events", "winner speedup"):
            self.assertNotIn(old, self.md)
        self.assertIn("<td>contact B1 N64 C64 H32</td><td>float32</td><td>Synthetic GPU A</td><td>400.00</td><td>1.33x (FP32 compute)</td>",
                      self.html)

    def test_torch_speedups_only_where_a_baseline_exists(self):
        t = self.group(S1)["gpus"][A]["torch"]
        self.assertEqual(t["source"], "torch_baseline")
        self.assertNotIn("speedup_events", t["eager"])
        self.assertAlmostEqual(t["eager"]["speedup_graph"], 3.0)  # 1080 / (400 * 0.9)
        self.assertAlmostEqual(t["compile"]["speedup_graph"], 2.0)
        self.assertIsNone(self.group(S1)["gpus"][B]["torch"])
        self.assertIn("| Synthetic GPU A | torch_baseline.py | 3250.00 | — | — | failed: synthetic failure | — | — |",
                      self.md)

    def test_several_torch_files_of_one_gpu_add_up_entry_by_entry(self):
        # GPU A's two entries in two files (its folder's torch_baseline.json and one --torch file):
        # both shapes keep their torch comparison (the second file used to replace the first).
        src = OUT / "two_torch_files"
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(FIX / "synthetic", src)
        doc = json.loads((src / A / "torch_baseline.json").read_text())
        first, second = dict(doc), dict(doc)
        first["entries"] = [e for e in doc["entries"] if e["shape"] == S1]
        second["entries"] = [e for e in doc["entries"] if e["shape"] == S2]
        self.assertEqual((len(first["entries"]), len(second["entries"])), (1, 1))
        (src / A / "torch_baseline.json").write_text(json.dumps(first))
        extra = OUT / "two_torch_files_s2.json"
        extra.write_text(json.dumps(second))
        r = tune("report", str(src), "-o", str(OUT / "two_torch_files_out"), "--torch", str(extra))
        self.assertEqual(r.returncode, 0, r.stderr)
        groups = {json.dumps(g["shape"]): g for g in json.loads((OUT / "two_torch_files_out" / "report.json").read_text())["groups"]}
        for shape in (S1, S2):
            self.assertEqual(groups[json.dumps(shape)]["gpus"][A]["torch"],
                             self.group(shape)["gpus"][A]["torch"], shape)
        # The baselines table names both files, not the last one alone.
        md = (OUT / "two_torch_files_out" / "report.md").read_text()
        for path in (src / A / "torch_baseline.json", extra):
            self.assertIn(f"| `{path}` |", md)

    def test_the_results_files_own_torch_record_is_graph_against_graph_and_comes_first(self):
        t = self.group(S2)["gpus"][B]["torch"]
        self.assertEqual(t["source"], "results")
        self.assertAlmostEqual(t["compile"]["speedup_graph"], 2.0)  # 900 / (500 * 0.9)
        self.assertAlmostEqual(t["eager"]["speedup_graph"], 3.0)
        self.assertIn("| Synthetic GPU B | this run (tune --torch) | 1500.00 | 1350.00 | 3.00x | 1000.00 | 900.00 | 2.00x |",
                      self.md)
        # Where both exist, the run's own record (its inputs, its device session) is the one used.
        src = OUT / "own_record"
        shutil.copytree(FIX / "synthetic", src)
        f = src / A / "contact" / "B1_N64_C64_H32.json"
        doc = json.loads(f.read_text())
        doc["schema_minor_version"] = 7  # whose finished runs name a winner gated and strictly re-measured
        for v in doc["variants"]:
            if v["name"] == doc["summary"]["winner"]:
                v["timing"]["profile"] = "strict-rounds"
                v["gate"] = {"verdict": "safe", "reason": "SYNTHETIC fixture"}
        doc["torch"] = json.loads((FIX / "synthetic" / B / "contact" / "B2_N64_C64_H32.json").read_text())["torch"]
        doc["torch"]["compile"]["graph"]["median_us"] = 1440.0
        f.write_text(json.dumps(doc))
        r = tune("report", str(src), "-o", str(OUT / "own_record_out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        g = {json.dumps(g["shape"]): g for g in json.loads((OUT / "own_record_out" / "report.json").read_text())["groups"]}
        self.assertAlmostEqual(g[json.dumps(S1)]["gpus"][A]["torch"]["compile"]["speedup_graph"], 4.0)  # 1440 / 360
        # A skipped record has no times: the torch_baseline.py file's are used.
        doc["torch"] = {"status": "skipped", "reason": "PyTorch is not installed for python3", "modes": ["eager", "compile"],
                        "eager": None, "compile": None}
        f.write_text(json.dumps(doc))
        r = tune("report", str(src), "-o", str(OUT / "own_record_out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        g = {json.dumps(g["shape"]): g for g in json.loads((OUT / "own_record_out" / "report.json").read_text())["groups"]}
        self.assertAlmostEqual(g[json.dumps(S1)]["gpus"][A]["torch"]["compile"]["speedup_graph"], 2.0)
        doc["torch"]["status"] = "timed"
        f.write_text(json.dumps(doc))
        self.expect_refusal(src, f"{f}: torch.status: \"timed\" is not one of measured, cached, skipped, failed")

    def test_portability_matrix_and_most_portable_config(self):
        p = self.group(S1)["portability"]
        self.assertAlmostEqual(p["matrix"][A]["on"][B]["loss"], 450 / 300)
        self.assertAlmostEqual(p["matrix"][B]["on"][A]["loss"], 500 / 400)
        self.assertEqual(p["most_portable"]["config"], "strategy=thread,block=64")
        self.assertAlmostEqual(p["most_portable"]["worst_loss"], 1.25)
        self.assertEqual(p["configs_measured_everywhere"], 4)  # warp,256 failed parity on A, absent on B
        p = self.group(S2)["portability"]
        self.assertIsNone(p["matrix"][A]["on"][B]["us"])
        self.assertAlmostEqual(p["matrix"][B]["on"][A]["loss"], 900 / 650)
        self.assertEqual(p["most_portable"]["config"], "strategy=thread,block=64")
        self.assertAlmostEqual(p["most_portable"]["worst_loss"], 1.1)
        self.assertIn("| Synthetic GPU A winner `strategy=warp,block=128` | 650.00 µs (1.00x loss) | not measured |",
                      self.md)
        self.assertIn("worst case 1.10x (Synthetic GPU A 1.08x, Synthetic GPU B 1.10x)", self.md)

    def test_every_chart_exists_is_a_png_and_opens(self):
        import matplotlib.image
        want = ["shapes_contact.png"] + [f"distribution_contact_{t}.png" for t in ("B1_N64_C64_H32", "B2_N64_C64_H32")]
        want += [f"sensitivity_{g}_contact_{t}.png" for g in (A, B) for t in ("B1_N64_C64_H32", "B2_N64_C64_H32")]
        want += [f"portability_contact_{t}.png" for t in ("B1_N64_C64_H32", "B2_N64_C64_H32")]
        self.assertEqual(sorted(p.name for p in (OUT / "charts").iterdir()), sorted(want))
        for name in want:
            path = OUT / "charts" / name
            self.assertEqual(path.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", name)
            self.assertGreater(matplotlib.image.imread(str(path)).shape[0], 100, name)
            self.assertIn(f"](charts/{name})", self.md)
        self.assertEqual(self.html.count('src="data:image/png;base64,'), len(want))

    def test_without_peaks_the_torch_files_copy_bandwidth_gives_the_bytes_floor(self):
        r = tune("report", str(FIX / "synthetic"), "-o", str(OUT / "no_peaks"))
        self.assertEqual(r.returncode, 0, r.stderr)
        g = {json.dumps(g["shape"]): g for g in json.loads((OUT / "no_peaks" / "report.json").read_text())["groups"]}
        a, b = g[json.dumps(S1)]["gpus"][A], g[json.dumps(S1)]["gpus"][B]
        self.assertAlmostEqual(a["floors"]["bytes_us"], 400.0)  # 2e8 bytes at 500 GB/s
        self.assertIsNone(a["floors"]["flop_us"])
        self.assertAlmostEqual(a["ratio_to_floor"], 1.0)
        self.assertEqual(a["floors"]["bound"], "memory")
        # No peaks for GPU B: its only floor is the launch floor, the empty kernel's 5 µs.
        self.assertIsNone(b["floors"]["bytes_us"])
        self.assertIsNone(b["floors"]["flop_us"])
        self.assertEqual(b["floors"]["bound"], "launch")
        self.assertAlmostEqual(b["ratio_to_floor"], 300 / 5)

    def test_the_launch_floor_bounds_a_call_that_does_little_work(self):
        # Issue 22: scene_graph B4 N24 showed 50.8x against bytes and FLOP floors far below a 2.75 µs
        # empty kernel. The floor is the largest of the two and the harness floor (here 350 µs, above
        # A's 300 µs FP32 floor at B1), and the ratio says which bounds it.
        src = OUT / "launch_floor"
        shutil.copytree(FIX / "synthetic", src)
        f = src / A / "contact" / "B1_N64_C64_H32.json"
        run = json.loads(f.read_text())
        run["harness_floor"]["empty_kernel_cold_us"] = 350.0
        f.write_text(json.dumps(run))
        r = tune("report", str(src), "-o", str(OUT / "launch_floor_out"), "--peaks", str(FIX / "synthetic_peaks.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = OUT / "launch_floor_out"
        g = {json.dumps(g["shape"]): g for g in json.loads((out / "report.json").read_text())["groups"]}
        d = g[json.dumps(S1)]["gpus"][A]
        self.assertEqual(d["floors"]["bound"], "launch")
        self.assertAlmostEqual(d["floors"]["larger_us"], 350.0)
        self.assertAlmostEqual(d["ratio_to_floor"], 400 / 350)
        md = (out / "report.md").read_text()
        self.assertIn("| 200.00 | 300.00 | 350.00 | 1.14x (launch) | 800.00 | 2.00x |", md)
        self.assertIn("| contact B1 N64 C64 H32 | float32 | Synthetic GPU A | 400.00 | 1.14x (launch) |", md)

    def test_a_null_zero_or_string_median_is_refused_naming_the_file_and_field(self):
        # A passed variant whose median is null, zero or a string (a damaged or hand-edited file): one
        # line naming the file and the field, exit 2, never a traceback (issue 22, item 11); report.py
        # run alone says the same. tests/cli/results_json_test.cpp runs many more such edits through tune results.
        for tag, bad in (("null", None), ("zero", 0), ("string", "500")):
            src = OUT / f"{tag}_median"
            shutil.copytree(FIX / "synthetic", src)
            f = src / A / "contact" / "B1_N64_C64_H32.json"
            run = json.loads(f.read_text())
            self.assertEqual(run["variants"][0]["name"], "strategy=thread,block=64")
            run["variants"][0]["timing"]["median_us"] = bad
            f.write_text(json.dumps(run))
            for r in (tune("report", str(src), "-o", str(OUT / f"{tag}_median_out")),
                      subprocess.run([sys.executable, str(SRC / "report" / "report.py"), str(src), "-o",
                                      str(OUT / f"{tag}_median_py"), "--allow-synthetic"], capture_output=True, text=True)):
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
                self.assertIn(f"tune: {f}: variants[0].timing.median_us: ", r.stderr)
                self.assertNotIn("Traceback", r.stderr)

    def test_a_result_of_another_schema_version_is_refused(self):
        bad = OUT / "bad_results" / "gpu" / "contact"
        bad.mkdir(parents=True, exist_ok=True)
        (bad / "B1_N8_C8_H8.json").write_text(json.dumps({"kind": "tune.result", "schema_version": 99}))
        r = tune("report", str(OUT / "bad_results"), "-o", str(OUT / "bad_out"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("B1_N8_C8_H8.json: schema_version: 99 is not supported (this tune reads 1)", r.stderr)

    def expect_refusal(self, folder, needle, *extra):
        """tune report and report.py run alone both refuse in one line containing needle, exit 2."""
        for r in (tune("report", str(folder), "-o", str(OUT / "refused"), *extra),
                  subprocess.run([sys.executable, str(SRC / "report" / "report.py"), str(folder), "-o",
                                  str(OUT / "refused_py"), "--allow-synthetic", *extra], capture_output=True, text=True)):
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertNotIn("Traceback", r.stderr)

    def test_fields_a_result_may_leave_out_are_dashes(self):
        # wall_seconds and a timing's noise and batch time are optional to every reader: left out, the
        # report shows a dash (it once stopped with an internal error).
        src = OUT / "optional_fields"
        shutil.copytree(FIX / "synthetic", src)
        f = src / A / "contact" / "B1_N64_C64_H32.json"
        run = json.loads(f.read_text())
        del run["wall_seconds"]
        for v in run["variants"]:
            if v["timing"]:
                del v["timing"]["noise"], v["timing"]["batch_mean_us"]
        f.write_text(json.dumps(run))
        r = tune("report", str(src), "-o", str(OUT / "optional_fields_out"), "--peaks", str(FIX / "synthetic_peaks.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        md = (OUT / "optional_fields_out" / "report.md").read_text()
        self.assertIn("| Synthetic GPU A | `strategy=warp, block=64` | 400.00 | — % | — | 360.00 |", md)

    def test_an_interrupted_run_names_no_winner(self):
        # Its best variant may never have been gated: no winner in the tables (the row's dashes), as
        # tune header and tune export refuse it, until --resume finishes the run.
        src = OUT / "interrupted"
        shutil.copytree(FIX / "synthetic", src)
        f = src / A / "contact" / "B1_N64_C64_H32.json"
        run = json.loads(f.read_text())
        run["context"].setdefault("search", {})["interrupted"] = True
        f.write_text(json.dumps(run))
        r = tune("report", str(src), "-o", str(OUT / "interrupted_out"), "--peaks", str(FIX / "synthetic_peaks.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        md = (OUT / "interrupted_out" / "report.md").read_text()
        self.assertNotIn("| Synthetic GPU A | `strategy=warp, block=64` | 400.00 |", md)

    def test_two_files_of_one_card_and_shape_are_refused(self):
        # A copy beside the file would stand in for it in every table: refused, naming both.
        src = OUT / "two_files"
        shutil.copytree(FIX / "synthetic", src)
        f = src / A / "contact" / "B1_N64_C64_H32.json"
        shutil.copy(f, f.with_name("B1_copy.json"))
        # The shape with its dtype defaults (a file older than T is float32), as the files are compared.
        self.expect_refusal(src, f"{f.with_name('B1_copy.json')}: shape: contact B1 N64 C64 H32 T=float32 on Synthetic "
                                 f"GPU A is in {f} too; keep one results file per card and shape")

    def test_a_result_kept_as_json_gz_is_read_as_the_json_is(self):
        # Results of record over 256 KB are kept as <shape>.json.gz (issue 23): tune report,
        # report.py and torch_baseline.py --list read them as the .json; both at once are refused.
        src = OUT / "json_gz"
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(FIX / "synthetic", src)
        f = src / A / "contact" / "B1_N64_C64_H32.json"
        gz = f.with_name(f.name + ".gz")
        gz.write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
        r = tune("report", str(src), "-o", str(OUT / "json_gz_out"), "--peaks", str(FIX / "synthetic_peaks.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        md = (OUT / "json_gz_out" / "report.md").read_text().replace(str(src), "DIR").replace(".json.gz", ".json")
        self.assertEqual(md, self.md.replace(str(FIX / "synthetic"), "DIR"), "the same report as from the .json")
        t = subprocess.run([sys.executable, str(SRC / "report" / "torch_baseline.py"), str(src), "-o",
                            str(OUT / "t_gz.json"), "--list"], capture_output=True, text=True)
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertEqual(t.stdout.split("\n")[:2], ["contact B1 N64 C64 H32", "contact B2 N64 C64 H32"])
        shutil.copy(FIX / "synthetic" / A / "contact" / "B1_N64_C64_H32.json", f)
        self.expect_refusal(src, f"{f} and {gz.name}: two results files of one shape; keep one")
        t = subprocess.run([sys.executable, str(SRC / "report" / "torch_baseline.py"), str(src), "-o",
                            str(OUT / "t_gz.json"), "--list"], capture_output=True, text=True)
        self.assertEqual(t.returncode, 2, t.stdout + t.stderr)
        self.assertIn(f"{f} and {gz.name}: two results files of one shape", t.stderr)

    def test_modelnew_is_shown_beside_eager_and_compile_and_checked(self):
        src = OUT / "modelnew"
        shutil.copytree(FIX / "synthetic", src)
        t = src / A / "torch_baseline.json"
        doc = json.loads(t.read_text())
        entry = doc["entries"][0]
        eager = entry["eager"]["events"]["median_us"]
        times = {"samples": 10, "median_us": 500.0, "q1_us": 490.0, "q3_us": 510.0, "min_us": 480.0, "mean_us": 500.0}
        entry["modelnew"] = {"events": times, "graph": dict(times, median_us=450.0), "error": None, "tuned": True,
                             "variant": "strategy=thread,block=64",
                             "parity": {"max_abs_vs_module": 2e-5, "max_abs_vs_float64": 3e-5,
                                        "module_max_abs_vs_float64": 1e-7, "tolerance": {"atol": 1e-4, "rtol": 1e-4},
                                        "module_within_tolerance": True, "passed": True},
                             "tune_cold_median_us": 400.0, "op_overhead_us": 100.0}
        t.write_text(json.dumps(doc))
        r = tune("report", str(src), "-o", str(OUT / "modelnew_out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        data = json.loads((OUT / "modelnew_out" / "report.json").read_text())
        shape = json.dumps(entry["shape"])
        g = next(g for g in data["groups"] if json.dumps(g["shape"]) == shape and g["problem"] == entry["problem"])
        m = g["gpus"][A]["torch"]["modelnew"]
        self.assertAlmostEqual(m["over_eager_events"], eager / 500.0)
        self.assertEqual(m["op_overhead_us"], 100.0)
        md = (OUT / "modelnew_out" / "report.md").read_text()
        # The file's winner is not the variant the export ran: the row says so.
        self.assertIn("| Synthetic GPU A | tuned: `strategy=thread,block=64` (the export's results, not this file's "
                      f"winner) | 500.00 | 450.00 | {eager / 500.0:.2f}x |", md)
        self.assertIn("| 100.00 | 3.0e-05 (pass) |", md)
        # The summary's ModelNew column is this winner's export only: another variant's is left out
        # there (it would be read as the winner's), and shown in the shape's table as above.
        self.assertIn("| 360.00 | 720.00 | 2.00x | 3.00x | — |", md)
        entry["modelnew"]["tuned"] = "yes"
        t.write_text(json.dumps(doc))
        self.expect_refusal(src, f"{t}: entries[0].modelnew.tuned: \"yes\" is not")

    def test_hand_edited_torch_baselines_and_peaks_are_refused_naming_the_field(self):
        src = OUT / "bad_torch"
        shutil.copytree(FIX / "synthetic", src)
        t = src / A / "torch_baseline.json"
        doc = json.loads(t.read_text())
        doc["entries"][0]["eager"]["events"]["median_us"] = "fast"
        t.write_text(json.dumps(doc))
        self.expect_refusal(src, f"{t}: entries[0].eager.events.median_us: \"fast\" is not a number")
        doc["entries"][0]["eager"]["events"]["median_us"] = 2000.0
        doc["device"] = "Synthetic GPU A"
        t.write_text(json.dumps(doc))
        self.expect_refusal(src, f"{t}: device: \"Synthetic GPU A\" is not an object")
        peaks = OUT / "bad_peaks.json"
        for bad, needle in (({"h200": {"copy_gb_per_s": True, "fp32_gflop_per_s": 1.0}}, "h200.copy_gb_per_s: true is not a number"),
                            ({"h200": 5}, "h200: 5 is not an object"), ([1], "(top level): not an object")):
            peaks.write_text(json.dumps(bad))
            self.expect_refusal(FIX / "synthetic", f"{peaks}: {needle}", "--peaks", str(peaks))

    def test_a_missing_results_folder_is_one_line_and_exit_2(self):
        r = tune("report", "/nonexistent/results", "-o", str(OUT / "x"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn("/nonexistent/results: not a folder", r.stderr)


class CardToCardSpread(unittest.TestCase):
    """Two cards of one model (tests/fixtures/report/two_cards/, SYNTHETIC): each card's winner and
    the spread of the medians between the cards."""
    C0, C1 = "synthetic-gpu-c-aaaa0001", "synthetic-gpu-c-bbbb0002"

    @classmethod
    def setUpClass(cls):
        cls.out = OUT.with_name(OUT.name + "_two_cards")  # Report.setUpClass empties OUT
        shutil.rmtree(cls.out, ignore_errors=True)
        r = tune("report", str(FIX / "two_cards"), "-o", str(cls.out))
        assert r.returncode == 0, r.stdout + r.stderr
        cls.md = (cls.out / "report.md").read_text()
        cls.g = {json.dumps(g["shape"]): g for g in json.loads((cls.out / "report.json").read_text())["groups"]}

    def test_the_same_winner_on_both_cards(self):
        (m,) = self.g[json.dumps(S1)]["card_spread"]
        self.assertEqual(m["model"], "Synthetic GPU C")
        self.assertEqual([c["card"] for c in m["cards"]], [self.C0, self.C1])
        self.assertEqual([c["winner"] for c in m["cards"]], ["strategy=warp,block=64"] * 2)
        self.assertEqual([c["median_us"] for c in m["cards"]], [400.0, 420.0])
        self.assertAlmostEqual(m["winner_median_spread_pct"], 5.0)
        (c,) = m["configs"]
        self.assertAlmostEqual(c["spread_pct"], 5.0)
        self.assertIn("| `strategy=warp,block=64` | `synthetic-gpu-c-aaaa0001`, `synthetic-gpu-c-bbbb0002` | 400.00 "
                      "| 420.00 | 5.00 % |", self.md)

    def test_different_winners_each_with_its_spread(self):
        (m,) = self.g[json.dumps(S2)]["card_spread"]
        self.assertAlmostEqual(m["winner_median_spread_pct"], (650 / 640 - 1) * 100)
        spread = {c["config"]: c["spread_pct"] for c in m["configs"]}
        self.assertAlmostEqual(spread["strategy=warp,block=128"], (680 / 650 - 1) * 100)
        self.assertAlmostEqual(spread["strategy=warp,block=64"], (660 / 640 - 1) * 100)
        self.assertIn("| `synthetic-gpu-c-bbbb0002` | `GPU-bbbb0002-0000-0000-0000-000000000000` | "
                      "`strategy=warp,block=64` | 640.00 |", self.md)
        self.assertIn("Card-to-card spread: 2 cards of Synthetic GPU C", self.md)

    def test_baselines_within_noise_are_said_to_be(self):
        (m,) = self.g[json.dumps(S1)]["card_spread"]
        b = m["baseline"]
        self.assertEqual(b["on"], {self.C0: 800.0, self.C1: 820.0})
        self.assertAlmostEqual(b["spread_pct"], 2.5)
        self.assertAlmostEqual(b["threshold_pct"], 5.0)  # the quartiles are 1 % off the median: 2 % together
        self.assertFalse(b["beyond_noise"])
        self.assertIn("Baseline `strategy=thread,block=128` on the cards: 2.5 % apart, within noise", self.md)
        self.assertNotIn("beyond noise:**", self.md)

    def test_a_baseline_spread_beyond_noise_is_flagged(self):
        # Issue 22: cards of one model whose baselines differ beyond noise; here card 1's baseline at B1
        # takes 900 µs against card 0's 800 (12.5 %, above the 5 % threshold).
        src = self.out.with_name(self.out.name + "_slow_card")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(FIX / "two_cards", src / "in")
        f = src / "in" / self.C1 / "contact" / "B1_N64_C64_H32.json"
        run = json.loads(f.read_text())
        (base,) = [v for v in run["variants"] if v["baseline"]]
        for k in ("min_us", "q1_us", "median_us", "mean_us", "q3_us", "max_us", "stddev_us", "batch_mean_us",
                  "graph_mean_us"):
            base["timing"][k] *= 900 / 820
        by = {v["name"]: v for v in run["variants"]}
        run["summary"]["speedup_over_baseline"] = base["timing"]["median_us"] / by[run["summary"]["winner"]]["timing"]["median_us"]
        f.write_text(json.dumps(run))
        r = tune("report", str(src / "in"), "-o", str(src / "out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        md = (src / "out" / "report.md").read_text()
        g = {json.dumps(g["shape"]): g for g in json.loads((src / "out" / "report.json").read_text())["groups"]}
        b = g[json.dumps(S1)]["card_spread"][0]["baseline"]
        self.assertAlmostEqual(b["spread_pct"], 12.5)
        self.assertTrue(b["beyond_noise"])
        self.assertIn("**Baseline spread beyond noise:** the baseline `strategy=thread,block=128` took 900.00 µs on "
                      f"`{self.C1}` and 800.00 µs on `{self.C0}`, 12.5 % apart", md)
        self.assertIn("**Baseline spread between cards of one model beyond noise:** contact B1 N64 C64 H32 on "
                      "Synthetic GPU C (12.5 %).", md)
        self.assertFalse(g[json.dumps(S2)]["card_spread"][0]["baseline"]["beyond_noise"])

    def test_two_cards_of_one_model_count_as_two_gpus(self):
        # Issue 22: a two-card report said "1 GPU(s)"; cards are told apart by their UUID.
        self.assertIn("4 files, 2 problem and shape pairs on 2 GPUs (2 × Synthetic GPU C).", self.md)

    def test_cards_are_told_apart_in_the_tables(self):
        self.assertIn("Synthetic GPU C [synthetic-gpu-c-aaaa0001]", self.md)
        self.assertIn("Synthetic GPU C [synthetic-gpu-c-bbbb0002]", self.md)

    def test_cards_whose_records_share_a_folder_are_told_apart_by_their_uuid(self):
        # Two cards' records of other shapes in one folder (a cloud GPU of one model from session to
        # session): the folder alone labelled both cards "[h200]"; the UUID tells them apart.
        src = self.out.with_name(self.out.name + "_one_folder")
        shutil.rmtree(src, ignore_errors=True)
        (src / "in" / "h200" / "contact").mkdir(parents=True)
        for card, shape in ((self.C0, "B1_N64_C64_H32.json"), (self.C1, "B2_N64_C64_H32.json")):
            shutil.copy(FIX / "two_cards" / card / "contact" / shape, src / "in" / "h200" / "contact" / shape)
        r = tune("report", str(src / "in"), "-o", str(src / "out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        md = (src / "out" / "report.md").read_text()
        self.assertIn("Synthetic GPU C [h200 aaaa0001]", md)
        self.assertIn("Synthetic GPU C [h200 bbbb0002]", md)
        self.assertNotIn("Synthetic GPU C [h200] ", md)


class Dtypes(unittest.TestCase):
    """Issue 35: the dtype column, and floors in the dtype's bytes and its tensor-core rate. A synthetic
    file made a bfloat16 run of a tensor-core winner (shape T = "bfloat16", context.tensors), beside
    the untouched float32 ones (files older than dtypes: float32)."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, str(SRC / "report"))
        import report
        cls.report = report
        root = OUT / "dtypes" / "results"
        shutil.rmtree(root.parent, ignore_errors=True)
        shutil.copytree(FIX / "synthetic" / A, root / A)
        src = root / A / "contact" / "B1_N64_C64_H32.json"
        text = src.read_text().replace("strategy=warp", "strategy=mma").replace('"strategy": "warp"', '"strategy": "mma"')
        run = json.loads(text)
        run["shape"]["T"] = "bfloat16"
        run["context"]["tensors"] = [{"name": "x", "role": "input", "dtype": "bfloat16", "shape": [1, 64]},
                                     {"name": "out", "role": "output", "dtype": "bfloat16", "shape": [1, 64]}]
        (root / A / "contact" / "B1_N64_C64_H32_bfloat16.json").write_text(json.dumps(run))
        peaks = {A: {"copy_gb_per_s": 1000.0, "fp32_gflop_per_s": 20000.0, "bf16_tensor_gflop_per_s": 400000.0,
                     "tf32_tensor_gflop_per_s": 100000.0, "source": "SYNTHETIC"}}
        (root.parent / "peaks.json").write_text(json.dumps(peaks))
        blocks, cls.data = report.build(root, root.parent / "out", report.load_peaks(str(root.parent / "peaks.json"), {}),
                                        {}, charts=False, allow_synthetic=True)
        cls.md = report.render_md(blocks)

    def gpu(self, shape):
        return next(g for g in self.data["groups"] if g["shape"] == shape)["gpus"][A]

    def test_the_dtype_column_names_the_shapes_dtype_variable_and_old_files_are_float32(self):
        self.assertEqual(self.gpu({**S1, "T": "bfloat16"})["dtype"], "T=bfloat16")
        self.assertEqual(self.gpu(S1)["dtype"], "float32")
        self.assertIn("| contact B1 N64 C64 H32 | T=bfloat16 | Synthetic GPU A |", self.md)
        self.assertIn("| contact B1 N64 C64 H32 | float32 | Synthetic GPU A |", self.md)
        self.assertIn("dtype T=bfloat16; tensors: x bfloat16, out bfloat16", self.md)

    def test_a_tensor_core_winner_in_bfloat16_is_floored_by_the_bf16_tensor_rate(self):
        f = self.gpu({**S1, "T": "bfloat16"})["floors"]
        # FLOP of the fixture's B1 shape: 300 µs at 20000 GFLOP/s = 6e12 FLOP... per call 6e6 µs·GFLOP/s.
        self.assertAlmostEqual(f["flop_us"], 300.0 * 20000.0 / 400000.0)
        self.assertEqual(f["compute_rate"], "bf16_tensor_gflop_per_s")
        self.assertEqual(f["bound"], "memory")  # the bytes floor (200 µs) is now the larger
        plain = self.gpu(S1)["floors"]
        self.assertAlmostEqual(plain["flop_us"], 300.0)
        self.assertEqual(plain["compute_rate"], "fp32_gflop_per_s")

    def test_modelnew_counts_only_where_it_exported_this_winner(self):
        r = self.report
        g = {"samples": 3, "median_us": 10.0}
        entry = {"compile": {"graph": {"median_us": 30.0}},
                 "modelnew": {"graph": g, "variant": "bm=32,bn=128,stage=true"}}
        win = {"graph_mean_us": 20.0}
        same = r.torch_speedups(win, None, entry, {"bm": 32, "bn": 128, "stage": True, "algo": "simt"})
        self.assertAlmostEqual(same["modelnew"]["over_compile_graph"], 3.0)
        self.assertTrue(same["modelnew"]["this_winner"])
        other = r.torch_speedups(win, None, entry, {"bm": 64, "bn": 128, "stage": True, "algo": "mma"})
        self.assertFalse(other["modelnew"]["this_winner"])
        self.assertAlmostEqual(other["compile"]["speedup_graph"], 1.5)
        # The summary's ModelNew column is this winner's export only.
        self.assertIsNone(r.modelnew_over_compile(other))
        self.assertAlmostEqual(r.modelnew_over_compile(same), 3.0)

    def test_the_rate_follows_the_output_dtype_and_tensor_cores(self):
        r = self.report
        bf16 = {"shape": {"T": "bfloat16"}, "context": {}}
        f32 = {"shape": {"B": 1}, "context": {}}
        f64 = {"shape": {"B": 1}, "context": {"tensors": [{"name": "o", "role": "output", "dtype": "float64"}]}}
        self.assertEqual(r.compute_rate(bf16, {"strategy": "mma"}), "bf16_tensor")
        self.assertEqual(r.compute_rate(bf16, {"strategy": "warp"}), "fp32")
        self.assertEqual(r.compute_rate(f32, {"use_wmma": True}), "tf32_tensor")
        self.assertEqual(r.compute_rate(f32, {"out": "fma", "block": 64}), "fp32")
        self.assertEqual(r.compute_rate(f32, {"out": "mma", "block": 64}), "tf32_tensor")
        self.assertEqual(r.compute_rate(f64, {}), "fp64")
        # scene_graph's strategy "tc" is tensor cores; a float32 winner that says 3xTF32 runs three MMAs
        # per product: a third of the TF32 rate (contact's precision=tf32x3).
        self.assertEqual(r.compute_rate(f32, {"strategy": "tc"}), "tf32_tensor")
        self.assertEqual(r.compute_rate(f32, {"strategy": "mma", "precision": "tf32x3"}), "tf32x3_tensor")
        self.assertEqual(r.compute_rate(f32, {"strategy": "mma", "precision": "tf32"}), "tf32_tensor")
        self.assertEqual(r.compute_rate(bf16, {"strategy": "mma", "precision": "tf32x3"}), "bf16_tensor")
        f3 = r.floors({"shape": {"B": 1}, "context": {}, "work": {"flop_per_call": 3e6}},
                      {"tf32_tensor_gflop_per_s": 1000.0}, {"strategy": "mma", "precision": "tf32x3"})
        self.assertEqual((f3["flop_us"], f3["bound"], f3["compute_gflop_per_s"]),
                         (9.0, "3xTF32 tensor-core compute", 1000.0 / 3))
        # No tensor-core rate in the peaks: the FP32 rate, named so.
        f = r.floors({"shape": {"T": "bfloat16"}, "context": {}, "work": {"flop_per_call": 2e6}},
                     {"fp32_gflop_per_s": 1000.0}, {"strategy": "mma"})
        self.assertEqual((f["flop_us"], f["bound"]), (2.0, "FP32 compute"))

    def test_the_h200_datasheet_rates_fill_what_was_not_measured(self):
        p = self.report.load_peaks(None, {})["h200"]
        self.assertEqual(p["fp32_gflop_per_s"], 60200.0)  # measured stays
        self.assertEqual(p["bf16_tensor_gflop_per_s"], 989000.0)
        self.assertEqual(p["tf32_tensor_gflop_per_s"], 494000.0)
        self.assertIn("datasheet", p["source"])

    def test_a_shape_value_that_is_no_dtype_is_refused(self):
        import results
        bad = OUT / "dtypes" / "bad_dtype.json"
        bad.write_text(json.dumps({**json.loads((OUT / "dtypes" / "results" / A / "contact" /
                                                 "B1_N64_C64_H32_bfloat16.json").read_text()),
                                   "shape": {**S1, "T": "bfloat17"}}))
        with self.assertRaises(results.InputError) as c:
            results.load_results([bad])
        self.assertIn(str(bad), str(c.exception))
        self.assertIn("shape.T", str(c.exception))
        self.assertIn("not a dtype", str(c.exception))


class TorchBaseline(unittest.TestCase):
    SCRIPT = SRC / "report" / "torch_baseline.py"

    def test_lists_the_shapes_of_a_results_folder_without_torch(self):
        r = subprocess.run([sys.executable, str(self.SCRIPT), str(FIX / "synthetic"), "-o", str(OUT / "t.json"),
                            "--list"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\n")[:2], ["contact B1 N64 C64 H32", "contact B2 N64 C64 H32"])

    def test_without_cuda_it_fails_with_one_line(self):
        try:
            import torch
            if torch.cuda.is_available():
                self.skipTest("a CUDA device is present")
        except ImportError:
            pass
        r = subprocess.run([sys.executable, str(self.SCRIPT), str(FIX / "synthetic"), "-o", str(OUT / "t.json")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertTrue(r.stderr.startswith("torch_baseline: "), r.stderr)
        self.assertFalse((OUT / "t.json").exists())

    def test_tunes_probe_reads_make_model_without_running_the_reference(self):
        # tune --torch asks --probe first: torch's version from its metadata, make_model from the source.
        refs = OUT / "probe"
        refs.mkdir(parents=True, exist_ok=True)
        (refs / "module.py").write_text("import torch\ndef make_model(shape):\n    return torch.nn.Identity()\n")
        (refs / "numpy_only.py").write_text("raise SystemExit('never run')\ndef reference(x):\n    return x\n")
        for ref, module in (("module.py", True), ("numpy_only.py", False)):
            r = subprocess.run([sys.executable, str(self.SCRIPT), "--probe", str(refs / ref)], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            try:
                from importlib import metadata
                version = metadata.version("torch")
            except Exception:
                version = None
            self.assertEqual(out["torch_version"], version)
            if version is None:
                self.assertIn("PyTorch is not installed for", out["skip"])
            else:
                self.assertEqual(out["skip"] == "", module, out)

    def test_tunes_one_shape_run_without_torch_writes_a_skip(self):
        try:
            import torch
            if torch.cuda.is_available():
                self.skipTest("a CUDA device is present")
        except ImportError:
            pass
        d = OUT / "one"
        d.mkdir(parents=True, exist_ok=True)
        (d / "request.json").write_text(json.dumps({"problem": "contact", "folder": str(SRC / "configs" / "contact"),
                                                    "shape": S1, "modes": ["eager"], "tensors": []}))
        r = subprocess.run([sys.executable, str(self.SCRIPT), "--one", str(d)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads((d / "result.json").read_text())
        self.assertEqual(res["status"], "skipped")
        self.assertTrue(res["reason"].startswith(("PyTorch does not import", "no CUDA device")), res)


class Synthetic(unittest.TestCase):
    def test_results_not_measured_on_a_gpu_are_refused_unless_allowed_and_then_marked(self):
        r = subprocess.run([TUNE, "report", str(FIX / "synthetic"), "-o", str(OUT / "refused_synthetic")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn("--allow-synthetic", r.stderr)
        r = tune("report", str(FIX / "synthetic"), "-o", str(OUT / "allowed_synthetic"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("SYNTHETIC: 4 files of these results were not measured on a GPU",
                      (OUT / "allowed_synthetic" / "report.md").read_text())
        data = json.loads((OUT / "allowed_synthetic" / "report.json").read_text())
        self.assertEqual(len(data["synthetic"]), 4)


class LeftOut(unittest.TestCase):
    """A results folder as a machine without a GPU leaves it: a result of record beside a compile-only
    sweep's and the fake worker's. The report takes the measured one and names, in one line, what
    it left out and why; with nothing measured it is refused (exit 2)."""

    def test_results_not_measured_are_left_out_in_one_line_and_the_measured_ones_reported(self):
        root = OUT / "left_out" / "results"
        shutil.rmtree(root.parent, ignore_errors=True)
        record = SRC / "results" / "h200" / "contact" / "B4_N64_C64_H32.json.gz"
        (root / "h200" / "contact").mkdir(parents=True)
        shutil.copy(record, root / "h200" / "contact" / record.name)
        small = ["--problem", "contact", "--B", "2", "--N", "8", "--C", "16", "--H", "8", "--config",
                 str(SRC / "tests" / "fixtures" / "contact_small_space.json"), "--out", str(root),
                 "--cache-dir", str(OUT / "left_out" / "cache")]
        r = subprocess.run([TUNE, *small, "--compile-only"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([TUNE, *small], capture_output=True, text=True, env={**os.environ, "TUNE_WORKER_FAKE": "1"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([TUNE, "report", str(root), "-o", str(OUT / "left_out" / "report")], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = [l for l in r.stdout.splitlines() if "left out" in l]
        self.assertEqual(lines, [f"report: left out 2 result files not measured on a GPU: 1 file under "
                                 f"{root}/compile-only-sm_90 (a compile-only run: nothing was timed); 1 file under "
                                 f"{root}/fake-gpu (synthetic results of a fake GPU (TUNE_WORKER_FAKE): nothing was "
                                 "measured); pass --allow-synthetic to report them too (marked synthetic)"], r.stdout)
        md = (OUT / "left_out" / "report" / "report.md").read_text()
        self.assertIn("1 file, 1 problem and shape pair on 1 GPU", md)
        self.assertIn("**Left out:** 2 result files not measured on a GPU", md)
        for outside in ("shared/", "MEASURE.md", "PROBLEMS.md"):  # files a user of tune does not have
            self.assertNotIn(outside, md)
        data = json.loads((OUT / "left_out" / "report" / "report.json").read_text())
        self.assertEqual(len(data["left_out"]), 2)
        self.assertEqual([g["shape"] for g in data["groups"]], [{"B": 4, "N": 64, "C": 64, "H": 32, "T": "float32"}])
        # Nothing measured: refused in one line that says what was left out.
        shutil.rmtree(root / "h200")
        r = subprocess.run([TUNE, "report", str(root), "-o", str(OUT / "left_out" / "none")], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn("no results measured on a GPU to report; left out 2 result files", r.stderr)


class TorchBaselineParts(unittest.TestCase):
    """The pieces of torch_baseline.py's ModelNew measurement that need no GPU."""

    @classmethod
    def setUpClass(cls):
        import importlib.util
        sys.path.insert(0, str(SRC / "report"))  # torch_baseline.py imports results.py beside it
        spec = importlib.util.spec_from_file_location("torch_baseline", SRC / "report" / "torch_baseline.py")
        cls.tb = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.tb)

    def test_the_raw_kernel_time_is_the_winners_cold_median(self):
        runs = self.tb.results_in(FIX / "synthetic")
        self.assertTrue(runs)
        for run in runs.values():
            winner = run["summary"]["winner"]
            want = next(v["timing"]["median_us"] for v in run["variants"] if v["name"] == winner)
            self.assertEqual(self.tb.winner_median(run), want)
        self.assertIsNone(self.tb.winner_median({"summary": {"winner": "x"}, "variants": []}))

    def test_a_folder_that_is_no_export_is_refused_with_exit_2(self):
        with self.assertRaises(self.tb.Failure) as c:
            self.tb.load_export(FIX)
        self.assertEqual(c.exception.code, 2)
        self.assertIn("tune export torch", str(c.exception))

    def test_the_tolerance_is_tunes(self):
        # tune problem show gives each dtype's tolerance as tune's parity takes it (issue 38: no second
        # reader of problem.json); the baseline looks the output's dtype up in it.
        folder = dtype_folder("tolerance", {"atol": 1e-4, "rtol": 1e-3, "float16": {"rtol": 2e-3}, "module": {"k": 3}})
        facts = self.tb.tp.show(folder, {"M": 8})
        self.assertEqual(self.tb.tolerance_of(facts, "float32"), (1e-4, 1e-3))
        self.assertEqual(self.tb.tolerance_of(facts, "bfloat16"), (1e-5, 1.6e-2))
        self.assertEqual(self.tb.tolerance_of(facts, "float16"), (1e-5, 2e-3))
        self.assertEqual(self.tb.tolerance_of(facts, "int64"), (0.0, 0.0))
        self.assertEqual(self.tb.module_rule_of(facts, "bfloat16"), (3.0, 1e-5))


def dtype_folder(name, tolerance=None):
    """A copy of tests/fixtures/dtype_problem (x and out in T, idx int64), with `tolerance` if given."""
    folder = OUT / "problems" / name / "dtype_problem"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(SRC / "tests" / "fixtures" / "dtype_problem", folder)
    if tolerance is not None:
        spec = json.loads((folder / "problem.json").read_text())
        spec["tolerance"] = tolerance
        (folder / "problem.json").write_text(json.dumps(spec))
    return folder


class TorchBaselineDtypes(unittest.TestCase):
    """torch_baseline.py's dtypes (issue 35), without torch or a GPU: which dtype each tensor and the
    module take at a shape, --dtype, and a bad --dtype refused before torch is needed."""
    # tune problem show's facts (tensors in tune's order: parameters, inputs, the output).
    FACTS = {"shape": {"B": 2, "T": "bfloat16"}, "dtypes": {"T": {"values": ["float32", "bfloat16"], "default": "float32"}},
             "tensors": [{"name": "w", "role": "parameter", "dtype": "float32"},
                         {"name": "x", "role": "input", "dtype": "bfloat16"},
                         {"name": "idx", "role": "input", "dtype": "int64"},
                         {"name": "out", "role": "output", "dtype": "bfloat16"}]}

    @classmethod
    def setUpClass(cls):
        cls.tb = TorchBaselineParts.tb if hasattr(TorchBaselineParts, "tb") else None
        if cls.tb is None:
            TorchBaselineParts.setUpClass()
            cls.tb = TorchBaselineParts.tb

    def test_the_shapes_dtype_variable_binds_the_tensors_and_the_module(self):
        bound, of, module = self.tb.dtype_plan(self.FACTS)
        self.assertEqual(bound, {"T": "bfloat16"})
        self.assertEqual(of, {"x": "bfloat16", "idx": "int64", "w": "float32", "out": "bfloat16"})
        self.assertEqual(module, "bfloat16")
        # An integer output: the module takes the first floating input's or parameter's dtype.
        ints = dict(self.FACTS, tensors=self.FACTS["tensors"][:3] + [{"name": "o", "role": "output", "dtype": "int64"}])
        self.assertEqual(self.tb.dtype_plan(ints)[2], "float32")

    def test_dtype_overrides_the_variables_or_a_problems_floating_tensors(self):
        # With dtype variables, tune binds them (Problem.facts passes --T NAME); tune refuses a value
        # the variable does not take.
        problem = object.__new__(self.tb.Problem)
        problem.folder, problem.dtype_variables, problem.given = dtype_folder("override"), ["T"], None
        facts = problem.facts({"M": 8, "T": "float32"}, "bfloat16")
        self.assertEqual(self.tb.dtype_plan(facts, "bfloat16")[1], {"x": "bfloat16", "idx": "int64", "out": "bfloat16"})
        with self.assertRaisesRegex(self.tb.tp.ProblemError, "--T float16 is not a dtype problem dtype_problem takes"):
            problem.facts({"M": 8}, "float16")
        plain = {"shape": {"B": 2}, "dtypes": {},
                 "tensors": [{"name": "x", "role": "input", "dtype": "float32"},
                             {"name": "i", "role": "input", "dtype": "int32"},
                             {"name": "o", "role": "output", "dtype": "float32"}]}
        self.assertEqual(self.tb.dtype_plan(plain, "float16"),
                         ({}, {"x": "float16", "i": "int32", "o": "float16"}, "float16"))

    def test_tunes_request_gives_the_facts_and_no_tune_runs(self):
        # tune --torch writes tune problem show's object into request.json: --one reads no problem itself.
        folder = SRC / "examples" / "rmsnorm"
        facts = self.tb.tp.show(folder, {"M": 4, "T": "bfloat16"})
        saved, os.environ["TUNE_BIN"] = os.environ["TUNE_BIN"], str(OUT / "no_tune_here")
        try:
            problem = self.tb.Problem("rmsnorm", [], facts["shape"], folder=folder, facts=facts)
            self.assertIs(problem.facts(facts["shape"]), facts)
            with self.assertRaises(self.tb.tp.ProblemError):  # any other question would need tune
                problem.facts(facts["shape"], "float16")
        finally:
            os.environ["TUNE_BIN"] = saved

    def test_with_dtype_times_each_shape_once_and_keeps_the_winner_time_of_a_run_in_that_dtype(self):
        shapes = [("p", {"B": 2, "T": "float32", "_tune_median_us": 10.0}),
                  ("p", {"B": 2, "T": "bfloat16", "_tune_median_us": 6.0}),
                  ("p", {"B": 4, "T": "float32", "_tune_median_us": 20.0})]
        got = self.tb.with_dtype(shapes, "bfloat16")
        self.assertEqual(got, [("p", {"B": 2, "T": "bfloat16", "_tune_median_us": 6.0}),
                               ("p", {"B": 4, "T": "float32", "_tune_median_us": None})])

    def test_a_bad_dtype_is_refused_in_one_line_with_exit_2(self):
        r = subprocess.run([sys.executable, str(SRC / "report" / "torch_baseline.py"), str(FIX / "synthetic"), "-o",
                            str(OUT / "t.json"), "--dtype", "bf16"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn("--dtype: 'bf16' is not a dtype (one of float16, bfloat16,", r.stderr)

    def test_the_python_dtype_table_matches_tunes_names(self):
        import dtypes
        header = (SRC / "tuner" / "include" / "tune" / "dtype.hpp").read_text()
        self.assertIn('"' + ", ".join(dtypes.DTYPES) + '"', header)  # dtype_choices()' comment, in order
        self.assertEqual([dtypes.size(n) for n in dtypes.DTYPES], [2, 2, 4, 8, 1, 4, 8, 1, 1])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
