"""The floors of a call: device peaks (measured, else the vendor's datasheet), the compute rate
that fits a winner (FP32, FP64, or a tensor-core rate by its output's dtype, 3xTF32 at a third of
TF32), and bytes, FLOP and launch floors. report.py's tables and charts use them."""
import math

import results
from results import InputError, dtypes


def output_dtype(run):
    """The dtype of the run's (first) output: context.tensors, else its shape's one dtype variable, else float32."""
    for t in (run.get("context") or {}).get("tensors") or []:
        if t.get("role") == "output":
            return t.get("dtype", dtypes.DEFAULT)
    bound = [v for v in run["shape"].values() if isinstance(v, str)]
    return bound[0] if len(bound) == 1 else dtypes.DEFAULT


# Device peaks measured on real GPUs; the source says where each number comes from.
MEASURED_PEAKS = {
    "h200": {
        "copy_gb_per_s": 4200.0,
        "fp32_gflop_per_s": 60200.0,
        "source": "measured on one H200, 2026-11-29 (device-to-device copy, bytes read + "
                  "written; FP32 FMA loop)",
    },
}


# Peak rates from the vendor's datasheet, for the rates not measured above (the tensor-core ones).
# NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/, H200 SXM column):
# FP64 34 TFLOP/s, FP32 67 TFLOP/s, TF32 Tensor Core 989, BF16/FP16 Tensor Core 1,979 TFLOP/s
# "with sparsity" (dense: half, 494 and 989), GPU memory bandwidth 4.8 TB/s.
DATASHEET_PEAKS = {
    "h200": {
        "hbm_gb_per_s": 4800.0,
        "fp64_gflop_per_s": 34000.0,
        "fp32_gflop_per_s": 67000.0,
        "tf32_tensor_gflop_per_s": 494000.0,
        "bf16_tensor_gflop_per_s": 989000.0,
        "fp16_tensor_gflop_per_s": 989000.0,
        "source": "NVIDIA H200 datasheet, H200 SXM, dense tensor-core rates (half the sparse ones)",
    },
    # NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/, H100 SXM column, the
    # 80 GB HBM3 card): the same compute rates as the H200 above, GPU memory bandwidth 3.35 TB/s.
    "h100-80gb-hbm3": {
        "hbm_gb_per_s": 3350.0,
        "fp64_gflop_per_s": 34000.0,
        "fp32_gflop_per_s": 67000.0,
        "tf32_tensor_gflop_per_s": 494000.0,
        "bf16_tensor_gflop_per_s": 989000.0,
        "fp16_tensor_gflop_per_s": 989000.0,
        "source": "NVIDIA H100 datasheet, H100 SXM, dense tensor-core rates (half the sparse ones)",
    },
}
# The compute rates, by the key of a peaks entry: (key, the floor's name in the tables).
RATES = {"fp64": ("fp64_gflop_per_s", "FP64 compute"), "fp32": ("fp32_gflop_per_s", "FP32 compute"),
         "tf32_tensor": ("tf32_tensor_gflop_per_s", "TF32 tensor-core compute"),
         "bf16_tensor": ("bf16_tensor_gflop_per_s", "BF16 tensor-core compute"),
         "fp16_tensor": ("fp16_tensor_gflop_per_s", "FP16 tensor-core compute"),
         # 3xTF32 (a float32 operand split into TF32 hi and lo parts, three MMAs per product, as CUTLASS's
         # fast-accurate mode): a third of the TF32 rate, from the same peak.
         "tf32x3_tensor": ("tf32_tensor_gflop_per_s", "3xTF32 tensor-core compute")}
# The rates derived from another peak: key -> the divisor of the peak its RATES entry names.
RATE_DIVISORS = {"tf32x3_tensor": 3.0}


def uses_tensor_cores(params):
    """Whether a variant's parameters choose tensor cores: a parameter whose name or string value names
    MMA or tensor cores ("strategy": "mma", "strategy": "tc", "use_wmma": true, "out": "mma"); false, 0
    and "none" do not."""
    words = ("mma", "tensor")
    for k, v in (params or {}).items():
        if isinstance(v, str):
            if any(w in v.lower() for w in words) or v.lower() == "tc":
                return True
        elif v and any(w in k.lower() for w in words):
            return True
    return False


def compute_rate(run, params):
    """The RATES key of the winner's compute floor: by its output's dtype, tensor cores or not."""
    out = output_dtype(run)
    if uses_tensor_cores(params):
        if out not in ("bfloat16", "float16") and any(isinstance(v, str) and v.lower() in ("tf32x3", "3xtf32")
                                                      for v in (params or {}).values()):
            return "tf32x3_tensor"
        return {"bfloat16": "bf16_tensor", "float16": "fp16_tensor"}.get(out, "tf32_tensor")
    return "fp64" if out == "float64" else "fp32"


def load_peaks(path, torch):
    """Per GPU slug: --peaks FILE first; else the table above, with the copy bandwidth that
    torch_baseline.py measured in the tunes' device session when its file has one."""
    peaks = {k: dict(v) for k, v in MEASURED_PEAKS.items()}
    for slug, t in torch.items():
        bw = (t["doc"].get("device_peaks") or {}).get("copy_gb_per_s")
        if bw:
            old = peaks.setdefault(slug, {"source": ""})
            measured = f"copy bandwidth: measured by torch_baseline.py ({t['path']})"
            # A card with no measured FP32 rate says nothing of it here; the datasheet below may add it.
            old["source"] = f"{measured}; FP32 rate: {old['source']}" if old["source"] else measured
            old["copy_gb_per_s"] = bw
    for slug, sheet in DATASHEET_PEAKS.items():
        old = peaks.setdefault(slug, {"source": ""})
        added = [k for k in sheet if k != "source" and k not in old]
        for k in added:
            old[k] = sheet[k]
        if added:
            part = f"{', '.join(added)}: {sheet['source']}"
            old["source"] = f"{old['source']}; {part}" if old["source"] else part
    if path:
        for slug, p in results.read_checked(path, results.validate_peaks).items():
            peaks[slug] = {"source": f"{path}", **p}
    return peaks


def floors(run, peak, params=None):
    """The floors of a call, in µs: bytes over copy bandwidth and FLOP over the compute rate of the
    winner (`params`; compute_rate: FP32, FP64, or a tensor-core rate by the output's dtype; the FP32
    rate where the peaks lack that one), each None without its peak; and the harness floor: an empty
    kernel timed by the same cold method as the variants (context of the run's harness_floor; None
    when the run has none), below which no variant can be timed however little work it does.
    larger_us is the largest known and bound names it ("memory", "FP32 compute", "BF16 tensor-core
    compute", ..., or "launch"); None when none is known. The bytes are the run's work, counted in
    its tensors' dtypes (work.bytes uses T_bytes). A peak so small that a floor overflows is refused
    (InputError)."""
    work = run.get("work") or {}
    rate_key = compute_rate(run, params)
    if not (peak or {}).get(RATES[rate_key][0]):
        rate_key = "fp32"
    key, compute = RATES[rate_key]
    bw, rate = (peak or {}).get("copy_gb_per_s"), (peak or {}).get(key)
    if rate:
        rate /= RATE_DIVISORS.get(rate_key, 1.0)
    bytes_us = (work.get("bytes_per_call") or 0) / (bw * 1e3) if bw else None
    flop_us = (work.get("flop_per_call") or 0) / (rate * 1e3) if rate else None
    for t, k, v, what in ((bytes_us, "copy_gb_per_s", bw, "bytes"), (flop_us, key, rate, "FLOP")):
        if t is not None and not math.isfinite(t):
            raise InputError(f"the peaks of {(run.get('device') or {}).get('name')} ({peak.get('source')}): {k} "
                             f"{peak[k]:.3g} puts the {what} floor of {run['problem']} at infinity (overflow); give "
                             "--peaks the bandwidth in GB/s and the rates in GFLOP/s (an H200 copies about 4200 GB/s)")
    launch_us = (run.get("harness_floor") or {}).get("empty_kernel_cold_us")
    known = [(t, name) for t, name in ((bytes_us, "memory"), (flop_us, compute), (launch_us, "launch"))
             if t]  # a floor of 0 (no work, an empty kernel below the events' resolution) bounds nothing
    if not known:
        return None
    larger, bound = max(known, key=lambda k: k[0])
    return {"bytes_us": bytes_us, "flop_us": flop_us, "launch_us": launch_us, "larger_us": larger, "bound": bound,
            "compute_rate": key if rate_key not in RATE_DIVISORS else rate_key + "_gflop_per_s",
            "compute_gflop_per_s": rate}
