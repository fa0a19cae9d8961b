"""The ATen ops ``shlo.torch`` decomposes itself, because torch-mlir 20261001 converts
them to StableHLO only with static sizes, or not at all.

``decomposition_table`` is torch-mlir's table (what its FX importer expects)
plus these. Each runs while ``run_decompositions`` traces the program, on fake
tensors whose sizes may be symbolic; one that returns ``NotImplemented``
leaves its op to torch-mlir. Imports PyTorch: only ``shlo.torch`` uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from shlo._mlir_compat import torch_decompositions

aten = torch.ops.aten


def _symbolic(x: torch.Tensor, dims: Sequence[int]) -> bool:
    return any(isinstance(x.shape[d], torch.SymInt) for d in dims)


def _prefix_reduction(
    x: torch.Tensor, dim: int, fill: Any, reduce: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """Output i of ``reduce`` over inputs j <= i along ``dim``: a [..., n, n] masked view
    reduced along its last axis. n^2 steps where a scan takes n."""
    index = torch.arange(x.shape[dim], device=x.device)
    in_prefix = index.unsqueeze(1) >= index.unsqueeze(0)  # [output i, input j]
    rows = x.movedim(dim, -1).unsqueeze(-2)  # [..., 1, input j]
    masked = torch.where(in_prefix, rows, torch.full((), fill, dtype=x.dtype, device=x.device))
    return reduce(masked).movedim(-1, dim)


def _accumulation_type(x: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """``x`` in the type a cumsum or cumprod computes in: ``dtype``, or int64 for integers
    and booleans, as torch promotes them."""
    if dtype is None and not (x.is_floating_point() or x.is_complex()):
        dtype = torch.int64
    return x if dtype is None else x.to(dtype)


def cumsum(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    """Along a dimension of symbolic size only. torch-mlir converts a cumsum to a
    ``reduce_window`` whose window is the dimension's size, which must be static
    (RoBERTa's and OPT's position ids, a cumsum of the mask along the sequence).
    Along a static one the cumsum stays, and shlo compiles it as a scan."""
    if not _symbolic(x, [dim]):
        return NotImplemented
    return _prefix_reduction(_accumulation_type(x, dtype), dim, 0, lambda m: m.sum(-1))


def cumprod(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    """Every cumprod: torch-mlir has no conversion of it (nor of the ``prims.prod`` of
    torch's own decomposition)."""
    return _prefix_reduction(_accumulation_type(x, dtype), dim, 1, lambda m: m.prod(-1))


def logcumsumexp(x: torch.Tensor, dim: int) -> Any:
    """Every logcumsumexp: torch-mlir rewrites it as log(cumsum(exp(x))), which
    overflows to inf where exp does (x > 89 in f32) and torch's result is finite,
    and takes static sizes only. A masked logsumexp is stable."""
    return _prefix_reduction(x, dim, float("-inf"), lambda m: m.logsumexp(-1))


def var(
    x: torch.Tensor,
    dim: Sequence[int] | None = None,
    *,
    correction: float | None = None,
    keepdim: bool = False,
) -> Any:
    """Over dimensions of symbolic size. torch-mlir's own decomposition asserts at run
    time that the correction is at most the element count, an assertion its
    conversion to StableHLO cannot lower. Here the count is a sum of ones,
    which refinement folds once the sizes are known."""
    dims = list(range(x.dim())) if dim is None or len(dim) == 0 else [d % x.dim() for d in dim]
    if not _symbolic(x, dims) or not (x.is_floating_point() or x.is_complex()):
        return NotImplemented
    centered = x - x.mean(dims, keepdim=True)
    squares = (centered * centered.conj()).real if x.is_complex() else centered * centered
    count = torch.ones_like(squares).sum(dims, keepdim=keepdim)
    return squares.sum(dims, keepdim=keepdim) / (count - (1 if correction is None else correction))


def remainder(x: Any, y: Any) -> Any:
    """Python's modulo, with the divisor's sign. torch-mlir converts it to
    ``stablehlo.remainder``, which has the dividend's sign (C's fmod): -7 % 3
    gave -1 instead of 2, a silent wrong answer for mixed signs, ints and
    floats alike. This is how torch computes it: fmod, then the divisor added
    where the signs differ."""
    if not isinstance(y, torch.Tensor):  # fmod by a number has no conversion either
        y = torch.full_like(x, y, dtype=torch.result_type(x, y))
    result = torch.fmod(x, y)
    differs = (result != 0) & ((result < 0) != (y < 0))
    return torch.where(differs, result + y, result)


def remainder_of_number(x: Any, y: torch.Tensor) -> Any:
    """``number % tensor``: torch-mlir has no conversion of ``remainder.Scalar_Tensor``."""
    return remainder(torch.full_like(y, x, dtype=torch.result_type(x, y)), y)


def shift_left(x: torch.Tensor, y: Any) -> Any:
    """``x << n`` by a number: torch-mlir has no conversion of ``__lshift__.Scalar``."""
    return aten.bitwise_left_shift.Tensor(x, torch.full_like(x, y))


def shift_right(x: torch.Tensor, y: Any) -> Any:
    """``x >> n`` by a number: torch-mlir has no conversion of ``__rshift__.Scalar``."""
    return aten.bitwise_right_shift.Tensor(x, torch.full_like(x, y))


def sort_stable(
    x: torch.Tensor, *, stable: bool | None = None, dim: int = -1, descending: bool = False
) -> Any:
    """torch.sort(stable=True): torch-mlir has no conversion of ``aten.sort.stable``.
    A plain sort, which shlo-torch-sort-to-stablehlo converts to a stable one."""
    return aten.sort.default(x, dim, descending)


def decomposition_table() -> dict[Any, Callable[..., Any]]:
    """torch-mlir's decomposition table with shlo's additions."""
    from torch._decomp import decomposition_table as torch_table

    table = dict(torch_decompositions())
    table.update(
        {
            aten.cumsum.default: cumsum,
            aten.cumprod.default: cumprod,
            aten.logcumsumexp.default: logcumsumexp,
            aten.var.correction: var,
            aten.sort.stable: sort_stable,
            aten.remainder.Tensor: remainder,
            aten.remainder.Scalar: remainder,
            aten.remainder.Scalar_Tensor: remainder_of_number,
            aten.__lshift__.Scalar: shift_left,
            aten.__rshift__.Scalar: shift_right,
        }
    )
    # torch-mlir converts upsample_nearest with output sizes only, not with
    # scale factors (F.interpolate(scale_factor=2)): torch's decomposition
    # computes the sizes.
    for rank in (1, 2, 3):
        op = getattr(aten, f"upsample_nearest{rank}d").vec
        table[op] = torch_table[op]
    return table
