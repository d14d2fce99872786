"""contact: the contact-map head of a pair representation, as a float64 reference.

    x   = LayerNorm(pair_repr)                 over C (eps 1e-5, biased variance, affine)
    s   = (x[b,i,j,:] + x[b,j,i,:]) / 2        symmetrized over (i, j)
    out = sigmoid(W4 relu(W2 relu(W0 s + b0) + b2) + b4)[0]      shape (B, N, N)

reference() is numpy; make_model() is the PyTorch module (state_dict names layer_norm.*, mlp.0.*,
mlp.2.*, mlp.4.*). torch is imported only when a module is asked for, so the numpy path runs
without it; `ContactMapHead` is importable from this file on a machine that has torch."""
import functools

import numpy as np

LAYER_NORM_EPS = 1e-5


def _layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * weight + bias


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))  # no overflow for large |z|


def reference(shape, params, inputs):
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    x = _layer_norm(np.asarray(inputs["pair_repr"], dtype=np.float64), p["layer_norm.weight"], p["layer_norm.bias"])
    s = 0.5 * (x + x.transpose(0, 2, 1, 3))
    h = np.maximum(s @ p["mlp.0.weight"].T + p["mlp.0.bias"], 0.0)
    h = np.maximum(h @ p["mlp.2.weight"].T + p["mlp.2.bias"], 0.0)
    return _sigmoid(h @ p["mlp.4.weight"][0] + p["mlp.4.bias"][0])


@functools.lru_cache(maxsize=None)
def model_classes():
    """{"ContactMapHead": the nn.Module class}; defined on first use, so importing needs no torch."""
    import torch
    from torch import nn

    class ContactMapHead(nn.Module):
        """LayerNorm -> symmetrize over (i, j) -> Linear/ReLU/Linear/ReLU/Linear -> sigmoid."""

        def __init__(self, pair_dim, hidden_dim):
            super().__init__()
            self.layer_norm = nn.LayerNorm(pair_dim, eps=LAYER_NORM_EPS)
            self.mlp = nn.Sequential(nn.Linear(pair_dim, hidden_dim), nn.ReLU(),
                                     nn.Linear(hidden_dim, hidden_dim), nn.ReLU(),
                                     nn.Linear(hidden_dim, 1))

        def forward(self, pair_repr):
            x = self.layer_norm(pair_repr)
            x = 0.5 * (x + x.transpose(1, 2))
            return torch.sigmoid(self.mlp(x)[..., 0])

    ContactMapHead.__module__, ContactMapHead.__qualname__ = __name__, "ContactMapHead"
    return {"ContactMapHead": ContactMapHead}


def make_model(shape):
    return model_classes()["ContactMapHead"](pair_dim=shape["C"], hidden_dim=shape["H"])


def __getattr__(name):  # `from reference import ContactMapHead` builds the class on demand
    if name == "ContactMapHead":
        return model_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
