"""The linear algebra of one generalisation simulation: the maps' setups (``MapSpec.gen``: ``rf_setup``,
``raf_setup``, ``relu_raf_setup``, ``full_map_setup`` for the others), which draw the weights, compute the
features and first stage and return ``Parts``, and the functionals ``phi(X^i(Delta))`` against ``theta*``,
``phi(X)`` and ``P phi(X)`` the Delta search evaluates (``RFFunctionals``, ``AttentionFunctionals``,
``FullMapFunctionals``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from .. import maps
from ..compute.map_costs import attention_features_flops
from ..linalg import add_lower_gram_, mirror_lower
from ..maps import registry
from ..maps.attention import RELU, SOFTMAX, Normalisation
from ..maps.spec import MapSpec
from ..search.attention import AttentionProblem
from ..search.first_layer import FirstLayer
from ..search.full_map import FullMapProblem, cast_weights
from ..seeds import derive_seed, generator
from .first_stage import (
    Fit,
    RoundingCheck,
    check_rows,
    float32_features_pay,
    interpolate,
    interpolate32,
    qr_interpolate,
)

Tensor = torch.Tensor


class RFFunctionals:
    """``relu(u + B Delta) . v`` for the three vectors ``v`` (rows of ``V3``); ``blocks``: the blocks of
    every position drawn with the weights, ``B`` among them (``Setup.at``)."""

    def __init__(self, B: Tensor, u64: Tensor, V3: Tensor, blocks: dict[int, Tensor] | None = None) -> None:
        self.layer = FirstLayer(B, u64, with_gram=False)
        self.V3 = V3.to(B.dtype).T.contiguous()  # (k, 3)
        self.V3_64 = V3.to(torch.float64)
        self.d = B.shape[1]
        self.dtype = B.dtype
        self.blocks = blocks or {}

    def __call__(self, D: Tensor) -> Tensor:
        return self.layer.forward(D) @ self.V3

    def exact(self, deltas: Tensor) -> Tensor:
        return self.layer.forward64(deltas) @ self.V3_64.T

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.layer.singular_starts(restarts, math.sqrt(self.d), gen)

    def at(self, position: int) -> RFFunctionals:
        """The functionals with the token at ``position`` moved instead (one whose block was drawn)."""
        return RFFunctionals(self.blocks[position], self.layer.u64, self.V3_64, self.blocks)


class AttentionFunctionals:
    """``out' . v`` for attention maps: ``out'_j = (1 - w_j) M_j + w_j x_i'`` for ``j != i``, from the
    word-sensitivity search's ``AttentionProblem`` (whose informed starts serve here too)."""

    def __init__(
        self, X: Tensor, W: Tensor, position: int, norm: Normalisation, V3: Tensor, X64: Tensor, W64: Tensor
    ) -> None:
        row = self.row = AttentionProblem(X, W, position, norm, X64=X64, W64=W64)
        n, d = X.shape
        V = V3.reshape(3, n, d).to(X.dtype)
        self.V_rows = V.reshape(3 * n, d).T.contiguous()  # (d, 3n)
        self.MV = (row.M[None] * V).sum(-1) * row.mask  # (3, n): M_j . v_j
        self.V_i = V[:, position].T.contiguous()  # (d, 3)
        self.V3_64 = V3.to(torch.float64)
        self.n, self.d, self.i = n, d, position
        self.dtype = X.dtype

    def __call__(self, D: Tensor) -> Tensor:
        row = self.row
        xi = row.xi + D
        w = row.column_weights(xi @ row.P.T) * row.mask  # (R, n)
        xV = (xi @ self.V_rows).reshape(-1, 3, self.n)  # (R, 3, n)
        others = (self.MV[None] + w[:, None, :] * (xV - self.MV[None])) * row.mask
        return others.sum(-1) + row.moved_row(D) @ self.V_i

    @torch.no_grad()
    def value_and_grad(self, D: Tensor, outer: Any) -> tuple[Tensor, Tensor]:
        """``outer(f)`` at ``f = self(D)`` (values (R,) and their derivatives ``g`` (R, 3) in ``f``) and its
        gradient ``sum_k g_k grad f_k`` in ``D`` (R, d), written out."""
        row, n, i = self.row, self.n, self.i
        xi = row.xi + D
        col = xi @ row.P.T
        w, dw = row.column_weights_and_slopes(col)
        xV = (xi @ self.V_rows).reshape(-1, 3, n)  # (R, 3, n)
        diff = xV - self.MV[None]
        others = (self.MV[None] + w[:, None, :] * diff) * row.mask
        # row i: its scores on the other tokens and its self score, as AttentionProblem.moved_row
        r, u = row.self_scores(D)
        out_i, state = row.norm.moved_output(r, row.X, D, i)
        f = others.sum(-1) + out_i @ self.V_i
        value, g = outer(f)  # (R,), (R, 3)
        c = (g[:, :, None] * diff).sum(1) * row.mask  # (R, n)
        grad = (c * dw) @ row.P + (g[:, :, None] * w[:, None, :]).reshape(-1, 3 * n) @ self.V_rows.T
        g_out = g @ self.V_i.T  # (R, d)
        g_att = g_out @ row.X.T + row.onehot * (g_out * D).sum(-1, keepdim=True)
        g_row, own = row.norm.moved_backward(state, r, out_i, g_out, g_att)
        grad = grad + own * g_out
        grad = grad + (g_row * row.mask) @ row.Q.T + g_row[:, i : i + 1] * u
        return value, grad

    def exact(self, deltas: Tensor) -> Tensor:
        X = self.row.moved_samples(deltas)
        return self.row.norm.attend(X, self.row.W64).flatten(1) @ self.V3_64.T

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.row.starts(restarts, gen)

    def at(self, position: int) -> AttentionFunctionals:
        row = self.row
        return AttentionFunctionals(row.X, row.W64.to(self.dtype), position, row.norm, self.V3_64, row.X64, row.W64)


class FullMapFunctionals:
    """``phi(X^i(Delta)) . v`` with the whole map evaluated for every Delta (``FullMapProblem``'s moved samples
    and starts)."""

    def __init__(self, forward: Any, X64: Tensor, weights: Any, position: int, V3: Tensor, dtype: torch.dtype) -> None:
        self.problem = FullMapProblem(forward, X64, weights, position, dtype=dtype, device=X64.device)
        self.forward = forward
        self.V3 = V3.to(dtype).T.contiguous()  # (p, 3)
        self.V3_64 = V3.to(torch.float64)
        self.d = X64.shape[1]
        self.dtype = dtype

    def __call__(self, D: Tensor) -> Tensor:
        return self.forward(self.problem.moved(self.problem.X, D), self.problem.W).flatten(1) @ self.V3

    def exact(self, deltas: Tensor) -> Tensor:
        moved = self.problem.moved(self.problem.X64, deltas.to(self.problem.X64))
        return self.forward(moved, self.problem.W64).flatten(1) @ self.V3_64.T

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.problem.starts(restarts, gen)

    def at(self, position: int) -> FullMapFunctionals:
        problem = self.problem
        return FullMapFunctionals(self.forward, problem.X64, problem.W64, position, self.V3_64, self.dtype)


# --------------------------------------------------------------------------- the setups of the maps


@dataclass(frozen=True)
class GenInputs:
    """What ``prepare`` hands a map's setup (``MapSpec.gen``): the training set ``Xt64`` (N, n, d), labels ``Y``
    and new sample ``X64`` (n, d), float64 on the working device; the positions ``Setup.at`` can move to
    (``also``); the Delta search's working ``dtype``."""

    spec: MapSpec
    Xt64: Tensor
    X64: Tensor
    Y: Tensor
    seed: int
    position: int
    weights: Any
    options: dict[str, Any]
    sampler: str
    dtype: torch.dtype
    also: Sequence[int] = ()


@dataclass
class Parts:
    """What a map's setup returns: ``theta*``, ``phi(X)``, ``P phi(X)``, the ``Fit``, the functionals of the
    Delta search and how the weights were drawn."""

    theta: Tensor
    phi: Tensor
    pphi: Tensor
    fit: Fit
    functionals: Any
    sampler: str


def _first_stage(Phi: Tensor, Y: Tensor, phi: Tensor, solve: Any = interpolate) -> tuple[Tensor, Tensor, Fit, Tensor]:
    """``theta*``, ``P phi``, the ``Fit`` and the three vectors of the functionals."""
    theta, pphi, fit = solve(Phi, Y, phi)
    return theta, pphi, fit, torch.stack([theta, phi, pphi])


def first_stage_of(
    features32: Tensor | None,
    exact_rows: Callable[[Tensor], Tensor],
    features64: Callable[[], Tensor],
    Y: Tensor,
    phi: Tensor,
) -> tuple[Tensor, Tensor, Fit, Tensor, RoundingCheck | None]:
    """``_first_stage`` from float32 features ``features32`` (N, p; the only reference: freed before a fallback)
    by ``interpolate32`` where its ``RoundingCheck`` passes (``exact_rows(rows)``: float64 features of the
    samples ``rows``), else from the float64 ``features64()`` (by ``qr_interpolate`` where the Gram path
    declined the float32 ones), and the check (None: not tried, or declined)."""
    check = None
    if features32 is not None:
        out = interpolate32(features32, Y, phi, exact_rows)
        del features32
        if out is None:
            return (*_first_stage(features64(), Y, phi, qr_interpolate), None)
        theta, pphi, fit, check = out
        if check.passed:
            return theta, pphi, fit, torch.stack([theta, phi, pphi]), check
        del theta, pphi
    return (*_first_stage(features64(), Y, phi), check)


def rf_setup(task: GenInputs) -> Parts:
    """RF: the weights on the span of the samples and the moved blocks (``span_rf``, ``sampler="span"``) or the
    whole k x D matrix (``"dense"``, or explicit weights)."""
    Xt64, X64, Y, seed, dtype = task.Xt64, task.X64, task.Y, task.seed, task.dtype
    weights, position, sampler = task.weights, task.position, task.sampler
    N, n, d = Xt64.shape
    k = int(task.options.get("k") or n * d)
    dev = Xt64.device
    positions = [position, *dict.fromkeys(p for p in task.also if p != position)]
    if sampler == "auto":
        sampler = "dense" if weights is not None else "span"
    if sampler not in ("span", "dense"):
        raise ValueError(f"unknown sampler {sampler!r} for RF; use 'span' or 'dense'")
    if weights is not None or sampler == "dense":
        V = weights if weights is not None else maps.rf_weights(seed, n, d, k, dtype=torch.float64, device=dev)
        V = V.to(device=dev, dtype=torch.float64)
        pre_train = Xt64.reshape(N, -1) @ V.T  # (N, k)
        u = V @ X64.reshape(-1)
        blocks = {p: V[:, p * d : (p + 1) * d].to(dtype) for p in positions}
        Phi = pre_train.relu_()  # in place: the pre-activations are not needed any more
        phi = torch.relu(u)
        theta, pphi, fit, V3 = _first_stage(Phi, Y, phi)
        del Phi, pre_train
        return Parts(theta, phi, pphi, fit, RFFunctionals(blocks[position], u, V3, blocks), sampler)
    # the span sampler: one pass over the weights gives the training set's pre-activations (in float32
    # where that pays), u and B in float64, and the float64 pre-activations of the check's samples
    m = N + 1 + len(positions) * d
    rows = check_rows(N) if float32_features_pay(2 * k * m * m) else None
    pre_train, u, B, exact = span_rf(Xt64, X64, positions, seed, k, rows=rows)
    blocks = {p: B[:, j * d : (j + 1) * d].to(dtype) for j, p in enumerate(positions)}
    del B
    phi = torch.relu(u)

    def exact_rows(asked: Tensor) -> Tensor:
        if exact is None or not torch.equal(asked.cpu(), check_rows(N)):
            raise ValueError("span_rf computed the float64 pre-activations of check_rows(N) only")
        return exact.relu()

    def features64() -> Tensor:
        return span_rf(Xt64, X64, positions, seed, k)[0].relu_()

    pre = [pre_train.relu_()]  # in place; the list hands first_stage_of the only reference
    del pre_train
    if rows is None:  # float64 features already
        theta, pphi, fit, V3 = _first_stage(pre.pop(), Y, phi)
    else:
        theta, pphi, fit, V3, _ = first_stage_of(pre.pop(), exact_rows, features64, Y, phi)
    return Parts(theta, phi, pphi, fit, RFFunctionals(blocks[position], u, V3, blocks), sampler)


def _features(forward: Any, Xt: Tensor, W: Any, p: int, dtype: torch.dtype | None = None) -> Tensor:
    """The training set's features (N, p) in ``dtype`` (default ``Xt``'s; ``W`` in it already), in batches."""
    N = Xt.shape[0]
    dtype = dtype or Xt.dtype
    Phi = torch.empty((N, p), dtype=dtype, device=Xt.device)
    for s in range(0, N, 256):
        Phi[s : s + 256] = forward(Xt[s : s + 256].to(dtype), W).reshape(min(256, N - s), p)
    return Phi


def _attention_setup(norm: Normalisation, task: GenInputs) -> Parts:
    """RAF and ReLU-RAF (``norm``): the training features in float32 where they pay and pass the check
    (``first_stage_of``), the new sample's in float64, ``AttentionFunctionals``."""
    Xt64, X64 = task.Xt64, task.X64
    N, n, d = Xt64.shape
    W = task.weights if task.weights is not None else maps.attention_weights(task.seed, d)
    W64 = W.to(device=X64.device, dtype=torch.float64)
    forward = norm.attend  # the map's forward (wordsens.maps.paper), its rule known: no lookup
    phi = forward(X64, W64).reshape(-1)
    pays = float32_features_pay(attention_features_flops(N, n, d))  # X W, the scores, A X
    theta, pphi, fit, V3, _ = first_stage_of(
        _features(forward, Xt64, W64.to(torch.float32), n * d, torch.float32) if pays else None,
        lambda rows: _features(forward, Xt64[rows], W64, n * d),
        lambda: _features(forward, Xt64, W64, n * d),
        task.Y,
        phi,
    )
    dtype = task.dtype
    functionals = AttentionFunctionals(X64.to(dtype), W64.to(dtype), task.position, norm, V3, X64, W64)
    return Parts(theta, phi, pphi, fit, functionals, "dense")


raf_setup = partial(_attention_setup, SOFTMAX)
relu_raf_setup = partial(_attention_setup, RELU)


def full_map_setup(task: GenInputs) -> Parts:
    """Any registered map: its weights (drawn from ``seed`` and ``options`` unless given), its features
    from its forward in float64, and functionals that evaluate the whole map (``FullMapFunctionals``);
    every position is reachable (``Setup.at``)."""
    X64, spec, weights = task.X64, task.spec, task.weights
    n, d = X64.shape
    if weights is None:
        weights = maps.sample_weights(spec, task.seed, n, d, dtype=torch.float64, device=X64.device, **task.options)
    W64 = cast_weights(weights, torch.float64, X64.device)
    forward = registry.resolve(spec.forward)
    phi = forward(X64, W64).reshape(-1)
    Phi = _features(forward, task.Xt64, W64, phi.numel())
    theta, pphi, fit, V3 = _first_stage(Phi, task.Y, phi)
    del Phi
    functionals = FullMapFunctionals(forward, X64, W64, task.position, V3, task.dtype)
    return Parts(theta, phi, pphi, fit, functionals, "dense")


def span_rf(
    Xt64: Tensor, X64: Tensor, position: int | Sequence[int], seed: int, k: int, *, rows: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``V Z`` for ``Z = [flat(X_1..X_N), flat(X), e_blocks]``, exact in law, in row chunks: the training set's
    pre-activations (N, k), ``u`` (k,) float64 and the blocks ``B`` (k, d per position) float32. With ``rows``
    the pre-activations are float32 products and the float64 ones of ``rows`` come too (else None).

    With ``G`` (k x m) i.i.d. standard normal, ``B = G_b / sqrt(D)`` and the pre-activations are ``(G_s F^T +
    G_b C^T) / sqrt(D)``, ``C`` the samples' rows at the blocks and ``F F^T = S`` (``rest_factor`` of
    ``rest_gram``): the rest of a row of ``V`` is independent of its block (docs/methods.md)."""
    N, n, d = Xt64.shape
    D = n * d
    dev = Xt64.device
    at = [position] if isinstance(position, int) else list(position)
    C = torch.cat([Xt64[:, at], X64[at][None]]).reshape(N + 1, -1)  # (N + 1, P d): the rows at the blocks
    M = torch.cat([rest_factor(rest_gram(Xt64, X64, at)).T, C.T])  # (m, N + 1): V Z = G M / sqrt(D)
    m = M.shape[0]
    dtype = torch.float64 if rows is None else torch.float32
    M_train = M[:, :N].to(dtype)
    M_rows = M[:, rows.to(dev)] if rows is not None else None
    gen = generator(derive_seed(seed, "rf-span", *at))
    pre_train = torch.empty((N, k), dtype=dtype, device=dev)
    exact = torch.empty((M_rows.shape[1], k), dtype=torch.float64, device=dev) if M_rows is not None else None
    u = torch.empty(k, dtype=torch.float64, device=dev)
    B = torch.empty((k, m - N - 1), dtype=torch.float32, device=dev)
    step = max(1, (8 * 1024**2) // (8 * m))  # rows per chunk: a few MB of G and V Z at a time
    root = math.sqrt(D)
    for start in range(0, k, step):
        chunk = slice(start, min(start + step, k))
        G32 = torch.randn((chunk.stop - start, m), generator=gen, dtype=torch.float32).to(device=dev)
        G = G32.to(torch.float64)
        if rows is None:
            pre_train[:, chunk] = ((G @ M_train) / root).T
        else:
            pre_train[:, chunk] = ((G32 @ M_train) / root).T
            exact[:, chunk] = ((G @ M_rows) / root).T  # type: ignore[index,operator]
        u[chunk] = (G @ M[:, N]) / root  # the same product on both paths: the same u
        B[chunk] = G32[:, N + 1 :] / root
    return pre_train, u, B, exact


def rest_gram(Xt64: Tensor, X64: Tensor, position: int | Sequence[int]) -> Tensor:
    """``S`` (N + 1, N + 1) float64: the inner products of the training samples and the new one (last) without
    their rows at ``position`` (or at several), from the rows between them (no cancellation)."""
    N, n = Xt64.shape[:2]
    S = torch.zeros((N + 1, N + 1), dtype=torch.float64, device=Xt64.device)
    cuts = [-1, *sorted({position} if isinstance(position, int) else set(position)), n]
    for rows in (slice(a + 1, b) for a, b in itertools.pairwise(cuts)):
        train, new = Xt64[:, rows].reshape(N, -1), X64[rows].reshape(-1)
        if new.numel():
            add_lower_gram_(S[:N, :N], train)
            S[N, :N] += train @ new
            S[N, N] += new @ new
    return mirror_lower(S)


def rest_factor(S: Tensor) -> Tensor:
    """A unique ``F`` with ``F F^T = S`` (float64): the Cholesky factor where every pivot is at least 1e-12 of
    the largest diagonal entry, else the symmetric square root (the same draw on every CPU)."""
    L, info = torch.linalg.cholesky_ex(S)
    if int(info) == 0 and float(L.diagonal().min()) ** 2 >= 1e-12 * float(S.diagonal().max()):
        return L
    eigval, eigvec = torch.linalg.eigh(S)
    return (eigvec * eigval.clamp_min(0).sqrt()) @ eigvec.T
