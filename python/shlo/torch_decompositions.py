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


# Types torch accumulates in float32 (its "opmath" type) and rounds once at the end.
_HALF_TYPES = (torch.float16, torch.bfloat16)


def cumsum(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    """Along a dimension of symbolic size. torch-mlir converts a cumsum to a
    ``reduce_window`` whose window is the dimension's size, which must be static
    (RoBERTa's and OPT's position ids, a cumsum of the mask along the sequence).
    Along a static one the cumsum stays, and shlo compiles it as a scan.

    A float16 or bfloat16 cumsum is computed in float32, as torch's is: summed
    in float16, [60000, 60000, -60000] stayed inf where torch's is 60000."""
    if dtype is None and x.dtype in _HALF_TYPES:
        return torch.cumsum(x.float(), dim).to(x.dtype)
    if not _symbolic(x, [dim]):
        return NotImplemented
    return _prefix_reduction(_accumulation_type(x, dtype), dim, 0, lambda m: m.sum(-1))


def cumprod(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    """Every cumprod: torch-mlir has no conversion of it (nor of the ``prims.prod`` of
    torch's own decomposition). Half types in float32, as ``cumsum``."""
    if dtype is None and x.dtype in _HALF_TYPES:
        return torch.cumprod(x.float(), dim).to(x.dtype)
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


def _index_of_extreme(x: torch.Tensor, dim: int | None, keepdim: bool, largest: bool) -> Any:
    """argmax or argmin of a floating-point tensor, NaN first as torch's are: torch-mlir's
    reduction compares values with GE or LE, which NaN fails, so a row holding
    a NaN gave some other index (a silent wrong answer)."""
    if not x.is_floating_point():
        return NotImplemented
    if dim is None:
        flat = _index_of_extreme(x.reshape(-1), 0, False, largest)
        return flat.reshape([1] * x.dim()) if keepdim else flat
    extreme = x.amax(dim, keepdim=True) if largest else x.amin(dim, keepdim=True)
    # A NaN makes the extreme NaN, which equals nothing: then the NaNs are the hits.
    hits = (x == extreme) | torch.isnan(x)
    return torch.argmax(hits.to(torch.int32), dim, keepdim)  # the first hit


def argmax(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    return _index_of_extreme(x, dim, keepdim, largest=True)


def argmin(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    return _index_of_extreme(x, dim, keepdim, largest=False)


def _extreme_and_index(x: torch.Tensor, dim: int, keepdim: bool, largest: bool) -> Any:
    """``max``/``min`` along a dimension of a floating-point tensor: the value and its
    index, NaN first as torch's. torch-mlir's reduction skipped NaN in both (a row
    holding NaN gave its largest number and that number's index)."""
    if not x.is_floating_point():
        return NotImplemented
    values = x.amax(dim, keepdim) if largest else x.amin(dim, keepdim)
    return values, _index_of_extreme(x, dim, keepdim, largest)


def max_along(x: torch.Tensor, dim: int, keepdim: bool = False) -> Any:
    return _extreme_and_index(x, dim, keepdim, largest=True)


def min_along(x: torch.Tensor, dim: int, keepdim: bool = False) -> Any:
    return _extreme_and_index(x, dim, keepdim, largest=False)


def floor_divide_integers(x: torch.Tensor, y: Any, *, rounding_mode: str | None = None) -> Any:
    """Integer division rounded down. torch-mlir computes it in floating point, which
    is wrong for integers beyond 2^53 (int64 max // 3 was off by 170): truncated
    division, less one where the remainder is nonzero and the signs differ."""
    if rounding_mode != "floor" or x.is_floating_point() or x.is_complex():
        return NotImplemented
    if not isinstance(y, torch.Tensor):
        if isinstance(y, float):
            return NotImplemented
        y = torch.full_like(x, y)
    if y.is_floating_point():
        return NotImplemented
    quotient = aten.div.Tensor_mode(x, y, rounding_mode="trunc")
    remainder_ = torch.fmod(x, y)
    inexact_negative = (remainder_ != 0) & ((remainder_ < 0) != (y < 0))
    return quotient - inexact_negative.to(quotient.dtype)


def shift_right_unsigned(x: torch.Tensor, y: Any) -> Any:
    """``>>`` of unsigned integers is logical: torch-mlir's conversion shifts
    arithmetically, so uint8 255 >> 1 gave 255 instead of 127. A floor division
    by 2^y, and 0 for shifts of the whole width, as torch gives."""
    if x.dtype not in (torch.uint8, torch.uint16, torch.uint32, torch.uint64):
        return NotImplemented
    bits = torch.iinfo(x.dtype).bits
    # In int64: torch-mlir cannot make constants of unsigned types.
    wide = x.to(torch.int64)
    shift = y.to(torch.int64) if isinstance(y, torch.Tensor) else torch.full_like(wide, y)
    in_range = shift < bits
    power = torch.bitwise_left_shift(torch.ones_like(wide), torch.where(in_range, shift, 0))
    quotient = torch.where(in_range, torch.div(wide, power, rounding_mode="trunc"), 0)
    return quotient.to(x.dtype)


def _with_number_as_tensor(op: Any) -> Callable[..., Any]:
    """``op`` (a Tensor-Tensor overload) for its Scalar overload, which torch-mlir does not
    convert: the number as a tensor of the first operand's shape and type."""

    def decomposition(x: torch.Tensor, y: Any) -> Any:
        return op(x, torch.full_like(x, y, dtype=torch.result_type(x, y)))

    return decomposition


# Set while an index decomposition calls the op it decomposes, which comes
# back through the table (tracing runs on one thread).
_wrapping_indices = False


def _wrapped_indices(x: torch.Tensor, indices: Sequence[Any]) -> list[Any]:
    """Each integer index tensor with its negative entries counted from the end of its
    dimension, as torch counts them."""
    wrapped = []
    for dimension, index in enumerate(indices):
        if index is not None and not index.is_floating_point() and index.dtype != torch.bool:
            index = torch.where(index < 0, index + x.shape[dimension], index)
        wrapped.append(index)
    return wrapped


def _with_wrapped_indices(call: Callable[[], Any]) -> Any:
    """``call()``, which calls the op being decomposed with wrapped indices; that call,
    coming back through the table, is left to the op (``NotImplemented``)."""
    global _wrapping_indices
    if _wrapping_indices:
        return NotImplemented
    _wrapping_indices = True
    try:
        return call()
    finally:
        _wrapping_indices = False


def index(x: torch.Tensor, indices: Sequence[Any]) -> Any:
    """``x[i]`` with negative indices: torch-mlir converts it to a gather, whose indices
    are clamped, not counted from the end (x[tensor([-1])] gave x[0], a silent
    wrong answer)."""
    return _with_wrapped_indices(lambda: aten.index.Tensor(x, _wrapped_indices(x, indices)))


def index_put(
    x: torch.Tensor, indices: Sequence[Any], values: torch.Tensor, accumulate: bool = False
) -> Any:
    """``x[i] = v`` with negative indices, as ``index``."""
    return _with_wrapped_indices(
        lambda: aten.index_put.default(x, _wrapped_indices(x, indices), values, accumulate)
    )


def avg_pool2d_with_divisor(
    x: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    """``avg_pool2d`` with ``divisor_override``, which torch-mlir does not convert: the
    sum over each window (the mean with padding counted, times the window's size)
    over the divisor. With ``ceil_mode`` windows may overhang, which the mean
    does not count: left to torch-mlir."""
    if divisor_override is None or ceil_mode:
        return NotImplemented
    kernel = list(kernel_size) * (2 // len(kernel_size))
    mean = aten.avg_pool2d.default(x, kernel_size, stride, padding, False, True, None)
    return mean * (kernel[0] * kernel[1] / divisor_override)


def vector_norm(
    x: torch.Tensor,
    ord: float = 2,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> Any:
    """A float16 or bfloat16 norm, computed in float32 as torch computes it: torch-mlir
    sums the squares in float16, where 64 values of 100 overflow to inf (torch: 800)."""
    if dtype is not None or x.dtype not in _HALF_TYPES:
        return NotImplemented
    return torch.linalg.vector_norm(x.float(), ord, dim, keepdim).to(x.dtype)


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
            aten.bitwise_right_shift.Tensor: shift_right_unsigned,
            # x >> y and x << y by tensors: the named ops, which torch-mlir converts.
            aten.__rshift__.Tensor: lambda x, y: aten.bitwise_right_shift.Tensor(x, y),
            aten.__lshift__.Tensor: lambda x, y: aten.bitwise_left_shift.Tensor(x, y),
            aten.argmax.default: argmax,
            aten.argmin.default: argmin,
            aten.max.dim: max_along,
            aten.min.dim: min_along,
            aten.div.Tensor_mode: floor_divide_integers,
            aten.bitwise_and.Scalar: _with_number_as_tensor(aten.bitwise_and.Tensor),
            aten.bitwise_or.Scalar: _with_number_as_tensor(aten.bitwise_or.Tensor),
            aten.bitwise_xor.Scalar: _with_number_as_tensor(aten.bitwise_xor.Tensor),
            aten.fmod.Scalar: _with_number_as_tensor(aten.fmod.Tensor),
            aten.index.Tensor: index,
            aten.index_put.default: index_put,
            aten.avg_pool2d.default: avg_pool2d_with_divisor,
            aten.linalg_vector_norm.default: vector_norm,
        }
    )
    # torch-mlir converts upsample_nearest with output sizes only, not with
    # scale factors (F.interpolate(scale_factor=2)): torch's decomposition
    # computes the sizes.
    for rank in (1, 2, 3):
        op = getattr(aten, f"upsample_nearest{rank}d").vec
        table[op] = torch_table[op]
    # Ops torch-mlir has no conversion of, whose torch decompositions it converts.
    for op in (aten.addmv.default, aten.bucketize.Tensor):
        table[op] = torch_table[op]
    return table
