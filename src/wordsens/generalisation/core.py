"""Generalisation after changing one word (the paper's Figures 4-5), without p x p matrices.

A simulation: a training set (N samples, labels +-1), a new sample (X, y), a map and its weights.
The min-norm interpolator ``theta* = pinv(Phi) Y`` learns the training set; the new sample is then
learned by fine-tuning (``theta_f``) or re-training (``theta_r``). The modified sentence
``X^i(Delta)`` carries the opposite label; its test error is ``Err = (phi(X^i(Delta))^T theta + y)^2``.

Everything the Delta search needs reduces to three linear functionals of the perturbed features
``phi' = phi(X^i(Delta))``: ``phi'.theta*`` (= D0), ``phi'.phi`` and ``phi'.P phi`` with
``P = I - pinv(Phi) Phi``. They are computed once per simulation through the N x N Gram matrix
(``wordsens.generalisation.first_stage``: float64 results, from a float32 Gram matrix refined in
float64, or a QR where that is not safe), so neither P nor, for RF, the k x D weight matrix is
ever formed. Where the training set's features dominate the cost (RAF, ReLU-RAF, RF at the paper's
sizes), they are computed in float32 and kept only where a float64 check shows that their rounding
moves t0, cond(K) and ``||P phi||^2`` by at most 1e-6 (``first_stage.RoundingCheck``; else float64
features); the new sample's features are always float64:

    theta* = Phi^T K^-1 Y,   P phi = phi - Phi^T K^-1 (Phi phi),   K = Phi Phi^T
    D1 (fine-tune) = D0 + (phi'.phi) (y - t0) / ||phi||^2
    D1 (re-train)  = D0 + (phi'.P phi) (y - t0) / ||P phi||^2

RF weights are drawn only on the span they act on: with
``Z = [flat(X_1) .. flat(X_N), flat(X), e_block]`` (D x m), the rows of ``V Z`` are i.i.d.
``N(0, Z^T Z / D)``, drawn as ``G R`` with ``R^T R = Z^T Z`` and ``G`` (k x m) i.i.d.
``N(0, 1/D)``. ``R`` comes from the eigendecomposition of the m x m Gram matrix, assembled from
the samples' inner products: exact in law even when ``Z^T Z`` is singular, and the D x m matrix
``Z`` (and a QR factorisation of it) is never formed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from .. import maps
from ..compute.devices import resolve_device
from ..data.inputs import duplicates
from ..search.engine import feasible
from ..seeds import derive_seed, generator
from .batched import ascend_groups, least_squares_groups
from .first_stage import Fit
from .functionals import full_map_setup
from .tasks import check_task

Tensor = torch.Tensor

__all__ = ["LOSSES", "TRAININGS", "GenResult", "Setup", "prepare", "search", "search_many", "simulate"]

TRAININGS = ("fine_tune", "retrain")
LOSSES = ("surrogate", "direct", "penalised")


# --------------------------------------------------------------------------- the setup


@dataclass
class Setup:
    """One simulation, ready for Delta searches: the new sample's features and the functionals."""

    map_name: str
    n: int
    d: int
    N: int
    position: int
    y: float
    t0: float  # phi(X)^T theta*
    phi2: float  # ||phi(X)||^2
    pphi2: float  # ||P phi(X)||^2
    phi_pphi: float  # phi(X).P phi(X) (= pphi2 up to rounding: P is a projection)
    fit: Fit
    sampler: str
    seconds: float
    functionals: Any = field(repr=False)  # (R, d) -> (R, 3): phi'.theta*, phi'.phi, phi'.P phi
    momentum: float = 0.0  # of the Delta search's ascent (the map's search setting)
    least_squares: bool = False  # penalised searches by Levenberg-Marquardt steps (SearchSettings.least_squares)
    options: dict[str, Any] = field(default_factory=dict)  # the map's options
    device: str = "cpu"  # where the features and functionals were computed

    def outcome(self, f: Tensor, training: str) -> tuple[Tensor, Tensor, Tensor]:
        """``(D0, D1, Err)`` from functional values ``f`` (..., 3)."""
        D0 = f[..., 0]
        if training == "fine_tune":
            D1 = D0 + f[..., 1] * (self.y - self.t0) / self.phi2
        else:
            D1 = D0 + f[..., 2] * (self.y - self.t0) / self.pphi2
        return D0, D1, (D1 + self.y) ** 2

    def alignment(self, f: Tensor, training: str) -> Tensor:
        """The alignment ratio ``a`` of the perturbed features with the learned direction, from
        functional values ``f`` (..., 3): fine-tune ``phi'.phi / ||phi||^2``, re-train
        ``phi'.P phi / ||P phi||^2``. Since ``D1 - D0 = a (y - t0)``, one word can flip the learned
        prediction only through a small (or negative) ``a``; ``a ~ 1`` leaves ``D1 - D0 = y - t0``.
        """
        return f[..., 1] / self.phi2 if training == "fine_tune" else f[..., 2] / self.pphi2

    def t1(self, training: str) -> float:
        """``phi(X)^T theta_{f|r}``, the second-stage prediction on the new sample (= y when learned)."""
        f = torch.tensor([self.t0, self.phi2, self.phi_pphi], dtype=torch.float64)
        return float(self.outcome(f, training)[1])

    def loss(self, f: Tensor, training: str, loss: str, penalty: float) -> Tensor:
        if loss == "surrogate":
            return (self.alignment(f, training) + 1) ** 2
        D0, _, err = self.outcome(f, training)
        return err + penalty * D0 * D0 if loss == "penalised" else err

    def residuals(self, training: str, loss: str, penalty: float) -> tuple[Tensor, Tensor]:
        """``(L, b)`` (2, 3) and (2,), float64, with ``loss(f) = ||L f + b||^2`` for functional values
        ``f`` (3,): ``Err = (D1 + y)^2`` with ``D1 = f_0 + f_k (y - t0) / norm`` (k, norm: the training's
        functional and squared norm), plus ``penalty * f_0^2`` for the penalised loss; the surrogate
        ``(f_k / norm + 1)^2``. The Gauss-Newton search's form of ``loss``
        (``batched.least_squares_groups``)."""
        k, norm = (1, self.phi2) if training == "fine_tune" else (2, self.pphi2)
        L = torch.zeros((2, 3), dtype=torch.float64)
        b = torch.zeros(2, dtype=torch.float64)
        if loss == "surrogate":
            L[0, k], b[0] = 1 / norm, 1.0
            return L, b
        L[0, 0], L[0, k], b[0] = 1.0, (self.y - self.t0) / norm, self.y
        if loss == "penalised":
            L[1, 0] = math.sqrt(penalty)
        return L, b

    def loss_grad(self, f: Tensor, training: str, loss: str, penalty: float) -> Tensor:
        """The derivative (..., 3) of ``loss`` with respect to the functional values ``f`` (..., 3)."""
        k, norm = (1, self.phi2) if training == "fine_tune" else (2, self.pphi2)
        g = torch.zeros_like(f)
        if loss == "surrogate":
            g[..., k] = 2 * (self.alignment(f, training) + 1) / norm
            return g
        D0, D1, _ = self.outcome(f, training)
        e = 2 * (D1 + self.y)
        g[..., 0] = e + 2 * penalty * D0 if loss == "penalised" else e
        g[..., k] = e * (self.y - self.t0) / norm
        return g


def prepare(
    map_name: str,
    X_train: Tensor,
    y_train: Tensor,
    X: Tensor,
    y: float,
    *,
    seed: int,
    position: int = 0,
    weights: Any = None,
    sampler: str = "auto",
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = "cpu",
    options: dict[str, Any] | None = None,
    k: int | None = None,
) -> Setup:
    """Features, interpolator and functionals of one simulation (see the module docstring), for any
    registered map: its ``MapSpec.gen`` setup where it has one (RF: weights drawn on the span of the
    samples; RAF, ReLU-RAF: the moved row and column of the scores), else the full map
    (``wordsens.generalisation.functionals.full_map_setup``).

    ``options``: the map's options (``k``: an alias of RF's width). ``sampler`` (RF): ``"span"``
    (exact in law on the span of the samples and the perturbed block; default), ``"dense"`` (the whole
    k x D matrix; also used with explicit ``weights``); other maps draw their weights whole (``"dense"``).
    ``dtype``: the working dtype of the Delta search (the map's search dtype by default). The new
    sample's features and the first stage's results are float64; the training set's features are float32
    where that pays and a float64 check accepts it (``Setup.fit.features``; module docstring).
    """
    spec = maps.get(map_name)
    given = dict(options or {})
    if k is not None and "k" in spec.options:
        given.setdefault("k", k)
    values = spec.option_values(given)
    N, n, d = check_task(X_train, y_train, X, y)
    if not 0 <= position < n:
        raise ValueError(f"position must be a token index in [0, {n - 1}], got {position}")
    if weights is not None:
        maps.check_weights(map_name, weights, n, d, values)
    dev = resolve_device(device)
    dtype = dtype or getattr(torch, spec.settings.dtype)
    started = time.perf_counter()
    Xt64 = X_train.detach().to(device=dev, dtype=torch.float64)
    X64 = X.detach().to(device=dev, dtype=torch.float64)
    Y = torch.as_tensor(y_train, dtype=torch.float64, device=dev)
    setup = maps.resolve(spec.gen) if spec.gen is not None else full_map_setup
    parts = setup(
        map_name,
        Xt64,
        X64,
        Y,
        seed=seed,
        position=position,
        weights=weights,
        options=values,
        sampler=sampler,
        dtype=dtype,
    )
    phi, pphi = parts.phi, parts.pphi
    phi2 = float(phi @ phi)
    if phi2 == 0:
        raise ValueError("phi(X) = 0: the new sample has no features to learn from (all ReLUs inactive)")
    pphi2 = float(pphi @ pphi)
    if pphi2 <= 1e-24 * phi2:
        raise ValueError(_in_span_message(X_train, X, phi.numel()))
    return Setup(
        map_name=map_name,
        n=n,
        d=d,
        N=N,
        position=position,
        y=float(y),
        t0=float(phi @ parts.theta),
        phi2=phi2,
        pphi2=pphi2,
        phi_pphi=float(phi @ pphi),
        fit=parts.fit,
        sampler=parts.sampler,
        seconds=time.perf_counter() - started,
        functionals=parts.functionals,
        momentum=spec.settings.momentum,
        least_squares=spec.settings.least_squares,
        options=values,
        device=str(dev),
    )


def _in_span_message(X_train: Tensor, X: Tensor, features: int) -> str:
    """Why phi(X) lies in the span of the training features: duplicate samples (counted), or more
    training samples than features."""
    samples = X_train.shape[0]
    found = duplicates(X_train.detach().cpu().numpy(), X.detach().cpu().numpy())
    head = (
        f"phi(X) lies in the span of the N = {samples} training feature vectors (p = {features} features): "
        "re-training cannot learn it"
    )
    if found.equal_new:
        return (
            f"{head}; {found.describe(samples)}: the data cannot carry the experiment. Check the embedding "
            "store's distinct samples and the pool's [UNK] share (docs/inputs.md), or draw distinct samples"
        )
    if samples >= features:
        return f"{head}; use fewer training samples than features"
    return (
        f"{head}, although N < p and no training sample equals the new one ({found.repeated} of the N "
        "training samples equal another one): the new sample's features are a combination of the training "
        "features; check that the samples differ in more than a few rows"
    )


# --------------------------------------------------------------------------- the Delta search


@dataclass
class GenResult:
    """One Delta search of a simulation.

    ``alignment`` is the ratio ``a`` of the row's training mode (``Setup.alignment``) and
    ``d0_shift`` is ``|D0 - t0|``: ``D1 - D0 = a (y - t0)``, so a small Err comes either from
    separating the two sentences (small ``a``) or from moving the first-stage prediction (large
    ``d0_shift``, hence large ``gamma_min``). ``gram_cond``, ``gram_rank``, ``train_residual`` and
    ``interpolates`` describe the first-stage fit of the simulation (``Fit``). ``pphi_ratio``
    (``||P phi|| / ||phi||``) is recorded by the authors' algorithm only (``reference.gen_search``),
    whose explicit projector is unreliable when it is small; rows of other methods leave it out.
    """

    map: str
    training: str
    loss: str
    penalty: float
    method: str
    y: float
    t0: float
    t1: float
    D0: float
    D1: float
    err: float
    gamma_min: float
    alignment: float
    d0_shift: float
    gram_cond: float
    gram_rank: int
    train_residual: float
    interpolates: bool
    delta_norm: float
    steps: int
    seconds: float
    delta: Tensor = field(repr=False)
    pphi_ratio: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("delta")
        if out["pphi_ratio"] is None:
            out.pop("pphi_ratio")
        return out


@dataclass(frozen=True)
class _Search:
    training: str
    loss: str
    penalty: float


def _check_search(training: str, loss: str, penalty: float) -> None:
    if training not in TRAININGS:
        raise ValueError(f"unknown training {training!r}; choose one of {', '.join(TRAININGS)}")
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    if not (isinstance(penalty, (int, float)) and math.isfinite(penalty) and penalty >= 0):
        raise ValueError(f"penalty must be a finite number >= 0, got {penalty!r}")


def search(
    setup: Setup,
    training: str,
    loss: str,
    *,
    penalty: float = 0.0,
    seed: int = 0,
    restarts: int = 16,
    max_steps: int = 500,
    tol: float = 1e-6,
    patience: int = 30,
) -> GenResult:
    """Search ``Delta`` (``||Delta|| <= sqrt(d)``, token ``setup.position``) minimising ``loss``.

    ``loss``: ``"surrogate"`` (the label flip predicted by the features alone), ``"direct"``
    (``Err``), ``"penalised"`` (``Err + penalty * D0^2``, which keeps the first-stage model
    uncertain). The outcome (t0, t1, D0, D1, Err, gamma_min) is re-evaluated in float64 with the
    plain map at the Delta found. Several searches of one simulation: ``search_many``.
    """
    return search_many(
        setup,
        [(training, loss, penalty)],
        seed=seed,
        restarts=restarts,
        max_steps=max_steps,
        tol=tol,
        patience=patience,
    )[0]


def search_many(
    setup: Setup,
    searches: Sequence[tuple[str, str, float]],
    *,
    seed: int = 0,
    restarts: int = 16,
    max_steps: int = 500,
    tol: float = 1e-6,
    patience: int = 30,
) -> list[GenResult]:
    """``search`` for every ``(training, loss, penalty)`` of ``searches``, run together: each search
    keeps its own starts (seeded by ``seed`` and the search), loss, halving and stopping rule, but
    every step evaluates the functionals of all the searches still running in one batched call
    (``wordsens.generalisation.batched.ascend_groups``), and the float64 re-evaluation of the points
    found is one call too. The penalised searches of smooth maps (``Setup.least_squares``: RAF) run by
    Levenberg-Marquardt steps instead (``batched.least_squares_groups`` on ``Setup.residuals``;
    ``steps`` counts its iterations, each two gradient evaluations): the normalised-gradient ascent
    does not converge on them at d = 768 within hundreds of steps. Each result's ``seconds`` is an
    equal share of the whole."""
    for training, loss, penalty in searches:
        _check_search(training, loss, penalty)
    if not searches:
        return []
    started = time.perf_counter()
    problems = [_Search(t, loss, float(p)) for t, loss, p in searches]
    starts = [
        setup.functionals.starts(restarts, generator(derive_seed(seed, "gen-search", pr.training, pr.loss, pr.penalty)))
        for pr in problems
    ]
    radius = math.sqrt(setup.d)

    def losses(f: Tensor, group: Tensor) -> Tensor:  # minus each row's own loss
        out = torch.zeros_like(f[..., 0])
        for g, pr in enumerate(problems):
            out = torch.where(group == g, -setup.loss(f, pr.training, pr.loss, pr.penalty), out)
        return out

    def outer(f: Tensor, group: Tensor) -> tuple[Tensor, Tensor]:  # values and d value / d f
        g = torch.zeros_like(f)
        for k, pr in enumerate(problems):
            g = torch.where((group == k)[:, None], -setup.loss_grad(f, pr.training, pr.loss, pr.penalty), g)
        return losses(f, group), g

    def value_and_grad(D: Tensor, group: Tensor) -> tuple[Tensor, Tensor]:
        if hasattr(setup.functionals, "value_and_grad"):  # written out (attention maps)
            return setup.functionals.value_and_grad(D, lambda f: outer(f, group))
        D = D.detach().requires_grad_(True)
        with torch.enable_grad():
            val = losses(setup.functionals(D), group)
            (grad,) = torch.autograd.grad(val.sum(), D)
        return val.detach(), grad

    def vjp(D: Tensor, G: Tensor) -> tuple[Tensor, Tensor]:  # f(D) and sum_k G_k grad f_k
        if hasattr(setup.functionals, "value_and_grad"):  # written out (attention maps)
            seen: list[Tensor] = []

            def outer(f: Tensor) -> tuple[Tensor, Tensor]:
                seen.append(f)
                return f[:, 0], G

            grad = setup.functionals.value_and_grad(D, outer)[1]
            return seen[0], grad
        D = D.detach().requires_grad_(True)
        with torch.enable_grad():
            f = setup.functionals(D)
            (grad,) = torch.autograd.grad((f * G).sum(), D)
        return f.detach(), grad

    dtype = setup.functionals.dtype
    lsq = [g for g, pr in enumerate(problems) if pr.loss == "penalised" and setup.least_squares]
    asc = [g for g, pr in enumerate(problems) if g not in lsq]
    found: list[tuple[Tensor, int]] = [(torch.empty(0), 0)] * len(problems)
    if asc:
        climbed = ascend_groups(
            lambda D, group: value_and_grad(D, torch.tensor(asc, device=group.device)[group]),
            [starts[g].to(dtype) for g in asc],
            radius,
            max_steps=max_steps,
            tol=tol,
            patience=patience,
            keep=[min(8, restarts)] * len(asc),
            momentum=setup.momentum,
        )
        for g, res in zip(asc, climbed, strict=True):
            found[g] = res
    if lsq:
        forms = [setup.residuals(problems[g].training, problems[g].loss, problems[g].penalty) for g in lsq]
        descended = least_squares_groups(
            vjp,
            [L for L, _ in forms],
            [b for _, b in forms],
            [starts[g].to(dtype) for g in lsq],
            radius,
            max_steps=max_steps,
            tol=tol,
            patience=patience,
            keep=[min(8, restarts)] * len(lsq),
        )
        for g, res in zip(lsq, descended, strict=True):
            found[g] = res
    deltas = [torch.stack([feasible(D, radius) for D in rows]) for rows, _ in found]
    group = torch.cat([torch.full((x.shape[0],), g, dtype=torch.int64) for g, x in enumerate(deltas)])
    with torch.no_grad():
        F = setup.functionals.exact(torch.cat(deltas))  # (rows, 3), float64
    values = losses(F, group.to(F.device))
    seconds = (time.perf_counter() - started) / len(problems)
    out = []
    for g, pr in enumerate(problems):
        rows = (group == g).nonzero()[:, 0].to(F.device)
        best = int(rows[int(torch.argmax(values[rows]))])
        out.append(_result(setup, pr, F[best], torch.cat(deltas)[best], found[g][1], seconds))
    return out


def _result(setup: Setup, pr: _Search, f: Tensor, delta: Tensor, steps: int, seconds: float) -> GenResult:
    D0, D1, err = setup.outcome(f, pr.training)
    fit = setup.fit
    return GenResult(
        map=setup.map_name,
        training=pr.training,
        loss=pr.loss,
        penalty=pr.penalty,
        method="default",
        y=setup.y,
        t0=setup.t0,
        t1=setup.t1(pr.training),
        D0=float(D0),
        D1=float(D1),
        err=float(err),
        gamma_min=max(abs(setup.t0), abs(float(D0))),
        alignment=float(setup.alignment(f, pr.training)),
        d0_shift=abs(float(D0) - setup.t0),
        gram_cond=fit.cond,
        gram_rank=fit.rank,
        train_residual=fit.residual,
        interpolates=fit.interpolates,
        delta_norm=float(torch.linalg.vector_norm(delta)),
        steps=steps,
        seconds=seconds,
        delta=delta.cpu(),
    )


def simulate(
    map_name: str,
    X_train: Tensor,
    y_train: Tensor,
    X: Tensor,
    y: float,
    *,
    seed: int,
    searches: Sequence[tuple[str, str, float]],
    position: int = 0,
    **kwargs: Any,
) -> list[GenResult]:
    """One simulation serving several ``(training, loss, penalty)`` searches: the features and the
    Gram matrix are computed once, and the searches run together (``search_many``)."""
    setup = prepare(map_name, X_train, y_train, X, y, seed=seed, position=position, **kwargs)
    out = search_many(setup, searches, seed=seed)
    for res in out:
        res.seconds += setup.seconds / len(searches)
    return out
