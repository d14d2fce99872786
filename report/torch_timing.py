"""How report/torch_baseline.py times a PyTorch module (its docstring's "Methods"): CUDA events around
one call with L2 flushed before it, CUDA-graph replay, each the median of its samples, and the
device-to-device copy peak. Needs torch only when called (each function is given the module)."""
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
