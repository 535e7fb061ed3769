"""The authors' generalisation algorithm as published (the baseline of the default method, on the same X and
weights), with the departures of docs/methods.md ("The authors' algorithm")."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .. import maps
from ..maps import registry
from ..maps.spec import MapSpec
from ..search.engine import project
from ..search.full_map import cast_weights
from .core import LOSSES, TRAININGS
from .first_stage import INTERPOLATION_TOL
from .searches import GenResult
from .tasks import check_task

Tensor = torch.Tensor


RELIABLE_ERROR = 1e-6  # largest estimated relative error of P phi for a reference row to be ground truth


def projection_error(result: GenResult) -> float:
    """Estimated relative error of the reference's ``P phi``, ``eps cond(Phi) / (||P phi|| / ||phi||)``: a row is
    ground truth only below ``RELIABLE_ERROR`` (inf: singular, or no ``pphi_ratio``)."""
    if result.pphi_ratio is None or not math.isfinite(result.gram_cond) or result.pphi_ratio <= 0:
        return math.inf
    return float(torch.finfo(torch.float64).eps * math.sqrt(result.gram_cond) / result.pphi_ratio)


def gen_search(
    map_name: str,
    X_train: Tensor,
    y_train: Tensor,
    X: Tensor,
    y: float,
    training: str,
    loss: str,
    *,
    seed: int,
    penalty: float = 0.0,
    position: int = 0,
    weights: Any = None,
    options: dict[str, Any] | None = None,
) -> GenResult:
    """The authors' algorithm: dense float64 weights and features, ``pinv`` and the p x p projector formed,
    plain gradient descent on the full map (the map's ``gen_reference`` schedule) projected on the ball of
    radius ``sqrt(d)`` around ``x_i``, from ``x_i``. The row records ``pphi_ratio`` (``projection_error``)."""
    if training not in TRAININGS or loss not in LOSSES:
        raise ValueError(f"training must be one of {TRAININGS} and loss one of {LOSSES}")
    _, n, d = check_task(X_train, y_train, X, y)
    started = time.perf_counter()
    Xt = X_train.to(torch.float64)
    X64 = X.to(torch.float64)
    Y = torch.as_tensor(y_train, dtype=torch.float64)
    spec = registry.get(map_name)  # resolved once: the simulation carries the spec
    if weights is None:
        weights = maps.sample_weights(spec, seed, n, d, dtype=torch.float64, **spec.option_values(options))
    weights = cast_weights(weights, torch.float64, torch.device("cpu"))
    sim = _simulation(spec, Xt, X64, Y, weights)
    lr, steps = spec.gen_reference[0], spec.gen_reference_steps(n)
    onehot = torch.zeros((n, 1), dtype=torch.float64)
    onehot[position] = 1.0

    def objective(delta: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return _objective(sim, X64 + onehot * delta, y=y, training=training, loss=loss, penalty=penalty)

    delta = _descend(objective, d, lr, steps)
    with torch.no_grad():
        _, D0, D1, ratio = objective(delta)
    phi, pphi, t0 = sim.phi, sim.pphi, sim.t0
    v = phi if training == "fine_tune" else pphi
    t1 = t0 + float(phi @ v) * (y - t0) / float(v @ v)  # phi(X)^T theta_{f|r}
    gram_cond, gram_rank, residual = _gram_summary(sim.Phi, sim.theta, Y)
    return GenResult(
        map=map_name,
        training=training,
        loss=loss,
        penalty=float(penalty),
        method="reference",
        y=float(y),
        t0=t0,
        t1=t1,
        D0=float(D0),
        D1=float(D1),
        err=float((D1 + y) ** 2),
        gamma_min=max(abs(t0), abs(float(D0))),
        alignment=float(ratio),
        d0_shift=abs(float(D0) - t0),
        gram_cond=gram_cond,
        gram_rank=gram_rank,
        train_residual=residual,
        interpolates=residual <= INTERPOLATION_TOL,
        delta_norm=float(torch.linalg.vector_norm(delta)),
        steps=steps,
        seconds=time.perf_counter() - started,
        delta=delta,
        pphi_ratio=float(torch.linalg.vector_norm(pphi) / torch.linalg.vector_norm(phi)),
    )


@dataclass(frozen=True)
class _Simulation:
    """A simulation as the authors' scripts set it up (float64, CPU), ``P = I - pinv(Phi) Phi`` formed."""

    spec: MapSpec
    weights: Any
    Phi: Tensor
    theta: Tensor
    phi: Tensor
    pphi: Tensor
    t0: float


def _simulation(spec: MapSpec, Xt: Tensor, X: Tensor, Y: Tensor, weights: Any) -> _Simulation:
    """The first stage of the training set ``Xt`` (labels ``Y``) and the new sample ``X``, all float64."""
    Phi = maps.apply(spec, Xt, weights).reshape(Xt.shape[0], -1)
    pinv = torch.linalg.pinv(Phi)
    theta = pinv @ Y
    P = torch.eye(Phi.shape[1], dtype=torch.float64) - pinv @ Phi
    phi = maps.apply(spec, X, weights).reshape(-1)
    t0 = float(phi @ theta)
    return _Simulation(spec, weights, Phi, theta, phi, P @ phi, t0)


def _objective(
    sim: _Simulation, X_moved: Tensor, *, y: float, training: str, loss: str, penalty: float
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(loss value, D0, D1, alignment ratio)`` of the moved sample ``X_moved``, the full map recomputed."""
    phi, pphi, t0 = sim.phi, sim.pphi, sim.t0
    phi_p = maps.apply(sim.spec, X_moved, sim.weights).reshape(-1)
    D0 = phi_p @ sim.theta
    v = phi if training == "fine_tune" else pphi  # fine-tune: along phi; re-train: along P phi
    D1 = D0 + (phi_p @ v) * (y - t0) / (v @ v)
    ratio = (phi_p @ v) / (v @ v)
    err = (D1 + y) ** 2
    value = (ratio + 1) ** 2 if loss == "surrogate" else err + (penalty * D0 * D0 if loss == "penalised" else 0)
    return value, D0, D1, ratio


def _descend(objective: Callable[[Tensor], tuple[Tensor, ...]], d: int, lr: float, steps: int) -> Tensor:
    """``steps`` plain gradient steps of size ``lr`` from ``Delta = 0``, projected on the ball of radius
    ``sqrt(d)``."""
    delta = torch.zeros(d, dtype=torch.float64)
    for _ in range(steps):
        delta.requires_grad_(True)
        value = objective(delta)[0]
        (grad,) = torch.autograd.grad(value, delta)
        with torch.no_grad():
            delta = project(delta.detach()[None] - lr * grad[None], math.sqrt(d))[0]
    return delta


def _gram_summary(Phi: Tensor, theta: Tensor, Y: Tensor) -> tuple[float, int, float]:
    """The first stage's ``(cond(K), rank, largest training residual)``, ``K = Phi Phi^T``."""
    sv = torch.linalg.svdvals(Phi)  # the Gram matrix K = Phi Phi^T has eigenvalues sv^2 (and N - p zeros if N > p)
    singular = float(sv[-1]) == 0 or Phi.shape[0] > Phi.shape[1]
    residual = float((Phi @ theta - Y).abs().max())
    cond = math.inf if singular else float((sv[0] / sv[-1]) ** 2)
    return cond, int(torch.linalg.matrix_rank(Phi)), residual
