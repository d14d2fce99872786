import numpy as np


def reference(shape, params, inputs):
    x = inputs["x"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_model(shape):
    import torch

    class Softmax(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)

    return Softmax()
