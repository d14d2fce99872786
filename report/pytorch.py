"""The winner against its PyTorch module, graph against graph: the results' own torch record (tune
--torch) or a torch_baseline.py entry, and ModelNew (tune export torch) where it exported this
winner. report.py's tables use these."""
import json


def exported_winner(m, params):
    """Whether a torch_baseline.py ModelNew entry timed this winner: its variant's `k=v` pairs are the
    winner's parameters (an export of an older record of the shape names another configuration)."""
    pairs = [kv.split("=", 1) for kv in (m.get("variant") or "").split(",") if "=" in kv]
    text = {k: json.dumps(v) if isinstance(v, bool) else str(v) for k, v in (params or {}).items()}
    return bool(pairs) and all(text.get(k) == v for k, v in pairs)


def modelnew_over_compile(t):
    """The summary's ModelNew column: ModelNew over torch.compile, graph against graph, where the
    export timed this file's winner (an export of an older record of the shape is in the shape's
    own table, labelled so)."""
    m = (t or {}).get("modelnew") or {}
    return m.get("over_compile_graph") if m.get("this_winner") else None


def torch_speedups(win_t, record, entry, params=None):
    """The winner against PyTorch by one method: its CUDA-graph time against the module's CUDA-graph
    median (never a cold median against events). The module's times come from the results file's own
    torch record (tune --torch: the run's inputs, after its gate) where it has times, else from a
    torch_baseline.py file's entry; ModelNew from that file only, against eager and torch.compile of
    the same process (graph against graph, events against events); this_winner says whether it
    exported this file's winner (exported_winner)."""
    own = record if (record or {}).get("status") in ("measured", "cached") else None
    source = own or entry
    if not source:
        return None
    out = {"source": "results" if own else "torch_baseline", "torch_version": (own or {}).get("torch_version")}
    for mode in ("eager", "compile"):
        m = source.get(mode) or {}
        gr = (m.get("graph") or {}).get("median_us")
        out[mode] = {"events_us": (m.get("events") or {}).get("median_us"), "graph_us": gr, "error": m.get("error"),
                     "speedup_graph": (gr / win_t["graph_mean_us"]
                                       if gr and win_t and win_t.get("graph_mean_us") else None)}
    m = (entry or {}).get("modelnew")
    if m:
        ev = (m.get("events") or {}).get("median_us")
        gr = (m.get("graph") or {}).get("median_us")
        same = {mode: (entry.get(mode) or {}) for mode in ("eager", "compile")}

        def t(mode, method):
            return (same[mode].get(method) or {}).get("median_us")
        out["modelnew"] = {
            "events_us": ev, "graph_us": gr, "error": m.get("error"), "tuned": m.get("tuned"),
            "variant": m.get("variant"), "parity": m.get("parity"), "op_overhead_us": m.get("op_overhead_us"),
            "this_winner": exported_winner(m, params),
            "over_eager_events": t("eager", "events") / ev if t("eager", "events") and ev else None,
            "over_compile_events": t("compile", "events") / ev if t("compile", "events") and ev else None,
            "over_eager_graph": t("eager", "graph") / gr if t("eager", "graph") and gr else None,
            "over_compile_graph": t("compile", "graph") / gr if t("compile", "graph") and gr else None,
        }
    return out
