import numpy as np


def reference(shape, params, inputs):
    return np.argmax(inputs["x"], axis=1)  # int64: the first index on ties, as torch.argmax


def make_model(shape):
    import torch

    class RowArgmax(torch.nn.Module):
        def forward(self, x):
            return torch.argmax(x, dim=1)

    return RowArgmax()
