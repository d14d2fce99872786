#!/usr/bin/env python3
"""Replays search strategies on exhaustive results of record, without a GPU (issue 24).

    tools/replay_study.py RESULTS.json[.gz]... -o DIR [--seeds 20] [--strategies a,b,...]
                            [--jobs N] [--within 2] [--budget-fraction 0.3]

Every results file is the truth for one shape: each variant's status, search-profile median,
compile seconds and measurement milliseconds as tune recorded them in an exhaustive run. A
strategy chooses which variant to compile next; the replay runs tune's pipeline as a discrete
event simulation on those recorded costs: `--jobs` compile slots (default: the record's own
context.jobs) feed one GPU that checks and times each compiled variant in turn, so compiles and
measurements overlap as in tune. A variant's result becomes known to the strategy when its
measurement ends. The clock is simulated seconds; the exhaustive strategy replays the record's
own order, so its end time is the model of the recorded run (printed beside the recorded wall).

Strategies (each seeded; exhaustive is the same every seed):
  exhaustive  every variant, in the order tune enumerates them
  random      a random order, stopped at --budget-fraction of the variants (tune's --budget)
  halving     every variant compiled and screened (tune's --search halving: a screen-profile
              measurement, modelled as parity plus 10 samples), the fastest 1/3 then timed fully
  forest      a surrogate: a random forest (scikit-learn) over the parameters, refitted as results
              arrive; the next compile is the candidate of lowest lower confidence bound
              (mean - 1.5 std over the trees); stops when no candidate's bound beats the best by more
              than the noise (1 %) for `jobs` decisions in a row, once a tenth of the space (or three
              rounds of the compile slots; two for transfer) is timed
  transfer    forest, trained first on the other results files given (other shapes of the same
              problem: targets relative to each shape's best, shape dimensions as features), whose
              best configurations are compiled first
  warm        tune --warm-start (defaults): every configuration that was within 1.25x of the best
              at the nearest other shape that timed it (the other results files of the same
              problem) and 32 others at random, compiled in the order tune enumerates them (the
              draw is Python's, not tune's mt19937 stream: the same rule, other draws)

Writes DIR/replay.json (every run's trajectory and summary), DIR/replay.md (the table: per shape
and strategy, the median over seeds of the wall time, of the time to come within --within % of
the exhaustive winner, and of the final gap, and the fraction of runs that got within it) and
DIR/replay_<problem>.png (per shape, the fraction of runs within --within % against simulated
time relative to the exhaustive replay). Exit status: 0 done, 2 bad input (one line).
"""
import argparse
import collections
import gzip
import heapq
import json
import math
import pathlib
import random
import sys

SCREEN_SAMPLES = 10  # StopRule::screen's minimum samples (tuner/src/measure/stats.cpp)
NOISE = 0.01         # an improvement smaller than this is not worth a compile
EXPLORE = 1.5        # the forest's lower confidence bound: mean - EXPLORE x std over its trees
STRATEGIES = ("exhaustive", "random", "halving", "forest", "transfer", "warm")
WARM_KEEP = 1.25     # warm (tune --warm-start): within this of the best at a nearby shape is promising
WARM_EXPLORE = 32    # warm: others drawn at random (tune's --warm-explore default)


class Bad(Exception):
    pass


def read_results(path):
    p = pathlib.Path(path)
    try:
        raw = gzip.open(p, "rt").read() if p.name.endswith(".gz") else p.read_text()
        doc = json.loads(raw)
    except (OSError, ValueError, EOFError) as e:
        raise Bad(f"{p}: {e}; pass a results file tune wrote")
    if not isinstance(doc, dict) or "variants" not in doc or "problem" not in doc:
        raise Bad(f"{p}: not a tune results file (no problem or variants)")
    return doc


class Shape:
    """One exhaustive results file as the truth the replay measures from."""

    def __init__(self, path, doc, jobs):
        self.path = str(path)
        self.problem = doc["problem"]
        self.shape = doc["shape"]
        self.tag = " ".join(f"{k}{v}" for k, v in self.shape.items())
        self.jobs = jobs or int((doc.get("context") or {}).get("jobs") or 1)
        self.recorded_wall = (doc.get("wall_seconds") or {}).get("total")
        self.variants = []
        for v in doc["variants"]:
            if v.get("status") == "skipped" or v.get("baseline"):
                continue  # refused before compiling (constraints, limits): never a candidate
            t = v.get("timing") or {}
            # Only a passed variant can win: one the gate found unsafe never does, however fast.
            med = t.get("median_us") if v.get("status") == "passed" else None
            self.variants.append({
                "name": v["name"], "params": v.get("params") or {},
                "compile_s": float(v.get("compile_seconds") or 0.0),
                "measure_s": float(v.get("evaluate_ms") or 0.0) / 1e3,
                "parity_s": float(v.get("parity_ms") or 0.0) / 1e3,
                "median": float(med) if med and math.isfinite(med) and med > 0 else None,
            })
        timed = [v["median"] for v in self.variants if v["median"]]
        if not timed:
            raise Bad(f"{path}: no variant passed with a timing; the replay needs an exhaustive run that timed some")
        self.best = min(timed)

    def screen_s(self, v):
        """A screen-profile measurement: parity and SCREEN_SAMPLES cold samples, each taken as three
        times the kernel's median (the L2 flush and the launch around it: a model, not a record)."""
        return min(v["measure_s"], v["parity_s"] + SCREEN_SAMPLES * (v["median"] or 0) * 1e-6 * 3)


class Encoder:
    """Parameters (and shape dimensions) as numbers: log2 of positive numbers, one-hot of the rest."""

    def __init__(self, shapes):
        self.keys = sorted({k for s in shapes for v in s.variants for k in v["params"]})
        self.levels = {}
        for k in self.keys:
            vals = {json.dumps(v["params"].get(k)) for s in shapes for v in s.variants}
            if not all(isinstance(json.loads(x), (int, float)) and not isinstance(json.loads(x), bool) for x in vals):
                self.levels[k] = sorted(vals)
        self.dims = sorted({k for s in shapes for k in s.shape})

    def row(self, params, shape):
        out = []
        for k in self.keys:
            val = params.get(k)
            if k in self.levels:
                out += [1.0 if json.dumps(val) == lv else 0.0 for lv in self.levels[k]]
            else:
                out.append(math.log2(val) if isinstance(val, (int, float)) and val > 0 else -1.0)
        return out + [math.log2(shape.get(d, 1)) for d in self.dims]


def forest_model(seed):
    try:
        from sklearn.ensemble import RandomForestRegressor
    except ImportError:
        raise Bad("the forest and transfer strategies need scikit-learn (Debian: apt-get install python3-sklearn; "
                  "scripts/setup.sh installs it)")
    return RandomForestRegressor(n_estimators=48, min_samples_leaf=2, random_state=seed, n_jobs=1)


class Surrogate:
    """The forest strategy's state: what it knows, and which compile it asks for next."""

    def __init__(self, shape, encoder, seed, prior=()):
        self.shape, self.enc, self.rng = shape, encoder, random.Random(seed)
        self.seed = seed
        self.x = {i: encoder.row(v["params"], shape.shape) for i, v in enumerate(shape.variants)}
        self.prior = list(prior)  # (row, target) of other shapes
        self.known = {}           # index -> target (log of median over the best so far), or None: failed
        self.model, self.fitted_on = None, -1
        self.patience = 0
        self.order = []           # indices to ask for first (transfer: the other shapes' bests)

    def observe(self, i, median):
        self.known[i] = median

    def targets(self):
        seen = [m for m in self.known.values() if m]
        if not seen:
            return []
        ref = min(seen)
        worst = max(math.log(m / ref) for m in seen) + math.log(2)
        return [(self.x[i], math.log(m / ref) if m else worst) for i, m in self.known.items()]

    def next(self, pending):
        free = [i for i in range(len(self.shape.variants)) if i not in self.known and i not in pending]
        if not free:
            return None
        while self.order:
            i = self.order.pop(0)
            if i in free:
                return i
        data = self.targets() + self.prior
        if len(self.known) < max(4, self.shape.jobs) or len(data) < 8:
            return self.rng.choice(free)
        if self.model is None or len(self.known) - self.fitted_on >= max(1, self.shape.jobs // 4):
            self.model = forest_model(self.seed)
            self.model.fit([r for r, _ in data], [t for _, t in data])
            self.fitted_on = len(self.known)
        import numpy as np
        rows = np.array([self.x[i] for i in free])
        per_tree = np.stack([t.predict(rows) for t in self.model.estimators_])
        lcb = per_tree.mean(axis=0) - EXPLORE * per_tree.std(axis=0)
        k = int(lcb.argmin())
        # Predicted improvement below the noise: after `jobs` such decisions in a row, stop (not
        # before a tenth of the space, or three rounds of the compile slots, has been timed; with
        # other shapes' results behind the model, two rounds).
        floor = 2 * self.shape.jobs if self.prior else max(3 * self.shape.jobs, len(self.shape.variants) // 10)
        enough = len(self.known) >= floor
        if enough and lcb[k] > math.log(1 - NOISE):
            self.patience += 1
            if self.patience > self.shape.jobs:
                return None
        else:
            self.patience = 0
        return free[k]


def simulate(shape, choose, observe, screen=False):
    """The pipeline on recorded costs: `jobs` compile slots and one GPU that times each compiled
    variant as soon as it is free, in the order they finish compiling (as tune does). choose(pending)
    -> the index to compile next, or None to stop issuing; observe(index, median or None) when its
    measurement ends (at equal times, results are known before a slot chooses). Returns the
    trajectory [(time, best median so far)] and the time the last measurement ends."""
    events = []  # (time, 0: measured | 1: compiled, sequence, index, slot)
    ready = collections.deque()
    pending = set()
    state = {"gpu_busy": False, "stopped": False, "seq": 0}

    def push(t, kind, i, slot):
        state["seq"] += 1
        heapq.heappush(events, (t, kind, state["seq"], i, slot))

    def issue(slot, t):
        if state["stopped"]:
            return
        i = choose(pending)
        if i is None:
            state["stopped"] = True
            return
        pending.add(i)
        push(t + shape.variants[i]["compile_s"], 1, i, slot)

    def start_gpu(t):
        if not state["gpu_busy"] and ready:
            i = ready.popleft()
            v = shape.variants[i]
            state["gpu_busy"] = True
            push(t + (shape.screen_s(v) if screen else v["measure_s"]), 0, i, -1)

    for slot in range(shape.jobs):
        issue(slot, 0.0)
    best, wall, trajectory = None, 0.0, []
    while events:
        t, kind, _, i, slot = heapq.heappop(events)
        if kind == 0:
            state["gpu_busy"] = False
            pending.discard(i)
            med = shape.variants[i]["median"]
            observe(i, med)
            if med is not None and (best is None or med < best):
                best = med
                trajectory.append((t, best))
            wall = t
            start_gpu(t)
        else:
            ready.append(i)
            start_gpu(t)
            issue(slot, t)
    return trajectory, wall


def run_strategy(name, shape, others, encoder, seed, budget_fraction):
    n = len(shape.variants)
    if name == "exhaustive":
        order = list(range(n))
        return simulate(shape, lambda pending: order.pop(0) if order else None, lambda i, m: None)
    if name == "random":
        order = list(range(n))
        random.Random(seed).shuffle(order)
        order = order[:max(1, math.ceil(budget_fraction * n))]
        return simulate(shape, lambda pending: order.pop(0) if order else None, lambda i, m: None)
    if name == "halving":
        order = list(range(n))
        screened = {}
        trajectory, wall = simulate(shape, lambda pending: order.pop(0) if order else None,
                                    lambda i, m: screened.__setitem__(i, m), screen=True)
        # The fastest third, timed fully on the GPU one after another (compiled already).
        top = sorted((i for i, m in screened.items() if m), key=lambda i: screened[i])[:max(1, n // 3)]
        t, best, traj = wall, None, []
        for i in top:
            t += shape.variants[i]["measure_s"]
            m = shape.variants[i]["median"]
            if best is None or m < best:
                best = m
                traj.append((t, best))
        return traj, t
    if name == "warm":
        order = warm_order(shape, others, seed)
        return simulate(shape, lambda pending: order.pop(0) if order else None, lambda i, m: None)
    prior = []
    first = []
    if name == "transfer":
        for o in others:
            rows = [(encoder.row(v["params"], o.shape), math.log(v["median"] / o.best)) for v in o.variants if v["median"]]
            worst = max(t for _, t in rows) + math.log(2)
            rows += [(encoder.row(v["params"], o.shape), worst) for v in o.variants if not v["median"]]
            prior += rows
            # The other shape's five best, by name, first.
            best = sorted((v for v in o.variants if v["median"]), key=lambda v: v["median"])[:5]
            names = {v["name"]: k for k, v in enumerate(shape.variants)}
            first += [names[v["name"]] for v in best if v["name"] in names and names[v["name"]] not in first]
    s = Surrogate(shape, encoder, seed, prior)
    s.order = first
    return simulate(shape, s.next, s.observe)


def warm_order(shape, others, seed):
    """The warm strategy's compiles, as tune --warm-start chooses them: the promising configurations
    (by their relative time at the nearest other shape that timed them) and WARM_EXPLORE of the rest
    at random, in the order of the space (tune compiles in enumeration order)."""
    def distance(o):
        return sum(abs(math.log2(shape.shape.get(d, 1) / o.shape.get(d, 1))) for d in set(shape.shape) | set(o.shape))
    score = {}
    for o in sorted(others, key=distance):
        for v in o.variants:
            if v["median"] and v["name"] not in score:
                score[v["name"]] = v["median"] / o.best
    promising = sorted((k for k, v in enumerate(shape.variants) if score.get(v["name"], math.inf) <= WARM_KEEP),
                       key=lambda k: score[shape.variants[k]["name"]])
    rest = [k for k in range(len(shape.variants)) if k not in set(promising)]
    random.Random(seed).shuffle(rest)
    return sorted(promising + rest[:WARM_EXPLORE])


def time_within(trajectory, target):
    for t, best in trajectory:
        if best <= target:
            return t
    return None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="exhaustive results files (.json or .json.gz)")
    ap.add_argument("-o", "--out", required=True, help="folder for replay.json, replay.md and the charts")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--jobs", type=int, default=0, help="compile slots (default: each record's context.jobs)")
    ap.add_argument("--within", type=float, default=2.0, help="percent of the exhaustive winner that counts as found")
    ap.add_argument("--budget-fraction", type=float, default=0.3, help="random: the fraction of the variants it times")
    a = ap.parse_args()
    try:
        strategies = [s for s in a.strategies.split(",") if s]
        for s in strategies:
            if s not in STRATEGIES:
                raise Bad(f"--strategies: unknown strategy {s!r}; choose from {', '.join(STRATEGIES)}")
        if a.seeds < 1 or not 0 < a.budget_fraction <= 1 or a.within < 0:
            raise Bad("--seeds must be >= 1, --budget-fraction in (0, 1], --within >= 0")
        shapes = [Shape(p, read_results(p), a.jobs) for p in a.results]
        encoder = Encoder(shapes)
        out = pathlib.Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        runs, rows = [], []
        for shape in shapes:
            others = [o for o in shapes if o is not shape and o.problem == shape.problem]
            target = shape.best * (1 + a.within / 100)
            ex_wall = None
            for name in strategies:
                if name in ("transfer", "warm") and not others:
                    continue
                seeds = [0] if name == "exhaustive" else range(a.seeds)
                per = []
                for seed in seeds:
                    traj, wall = run_strategy(name, shape, others, encoder, seed, a.budget_fraction)
                    final = traj[-1][1] if traj else None
                    per.append({"seed": seed, "wall_s": wall, "time_within_s": time_within(traj, target),
                                "final_gap": final / shape.best - 1 if final else None, "trajectory": traj})
                if name == "exhaustive":
                    ex_wall = per[0]["wall_s"]
                runs.append({"file": shape.path, "problem": shape.problem, "shape": shape.shape, "strategy": name,
                             "exhaustive_best_us": shape.best, "runs": per})
                found = sum(1 for r in per if r["time_within_s"] is not None)
                rows.append([shape.problem, shape.tag, name, len(per), fmt(median(r["wall_s"] for r in per)),
                             fmt(median(r["wall_s"] for r in per) / ex_wall if ex_wall else None, ".2f"),
                             fmt(median(r["time_within_s"] for r in per)),
                             f"{found}/{len(per)}", fmt(100 * median(r["final_gap"] for r in per), ".2f") + " %"])
            print(f"{shape.problem} {shape.tag}: exhaustive replay {fmt(ex_wall)} s "
                  f"(recorded wall {fmt(shape.recorded_wall)} s, {len(shape.variants)} candidates, {shape.jobs} jobs)")
        (out / "replay.json").write_text(json.dumps({"kind": "tune.replay_study", "schema_version": 1,
                                                     "within_percent": a.within, "seeds": a.seeds,
                                                     "budget_fraction": a.budget_fraction, "runs": runs}) + "\n")
        head = ["problem", "shape", "strategy", "runs", "wall s (median)", "wall / exhaustive",
                f"time to within {a.within:g} % (median s)", f"within {a.within:g} %", "final gap (median)"]
        md = ["# Search strategies replayed on exhaustive results of record", "",
              "Simulated seconds on the recorded compile and measurement costs (tools/replay_study.py).", "",
              "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        md += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
        (out / "replay.md").write_text("\n".join(md) + "\n")
        chart(runs, out, a.within)
        print(f"replay: {out / 'replay.md'}, {out / 'replay.json'}")
    except Bad as e:
        print(f"replay_study: {e}", file=sys.stderr)
        return 2
    return 0


def fmt(v, spec=".1f"):
    return "—" if v is None else format(v, spec)


def chart(runs, out, within):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("replay_study: no matplotlib, no charts (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return
    for problem in sorted({r["problem"] for r in runs}):
        mine = [r for r in runs if r["problem"] == problem]
        tags = sorted({json.dumps(r["shape"]) for r in mine})
        fig, axes = plt.subplots(1, len(tags), figsize=(5 * len(tags), 3.6), squeeze=False)
        for ax, tag in zip(axes[0], tags):
            group = [r for r in mine if json.dumps(r["shape"]) == tag]
            ex = next((r["runs"][0]["wall_s"] for r in group if r["strategy"] == "exhaustive"), None)
            if not ex:
                continue
            for r in group:
                times = sorted(x["time_within_s"] / ex for x in r["runs"] if x["time_within_s"] is not None)
                xs = [0] + times + [1.2]
                ys = [0] + [(k + 1) / len(r["runs"]) for k in range(len(times))] + [len(times) / len(r["runs"])]
                ax.step(xs, ys, where="post", label=r["strategy"])
            ax.set_title(" ".join(f"{k}{v}" for k, v in json.loads(tag).items()), fontsize=9)
            ax.set_xlabel("simulated time / exhaustive wall")
            ax.set_ylabel(f"runs within {within:g} %")
            ax.set_xlim(0, 1.2)
            ax.set_ylim(0, 1.05)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"replay_{problem}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
