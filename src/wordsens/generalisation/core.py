"""Generalisation after changing one word (the paper's Figures 4-5) without p x p matrices: ``prepare``
computes a simulation's features, first stage and the functionals ``(phi'.theta*, phi'.phi, phi'.P phi)`` of
the perturbed features ``phi' = phi(X^i(Delta))``, from which ``Setup`` reads every outcome::

    D1 (fine-tune) = D0 + (phi'.phi) (y - t0) / ||phi||^2,   D1 (re-train) = D0 + (phi'.P phi) (y - t0) / ||P phi||^2
    Err = (D1 + y)^2,   D0 = phi'.theta*

docs/methods.md, "Generalisation without p x p matrices".
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .. import maps
from ..compute.devices import resolve_device
from ..data.inputs import duplicates
from ..maps import registry
from ..maps.spec import MapSpec
from .first_stage import Fit
from .functionals import GenInputs, full_map_setup
from .tasks import check_task

Tensor = torch.Tensor


TRAININGS = ("fine_tune", "retrain")
LOSSES = ("surrogate", "direct", "penalised")


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
    positions: tuple[int, ...] = ()  # every position the setup can move (``at``), ``position`` first
    sample: Tensor | None = field(default=None, repr=False)  # the new sample X (n, d), float64 on the CPU

    def at(self, position: int) -> Setup:
        """The same simulation (weights, features, first stage) with the token at ``position`` (one of
        ``positions``) moved instead."""
        if position == self.position:
            return self
        if position not in self.positions:
            raise ValueError(
                f"the setup moves the tokens at positions {list(self.positions or [self.position])}, not "
                f"{position}: prepare it with also=({position},)"
            )
        if not hasattr(self.functionals, "at"):
            raise ValueError(f"the setup's functionals ({type(self.functionals).__name__}) cannot move")
        return replace(self, position=position, functionals=self.functionals.at(position))

    def _mode(self, training: str) -> tuple[int, float]:
        """The functional a training reads and its squared norm: fine-tune ``phi'.phi`` and ``||phi||^2``,
        re-train ``phi'.P phi`` and ``||P phi||^2``."""
        return (1, self.phi2) if training == "fine_tune" else (2, self.pphi2)

    def outcome(self, f: Tensor, training: str) -> tuple[Tensor, Tensor, Tensor]:
        """``(D0, D1, Err)`` from functional values ``f`` (..., 3)."""
        k, norm = self._mode(training)
        D0 = f[..., 0]
        D1 = D0 + f[..., k] * (self.y - self.t0) / norm
        return D0, D1, (D1 + self.y) ** 2

    def alignment(self, f: Tensor, training: str) -> Tensor:
        """The alignment ratio ``a`` (``D1 - D0 = a (y - t0)``) of functional values ``f`` (..., 3): one word can
        flip the learned prediction only through a small (or negative) ``a``."""
        k, norm = self._mode(training)
        return f[..., k] / norm

    def summary(self, f: Tensor, training: str) -> dict[str, float]:
        """What a result reports of functional values ``f`` (3,), ``d0_shift = |D0 - t0|`` included."""
        D0, D1, err = (float(x) for x in self.outcome(f, training))
        alignment = float(self.alignment(f, training))
        return dict(
            D0=D0, D1=D1, err=err, gamma_min=max(abs(self.t0), abs(D0)), alignment=alignment, d0_shift=abs(D0 - self.t0)
        )

    def gamma_min(self, D0: Tensor) -> Tensor:
        """``max(|t0|, |D0|)``: the smallest gamma at which the first stage is unsure of both sentences."""
        return D0.abs().clamp_min(abs(self.t0))

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
        """``(L, b)`` (2, 3) and (2,), float64, with ``loss(f) = ||L f + b||^2`` for functional values ``f`` (3,):
        the form of ``loss`` that ``batched.least_squares_groups`` takes."""
        k, norm = self._mode(training)
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
        k, norm = self._mode(training)
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
    also: Sequence[int] = (),
) -> Setup:
    """Features, first stage and functionals of one simulation (the map's ``MapSpec.gen`` setup, else the full
    map's). ``k``: an alias of RF's width option; ``sampler`` (RF): ``"span"`` (exact in law, the default) or
    ``"dense"``; ``dtype``: the Delta search's (None: the map's); ``also``: further positions ``Setup.at`` moves."""
    spec = registry.get(map_name)  # resolved once: the spec travels down from here
    values = _option_values(spec, options, k)
    N, n, d = check_task(X_train, y_train, X, y)
    positions = _positions(position, also, n)
    if weights is not None:
        maps.check_weights(spec, weights, n, d, values)
    dev = resolve_device(device)
    dtype = dtype or getattr(torch, spec.settings.dtype)
    started = time.perf_counter()
    Xt64 = X_train.detach().to(device=dev, dtype=torch.float64)
    X64 = X.detach().to(device=dev, dtype=torch.float64)
    Y = torch.as_tensor(y_train, dtype=torch.float64, device=dev)
    setup = registry.resolve(spec.gen) if spec.gen is not None else full_map_setup
    parts = setup(GenInputs(spec, Xt64, X64, Y, seed, position, weights, values, sampler, dtype, positions[1:]))
    phi, pphi = parts.phi, parts.pphi
    phi2, pphi2 = _learnable_norms(phi, pphi, X_train, X)
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
        positions=positions,
        sample=X64.cpu(),
    )


def _positions(position: int, also: Sequence[int], n: int) -> tuple[int, ...]:
    """``position`` and the distinct ``also`` after it, checked: token indices in [0, n - 1]."""
    if not 0 <= position < n:
        raise ValueError(f"position must be a token index in [0, {n - 1}], got {position}")
    if any(isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < n for p in also):
        raise ValueError(f"also must hold token indices in [0, {n - 1}], got {list(also)}")
    return tuple(dict.fromkeys([position, *also]))


def _option_values(spec: MapSpec, options: dict[str, Any] | None, k: int | None) -> dict[str, Any]:
    """The map's option values, ``k`` an alias of its option ``k`` (an explicit ``options["k"]`` wins)."""
    given = dict(options or {})
    if k is not None and "k" in spec.options:
        given.setdefault("k", k)
    return spec.option_values(given)


# ||P phi||^2 / ||phi||^2 at or below which phi(X) lies in the span of the training features. A new sample equal
# to a training sample is refused by that equality, not by this ratio: its rounding leaves up to 2e-17 on this CPU
# (exactly 0 on another), above what an ill-conditioned but learnable set leaves (5e-19, reference tests)
IN_SPAN = 1e-24


def _learnable_norms(phi: Tensor, pphi: Tensor, X_train: Tensor, X: Tensor) -> tuple[float, float]:
    """``(||phi||^2, ||P phi||^2)`` of the new sample, refused where it cannot be learned (``phi = 0``, or in the
    span of the training features)."""
    phi2 = float(phi @ phi)
    if phi2 == 0:
        raise ValueError("phi(X) = 0: the new sample has no features to learn from (all ReLUs inactive)")
    pphi2 = float(pphi @ pphi)
    if pphi2 <= IN_SPAN * phi2 or bool((X_train == X).flatten(1).all(1).any()):
        raise ValueError(_in_span_message(X_train, X, phi.numel()))
    return phi2, pphi2


def _in_span_message(X_train: Tensor, X: Tensor, features: int) -> str:
    """Why phi(X) lies in the span of the training features."""
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
