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
