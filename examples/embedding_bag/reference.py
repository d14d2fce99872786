"""Reference of the embedding_bag problem: nn.EmbeddingBag(N, D, mode="sum") on a 2-D input.

indices (B, L) int64, each in [0, N); weight (N, D) -> out (B, D) = sum over l of weight[indices[b, l]],
in the dtype T of problem.json (float32 or bfloat16) for weight and out.

make_model: the PyTorch module itself, nn.EmbeddingBag(N, D, mode="sum"): its state_dict is
            {"weight"} and forward(indices) takes the (B, L) int64 tensor (each row a bag, no
            offsets). torch is imported inside, so this file imports without it.
reference:  the same in numpy float64. tune hands numpy every input as float64 arrays; the indices
            are integer values, cast back to int64 here.
"""
import numpy as np


def make_model(shape):
    import torch.nn as nn

    return nn.EmbeddingBag(int(shape["N"]), int(shape["D"]), mode="sum")


def reference(shape, params, inputs):
    b, l, n, d = (int(shape[k]) for k in ("B", "L", "N", "D"))
    weight = np.asarray(params["weight"], dtype=np.float64).reshape(n, d)
    idx = np.asarray(inputs["indices"]).reshape(b, l)
    if not np.array_equal(idx, np.trunc(idx)) or idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"indices must be integers in [0, {n}); got [{idx.min()}, {idx.max()}]")
    return weight[idx.astype(np.int64)].sum(axis=1)
