"""scene_graph: relation-aware graph attention over scene-graph nodes, as a float64 reference.

    h = LayerNorm(nodes)                      over D (eps 1e-5, biased variance, affine)
    q, k, v = h Wq^T, h Wk^T, h Wv^T          split into `heads` heads of D/heads
    bias[b,h,i,j] = (W2 silu(W0 pair_feats[b,i,j,:] + b0) + b2)[h]
    score = q_i . k_j / sqrt(D/heads) + bias, masked where edge_mask[b,i,j] < 0.5
    attn = softmax over j; a row with every j masked has attn = 0 (so out = nodes there)
    out = nodes + (attn v, heads merged) Wout^T          shape (B, N, D)

reference() is numpy; make_model() is the PyTorch module (state_dict names norm.*, q_proj.weight,
k_proj.weight, v_proj.weight, rel_mlp.0.*, rel_mlp.2.*, out_proj.weight). torch is imported only
when a module is asked for; `SceneGraphRelation` is importable from this file where torch is."""
import functools
import math

import numpy as np

LAYER_NORM_EPS = 1e-5


def _layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * weight + bias


def _silu(z):
    return z * np.exp(-np.logaddexp(0.0, -z))


def _split_heads(x, heads):
    b, n, d = x.shape
    return x.reshape(b, n, heads, d // heads).transpose(0, 2, 1, 3)  # (B, heads, N, head_dim)


def reference(shape, params, inputs):
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    nodes = np.asarray(inputs["nodes"], dtype=np.float64)
    pair = np.asarray(inputs["pair_feats"], dtype=np.float64)
    mask = np.asarray(inputs["edge_mask"], dtype=np.float64)
    heads = int(shape["heads"])
    b, n, d = nodes.shape

    h = _layer_norm(nodes, p["norm.weight"], p["norm.bias"])
    q, k, v = (_split_heads(h @ p[f"{name}_proj.weight"].T, heads) for name in "qkv")
    rel = _silu(pair @ p["rel_mlp.0.weight"].T + p["rel_mlp.0.bias"]) @ p["rel_mlp.2.weight"].T + p["rel_mlp.2.bias"]
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads) + rel.transpose(0, 3, 1, 2)

    keep = np.broadcast_to((mask >= 0.5)[:, None, :, :], scores.shape)
    row_max = np.where(keep, scores, -np.inf).max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # a fully masked row: any finite shift
    e = np.where(keep, np.exp(np.where(keep, scores, row_max) - row_max), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    attn = e / np.where(total > 0.0, total, 1.0)  # a fully masked row stays all zeros

    ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
    return nodes + ctx @ p["out_proj.weight"].T


@functools.lru_cache(maxsize=None)
def model_classes():
    """{"SceneGraphRelation": the nn.Module class}; defined on first use, so importing needs no torch."""
    import torch
    from torch import nn

    class SceneGraphRelation(nn.Module):
        """Pre-LN multi-head attention over the nodes with a per-head bias from an MLP on the pair
        features, an edge mask, an output projection and a residual."""

        def __init__(self, dim, pair_dim, num_heads):
            super().__init__()
            if dim % num_heads:
                raise ValueError(f"dim {dim} is not a multiple of num_heads {num_heads}")
            self.num_heads, self.head_dim = num_heads, dim // num_heads
            self.norm = nn.LayerNorm(dim, eps=LAYER_NORM_EPS)
            self.q_proj = nn.Linear(dim, dim, bias=False)
            self.k_proj = nn.Linear(dim, dim, bias=False)
            self.v_proj = nn.Linear(dim, dim, bias=False)
            self.rel_mlp = nn.Sequential(nn.Linear(pair_dim, pair_dim), nn.SiLU(), nn.Linear(pair_dim, num_heads))
            self.out_proj = nn.Linear(dim, dim, bias=False)

        def forward(self, nodes, pair_feats, edge_mask):
            b, n, d = nodes.shape

            def split(x):
                return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

            h = self.norm(nodes)
            q, k, v = split(self.q_proj(h)), split(self.k_proj(h)), split(self.v_proj(h))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            scores = scores + self.rel_mlp(pair_feats).permute(0, 3, 1, 2)
            scores = scores.masked_fill(edge_mask.unsqueeze(1) < 0.5, float("-inf"))
            attn = torch.softmax(scores, dim=-1).nan_to_num(nan=0.0)  # a fully masked row: NaN -> 0
            ctx = (attn @ v).transpose(1, 2).reshape(b, n, d)
            return nodes + self.out_proj(ctx)

    SceneGraphRelation.__module__, SceneGraphRelation.__qualname__ = __name__, "SceneGraphRelation"
    return {"SceneGraphRelation": SceneGraphRelation}


def make_model(shape):
    return model_classes()["SceneGraphRelation"](dim=shape["D"], pair_dim=shape["P"], num_heads=shape["heads"])


def __getattr__(name):  # `from reference import SceneGraphRelation` builds the class on demand
    if name == "SceneGraphRelation":
        return model_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
