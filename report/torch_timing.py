"""How report/torch_baseline.py times a PyTorch module (its docstring's "Methods"): CUDA events around
one call with L2 flushed before it, CUDA-graph replay, each the median of its samples, and the
device-to-device copy peak. Needs torch only when called (each function is given the module)."""
import os
import pathlib
import statistics
import time


def summary(us):
    us = sorted(us)
    q = statistics.quantiles(us, n=4) if len(us) >= 2 else [us[0]] * 3
    return {"samples": len(us), "median_us": statistics.median(us), "q1_us": q[0], "q3_us": q[2],
            "min_us": us[0], "mean_us": statistics.fmean(us)}


def time_events(torch, fn, flush, samples, max_seconds):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    us, t0 = [], time.perf_counter()
    while len(us) < samples and (len(us) < 10 or time.perf_counter() - t0 < max_seconds):
        flush.zero_()
        start.record()
        fn()
        end.record()
        end.synchronize()
        us.append(start.elapsed_time(end) * 1e3)
    return summary(us)


def time_graph(torch, fn, calls, samples, max_seconds):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    us, t0 = [], time.perf_counter()
    while len(us) < samples and (len(us) < 10 or time.perf_counter() - t0 < max_seconds):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        us.append(start.elapsed_time(end) * 1e3 / calls)
    return summary(us)


def copy_bandwidth(torch, samples=20):
    """GB/s of a 1 GiB device-to-device copy, bytes read + written (the floor's bandwidth)."""
    src = torch.ones(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        dst.copy_(src)
    ms = []
    for _ in range(samples):
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
    return 2 * src.numel() * 4 / (statistics.median(ms) * 1e-3) / 1e9


def flush_buffer(torch):
    """(the current device's L2 size in bytes, a float32 buffer of twice that to zero before each call)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0) or 128 << 20
    return l2, torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")


def method_record(a, l2):
    return {"events": "L2 flushed (zeroing a buffer of twice the L2 size) before each call; CUDA events around one "
                      "call; median",
            "graph": "graph_calls calls captured in one CUDA graph, replayed; per call; median",
            "samples": a.samples, "max_seconds": a.max_seconds, "graph_calls": a.graph_calls, "flush_bytes": 2 * l2}


def first_line(e):
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0][:300]


def time_modes(torch, module, inputs, modes, a, flush, log=lambda mode, rec: None, hold=None):
    """{mode: {"events": TIMES, "graph": TIMES, "error", "compile_seconds" (compile)}} of the module
    (on the GPU, eval, under no_grad) called on inputs, for each of modes ("eager", "compile"). hold:
    a file to wait for between the preparation (torch.compile's compile and first call) and the
    timing (tune --torch beside the gate); then "held_s", the seconds waited, is in the dict too."""
    out, ready = {}, []
    for mode in modes:
        rec = {"events": None, "graph": None, "error": None}
        out[mode] = rec
        try:
            fn_module = module
            if mode == "compile":
                fn_module = torch.compile(module, dynamic=False)
                t0 = time.perf_counter()
                fn_module(*inputs)
                torch.cuda.synchronize()
                rec["compile_seconds"] = time.perf_counter() - t0
            ready.append((mode, fn_module))
        except Exception as e:
            rec["error"] = first_line(e)
    if hold:
        out["held_s"] = wait_for(hold)
    for mode in modes:
        fn = dict(ready).get(mode)
        rec = out[mode]
        if fn is not None:
            try:
                def call(m=fn):
                    return m(*inputs)
                rec["events"] = time_events(torch, call, flush, a.samples, a.max_seconds)
                try:
                    rec["graph"] = time_graph(torch, call, a.graph_calls, a.samples, a.max_seconds)
                except Exception as e:  # capture can fail for reasons of PyTorch's own; keep the events
                    rec["error"] = "graph: " + first_line(e)
            except Exception as e:
                rec["error"] = first_line(e)
        torch.cuda.synchronize()
        log(mode, rec)
    return out


def wait_for(path):
    """Seconds until the file `path` exists (tune creates it when the device is the module's), after
    writing `path`.ready (the preparation is done: nothing of the module runs until then); exits
    when the process that started this one is gone, so no harness is left waiting."""
    parent, t0 = os.getppid(), time.perf_counter()
    pathlib.Path(path + ".ready").write_text("ready\n")  # tune's TorchBeside.quiet() waits for it
    while not os.path.exists(path):
        if os.getppid() != parent:
            raise SystemExit("torch_baseline: the tune that held this harness is gone")
        time.sleep(0.01)
    return time.perf_counter() - t0
