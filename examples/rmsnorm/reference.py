"""Reference of the rmsnorm problem: out = x / sqrt(mean(x^2, over K) + 1e-6) * weight.

x (M, K), weight (K) -> out (M, K), in the dtype T of problem.json (float32, bfloat16, float16).

make_model: the PyTorch module, RMSNorm as LLaMA-style code writes it: the statistics in at least
            float32 (x.float() for a bfloat16 or float16 x; float64 stays float64), the normalised
            row cast back to x's dtype, then multiplied by the weight. Run in float64 it is the
            exact function; run after .to(torch.bfloat16) it is what a user's module computes,
            which the module parity rule compares a kernel against. torch is imported inside, so
            this file imports without it.
reference:  the same in numpy float64.
"""
import numpy as np

EPS = 1e-6


def make_model(shape):
    import torch
    import torch.nn as nn

    class RMSNorm(nn.Module):
        def __init__(self, k, eps=EPS):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(k))

        def forward(self, x):
            h = x.to(torch.promote_types(x.dtype, torch.float32))
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return h.to(x.dtype) * self.weight

    return RMSNorm(int(shape["K"]))


def reference(shape, params, inputs):
    m, k = int(shape["M"]), int(shape["K"])
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(m, k)
    w = np.asarray(params["weight"], dtype=np.float64).reshape(k)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w
