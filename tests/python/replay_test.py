#!/usr/bin/env python3
"""tools/replay_study.py (issue 24): the pipeline simulation on hand-computable records, every
strategy on the committed ln_linear_gelu results of record, and bad input refused in one line.

    replay_test.py REPO_DIR OUT_DIR
"""
import json
import pathlib
import subprocess
import sys
import unittest

SRC, OUT = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
SCRIPT = SRC / "tools" / "replay_study.py"
sys.path.insert(0, str(SRC / "tools"))
import replay_study  # noqa: E402


def record(variants, jobs):
    """A results document with the fields the replay reads."""
    return {"problem": "toy", "shape": {"N": 8}, "context": {"jobs": jobs}, "wall_seconds": {"total": 1.0},
            "variants": [{"name": f"v={k}", "params": {"v": k + 1}, "status": st, "compile_seconds": c,
                          "evaluate_ms": m * 1e3, "parity_ms": 0.0, "timing": {"median_us": med} if med else None}
                         for k, (st, c, m, med) in enumerate(variants)]}


def replay(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


class Simulation(unittest.TestCase):
    def test_two_compile_slots_feed_one_gpu_in_order(self):
        # compile 2, 1, 3, 1 s on 2 slots; measure 1 s each on one GPU; medians 9, 5, 7, 4.
        doc = record([("passed", 2, 1, 9.0), ("passed", 1, 1, 5.0), ("passed", 3, 1, 7.0), ("passed", 1, 1, 4.0)], 2)
        shape = replay_study.Shape("toy.json", doc, 0)
        traj, wall = replay_study.run_strategy("exhaustive", shape, [], None, 0, 1.0)
        # v1 compiles 0-1, measured 1-2 (best 5 at 2); v0 compiles 0-2, measured 2-3 (9: no gain);
        # slot of v1 takes v2 at 1, compiled 4, measured 4-5; slot of v0 takes v3 at 2, compiled 3,
        # measured 3-4 (best 4 at 4).
        self.assertEqual(traj, [(2.0, 5.0), (4.0, 4.0)])
        self.assertEqual(wall, 5.0)

    def test_a_failed_variant_costs_its_time_and_never_counts_as_best(self):
        doc = record([("incorrect", 1, 2, None), ("passed", 1, 1, 6.0)], 1)
        shape = replay_study.Shape("toy.json", doc, 0)
        traj, wall = replay_study.run_strategy("exhaustive", shape, [], None, 0, 1.0)
        self.assertEqual(traj, [(4.0, 6.0)])  # v0 compiled 0-1, measured 1-3; v1 compiled 1-2, measured 3-4
        self.assertEqual(wall, 4.0)

    def test_random_times_its_budget_fraction_only(self):
        doc = record([("passed", 1, 1, float(10 - k)) for k in range(10)], 1)
        shape = replay_study.Shape("toy.json", doc, 0)
        traj, wall = replay_study.run_strategy("random", shape, [], None, 3, 0.3)
        self.assertLessEqual(len(traj), 3)
        self.assertEqual(wall, 4.0)  # 3 variants on one slot: compiled 0-1, 1-2, 2-3; measured 1-2, 2-3, 3-4


class Warm(unittest.TestCase):
    def test_the_promising_configurations_of_the_nearest_shape_first_then_a_few_others(self):
        def shape(n, medians):
            doc = record([("passed", 1, 1, m) if m else ("incorrect", 1, 1, None) for m in medians], 2)
            doc["shape"] = {"N": n}
            return replay_study.Shape(f"N{n}.json", doc, 0)
        here = shape(16, [5.0] * 10)
        near = shape(32, [10.0, 12.0, None, 30.0, 11.0, 9.0, 50.0, 13.0, 40.0, 20.0])   # best 9
        far = shape(1024, [1.0, 99.0, 99.0, 99.0, 99.0, 99.0, 99.0, 99.0, 99.0, 1.1])  # best 1
        saved = replay_study.WARM_EXPLORE
        try:
            replay_study.WARM_EXPLORE = 0
            promising = replay_study.warm_order(here, [far, near], seed=1)
            replay_study.WARM_EXPLORE = 4
            order = replay_study.warm_order(here, [far, near], seed=1)
        finally:
            replay_study.WARM_EXPLORE = saved
        # Within 1.25x of N32's best (9): v0 (1.11), v4 (1.22), v5 (1.0); v9 is promising only at
        # N1024, which is farther: N32 decides. Then 4 others; all in the order of the space.
        self.assertEqual(promising, [0, 4, 5])
        self.assertTrue({0, 4, 5} <= set(order), order)
        self.assertEqual(len(order), 3 + 4)
        self.assertEqual(order, sorted(set(order)))


class OnResultsOfRecord(unittest.TestCase):
    def test_every_strategy_on_the_example_problem(self):
        files = sorted((SRC / "results" / "h200" / "ln_linear_gelu").glob("*.json*"))
        self.assertEqual(len(files), 2, files)
        out = OUT / "ln"
        r = replay(*files, "-o", out, "--seeds", "2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        doc = json.loads((out / "replay.json").read_text())
        by = {(json.dumps(x["shape"]), x["strategy"]): x for x in doc["runs"]}
        self.assertEqual({s for _, s in by}, set(replay_study.STRATEGIES))
        for (shape, strategy), x in by.items():
            ex = by[(shape, "exhaustive")]["runs"][0]
            for run in x["runs"]:
                self.assertGreater(run["wall_s"], 0)
                # No strategy finds better than the exhaustive search; random, timing a third
                # of the variants, ends before the exhaustive replay does.
                self.assertGreaterEqual(run["final_gap"], 0)
                if strategy == "random":
                    self.assertLessEqual(run["wall_s"], ex["wall_s"] * 1.0001, (shape, strategy))
            if strategy == "exhaustive":
                self.assertEqual(x["runs"][0]["final_gap"], 0.0)
        md = (out / "replay.md").read_text()
        self.assertIn("| ln_linear_gelu | M1024 K1024 N1024 | exhaustive | 1 |", md)
        self.assertTrue((out / "replay_ln_linear_gelu.png").read_bytes().startswith(b"\x89PNG"))

    def test_bad_input_is_one_line_and_exit_2(self):
        bad = OUT / "not_results.json"
        OUT.mkdir(parents=True, exist_ok=True)
        bad.write_text("{\"kind\": \"something else\"}")
        for args, needle in (([bad], "not a tune results file"), ([OUT / "missing.json"], "missing.json"),
                             ([bad, "--strategies", "annealing"], "unknown strategy 'annealing'")):
            r = replay(*args, "-o", OUT / "x")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr.strip().count("\n"), 0, r.stderr)
            self.assertIn(needle, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
