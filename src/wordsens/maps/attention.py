"""How a row of attention scores becomes weights: softmax (RAF, ``SOFTMAX``) or ReLU divided by the row's
sum (ReLU-RAF, ``RELU``; a row summing to 0 stays 0): every formula that depends on the rule, once, for the
forwards, the search with one token moved (``wordsens.search.attention``) and the generalisation functionals.

With token ``i`` moved to ``x_i'``, a query row ``j != i`` gets a new score on column ``i`` only: its output
is ``(1 - w_j) M_j + w_j x_i'``, ``M_j`` its output without column ``i`` (``without_column``) and ``w_j``
the new weight of column ``i`` (``column_weights``); row ``i`` gets a whole new score row (``moved_output``).
"""

from __future__ import annotations

import abc
import math
from typing import Any

import torch

Tensor = torch.Tensor


def scores(X: Tensor, W: Tensor) -> Tensor:
    """The attention scores ``X W X^T / sqrt(d)`` of samples ``X`` (..., n, d)."""
    d = X.shape[-1]
    return (X @ W) @ X.transpose(-1, -2) / math.sqrt(d)


class Normalisation(abc.ABC):
    """A rule turning score rows into attention weights. ``name``: ``"softmax"`` or ``"relu"``."""

    name: str

    @abc.abstractmethod
    def weights(self, S: Tensor) -> Tensor:
        """The attention matrix of score rows ``S`` (..., n, n)."""

    def attend(self, X: Tensor, W: Tensor) -> Tensor:
        """The map ``weights(scores(X, W)) X`` (RAF with ``SOFTMAX``, ReLU-RAF with ``RELU``)."""
        return self.weights(scores(X, W)) @ X

    @abc.abstractmethod
    def without_column(self, S: Tensor, others: Tensor, X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """For every query row without column ``i`` (``others``: True but at ``i``): its log-partition
        ``logz`` (softmax; 0 for ReLU), its weight sum ``z`` (ReLU; 0 for softmax) and its output ``M``."""

    @abc.abstractmethod
    def column_weights(self, col: Tensor, logz: Tensor, z: Tensor) -> Tensor:
        """The new weight ``w_j`` of column ``i`` in every query row from its new scores ``col``."""

    @abc.abstractmethod
    def column_weights_and_slopes(self, col: Tensor, logz: Tensor, z: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``column_weights`` and their derivatives with respect to ``col``, both 0 where ``mask`` is
        (row ``i``)."""

    @abc.abstractmethod
    def moved_output(self, row: Tensor, X: Tensor, D: Tensor, i: int) -> tuple[Tensor, Any]:
        """Output row ``i`` (R, d) of the moved token from its whole new score row ``row`` (R, n) over
        ``X`` with ``x_i`` moved by ``D`` (R, d), and what ``moved_backward`` needs of it."""

    @abc.abstractmethod
    def moved_backward(
        self, state: Any, row: Tensor, out_i: Tensor, g_out: Tensor, g_att: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Back through ``moved_output``: from ``g_out``, the gradient at ``out_i``, and ``g_att``, its
        product with the moved sample's rows (``g_out X'^T``), the gradient at the score row, and the
        moved token's own weight (R, 1), which carries ``g_out`` straight to ``D``."""


class _Softmax(Normalisation):
    name = "softmax"

    def weights(self, S: Tensor) -> Tensor:
        return torch.softmax(S, dim=-1)  # torch's softmax subtracts the row maximum

    def without_column(self, S: Tensor, others: Tensor, X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        n = S.shape[-1]
        S_wo = S.masked_fill(~others[None, :], float("-inf"))
        if n > 1:
            logz, M = torch.logsumexp(S_wo, dim=-1), torch.softmax(S_wo, dim=-1) @ X
        else:
            logz, M = torch.zeros(n, dtype=X.dtype, device=X.device), torch.zeros_like(X)
        return logz.masked_fill(~others, 0.0), torch.zeros_like(logz), M

    def column_weights(self, col: Tensor, logz: Tensor, z: Tensor) -> Tensor:
        return torch.sigmoid(col - logz)

    def column_weights_and_slopes(self, col: Tensor, logz: Tensor, z: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        s = torch.sigmoid(col - logz)
        return s * mask, s * (1 - s) * mask

    def moved_output(self, row: Tensor, X: Tensor, D: Tensor, i: int) -> tuple[Tensor, Any]:
        att = torch.softmax(row, dim=-1)
        return att @ X + att[:, i : i + 1] * D, (att, i)

    def moved_backward(
        self, state: Any, row: Tensor, out_i: Tensor, g_out: Tensor, g_att: Tensor
    ) -> tuple[Tensor, Tensor]:
        att, i = state
        return att * (g_att - (att * g_att).sum(-1, keepdim=True)), att[:, i : i + 1]


class _Relu(Normalisation):
    name = "relu"

    def weights(self, S: Tensor) -> Tensor:
        A = torch.relu(S)
        total = A.sum(dim=-1, keepdim=True)
        safe = torch.where(total > 0, total, torch.ones_like(total))
        return A / safe

    def without_column(self, S: Tensor, others: Tensor, X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        Z = torch.relu(S) * others[None, :]
        z = Z.sum(-1)
        M = torch.where((z > 0)[:, None], (Z @ X) / torch.where(z > 0, z, 1.0)[:, None], 0.0)
        return torch.zeros_like(z), z, M

    def column_weights(self, col: Tensor, logz: Tensor, z: Tensor) -> Tensor:
        a = torch.relu(col)
        den = z + a
        return torch.where(den > 0, a / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den))

    def column_weights_and_slopes(self, col: Tensor, logz: Tensor, z: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        a = torch.relu(col)
        den = z + a
        safe = torch.where(den > 0, den, torch.ones_like(den))
        w = torch.where(den > 0, a / safe, torch.zeros_like(den)) * mask
        dw = torch.where((den > 0) & (col > 0), z / (safe * safe), torch.zeros_like(den)) * mask
        return w, dw

    def moved_output(self, row: Tensor, X: Tensor, D: Tensor, i: int) -> tuple[Tensor, Any]:
        ra = torch.relu(row)
        den = ra.sum(-1, keepdim=True)
        safe = torch.where(den > 0, den, torch.ones_like(den))
        num = ra @ X + ra[:, i : i + 1] * D
        return torch.where(den > 0, num / safe, torch.zeros_like(num)), (ra, den, safe, i)

    def moved_backward(
        self, state: Any, row: Tensor, out_i: Tensor, g_out: Tensor, g_att: Tensor
    ) -> tuple[Tensor, Tensor]:
        ra, den, safe, i = state
        g_r = (g_att - (g_out * out_i).sum(-1, keepdim=True)) / safe
        g_row = torch.where((den > 0) & (row > 0), g_r, torch.zeros_like(g_r))
        return g_row, torch.where(den > 0, ra[:, i : i + 1] / safe, torch.zeros_like(den))


SOFTMAX: Normalisation = _Softmax()
RELU: Normalisation = _Relu()
