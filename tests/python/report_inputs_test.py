#!/usr/bin/env python3
"""tune report against awkward input (adversarial round 5): table cells holding `|` or a line break,
torch files holding a lone surrogate, peaks that overflow a floor, files of one shape written with and
without its dtype defaults. Each is refused in one line (exit 2) or rendered intact; no earlier
report is lost.

    report_inputs_test.py TUNE_EXE SOURCE_DIR OUT_DIR
"""
import contextlib
import gzip
import io
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

TUNE, SRC, OUT = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
os.environ["TUNE_BIN"] = TUNE
FIX = SRC / "tests" / "fixtures" / "report" / "synthetic"
GPU_A = "synthetic-gpu-a"
sys.path.insert(0, str(SRC / "report"))


def results_folder(name, device_name=None, root_name="res"):
    """OUT/name/root_name/synthetic-gpu-a/contact/B1_N64_C64_H32.json from the synthetic fixture."""
    root = OUT / name / root_name
    shutil.rmtree(OUT / name, ignore_errors=True)
    (root / GPU_A / "contact").mkdir(parents=True)
    rec = json.loads((FIX / GPU_A / "contact" / "B1_N64_C64_H32.json").read_text())
    if device_name is not None:
        rec["device"]["name"] = device_name
    (root / GPU_A / "contact" / "B1_N64_C64_H32.json").write_text(json.dumps(rec))
    return root, rec


def report(root, out, *extra):
    return subprocess.run([TUNE, "report", str(root), "-o", str(out), "--allow-synthetic", *extra],
                          capture_output=True, text=True)


def cells(line):
    """A markdown table row's cells, split at the `|` that are not escaped."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


class MarkdownCells(unittest.TestCase):
    def test_a_pipe_or_a_line_break_in_a_cell_keeps_the_table_whole(self):
        root, _ = results_folder("cells", "Synthetic GPU A | SXM\nrev 2", "res|2026")
        r = report(root, OUT / "cells" / "out")
        self.assertEqual(r.returncode, 0, r.stderr)
        md = (OUT / "cells" / "out" / "report.md").read_text()
        self.assertIn("| Synthetic GPU A \\| SXM rev 2 |", md)
        self.assertIn("res\\|2026/synthetic-gpu-a", md)
        for table in re.findall(r"(?:^\|.*\n)+", md, re.M):
            rows = table.splitlines()
            self.assertEqual({len(cells(row)) for row in rows}, {len(cells(rows[0]))}, table)


class Floors(unittest.TestCase):
    def test_peaks_so_small_that_a_floor_overflows_are_refused_in_one_line(self):
        # Positive and finite, so validate_peaks passes them; bytes / (1e-320 GB/s) is inf, which
        # report.json wrote as Infinity (not JSON) and the table as "0.00x (memory)".
        root, _ = results_folder("floors")
        peaks = OUT / "floors" / "peaks.json"
        peaks.write_text(json.dumps({GPU_A: {"copy_gb_per_s": 1e-320, "fp32_gflop_per_s": 1e-320}}))
        r = report(root, OUT / "floors" / "out", "--peaks", str(peaks))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn(f"the peaks of Synthetic GPU A ({peaks}): copy_gb_per_s 1e-320 puts the bytes floor of contact "
                      "at infinity", r.stderr)
        self.assertFalse((OUT / "floors" / "out" / "report.json").exists())
        peaks.write_text(json.dumps({GPU_A: {"copy_gb_per_s": 500, "fp32_gflop_per_s": 1e-320}}))
        r = report(root, OUT / "floors" / "out", "--peaks", str(peaks))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("fp32_gflop_per_s 1e-320 puts the FLOP floor of contact at infinity", r.stderr)


class KeepsTheEarlierReport(unittest.TestCase):
    def setUp(self):
        self.root, _ = results_folder("keep")
        self.out = OUT / "keep" / "out"
        r = report(self.root, self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.before = {n: (self.out / n).read_bytes() for n in ("report.md", "report.html", "report.json")}
        self.charts = {p.name: p.read_bytes() for p in (self.out / "charts").iterdir()}

    def assert_kept(self):
        self.assertEqual({n: (self.out / n).read_bytes() for n in self.before}, self.before)
        self.assertEqual(sorted(p.name for p in self.out.iterdir()), ["charts", *sorted(self.before)])
        self.assertEqual({p.name: p.read_bytes() for p in (self.out / "charts").iterdir()}, self.charts)

    def test_a_lone_surrogate_in_a_torch_file_is_refused_in_one_line(self):
        # Python's json takes "\ud800"; writing report.md then failed (exit 4) and left it at 0 bytes.
        doc = json.loads((FIX / GPU_A / "torch_baseline.json").read_text())
        doc["context"]["torch_version"] = "2.11\ud800"
        torch = OUT / "keep" / "torch.json"
        torch.write_text(json.dumps(doc))
        self.assertIn("\\ud800", torch.read_text())
        r = report(self.root, self.out, "--torch", str(torch))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn(f"{torch}: not valid JSON (the string \"2.11\\ud800\" holds a lone UTF-16 surrogate", r.stderr)
        self.assert_kept()

    def test_an_output_that_cannot_be_written_whole_leaves_every_earlier_one(self):
        import report as report_py
        saved = report_py.render_html
        report_py.render_html = lambda blocks, out: "<p>\udc80</p>"  # cannot be encoded as UTF-8
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                code = report_py.main([str(self.root), "-o", str(self.out), "--allow-synthetic"])
        finally:
            report_py.render_html = saved
        self.assertEqual(code, 4, err.getvalue())
        self.assertIn("internal error in the report: UnicodeEncodeError", err.getvalue())
        self.assert_kept()


class ChartsOfThisReportOnly(unittest.TestCase):
    """Round 9: a report into the folder of an earlier one kept that report's charts of problems and
    shapes it no longer had (and counted them: "38 charts" for a report of 5), and a report killed
    mid-write left its temporary files there; both were shipped with the folder."""

    def test_a_later_report_removes_the_charts_it_did_not_draw_and_a_killed_ones_files(self):
        root = OUT / "charts_only" / "res"
        shutil.rmtree(OUT / "charts_only", ignore_errors=True)
        shutil.copytree(FIX / GPU_A, root / GPU_A)
        out = OUT / "charts_only" / "out"
        r = report(root, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        both = sorted(p.name for p in (out / "charts").iterdir())
        self.assertTrue(any("B2_N64" in n for n in both), both)
        # A killed report's stage (its pid gone) and an older tune's temporary file; a file of the
        # user's own in charts/ stays.
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        (out / f".report.tmp.{gone.pid}" / "charts").mkdir(parents=True)
        (out / f".report.tmp.{gone.pid}" / "charts" / "shapes_contact.png").write_bytes(b"half a png")
        (out / ".report.md.tmp").write_text("half a report")
        (out / "charts" / "mine.png").write_bytes(b"the user's")
        (root / GPU_A / "contact" / "B2_N64_C64_H32.json").unlink()
        r = report(root, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        left = sorted(p.name for p in (out / "charts").iterdir())
        self.assertFalse([n for n in left if "B2_N64" in n], left)
        self.assertIn("mine.png", left)
        drawn = [n for n in left if n != "mine.png"]
        self.assertIn(f", {len(drawn)} charts", r.stdout)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["charts", "report.html", "report.json", "report.md"])
        md = (out / "report.md").read_text()
        for name in drawn:
            self.assertIn(f"(charts/{name})", md)


class Stops(unittest.TestCase):
    """Round 9: Ctrl-C during tune report printed a page of Python traceback and tune died of the
    signal (exit -2, no line of its own); SIGTERM to tune alone killed tune and left report.py running
    behind it, writing into OUT_DIR after the command had ended. Now one line and 130/143, the earlier
    report's files as they were, nothing left running or behind."""

    def stop(self, sig, whole_group):
        root, _ = results_folder("stops")
        out = OUT / "stops" / "out"
        out.mkdir(parents=True)
        (out / "report.md").write_text("the earlier report")
        # report.py as it is, its build() held for a minute: the stop comes while the report is made.
        slow = OUT / "stops" / "slow_report.py"
        slow.write_text(f"import sys\nimport time\nsys.path.insert(0, {str(SRC / 'report')!r})\nimport report\n"
                        "built = report.build\n\n\ndef build(*a, **k):\n    time.sleep(60)\n"
                        "    return built(*a, **k)\n\n\nreport.build = build\nsys.exit(report.main())\n")
        p = subprocess.Popen([TUNE, "report", str(root), "-o", str(out), "--allow-synthetic"],
                             env=dict(os.environ, TUNE_REPORT_SCRIPT=str(slow)), start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while not list(out.glob(".report.tmp.*")) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(list(out.glob(".report.tmp.*")), "the report never started")
        if whole_group:
            os.killpg(p.pid, sig)  # as a terminal's Ctrl-C or Slurm: tune and report.py both
        else:
            os.kill(p.pid, sig)  # kill <tune's pid>
        _, err = p.communicate(timeout=30)  # report.py holds the pipes too: it has ended
        self.assertEqual(p.returncode, 128 + sig, err)
        self.assertEqual(err.strip().count("\n"), 0, err)
        self.assertIn(f"tune: report interrupted ({'Ctrl-C' if sig == signal.SIGINT else 'SIGTERM'}); nothing written",
                      err)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["report.md"])
        self.assertEqual((out / "report.md").read_text(), "the earlier report")

    def test_ctrl_c_is_one_line_and_130(self):
        self.stop(signal.SIGINT, whole_group=True)

    def test_sigterm_to_tune_alone_stops_the_report_too(self):
        self.stop(signal.SIGTERM, whole_group=False)

    def test_sigterm_to_both_is_one_line_and_143(self):
        self.stop(signal.SIGTERM, whole_group=True)


def h200_record():
    """The H200 file of record of contact B4 N64 (minor 7: "T": "float32", context.tensors)."""
    return json.loads(gzip.decompress((SRC / "results" / "h200" / "contact" / "B4_N64_C64_H32.json.gz").read_bytes()))


class DtypeDefaults(unittest.TestCase):
    """A shape is its dtype variables at their defaults when written without them (a file older than T)."""

    def test_a_file_older_than_t_beside_a_newer_one_of_that_shape_is_refused(self):
        root = OUT / "older" / "res"
        shutil.rmtree(OUT / "older", ignore_errors=True)
        (root / "h200" / "contact").mkdir(parents=True)
        rec = h200_record()
        (root / "h200" / "contact" / "B4_N64_C64_H32.json").write_text(json.dumps(rec))
        rec["shape"].pop("T"), rec["context"].pop("tensors"), rec.pop("torch")
        rec["schema_minor_version"] = 5
        (root / "h200" / "contact" / "B4_N64_C64_H32_before_dtypes.json").write_text(json.dumps(rec))
        r = report(root, OUT / "older" / "out")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
        self.assertIn("shape: contact B4 N64 C64 H32 T=float32 on NVIDIA H200 is in", r.stderr)
        self.assertIn("keep one results file per card and shape", r.stderr)
        r = subprocess.run([sys.executable, str(SRC / "report" / "torch_baseline.py"), str(root), "-o",
                            str(OUT / "older" / "t.json"), "--list"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["contact B4 N64 C64 H32 T=float32"], r.stdout)  # the first file's

    def test_a_torch_entry_without_t_meets_the_record_with_t(self):
        # The repo's own torch_baseline.json: contact entries without T; the record's own torch skipped.
        root = OUT / "torch_t" / "res"
        shutil.rmtree(OUT / "torch_t", ignore_errors=True)
        (root / "h200" / "contact").mkdir(parents=True)
        shutil.copy(SRC / "results" / "h200" / "torch_baseline.json", root / "h200")
        entry = next(e for e in json.loads((root / "h200" / "torch_baseline.json").read_text())["entries"]
                     if e["problem"] == "contact" and e["shape"] == {"B": 4, "N": 64, "C": 64, "H": 32})
        rec = h200_record()
        rec["torch"] = {"status": "skipped", "reason": "--torch off"}
        (root / "h200" / "contact" / "B4_N64_C64_H32.json").write_text(json.dumps(rec))
        r = report(root, OUT / "torch_t" / "out")
        self.assertEqual(r.returncode, 0, r.stderr)
        (g,) = json.loads((OUT / "torch_t" / "out" / "report.json").read_text())["groups"]
        t = g["gpus"]["h200"]["torch"]
        self.assertIsNotNone(t)
        self.assertEqual(t["source"], "torch_baseline")
        self.assertEqual(t["compile"]["graph_us"], entry["compile"]["graph"]["median_us"])
        self.assertIn("Against PyTorch on the same GPU", (OUT / "torch_t" / "out" / "report.md").read_text())


class ModelNewParity(unittest.TestCase):
    """torch_baseline's verdict on an exported ModelNew of a low-precision output follows the
    problem's tolerance.rule, as tune's own parity does (round 7): it took "both" whatever the rule."""

    def test_the_rule_decides_which_checks_count(self):
        import torch_baseline
        verdict = torch_baseline.low_precision_passed
        self.assertTrue(verdict(True, True, "both"))
        self.assertFalse(verdict(True, False, "both"))
        self.assertFalse(verdict(False, True, "both"))
        self.assertTrue(verdict(True, False, "tolerance"))
        self.assertFalse(verdict(False, True, "tolerance"))
        self.assertTrue(verdict(False, True, "module"))
        self.assertFalse(verdict(True, False, "module"))


def torch_imports():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(torch_imports(), "torch does not import here (the device machine has it)")
class ModelNewParityInTheOutputsDtype(unittest.TestCase):
    """ModelNew's parity is judged as tune's parity judges the kernel (round 7): a module that returns
    float32 where the output is float16 is stored in float16 first, else its module rule compared the
    kernel's float16 rounding with a float32 module's error and failed a ModelNew tune had passed."""

    def test_a_float32_module_of_a_float16_output_is_rounded_as_the_kernel_must_round(self):
        import torch
        import torch_baseline as tb

        class Sum(torch.nn.Module):  # as scatter_given's: the output's dtype is not the module's to know
            def forward(self, x):
                return x.sum(dim=1)

        x = (torch.arange(64 * 33, dtype=torch.float32).reshape(64, 33) * 1e-3).sin() * 4
        out = Sum()(x).to(torch.float16)  # the kernel: a float32 sum, stored as float16
        facts = {"tolerance": {"float16": {"atol": 1e-5, "rtol": 1e-3, "module_k": 2.0, "module_atol": 1e-5}}}
        rec = tb.modelnew_parity(torch, out, Sum(), (x,), facts, "float16")
        self.assertTrue(rec["module_rule"]["passed"], rec)
        self.assertTrue(rec["passed"], rec)
        self.assertGreater(rec["module_max_abs_vs_float64"], 1e-4, "the module's error is float16's rounding")
        self.assertEqual(tb.module_parity(torch, Sum(), (x,), "float16")["max_abs_vs_float64"],
                         rec["module_max_abs_vs_float64"])
        # A kernel that rounds worse than float16 must (its sum kept in float16) still fails the rule.
        acc = torch.zeros(64, dtype=torch.float16)
        for j in range(33):
            acc = acc + x[:, j].to(torch.float16)
        self.assertFalse(tb.modelnew_parity(torch, acc, Sum(), (x,), facts, "float16")["module_rule"]["passed"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
