"""The dtypes a problem's tensors may have, named as PyTorch names them: Python's one copy of
tune/dtype.hpp's table (issue 35). Every Python tool (report/, scripts/, tuner/python/) asks this
module, never a table of its own. Needs neither numpy nor torch to import."""

# name: (bytes per element, kind, numpy dtype name). NumPy has no bfloat16: it is held as float32,
# which holds every bfloat16 value exactly (as tune's .npy files do: dtype_npy_descr "<f4").
DTYPES = {
    "float16": (2, "float", "float16"),
    "bfloat16": (2, "float", "float32"),
    "float32": (4, "float", "float32"),
    "float64": (8, "float", "float64"),
    "int8": (1, "int", "int8"),
    "int32": (4, "int", "int32"),
    "int64": (8, "int", "int64"),
    "uint8": (1, "int", "uint8"),
    "bool": (1, "bool", "bool"),
}
DEFAULT = "float32"
# The least magnitude a floating dtype rounds to infinity (to nearest, ties to even), and each integer
# dtype's range: a value an output of that dtype cannot hold (tune's reference check, problem.cpp).
OVERFLOW = {"float16": 65520.0, "bfloat16": 2.0 ** 127 * (2 - 2.0 ** -8), "float32": 2.0 ** 127 * (2 - 2.0 ** -24),
            "float64": float("inf")}
# int64 travels as a double: its largest value, 2^63 - 1, reads 2^63 (as the kernel's output does).
RANGE = {"int8": (-128, 127), "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63), "uint8": (0, 255),
         "bool": (0, 1)}


def choices():
    return ", ".join(DTYPES)


def parse(name):
    """The dtype name itself; ValueError naming the choices for anything else."""
    if not isinstance(name, str) or name not in DTYPES:
        raise ValueError(f"{name!r} is not a dtype (one of {choices()})")
    return name


def size(name):
    return DTYPES[parse(name)][0]


def is_floating(name):
    return DTYPES[parse(name)][1] == "float"


def is_low_precision(name):
    return parse(name) in ("float16", "bfloat16")


def numpy_dtype(name):
    """The numpy dtype that holds the values (bfloat16: float32)."""
    import numpy as np
    return np.dtype(DTYPES[parse(name)][2])


def torch_dtype(torch, name):
    """torch.bfloat16 for "bfloat16": PyTorch spells every one of these names as an attribute."""
    return getattr(torch, parse(name))


def unholdable(name, v):
    """Why an output of dtype `name` cannot hold the finite value v, or "" when it can (tune's words)."""
    name = parse(name)
    if name == "bool":
        return "" if v in (0, 1) else "a bool output holds 0 or 1 alone; return True/False (0 or 1)"
    if name in RANGE:
        if v != int(v):
            return f"not an integer; return the integers the {name} output holds, rounded as the kernel rounds"
        low, high = RANGE[name]
        if name == "int64" and isinstance(v, int):
            high = 2 ** 63 - 1  # an integer exactly: 2^63 is no int64 (as a double it stands for 2^63 - 1)
        if low <= v <= high:
            return ""
        return f"beyond {name}'s range; wrap or clamp it as the kernel's {name} arithmetic does"
    if abs(v) < OVERFLOW[name]:
        return ""
    return f"beyond {name}'s largest value, so a {name} store is infinite; keep the output's magnitudes within {name}"
