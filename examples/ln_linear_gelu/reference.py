"""Reference of the ln_linear_gelu problem: out = GELU(Linear(LayerNorm(x))).

x (M, K) -> nn.LayerNorm(K) (eps 1e-5, biased variance, affine: norm.weight, norm.bias)
         -> nn.Linear(K, N) (h @ fc.weight.T + fc.bias) -> nn.GELU() (exact, erf) -> out (M, N).

make_model: the PyTorch module (torch is imported inside, so this file imports without it).
reference:  the same in numpy float64 (erf from math.erf, element by element).
"""
import math

import numpy as np

LN_EPS = 1e-5


def _erf(a):
    """math.erf element by element (numpy has no erf; math.erf is correctly rounded to ~1 ulp)."""
    a = np.asarray(a, dtype=np.float64)
    return np.fromiter(map(math.erf, a.ravel().tolist()), dtype=np.float64, count=a.size).reshape(a.shape)


def make_model(shape):
    import torch.nn as nn

    class LnLinearGelu(nn.Module):
        def __init__(self, k, n):
            super().__init__()
            self.norm = nn.LayerNorm(k, eps=LN_EPS)
            self.fc = nn.Linear(k, n)
            self.act = nn.GELU()

        def forward(self, x):
            return self.act(self.fc(self.norm(x)))

    return LnLinearGelu(int(shape["K"]), int(shape["N"]))


def reference(shape, params, inputs):
    m, k, n = (int(shape[d]) for d in ("M", "K", "N"))
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(m, k)
    gamma = np.asarray(params["norm.weight"], dtype=np.float64).reshape(k)
    beta = np.asarray(params["norm.bias"], dtype=np.float64).reshape(k)
    w = np.asarray(params["fc.weight"], dtype=np.float64).reshape(n, k)
    b = np.asarray(params["fc.bias"], dtype=np.float64).reshape(n)

    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)  # biased, as nn.LayerNorm
    h = (x - mean) / np.sqrt(var + LN_EPS) * gamma + beta
    y = h @ w.T + b
    return 0.5 * y * (1.0 + _erf(y / math.sqrt(2.0)))
