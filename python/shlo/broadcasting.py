"""XLA's broadcasting semantics on shapes: the rules behind ``shlo-legalize-broadcasts``.

Two forms, which combine (see docs/broadcasting.md):

- "InDim": ``broadcast_dimensions`` maps each dimension of the lower-rank
  operand, in order, to a dimension of the higher-rank one. The tuple must be
  strictly increasing; unmapped dimensions get size 1. Without it, a scalar
  maps to nothing and any other lower-rank operand is aligned to the trailing
  dimensions (CHLO's default, numpy's rule).
- Degenerate dimensions: once ranks agree, two sizes are compatible when they
  are equal or one of them is 1; the result takes the other one.

Shapes are sequences of sizes, ``None`` (or a negative size, MLIR's dynamic
marker) meaning unknown until run time. A dimension with an unknown size is
accepted here and checked at run time by the pass.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

Dim = int | None
Shape = tuple[Dim, ...]


class BroadcastError(ValueError):
    """Shapes (and broadcast dimensions) that do not broadcast; the message says why."""


def format_shape(shape: Sequence[Dim]) -> str:
    """``(7,2,5)`` as in XLA's documentation; ``?`` for unknown sizes, ``()`` for a scalar."""
    return "(" + ",".join("?" if size is None else str(size) for size in shape) + ")"


@dataclass(frozen=True)
class BroadcastPlan:
    """How operands broadcast to a common shape.

    ``operand_dims[k][i]`` is the result dimension that dimension ``i`` of
    operand ``k`` maps to (the ``broadcast_dimensions`` of its
    ``broadcast_in_dim``).
    """

    shape: Shape
    operand_dims: tuple[tuple[int, ...], ...]


def _normalize(shape: Sequence[int | None]) -> Shape:
    return tuple(None if size is None or size < 0 else int(size) for size in shape)


def _combine(
    shapes: Sequence[Shape],
    dims: Sequence[tuple[int, ...]],
    rank: int,
    names: Sequence[str],
    header: str,
) -> Shape:
    """The degenerate-dimension rule over operands already mapped to ``rank`` dimensions."""
    result: list[Dim] = [1] * rank
    # The operand (and its dimension) that fixed each static result size.
    source: list[tuple[int, int] | None] = [None] * rank
    dynamic = [False] * rank
    for k, (shape, mapping) in enumerate(zip(shapes, dims)):
        for i, (size, d) in enumerate(zip(shape, mapping)):
            if size is None:
                dynamic[d] = True
            elif size != 1:
                if source[d] is None:
                    result[d], source[d] = size, (k, i)
                elif result[d] != size:
                    first, first_dim = source[d]  # type: ignore[misc]
                    raise BroadcastError(
                        f"{header}: sizes {result[d]} ({names[first]} dimension {first_dim}) "
                        f"and {size} ({names[k]} dimension {i}) must be equal or 1"
                    )
    # An unknown size only decides the result when no static size other than 1 does.
    return tuple(None if dynamic[d] and source[d] is None else result[d] for d in range(rank))


def describe(
    shapes: Sequence[Sequence[Dim]], broadcast_dimensions: Sequence[int] | None = None
) -> str:
    """The start of every error message.

    ``cannot broadcast (3) and (2,4) with broadcast_dimensions (1)``
    """
    shown = [format_shape(shape) for shape in shapes]
    text = "cannot broadcast " + (
        " and ".join(shown) if len(shown) <= 2 else ", ".join(shown[:-1]) + " and " + shown[-1]
    )
    if broadcast_dimensions is not None:
        text += f" with broadcast_dimensions {format_shape(tuple(broadcast_dimensions))}"
    return text


@functools.lru_cache(maxsize=4096)
def _plan_binary(
    lhs: Shape, rhs: Shape, broadcast_dimensions: tuple[int, ...] | None
) -> BroadcastPlan:
    header = describe((lhs, rhs), broadcast_dimensions)
    names = ("lhs", "rhs")
    if len(lhs) == len(rhs):
        identity = tuple(range(len(lhs)))
        if broadcast_dimensions not in (None, (), identity):
            raise BroadcastError(
                f"{header}: operands of the same rank need no broadcast_dimensions "
                f"or the identity {format_shape(identity)}"
            )
        shape = _combine((lhs, rhs), (identity, identity), len(lhs), names, header)
        return BroadcastPlan(shape, (identity, identity))
    low_is_lhs = len(lhs) < len(rhs)
    low, high = (lhs, rhs) if low_is_lhs else (rhs, lhs)
    low_name = names[0] if low_is_lhs else names[1]
    if broadcast_dimensions is None or (not broadcast_dimensions and not low):
        mapping = tuple(range(len(high) - len(low), len(high)))
    else:
        mapping = broadcast_dimensions
        if len(mapping) != len(low):
            raise BroadcastError(
                f"{header}: broadcast_dimensions must have one entry per dimension "
                f"of the lower-rank {low_name} {format_shape(low)}, not {len(mapping)}"
            )
        for i, d in enumerate(mapping):
            if not 0 <= d < len(high):
                raise BroadcastError(
                    f"{header}: {low_name} dimension {i} maps to dimension {d}, "
                    f"out of range for rank {len(high)}"
                )
            if i and d <= mapping[i - 1]:
                raise BroadcastError(
                    f"{header}: broadcast_dimensions must be strictly increasing, "
                    f"but {low_name} dimension {i} maps to {d} after dimension {i - 1} "
                    f"maps to {mapping[i - 1]}"
                )
    identity = tuple(range(len(high)))
    operand_dims = (mapping, identity) if low_is_lhs else (identity, mapping)
    shape = _combine((lhs, rhs), operand_dims, len(high), names, header)
    return BroadcastPlan(shape, operand_dims)


def plan_broadcast(
    lhs_shape: Sequence[int | None],
    rhs_shape: Sequence[int | None],
    broadcast_dimensions: Sequence[int] | None = None,
) -> BroadcastPlan:
    """The result shape and each operand's dimension mapping, or ``BroadcastError``."""
    dims = None if broadcast_dimensions is None else tuple(int(d) for d in broadcast_dimensions)
    return _plan_binary(_normalize(lhs_shape), _normalize(rhs_shape), dims)


@functools.lru_cache(maxsize=4096)
def _plan_numpy(shapes: tuple[Shape, ...], names: tuple[str, ...]) -> BroadcastPlan:
    rank = max(len(shape) for shape in shapes)
    header = describe(shapes)
    dims = tuple(tuple(range(rank - len(shape), rank)) for shape in shapes)
    return BroadcastPlan(_combine(shapes, dims, rank, names, header), dims)


def plan_numpy_broadcast(
    shapes: Sequence[Sequence[int | None]], names: Sequence[str]
) -> BroadcastPlan:
    """numpy's rule (trailing alignment) over any number of operands, e.g. a select's three."""
    return _plan_numpy(tuple(_normalize(shape) for shape in shapes), tuple(names))


def broadcast_shapes(
    lhs_shape: Sequence[int | None],
    rhs_shape: Sequence[int | None],
    broadcast_dimensions: Sequence[int] | None = None,
) -> tuple[int | None, ...]:
    """The shape XLA's broadcasting gives two operands, or ``BroadcastError``.

    ``broadcast_dimensions`` maps the lower-rank operand's dimensions to the
    higher-rank one's (strictly increasing); without it a lower-rank operand
    is aligned to the trailing dimensions. ``None`` sizes are unknown and stay
    unknown unless the other operand fixes them. The error message is the one
    ``shlo-legalize-broadcasts`` reports.

    >>> broadcast_shapes((1, 2), (4, 3, 1), broadcast_dimensions=(1, 2))
    (4, 3, 2)
    """
    return plan_broadcast(lhs_shape, rhs_shape, broadcast_dimensions).shape
