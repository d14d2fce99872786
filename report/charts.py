"""The tune report's charts (matplotlib, Agg): per (problem, shape) group the distribution of
variant times, the sensitivity to each parameter and the portability across GPUs; per problem,
the shapes."""
import json
import statistics
import sys

from analysis import passed, shape_tag, shape_text
from results import InputError


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"the report needs matplotlib for {sys.executable} (Debian: apt-get install "
                         "python3-matplotlib; scripts/setup.sh installs it)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})
    return plt


def _save(fig, out, name):
    path = out / "charts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt
    plt.close(fig)
    return f"charts/{name}"


def chart_distribution(plt, g, out):
    import numpy as np
    from matplotlib.ticker import MaxNLocator
    gpus = [(s, d) for s, d in g["gpus"].items() if d["times"]]
    if not gpus:
        return None
    fig, axes = plt.subplots(len(gpus), 1, figsize=(8, 2.6 * len(gpus)), squeeze=False, sharex=True)
    every = [t for _, d in gpus for t in d["times"].values()]
    lo, hi = min(every), max(every)
    for s, d in gpus:
        if d["floors"]:
            lo = min(lo, d["floors"]["larger_us"])
        lo = min(lo, (d["run"].get("harness_floor") or {}).get("empty_kernel_cold_us") or lo)
    bins = np.geomspace(lo * 0.95, hi * 1.05, 30)
    for ax, (slug, d) in zip(axes[:, 0], gpus):
        ax.hist(list(d["times"].values()), bins=bins, color="#8da0cb", edgecolor="white")
        if d["baseline_us"]:
            ax.axvline(d["baseline_us"], color="#d95f02", ls="--", lw=2, label=f"baseline {d['baseline_us']:.1f} µs")
        if d["median_us"]:
            ax.axvline(d["median_us"], color="#1b9e77", lw=2, label=f"winner {d['median_us']:.1f} µs")
        if d["floors"]:
            ax.axvline(d["floors"]["larger_us"], color="black", ls=":", lw=1.5,
                       label=f"floor ({d['floors']['bound']}) {d['floors']['larger_us']:.1f} µs")
        empty = (d["run"].get("harness_floor") or {}).get("empty_kernel_cold_us")
        if empty:
            ax.axvline(empty, color="gray", ls="-.", lw=1, label=f"empty kernel (cold) {empty:.1f} µs")
        ax.set_xscale("log")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("variants")
        ax.set_title(f"{d['gpu']}: {len(d['times'])} variants that passed parity", fontsize=9)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    axes[-1, 0].set_xlabel("cold median time per call (µs, L2 flushed; log scale)")
    fig.suptitle(f"{g['problem']} {shape_text(g['shape'])}: distribution of variant times")
    fig.tight_layout()
    return _save(fig, out, f"distribution_{g['problem']}_{shape_tag(g['shape'])}.png")


def sensitivity(run):
    """Per parameter with two or more values: value -> (median, min) cold time over passed variants."""
    ok = passed(run)
    out = {}
    for p in (ok[0]["params"] if ok else {}):
        by = {}
        for v in ok:
            by.setdefault(json.dumps(v["params"].get(p)), []).append(v["timing"]["median_us"])
        if len(by) >= 2:
            order = sorted(by, key=lambda k: (0, json.loads(k), "") if isinstance(json.loads(k), (int, float))
                           and not isinstance(json.loads(k), bool) else (1, 0, k))
            out[p] = {k: (statistics.median(by[k]), min(by[k]), len(by[k])) for k in order}
    return out


def chart_sensitivity(plt, g, slug, out):
    sens = sensitivity(g["gpus"][slug]["run"])
    if not sens:
        return None
    n = len(sens)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.7 * rows), squeeze=False)
    for ax, (p, vals) in zip(axes.flat, sens.items()):
        labels = [k.strip('"') for k in vals]
        x = range(len(labels))
        ax.bar(x, [m for m, _, _ in vals.values()], color="#8da0cb", label="median")
        ax.plot(x, [b for _, b, _ in vals.values()], "o", color="#1b9e77", label="best")
        ax.set_xticks(list(x), [f"{label}\n({c})" for label, (_, _, c) in zip(labels, vals.values())], fontsize=8)
        ax.set_title(p, fontsize=9)
        ax.set_ylabel("cold time per call (µs)")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{g['gpus'][slug]['gpu']}, {g['problem']} {shape_text(g['shape'])}: median and best cold time "
                 "per parameter value (variant count in brackets)", fontsize=9)
    fig.tight_layout()
    return _save(fig, out, f"sensitivity_{slug}_{g['problem']}_{shape_tag(g['shape'])}.png")


def chart_shapes(plt, problem, groups, out):
    from matplotlib.ticker import FuncFormatter
    gs = sorted((g for g in groups if g["problem"] == problem),
                key=lambda g: min((d["work"] or {}).get("bytes_per_call", 0) for d in g["gpus"].values()))
    slugs = sorted({s for g in gs for s in g["gpus"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(gs) + 3), 4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = list(range(len(gs)))
    for i, slug in enumerate(slugs):
        c = colors[i % len(colors)]
        name = next(g["gpus"][slug]["gpu"] for g in gs if slug in g["gpus"])

        def series(f):
            return [f(g["gpus"][slug]) if slug in g["gpus"] else None for g in gs]
        for ys, style, what in ((series(lambda d: d["median_us"]), "o-", "winner"),
                                (series(lambda d: d["baseline_us"]), "s--", "baseline"),
                                (series(lambda d: d["floors"]["larger_us"] if d["floors"] else None), "v:", "floor")):
            pts = [(xi, y) for xi, y in zip(x, ys) if y]
            if pts:
                ax.plot(*zip(*pts), style, color=c, label=f"{name}: {what}", alpha=0.6 if what == "baseline" else 1)
    ax.set_xticks(x, [shape_text(g["shape"]).replace(" ", "\n", 1) for g in gs], fontsize=8)
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel("shape (ordered by bytes per call)")
    ax.set_ylabel("cold median time per call (µs, log scale)")
    ax.set_title(f"{problem}: time vs shape, with the largest floor (bytes/bandwidth, FLOP/FP32 rate or launch)",
                 fontsize=9)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _save(fig, out, f"shapes_{problem}.png")


def chart_portability(plt, g, out):
    """Loss (time / that GPU's winner's time) of each GPU's winner and of the most portable config."""
    import numpy as np
    port, gpus = g["portability"], g["gpus"]
    slugs = list(gpus)
    rows = [(f"winner on {gpus[s]['gpu']}", m["config"]) for s, m in port["matrix"].items()]
    if port["most_portable"] and port["most_portable"]["config"] not in [c for _, c in rows]:
        rows.append(("smallest worst-case loss", port["most_portable"]["config"]))
    ref = {s: gpus[s]["median_us"] or min(gpus[s]["times"].values(), default=1.0) for s in slugs}
    loss = np.array([[gpus[s]["times"][c] / ref[s] if c in gpus[s]["times"] else np.nan
                      for s in slugs] for _, c in rows])
    fig, ax = plt.subplots(figsize=(2.2 * len(slugs) + 4, 0.6 * len(rows) + 1.6))
    finite = loss[np.isfinite(loss)]
    cmap = plt.get_cmap("Reds").copy()
    cmap.set_bad("#dddddd")
    top = max(1.5, finite.max() if finite.size else 1.5)
    im = ax.imshow(np.ma.masked_invalid(loss), cmap=cmap, vmin=1.0, vmax=top, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(slugs)):
            ax.text(j, i, "not measured" if np.isnan(loss[i, j]) else f"{loss[i, j]:.2f}x", ha="center", va="center",
                    fontsize=8, color="white" if loss[i, j] > 1 + 0.6 * (top - 1) else "black")
    ax.set_xticks(range(len(slugs)), [f"measured on\n{gpus[s]['gpu']}" for s in slugs], fontsize=8)
    ax.set_yticks(range(len(rows)), [f"{label}\n{c}" for label, c in rows], fontsize=7)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="loss: cold time / that GPU's winner (x)")
    ax.set_title(f"{g['problem']} {shape_text(g['shape'])}: portability of each GPU's winner", fontsize=9)
    return _save(fig, out, f"portability_{g['problem']}_{shape_tag(g['shape'])}.png")
