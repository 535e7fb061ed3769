"""RF's word-sensitivity search: its ReLU layer reduced to the moved token's block (``wordsens.search.first_layer``),
searched by subspace ascent (``RFProblem.search``), with its certificate (``RFProblem.upper``); docs/methods.md,
"Word sensitivity: the default search".
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .. import maps
from .engine import Problem, SearchContext, ascend, project, sphere
from .first_layer import FirstLayer, blockwise_u, exact_u, explicit_block, image

Tensor = torch.Tensor


class SubspaceRF(Problem):
    """RF restricted to subspaces, one per restart: ``Delta_r = c_r V_r``, so the change is
    ``||relu(u + c_r Y_r) - relu(u)||^2`` with ``Y_r = V_r B^T`` (m, k) and ``||c_r|| <= radius``. A row with
    ``|u_j| > radius ||Y_r[:, j]||`` for every restart keeps its sign on the whole ball: the active ones enter
    once, as the quadratic form ``Q_r`` (m, m), and only the others are evaluated per step."""

    def __init__(self, Y: Tensor, u: Tensor, base: Tensor, radius: float) -> None:
        reach2 = radius**2 * (Y * Y).sum(1)  # (R, k): the largest (c_r . Y_r[:, j])^2
        free = (u * u <= reach2).any(0)
        fixed_on = Y[:, :, ~free & (u > 0)]
        self.Q = fixed_on @ fixed_on.transpose(1, 2)
        self.Y, self.u, self.base, self.radius = Y[:, :, free], u[free], base[free], radius
        self.d = Y.shape[1]
        self.phi_norm = 1.0

    def value(self, D: Tensor) -> Tensor:
        return self.value_and_grad(D)[0]

    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """``value(D)`` and its gradient, written out (no autograd graph: these steps are small)."""
        pre = self.u + torch.bmm(D[:, None], self.Y)[:, 0]
        diff = torch.relu(pre) - self.base
        QD = torch.bmm(self.Q, D[:, :, None])[:, :, 0]
        value = (diff * diff).sum(-1) + (D * QD).sum(-1)
        grad = 2 * torch.bmm(self.Y, (diff * (pre > 0))[:, :, None])[:, :, 0] + 2 * QD
        return value, grad

    def exact(self, deltas: Tensor) -> Tensor:  # pragma: no cover - never evaluated exactly
        return self.value(deltas.to(self.Y.dtype)).sqrt().to(torch.float64)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:  # pragma: no cover - started explicitly
        return sphere(restarts, self.d, self.radius, gen)


class RFProblem(Problem):
    def __init__(self, B: Tensor, u64: Tensor) -> None:
        self.d = B.shape[1]
        self.radius = math.sqrt(self.d)
        self.layer = FirstLayer(B, u64, with_gram=True)
        self.base = torch.relu(self.layer.u)
        self.phi_norm = float(torch.linalg.vector_norm(torch.relu(u64)))

    def value(self, D: Tensor) -> Tensor:
        """``||relu(u + B Delta) - relu(u)||^2`` per row of ``D``; on a CPU by chunks of ``B``'s rows changed in
        place (``_VALUE_CHUNK_BYTES``), so that a vocabulary scan runs at its product's speed."""
        B = self.layer.B
        if B.device.type != "cpu":
            diff = self.layer.forward(D) - self.base
            return (diff * diff).sum(-1)
        step = max(1, _VALUE_CHUNK_BYTES // (B.element_size() * max(D.shape[0], 1)))
        total = torch.zeros(D.shape[0], dtype=D.dtype, device=D.device)
        in_place = not (torch.is_grad_enabled() and D.requires_grad)
        for start in range(0, B.shape[0], step):
            rows = slice(start, start + step)
            if in_place:  # the chunk's pre-activations, changed in place (no new arrays per chunk)
                pre = D @ B[rows].T
                pre += self.layer.u[rows]
                pre.relu_()
                pre -= self.base[rows]
                total += torch.linalg.vector_norm(pre, dim=-1).square()
            else:
                diff = torch.relu(self.layer.u[rows] + D @ B[rows].T) - self.base[rows]
                total = total + (diff * diff).sum(-1)
        return total

    def exact(self, deltas: Tensor) -> Tensor:
        return torch.linalg.vector_norm(self.layer.forward64(deltas) - torch.relu(self.layer.u64), dim=-1)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.layer.singular_starts(restarts, self.radius, gen)

    def search(
        self,
        starts: Tensor,
        *,
        max_steps: int,
        tol: float,
        patience: int,
        keep: int = 1,
        momentum: float = 0.0,
        audit: list[float] | None = None,
    ) -> tuple[Tensor, int]:
        """Subspace ascent from every start: each iteration maximises over span{Delta, last step, two top
        singular directions, gradient} by an inner ascent on its image (``SubspaceRF``), streaming ``B`` twice;
        only ``Delta`` is carried over, so rounding errors cannot compound (docs/methods.md). ``audit`` (a list,
        for tests): per iteration with an accepted step, the largest relative error of the image the acceptance
        used against ``B Delta`` in float64. Returns the points reached and the iterations."""
        B, u, base, r = self.layer.B, self.layer.u, self.base, self.radius
        with torch.no_grad():
            D = project(starts, r)

            def change2(img: Tensor) -> Tensor:  # ||relu(u + B Delta) - relu(u)||^2 from B Delta
                return ((torch.relu(u + img) - base) ** 2).sum(-1)

            R = D.shape[0]
            top = self.layer.top_directions(2)
            top_img = image(B, top.to(B.dtype)).expand(R, -1, -1)
            top = top.to(D).expand(R, -1, -1)
            prev = torch.zeros_like(D)
            moved = torch.zeros(R, dtype=torch.bool, device=D.device)
            BD, grad = image_and_gradient(B, D, u, base)
            val = change2(BD)
            history = [float(val.max())]
            steps = 0
            while steps < max_steps:
                if steps:  # B Delta afresh (the tracked one is never reused), the gradient in the same pass
                    last_BD = BD
                    BD, grad = image_and_gradient(B, D, u, base)
                    val = change2(BD)
                    prev_img = torch.where(moved[:, None], BD - last_BD, torch.zeros_like(BD))
                else:
                    prev_img = torch.zeros_like(BD)
                known = torch.cat([D[:, None], prev[:, None], top], dim=1)
                known_img = torch.cat([BD[:, None], prev_img[:, None], top_img], dim=1)
                # the last step's image is a difference of images of points of norm up to |Delta|: its
                # rounding error is a fraction of |Delta|, not of |step|
                scale = torch.linalg.vector_norm(D.to(torch.float64), dim=-1)[:, None]
                error_scale = torch.cat([scale, scale, torch.ones_like(scale).expand(-1, top.shape[1])], dim=1)
                basis, Y = orthonormal_images(known, known_img, grad, B, error_scale=error_scale)
                sub = SubspaceRF(Y, u, base, r)
                c, _ = ascend(
                    sub,
                    torch.einsum("rd,rmd->rm", D.to(torch.float64), basis).to(D.dtype),
                    max_steps=60,
                    tol=1e-9,
                    patience=10,
                    keep=R,
                    momentum=0.0,
                    eta_min=1e-9,
                )
                steps += 1
                new_BD = torch.einsum("rm,rmk->rk", c, Y)
                new_val = change2(new_BD)
                ok = new_val >= val
                new_D = torch.einsum("rm,rmd->rd", c.to(torch.float64), basis).to(D.dtype)
                if audit is not None and bool(ok.any()):
                    true = image(B.to(torch.float64), new_D[ok].to(torch.float64))
                    err = torch.linalg.vector_norm(new_BD[ok].to(torch.float64) - true, dim=-1)
                    audit.append(float((err / torch.linalg.vector_norm(true, dim=-1).clamp_min(1e-300)).max()))
                prev = torch.where(ok[:, None], new_D - D, torch.zeros_like(D))
                moved = ok
                D = torch.where(ok[:, None], new_D, D)
                val = torch.where(ok, new_val, val)
                history.append(float(val.max()))
                if len(history) > patience and history[-1] - history[-1 - patience] <= tol * history[-1]:
                    break
        return D, steps

    def upper(self) -> float:
        assert self.layer.gram is not None
        lam = float(torch.linalg.eigvalsh(self.layer.gram)[-1])
        # float64 Gram and eigenvalue errors are below 1e-9 relative at any size used here
        op_norm = math.sqrt(max(lam, 0.0) * (1 + 1e-8))
        if self.phi_norm == 0:  # phi(X) = 0 (every pre-activation <= 0, possible at tiny k): no finite bound
            return math.inf
        return op_norm * self.radius / self.phi_norm


# A known vector whose part orthogonal to the ones before it is below this fraction of its error scale
# (its own norm unless given) is left out of the subspace: its image would be a difference of nearly
# equal images, its rounding error amplified by up to the inverse of this fraction.
_KEEP_FRACTION = 1e-2
# Rows of ``B`` per chunk of ``image_and_gradient``'s single pass (CPU): about 1.5 MiB, which stays in
# cache between the chunk's two products.
_FUSED_CHUNK_BYTES = 3 * 2**19
# Pre-activations of one chunk of ``RFProblem.value`` on a CPU (rows of B x rows of D): chunks of this size are
# faster than one product over every move (docs/benchmarks.md, "Where the constants come from").
_VALUE_CHUNK_BYTES = 32 * 2**20


def image_and_gradient(B: Tensor, D: Tensor, u: Tensor, base: Tensor) -> tuple[Tensor, Tensor]:
    """``B Delta`` for each row of ``D`` (R, d) and the gradient at ``Delta`` of ``||relu(u + B Delta) - base||^2``
    (R, d): on a CPU from one pass over ``B`` (each chunk of rows serves both while in cache), elsewhere two
    whole products."""
    if B.device.type != "cpu":
        BD = image(B, D)
        pre = u + BD
        return BD, (2 * (torch.relu(pre) - base) * (pre > 0)) @ B
    k, d = B.shape
    BD = torch.empty((D.shape[0], k), dtype=B.dtype, device=B.device)
    grad = torch.zeros_like(D)
    step = max(1, _FUSED_CHUNK_BYTES // (B.element_size() * d))
    for start in range(0, k, step):
        rows = slice(start, start + step)
        chunk = B[rows]
        img = (chunk @ D.T).T
        BD[:, rows] = img
        pre = u[rows] + img
        grad.addmm_(2 * (torch.relu(pre) - base[rows]) * (pre > 0), chunk)
    return BD, grad


def orthonormal_images(
    known: Tensor, known_img: Tensor, grad: Tensor, B: Tensor, *, error_scale: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Per restart, an orthonormal basis (R, m, d) of span{known, grad} (float64; a vector nearly in the span
    of the ones before it becomes zero) and its image under ``B`` (R, m, k), combined from the known vectors'
    images ``known_img`` but for the gradient's. A known vector is kept where its part orthogonal to the ones
    before it is at least ``_KEEP_FRACTION`` of its ``error_scale`` (R, m - 1; default: its own norm), the
    norm its image's rounding error scales with."""
    R, m1, _ = known.shape
    V = torch.cat([known, grad[:, None]], dim=1).to(torch.float64)
    scales = torch.linalg.vector_norm(V, dim=-1)
    if error_scale is not None:
        scales[:, :m1] = torch.maximum(scales[:, :m1], error_scale.to(scales))
    basis = torch.zeros_like(V)
    coef = torch.zeros((R, m1 + 1, m1 + 1), dtype=torch.float64, device=V.device)  # basis_j = sum_i coef[j, i] V_i
    for j in range(m1 + 1):
        w = V[:, j].clone()
        c = torch.zeros((R, m1 + 1), dtype=torch.float64, device=V.device)
        c[:, j] = 1.0
        for _ in range(2):  # Gram-Schmidt twice: orthogonal to rounding
            proj = torch.einsum("rid,rd->ri", basis[:, :j], w)
            w = w - torch.einsum("ri,rid->rd", proj, basis[:, :j])
            c = c - torch.einsum("ri,rik->rk", proj, coef[:, :j])
        norm = torch.linalg.vector_norm(w, dim=-1)
        # a known vector's image is a combination of images: kept where that is well conditioned;
        # the gradient's is computed afresh, so only a gradient inside the span is left out
        keep = norm > (_KEEP_FRACTION if j < m1 else 1e-12) * scales[:, j]
        scale = torch.where(keep, 1 / norm.clamp_min(1e-300), torch.zeros_like(norm))
        basis[:, j] = w * scale[:, None]
        coef[:, j] = c * scale[:, None]
    img_known = torch.einsum("rji,rik->rjk", coef[:, :m1, :m1].to(known_img.dtype), known_img)
    img_grad = image(B, basis[:, m1].to(B.dtype))
    return basis, torch.cat([img_known, img_grad[:, None]], dim=1)


# --------------------------------------------------------------------------- building problems


def rf_upper(X64: Tensor, V: Tensor, position: int) -> float:
    """The RF certificate ``||B||_op sqrt(d) / ||phi(X)||`` at ``position`` from dense weights ``V`` (k, n d)."""
    return RFProblem(*explicit_block(V, X64, position, V.dtype, V.device)).upper()


def rf_prepare(X64: Tensor, seed: int, weights: Tensor | None, ctx: SearchContext) -> Callable[[int], RFProblem]:
    """The registry's fast path for RF: per position, the moved token's block ``B`` and ``u = V flat(X)``, from
    explicit ``weights``, or ``B`` drawn alone and ``u`` from ``exact_u`` or ``blockwise_u``."""
    n, d = X64.shape
    if weights is not None:
        return lambda position: RFProblem(*explicit_block(weights, X64, position, ctx.dtype, ctx.device))
    k = ctx.options.get("k") or n * d

    def block(j: int) -> Tensor:  # token j's block of V
        return maps.rf_block(seed, j, n, d, k, dtype=ctx.dtype, device=ctx.device, draw_on=ctx.draw_on)

    u_all = None if ctx.sampler == "exact" else blockwise_u(block, X64, k, ctx.device)

    def problem(position: int) -> RFProblem:
        B = block(position)
        return RFProblem(B, exact_u(B, X64, position, seed, "rf-rest", 1) if u_all is None else u_all)

    return problem
