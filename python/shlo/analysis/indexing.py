"""Indexing analysis: symbolic maps between the indices of StableHLO ops' outputs and inputs.

XLA's indexing analysis on StableHLO op names, built on MLIR's ``AffineMap``
from the bindings (see docs/indexing.md). An ``IndexingMap`` is an affine map
``(d...)[s...] -> (...)`` plus a domain: an inclusive range per dimension
``d_i`` and per symbol ``s_j``, and constraints ``expr in [lo, hi]``. The
dimensions index one tensor; each point of the domain maps to one element of
the other tensor, and the symbols range over everything that one element
needs (a reduced dimension, a window, a contraction).

- ``output_to_input(op, operand_index, result_index=0)``: for each index of
  the result, the elements of the operand it reads.
- ``input_to_output(op, operand_index, result_index=0)``: for each index of
  the operand, the elements of the result that read it.
- ``fusion_output_to_input(func_op, parameter_index)``: the distinct maps
  through which a function's result reads one of its arguments, composed
  over every path and simplified.

Both op functions return ``None`` for operand-less ops (constant, iota) and
raise ``NotImplementedError`` for ops without a rule. Shapes must be static.

Runtime values: the symbols of ``gather``'s map to its operand (and of
``dynamic_slice`` / ``dynamic_update_slice``) stand for start indices read at
run time, clamped as the op clamps them; their ranges are the clamped
ranges, so the map over-approximates the elements one output reads over all
index values and is exact once the symbols are set to the actual starts.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ir
from shlo.analysis import affine
from shlo.analysis.affine import Expr, Interval, Simplifier, const, dim, sym

__all__ = [
    "IndexingMap",
    "fusion_output_to_input",
    "input_to_output",
    "output_to_input",
    "parse_indexing_map",
    "supported_ops",
]


def _interval(pair: Sequence[int]) -> Interval:
    lo, hi = pair
    return int(lo), int(hi)


def _is_empty(interval: Interval) -> bool:
    return interval[0] > interval[1]


class IndexingMap:
    """An affine map with a domain: dim and symbol ranges plus constraints on expressions.

    ``IndexingMap(affine_map, dim_ranges, symbol_ranges=(), constraints=None)``:
    ``affine_map`` is an ``ir.AffineMap`` (or its text, parsed in the current
    or given context), ranges are inclusive ``(lo, hi)`` pairs and
    ``constraints`` maps ``ir.AffineExpr`` (or text) to ``(lo, hi)``.
    """

    __slots__ = (
        "_affine_map",
        "_compiled",
        "_constraints",
        "_context",
        "_dim_ranges",
        "_mlir_constraints",
        "_num_dims",
        "_num_symbols",
        "_results",
        "_symbol_ranges",
    )

    def __init__(
        self,
        affine_map: ir.AffineMap | str,
        dim_ranges: Iterable[Sequence[int]],
        symbol_ranges: Iterable[Sequence[int]] = (),
        constraints: Mapping[Any, Sequence[int]] | None = None,
        *,
        context: ir.Context | None = None,
    ) -> None:
        if isinstance(affine_map, str):
            affine_map = _parse_affine_map(affine_map, context)
        if not isinstance(affine_map, ir.AffineMap):
            raise TypeError(f"expected an ir.AffineMap, got {type(affine_map).__name__}")
        self._context = affine_map.context
        self._num_dims = affine_map.n_dims
        self._num_symbols = affine_map.n_symbols
        self._results = tuple(affine.from_mlir(e) for e in affine_map.results)
        self._dim_ranges = tuple(_interval(r) for r in dim_ranges)
        self._symbol_ranges = tuple(_interval(r) for r in symbol_ranges)
        if len(self._dim_ranges) != self._num_dims:
            raise ValueError(f"{self._num_dims} dims but {len(self._dim_ranges)} dim ranges")
        if len(self._symbol_ranges) != self._num_symbols:
            raise ValueError(
                f"{self._num_symbols} symbols but {len(self._symbol_ranges)} symbol ranges"
            )
        self._constraints: dict[Expr, Interval] = {}
        for key, bound in (constraints or {}).items():
            if isinstance(key, str):
                key = _parse_expr(key, self._num_dims, self._num_symbols, self._context)
            expr = affine.from_mlir(key)
            self._constraints[expr] = _intersect(self._constraints.get(expr), _interval(bound))
        self._affine_map: ir.AffineMap | None = affine_map
        self._mlir_constraints: dict[ir.AffineExpr, Interval] | None = None
        self._compiled: list[Callable[[Sequence[int], Sequence[int]], int]] | None = None

    @classmethod
    def _build(
        cls,
        context: ir.Context,
        num_dims: int,
        num_symbols: int,
        results: Sequence[Expr],
        dim_ranges: Sequence[Interval],
        symbol_ranges: Sequence[Interval] = (),
        constraints: Mapping[Expr, Interval] | None = None,
    ) -> IndexingMap:
        """A map from tuple expressions, stored as MLIR would store them."""
        self = cls.__new__(cls)
        self._context = context
        self._num_dims = num_dims
        self._num_symbols = num_symbols
        self._results = tuple(affine.canonical(e, context) for e in results)
        self._dim_ranges = tuple(dim_ranges)
        self._symbol_ranges = tuple(symbol_ranges)
        self._constraints = {}
        for expr, bound in (constraints or {}).items():
            key = affine.canonical(expr, context)
            self._constraints[key] = _intersect(self._constraints.get(key), bound)
        self._affine_map = None
        self._mlir_constraints = None
        self._compiled = None
        return self

    @classmethod
    def identity(cls, shape: Sequence[int], context: ir.Context) -> IndexingMap:
        """``(d0, ..., dn) -> (d0, ..., dn)`` over ``shape``."""
        rank = len(shape)
        return cls._build(
            context, rank, 0, [dim(i) for i in range(rank)], [(0, n - 1) for n in shape]
        )

    # -- the interface ------------------------------------------------------

    @property
    def affine_map(self) -> ir.AffineMap:
        if self._affine_map is None:
            exprs = [affine.to_mlir(e, self._context) for e in self._results]
            self._affine_map = ir.AffineMap.get(
                self._num_dims, self._num_symbols, exprs, self._context
            )
        return self._affine_map

    @property
    def context(self) -> ir.Context:
        return self._context

    @property
    def num_dims(self) -> int:
        return self._num_dims

    @property
    def num_symbols(self) -> int:
        return self._num_symbols

    @property
    def num_results(self) -> int:
        return len(self._results)

    @property
    def dim_ranges(self) -> list[Interval]:
        return list(self._dim_ranges)

    @property
    def symbol_ranges(self) -> list[Interval]:
        return list(self._symbol_ranges)

    @property
    def constraints(self) -> dict[ir.AffineExpr, Interval]:
        if self._mlir_constraints is None:
            self._mlir_constraints = {
                affine.to_mlir(e, self._context): r for e, r in self._constraints.items()
            }
        return dict(self._mlir_constraints)

    @property
    def results(self) -> tuple[Expr, ...]:
        """The result expressions in tuple form (see ``shlo.analysis.affine``)."""
        return self._results

    @property
    def constraint_exprs(self) -> dict[Expr, Interval]:
        """The constraints in tuple form."""
        return dict(self._constraints)

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> tuple[int, ...]:
        """The indices at ``dims`` and ``symbols`` (the domain is not checked)."""
        if len(dims) != self._num_dims or len(symbols) != self._num_symbols:
            raise ValueError(
                f"expected {self._num_dims} dims and {self._num_symbols} symbols, "
                f"got {len(dims)} and {len(symbols)}"
            )
        if self._compiled is None:
            self._compiled = [affine.compile_expr(e) for e in self._results]
        return tuple(f(dims, symbols) for f in self._compiled)

    def contains(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> bool:
        """True when ``(dims, symbols)`` is in the ranges and satisfies every constraint."""
        if not all(lo <= v <= hi for v, (lo, hi) in zip(dims, self._dim_ranges, strict=True)):
            return False
        if not all(lo <= v <= hi for v, (lo, hi) in zip(symbols, self._symbol_ranges, strict=True)):
            return False
        return all(
            lo <= affine.evaluate(e, dims, symbols) <= hi
            for e, (lo, hi) in self._constraints.items()
        )

    def points(self) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Every ``(dims, symbols)`` of the domain, by enumeration (small domains only)."""
        functions = [(affine.compile_expr(e), lo, hi) for e, (lo, hi) in self._constraints.items()]
        dim_box = affine.interval_box(self._dim_ranges)
        symbol_box = affine.interval_box(self._symbol_ranges)
        for dims in itertools.product(*dim_box):
            for symbols in itertools.product(*symbol_box):
                if all(lo <= f(dims, symbols) <= hi for f, lo, hi in functions):
                    yield dims, symbols

    def is_known_empty(self) -> bool:
        """True when the domain is provably empty: an empty range or an unsatisfiable constraint."""
        if any(_is_empty(r) for r in self._dim_ranges + self._symbol_ranges):
            return True
        simplifier = Simplifier(self._dim_ranges, self._symbol_ranges)
        for expr, (lo, hi) in self._constraints.items():
            low, high = simplifier.range_of(expr)
            if high < lo or low > hi:
                return True
        return False

    def simplify(self) -> IndexingMap:
        """Simplify results and constraints with the ranges; drop unused symbols."""
        dim_ranges = list(self._dim_ranges)
        symbol_ranges = list(self._symbol_ranges)
        results = list(self._results)
        constraints = dict(self._constraints)
        # Constraints on single variables become ranges, which may simplify other
        # constraints or fix a symbol: iterate a few times.
        for _ in range(4):
            results, constraints = _substitute_fixed_symbols(results, constraints, symbol_ranges)
            constraints, changed = _simplify_constraints(constraints, dim_ranges, symbol_ranges)
            if not changed:
                break
        simplifier = Simplifier(dim_ranges, symbol_ranges, constraints)
        results = [simplifier.simplify(e) for e in results]
        return _drop_unused_symbols(
            self._context, self._num_dims, results, dim_ranges, symbol_ranges, constraints
        )

    def _is_identity(self) -> bool:
        return (
            self._num_symbols == 0
            and not self._constraints
            and self._results == tuple(dim(i) for i in range(self._num_dims))
        )

    def _results_within(self, bounds: Sequence[Interval]) -> bool:
        """Whether every result lies within its bound wherever the map is defined."""
        simplifier = Simplifier(self._dim_ranges, self._symbol_ranges, self._constraints)
        for expr, (lo, hi) in zip(self._results, bounds, strict=True):
            low, high = simplifier.range_of(expr)
            if low < lo or high > hi:
                return False
        return True

    def compose(self, producer: IndexingMap) -> IndexingMap:
        """``producer`` after ``self``: ``self`` maps X to Y, ``producer`` Y to Z; returns X to Z.

        The symbols are ``self``'s, then ``producer``'s. ``producer``'s dim
        ranges become constraints on ``self``'s results. The result is simplified.
        """
        if producer.num_dims != self.num_results:
            raise ValueError(
                f"cannot compose: {self.num_results} results into {producer.num_dims} dims"
            )
        if producer._is_identity() and self._results_within(producer._dim_ranges):
            # An elementwise op's map adds only constraints the ranges already imply.
            return self
        shifted = [sym(self._num_symbols + j) for j in range(producer.num_symbols)]

        def into(expr: Expr) -> Expr:
            return affine.substitute(expr, self._results, shifted)

        constraints = dict(self._constraints)
        for expr, bound in producer._constraints.items():
            key = into(expr)
            constraints[key] = _intersect(constraints.get(key), bound)
        for expr, bound in zip(self._results, producer._dim_ranges, strict=True):
            constraints[expr] = _intersect(constraints.get(expr), bound)
        composed = IndexingMap._build(
            self._context,
            self._num_dims,
            self._num_symbols + producer.num_symbols,
            [into(e) for e in producer._results],
            self._dim_ranges,
            self._symbol_ranges + producer._symbol_ranges,
            constraints,
        )
        return composed.simplify()

    # -- comparison and printing -------------------------------------------

    def _key(self) -> tuple:
        return (
            self._num_dims,
            self._num_symbols,
            self._results,
            self._dim_ranges,
            self._symbol_ranges,
            frozenset(self._constraints.items()),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexingMap):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        lines = [str(self.affine_map), "domain:"]
        lines += [f"d{i} in [{lo}, {hi}]" for i, (lo, hi) in enumerate(self._dim_ranges)]
        lines += [f"s{j} in [{lo}, {hi}]" for j, (lo, hi) in enumerate(self._symbol_ranges)]
        lines += sorted(f"{expr} in [{lo}, {hi}]" for expr, (lo, hi) in self.constraints.items())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"IndexingMap({str(self)!r})"


def _intersect(current: Interval | None, bound: Interval) -> Interval:
    if current is None:
        return bound
    return max(current[0], bound[0]), min(current[1], bound[1])


def _variable_bound(form: affine.Linear, bound: Interval) -> tuple[Expr, Interval] | None:
    """``k*v + c in [lo, hi]`` as a range of the dim or symbol ``v``, when ``form`` is that."""
    if len(form.terms) != 1:
        return None
    ((variable, k),) = form.terms.items()
    if variable[0] not in ("d", "s"):
        return None
    lo, hi = bound[0] - form.constant, bound[1] - form.constant
    if k < 0:
        k, lo, hi = -k, -hi, -lo
    return variable, (-(-lo // k), hi // k)


def _substitute_fixed_symbols(
    results: list[Expr], constraints: dict[Expr, Interval], symbol_ranges: list[Interval]
) -> tuple[list[Expr], dict[Expr, Interval]]:
    """Replace each symbol whose range is one value by that value (it is then unused)."""
    fixed = {j: lo for j, (lo, hi) in enumerate(symbol_ranges) if lo == hi}
    if not fixed:
        return results, constraints
    replacement = [const(fixed[j]) if j in fixed else sym(j) for j in range(len(symbol_ranges))]

    def fix(expr: Expr) -> Expr:
        return affine.substitute(expr, None, replacement)

    updated: dict[Expr, Interval] = {}
    for expr, bound in constraints.items():
        key = fix(expr)
        updated[key] = _intersect(updated.get(key), bound)
    return [fix(e) for e in results], updated


def _simplify_constraints(
    constraints: Mapping[Expr, Interval],
    dim_ranges: list[Interval],
    symbol_ranges: list[Interval],
) -> tuple[dict[Expr, Interval], bool]:
    """Simplified constraints; those on one variable tighten ``dim_ranges``/``symbol_ranges``.

    A constraint is simplified with the ranges only, never with itself.
    Returns the new constraints and whether a range changed.
    """
    simplifier = Simplifier(dim_ranges, symbol_ranges)
    result: dict[Expr, Interval] = {}
    changed = False
    for expr, bound in constraints.items():
        form = simplifier.linear(expr)
        single = _variable_bound(form, bound)
        if single is not None:
            (kind, position), (lo, hi) = single
            ranges = dim_ranges if kind == "d" else symbol_ranges
            tightened = _intersect(ranges[position], (lo, hi))
            if tightened != ranges[position]:
                ranges[position] = tightened
                changed = True
            continue
        low, high = simplifier.linear_range(form)
        if bound[0] <= low and high <= bound[1] and low <= high:
            continue  # always true on the ranges
        key = form.to_expr()
        if form.is_constant() and bound[0] <= form.constant <= bound[1]:
            continue
        result[key] = _intersect(result.get(key), bound)
    return result, changed


def _drop_unused_symbols(
    context: ir.Context,
    num_dims: int,
    results: Sequence[Expr],
    dim_ranges: Sequence[Interval],
    symbol_ranges: Sequence[Interval],
    constraints: Mapping[Expr, Interval],
) -> IndexingMap:
    used: set[int] = set()
    for expr in [*results, *constraints]:
        used |= affine.used(expr, "s")
    # A symbol with an empty range keeps the map known-empty: never drop it.
    keep = [j for j, r in enumerate(symbol_ranges) if j in used or _is_empty(r)]
    renumber = {old: sym(new) for new, old in enumerate(keep)}
    replacement = [renumber.get(j, const(0)) for j in range(len(symbol_ranges))]

    def rename(expr: Expr) -> Expr:
        return affine.substitute(expr, None, replacement)

    return IndexingMap._build(
        context,
        num_dims,
        len(keep),
        [rename(e) for e in results],
        list(dim_ranges),
        [symbol_ranges[j] for j in keep],
        {rename(e): r for e, r in constraints.items()},
    )


# ---------------------------------------------------------------------------
# Parsing the textual form.


def _context_or_current(context: ir.Context | None) -> ir.Context:
    if context is not None:
        return context
    current = ir.Context.current
    if current is None:
        raise ValueError("no MLIR context: pass context= or use `with context:`")
    return current


def _parse_affine_map(text: str, context: ir.Context | None) -> ir.AffineMap:
    context = _context_or_current(context)
    attr = ir.Attribute.parse(f"affine_map<{text.strip()}>", context)
    return ir.AffineMapAttr(attr).value


def _header(num_dims: int, num_symbols: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    symbols = ", ".join(f"s{j}" for j in range(num_symbols))
    return f"({dims})" + (f"[{symbols}]" if num_symbols else "")


def _parse_expr(
    text: str, num_dims: int, num_symbols: int, context: ir.Context | None
) -> ir.AffineExpr:
    parsed = _parse_affine_map(f"{_header(num_dims, num_symbols)} -> ({text})", context)
    return parsed.results[0]


_RANGE = re.compile(r"^(.*\S)\s+in\s+\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]$")


def parse_indexing_map(text: str, context: ir.Context | None = None) -> IndexingMap:
    """Read the textual form that ``str(IndexingMap)`` writes (trailing commas are accepted)."""
    lines = [line.strip().rstrip(",") for line in text.strip().splitlines() if line.strip()]
    if len(lines) < 2 or lines[1] != "domain:":
        raise ValueError("expected '<affine map>' then 'domain:'")
    affine_map = _parse_affine_map(lines[0], context)
    ranges: dict[str, Interval] = {}
    constraints: dict[ir.AffineExpr, Interval] = {}
    for line in lines[2:]:
        match = _RANGE.match(line)
        if match is None:
            raise ValueError(f"expected '<expr> in [lo, hi]', got '{line}'")
        name, lo, hi = match.group(1), int(match.group(2)), int(match.group(3))
        if re.fullmatch(r"[ds]\d+", name):
            ranges[name] = (lo, hi)
        else:
            expr = _parse_expr(name, affine_map.n_dims, affine_map.n_symbols, affine_map.context)
            constraints[expr] = (lo, hi)
    dim_ranges = [ranges[f"d{i}"] for i in range(affine_map.n_dims)]
    symbol_ranges = [ranges[f"s{j}"] for j in range(affine_map.n_symbols)]
    return IndexingMap(affine_map, dim_ranges, symbol_ranges, constraints)


# ---------------------------------------------------------------------------
# Per-op rules.

# Ops whose result element i reads element i of every operand (scalar operands: element ()).
ELEMENTWISE_OPS = frozenset(
    "stablehlo." + name
    for name in (
        "abs add and atan2 cbrt ceil clamp compare complex convert cosine "
        "count_leading_zeros divide exponential exponential_minus_one floor imag "
        "is_finite log log_plus_one logistic map maximum minimum multiply negate not or "
        "popcnt power real reduce_precision remainder round_nearest_afz "
        "round_nearest_even rsqrt select shift_left shift_right_arithmetic "
        "shift_right_logical sign sine sqrt subtract tan tanh xor uniform_dequantize "
        "uniform_quantize"
    ).split()
)
OPERANDLESS_OPS = frozenset({"stablehlo.constant", "stablehlo.iota"})


class _Op:
    """The pieces of an op the rules need: name, static shapes, attributes."""

    def __init__(self, op: ir.Operation | ir.OpView) -> None:
        self.op = op.operation if isinstance(op, ir.OpView) else op
        self.name = self.op.name
        self.context = self.op.context
        self.operand_shapes = [_static_shape(v, self.name) for v in self.op.operands]
        self.result_shapes = [_static_shape(v, self.name) for v in self.op.results]

    def ints(self, name: str, default: Sequence[int] | None = None) -> list[int]:
        if name not in self.op.attributes:
            if default is None:
                raise ValueError(f"{self.name}: missing attribute '{name}'")
            return list(default)
        attr = self.op.attributes[name]
        if isinstance(attr, ir.DenseI64ArrayAttr):
            return list(attr)
        if isinstance(attr, ir.IntegerAttr):
            return [attr.value]
        return [int(v) for v in np.asarray(attr).ravel()]  # DenseIntElementsAttr

    def int(self, name: str) -> int:
        return int(ir.IntegerAttr(self.op.attributes[name]).value)

    def fields(self, name: str) -> dict[str, Any]:
        """The fields of a ``#stablehlo.dot<...>`` / ``#stablehlo.gather<...>`` attribute."""
        values: dict[str, Any] = {}
        for key, raw in _FIELD.findall(str(self.op.attributes[name])):
            values[key] = (
                [int(v) for v in raw[1:-1].split(",") if v.strip()]
                if raw.startswith("[")
                else int(raw)
            )
        return values

    def build(
        self,
        num_dims: int,
        num_symbols: int,
        results: Sequence[Expr],
        dim_ranges: Sequence[Interval],
        symbol_ranges: Sequence[Interval] = (),
        constraints: Mapping[Expr, Interval] | None = None,
    ) -> IndexingMap:
        built = IndexingMap._build(
            self.context, num_dims, num_symbols, results, dim_ranges, symbol_ranges, constraints
        )
        return built.simplify()


_FIELD = re.compile(r"(\w+)\s*=\s*(\[[^\]]*\]|-?\d+)")


def _static_shape(value: ir.Value, name: str) -> list[int]:
    try:
        shaped = ir.RankedTensorType(value.type)
    except ValueError:
        raise ValueError(f"{name}: indexing maps need ranked tensors, got {value.type}") from None
    if not shaped.has_static_shape:
        raise ValueError(f"{name}: indexing maps need static shapes, got {value.type}")
    return list(shaped.shape)


def _box(shape: Sequence[int]) -> list[Interval]:
    return [(0, n - 1) for n in shape]


def _dims(rank: int) -> list[Expr]:
    return [dim(i) for i in range(rank)]


def _to_scalar(op: _Op, domain: Sequence[int]) -> IndexingMap:
    """``(d...) -> ()``: every point of ``domain`` reads the single element of a scalar."""
    return op.build(len(domain), 0, [], _box(domain))


def _from_scalar(op: _Op, target: Sequence[int]) -> IndexingMap:
    """``()[s...] -> (s...)``: the single element of a scalar reaches all of ``target``."""
    rank = len(target)
    return op.build(0, rank, [sym(j) for j in range(rank)], [], _box(target))


# Each rule returns the map for (operand_index, result_index) in its direction.


def _elementwise(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    shape = op.result_shapes[result]
    if len(op.operand_shapes[operand]) == 0 and shape:
        return _from_scalar(op, shape) if forward else _to_scalar(op, shape)
    return op.build(len(shape), 0, _dims(len(shape)), _box(shape))


def _broadcast_in_dim(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    in_shape, out_shape = op.operand_shapes[0], op.result_shapes[0]
    if op.name == "stablehlo.broadcast":
        prefix = len(out_shape) - len(in_shape)
        mapping = list(range(prefix, len(out_shape)))
    else:
        mapping = op.ints("broadcast_dimensions")
    # An operand dim of size 1 broadcast to a larger result dim is always read at 0.
    expanding = [in_shape[k] == 1 and out_shape[mapping[k]] != 1 for k in range(len(in_shape))]
    if not forward:
        results = [const(0) if expanding[k] else dim(mapping[k]) for k in range(len(in_shape))]
        return op.build(len(out_shape), 0, results, _box(out_shape))
    source = {mapping[k]: k for k in range(len(in_shape)) if not expanding[k]}
    results, symbol_ranges = [], []
    for j, size in enumerate(out_shape):
        if j in source:
            results.append(dim(source[j]))
        else:
            results.append(sym(len(symbol_ranges)))
            symbol_ranges.append((0, size - 1))
    return op.build(len(in_shape), len(symbol_ranges), results, _box(in_shape), symbol_ranges)


def _transpose(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    permutation = op.ints("permutation")
    if forward:
        shape = op.operand_shapes[0]
        return op.build(len(shape), 0, [dim(p) for p in permutation], _box(shape))
    shape = op.result_shapes[0]
    inverse = [permutation.index(k) for k in range(len(permutation))]
    return op.build(len(shape), 0, [dim(i) for i in inverse], _box(shape))


def _reverse(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    shape = op.result_shapes[0]
    reversed_dims = set(op.ints("dimensions"))
    results = [
        affine.add(affine.mul(dim(i), -1), const(n - 1)) if i in reversed_dims else dim(i)
        for i, n in enumerate(shape)
    ]
    return op.build(len(shape), 0, results, _box(shape))


def _reduce(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    count = len(op.result_shapes)
    out_shape = op.result_shapes[result]
    if operand >= count:  # an init value
        return _from_scalar(op, out_shape) if forward else _to_scalar(op, out_shape)
    in_shape = op.operand_shapes[operand]
    reduced = set(op.ints("dimensions"))
    kept = [k for k in range(len(in_shape)) if k not in reduced]
    if forward:
        return op.build(len(in_shape), 0, [dim(k) for k in kept], _box(in_shape))
    results: list[Expr] = []
    symbol_ranges: list[Interval] = []
    for k, size in enumerate(in_shape):
        if k in reduced:
            results.append(sym(len(symbol_ranges)))
            symbol_ranges.append((0, size - 1))
        else:
            results.append(dim(kept.index(k)))
    return op.build(len(out_shape), len(symbol_ranges), results, _box(out_shape), symbol_ranges)


def _slice(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    starts, strides = op.ints("start_indices"), op.ints("strides")
    out_shape = op.result_shapes[0]
    if not forward:
        results = [
            affine.add(affine.mul(dim(i), stride), const(start))
            for i, (start, stride) in enumerate(zip(starts, strides, strict=True))
        ]
        return op.build(len(out_shape), 0, results, _box(out_shape))
    # Operand element d is read when start <= d <= start + (n-1)*stride and
    # (d - start) mod stride == 0; it is then element (d - start) floordiv stride.
    results, dim_ranges, constraints = [], [], {}
    for i, (start, stride, size) in enumerate(zip(starts, strides, out_shape, strict=True)):
        offset = affine.add(dim(i), const(-start))
        results.append(affine.floordiv(offset, stride))
        dim_ranges.append((start, start + (size - 1) * stride))
        if stride > 1 and size > 1:
            constraints[affine.mod(offset, stride)] = (0, 0)
    return op.build(len(out_shape), 0, results, dim_ranges, (), constraints)


def _reshape_groups(
    source: Sequence[int], target: Sequence[int]
) -> list[tuple[list[int], list[int]]]:
    """Minimal groups of non-unit dims with equal element counts, in order."""
    if 0 in source or 0 in target:
        return [(list(range(len(source))), list(range(len(target))))]
    src = [k for k, n in enumerate(source) if n != 1]
    dst = [k for k, n in enumerate(target) if n != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) and j < len(dst):
        group_src, group_dst = [src[i]], [dst[j]]
        size_src, size_dst = source[src[i]], target[dst[j]]
        i, j = i + 1, j + 1
        while size_src != size_dst:
            if size_src < size_dst:
                group_src.append(src[i])
                size_src *= source[src[i]]
                i += 1
            else:
                group_dst.append(dst[j])
                size_dst *= target[dst[j]]
                j += 1
        groups.append((group_src, group_dst))
    return groups


def _delinearize(linear: Expr, shape: Sequence[int], dims: Sequence[int]) -> dict[int, Expr]:
    """Index of each dim of ``dims`` (row-major, sizes ``shape``) for a linear index."""
    exprs: dict[int, Expr] = {}
    stride = 1
    strides = {}
    for k in reversed(dims):
        strides[k] = stride
        stride *= shape[k]
    for position, k in enumerate(dims):
        expr = linear
        if position > 0:
            expr = affine.mod(expr, strides[k] * shape[k])
        if strides[k] != 1:
            expr = affine.floordiv(expr, strides[k])
        exprs[k] = expr
    return exprs


def _linearize(shape: Sequence[int], dims: Sequence[int]) -> Expr:
    terms: list[Expr] = []
    stride = 1
    for k in reversed(dims):
        terms.append(affine.mul(dim(k), stride))
        stride *= shape[k]
    return affine.add(*reversed(terms))


def _reshape_map(op: _Op, domain: Sequence[int], target: Sequence[int]) -> IndexingMap:
    """From indices of ``domain``'s shape to indices of ``target``'s shape, row-major."""
    results: list[Expr] = [const(0)] * len(target)
    for group_domain, group_target in _reshape_groups(domain, target):
        linear = _linearize(domain, group_domain)
        for k, expr in _delinearize(linear, target, group_target).items():
            results[k] = expr
    return op.build(len(domain), 0, results, _box(domain))


def _reshape(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    in_shape, out_shape = op.operand_shapes[0], op.result_shapes[0]
    if forward:
        return _reshape_map(op, in_shape, out_shape)
    return _reshape_map(op, out_shape, in_shape)


def _bitcast_convert(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    in_shape, out_shape = op.operand_shapes[0], op.result_shapes[0]
    if len(in_shape) == len(out_shape):
        shape = in_shape if forward else out_shape
        return op.build(len(shape), 0, _dims(len(shape)), _box(shape))
    # Different widths: the narrower side has one more, innermost, dimension.
    wide, narrow = (
        (in_shape, out_shape) if len(in_shape) < len(out_shape) else (out_shape, in_shape)
    )
    from_wide = (len(in_shape) < len(out_shape)) == forward
    rank = len(wide)
    if from_wide:
        results = [*_dims(rank), sym(0)]
        return op.build(rank, 1, results, _box(wide), [(0, narrow[-1] - 1)])
    return op.build(rank + 1, 0, _dims(rank), _box(narrow))


def _concatenate(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    axis = op.int("dimension")
    offset = sum(shape[axis] for shape in op.operand_shapes[:operand])
    in_shape = op.operand_shapes[operand]
    rank = len(in_shape)
    if forward:
        results = [affine.add(dim(k), const(offset)) if k == axis else dim(k) for k in range(rank)]
        return op.build(rank, 0, results, _box(in_shape))
    results = [affine.add(dim(k), const(-offset)) if k == axis else dim(k) for k in range(rank)]
    dim_ranges = _box(op.result_shapes[0])
    dim_ranges[axis] = (offset, offset + in_shape[axis] - 1)
    return op.build(rank, 0, results, dim_ranges)


def _dot_numbers(op: _Op) -> tuple[list[int], list[int], list[int], list[int]]:
    if op.name == "stablehlo.dot":
        lhs_rank = len(op.operand_shapes[0])
        return [], [], [lhs_rank - 1], [0]
    fields = op.fields("dot_dimension_numbers")
    return (
        fields.get("lhs_batching_dimensions", []),
        fields.get("rhs_batching_dimensions", []),
        fields.get("lhs_contracting_dimensions", []),
        fields.get("rhs_contracting_dimensions", []),
    )


def _dot_general(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    lhs_batch, rhs_batch, lhs_contract, rhs_contract = _dot_numbers(op)
    lhs_shape, rhs_shape = op.operand_shapes[0], op.operand_shapes[1]
    out_shape = op.result_shapes[0]
    lhs_free = [k for k in range(len(lhs_shape)) if k not in lhs_batch + lhs_contract]
    rhs_free = [k for k in range(len(rhs_shape)) if k not in rhs_batch + rhs_contract]
    # Result dims: batch dims, then lhs free dims, then rhs free dims.
    out_of_lhs = {k: i for i, k in enumerate(lhs_batch)}
    out_of_lhs.update({k: len(lhs_batch) + i for i, k in enumerate(lhs_free)})
    out_of_rhs = {k: i for i, k in enumerate(rhs_batch)}
    out_of_rhs.update({k: len(rhs_batch) + len(lhs_free) + i for i, k in enumerate(rhs_free)})
    shape, contract, out_of = (
        (lhs_shape, lhs_contract, out_of_lhs)
        if operand == 0
        else (rhs_shape, rhs_contract, out_of_rhs)
    )
    if not forward:
        results = [
            dim(out_of[k]) if k in out_of else sym(contract.index(k)) for k in range(len(shape))
        ]
        symbol_ranges = [(0, shape[k] - 1) for k in contract]
        return op.build(len(out_shape), len(contract), results, _box(out_shape), symbol_ranges)
    to_out = {i: k for k, i in out_of.items()}
    results, symbol_ranges = [], []
    for i, size in enumerate(out_shape):
        if i in to_out:
            results.append(dim(to_out[i]))
        else:  # a free dim of the other operand
            results.append(sym(len(symbol_ranges)))
            symbol_ranges.append((0, size - 1))
    return op.build(len(shape), len(symbol_ranges), results, _box(shape), symbol_ranges)


def _pad(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    out_shape = op.result_shapes[0]
    if operand == 1:  # the padding value
        return _from_scalar(op, out_shape) if forward else _to_scalar(op, out_shape)
    in_shape = op.operand_shapes[0]
    lows, interiors = op.ints("edge_padding_low"), op.ints("interior_padding")
    rank = len(in_shape)
    # Operand element i lands at lo + i*(interior+1); keep the i that land inside the result.
    operand_ranges: list[Interval] = []
    for n, m, lo, interior in zip(in_shape, out_shape, lows, interiors, strict=True):
        step = interior + 1
        first = max(0, -(-(-lo) // step))
        last = min(n - 1, (m - 1 - lo) // step)
        operand_ranges.append((first, last))
    if forward:
        results = [
            affine.add(affine.mul(dim(k), interior + 1), const(lo))
            for k, (lo, interior) in enumerate(zip(lows, interiors, strict=True))
        ]
        return op.build(rank, 0, results, operand_ranges)
    results, dim_ranges, constraints = [], [], {}
    for k, (lo, interior, (first, last)) in enumerate(
        zip(lows, interiors, operand_ranges, strict=True)
    ):
        step = interior + 1
        offset = affine.add(dim(k), const(-lo))
        results.append(affine.floordiv(offset, step))
        dim_ranges.append((lo + first * step, lo + last * step))
        if step > 1 and last > first:
            constraints[affine.mod(offset, step)] = (0, 0)
    return op.build(rank, 0, results, dim_ranges, (), constraints)


def _window_parameters(
    op: _Op, rank: int
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    sizes = op.ints("window_dimensions")
    strides = op.ints("window_strides", [1] * rank)
    base = op.ints("base_dilations", [1] * rank)
    window = op.ints("window_dilations", [1] * rank)
    padding = op.ints("padding", [0] * (2 * rank))
    return sizes, strides, base, window, padding[0::2]


def _reduce_window(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    count = len(op.result_shapes)
    out_shape = op.result_shapes[result]
    if operand >= count:  # an init value
        return _from_scalar(op, out_shape) if forward else _to_scalar(op, out_shape)
    in_shape = op.operand_shapes[operand]
    rank = len(in_shape)
    sizes, strides, base, window, lows = _window_parameters(op, rank)
    # Result element o, window position s reads the padded, base-dilated input
    # at p = o*stride + s*window_dilation; p is operand element (p - lo)/base
    # when that is a whole number in [0, n).
    results, constraints = [], {}
    symbol_ranges = [(0, size - 1) for size in sizes]
    if forward:
        for k in range(rank):
            # o*stride = i*base + lo - s*window_dilation.
            numerator = affine.add(
                affine.mul(dim(k), base[k]), const(lows[k]), affine.mul(sym(k), -window[k])
            )
            results.append(affine.floordiv(numerator, strides[k]))
            constraints[numerator] = (0, (out_shape[k] - 1) * strides[k])
            if strides[k] > 1:
                constraints[affine.mod(numerator, strides[k])] = (0, 0)
        return op.build(rank, rank, results, _box(in_shape), symbol_ranges, constraints)
    for k in range(rank):
        padded = affine.add(
            affine.mul(dim(k), strides[k]), affine.mul(sym(k), window[k]), const(-lows[k])
        )
        results.append(affine.floordiv(padded, base[k]))
        constraints[padded] = (0, (in_shape[k] - 1) * base[k])
        if base[k] > 1:
            constraints[affine.mod(padded, base[k])] = (0, 0)
    return op.build(rank, rank, results, _box(out_shape), symbol_ranges, constraints)


def _gather_numbers(op: _Op) -> dict[str, Any]:
    fields = op.fields("dimension_numbers")
    for key in (
        "offset_dims",
        "collapsed_slice_dims",
        "operand_batching_dims",
        "start_indices_batching_dims",
        "start_index_map",
    ):
        fields.setdefault(key, [])
    fields.setdefault("index_vector_dim", 0)
    return fields


def _gather(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    numbers = _gather_numbers(op)
    operand_shape, indices_shape = op.operand_shapes[0], op.operand_shapes[1]
    out_shape = op.result_shapes[0]
    slice_sizes = op.ints("slice_sizes")
    offset_dims = numbers["offset_dims"]
    collapsed = numbers["collapsed_slice_dims"]
    operand_batching = numbers["operand_batching_dims"]
    indices_batching = numbers["start_indices_batching_dims"]
    start_map = numbers["start_index_map"]
    index_vector_dim = numbers["index_vector_dim"]
    batch_dims = [i for i in range(len(out_shape)) if i not in offset_dims]

    def batch_of_indices_dim(k: int) -> int:
        """The result dim of start_indices dim ``k`` (not the index vector dim)."""
        return batch_dims[k if k < index_vector_dim else k - 1]

    offset_operand_dims = [
        k for k in range(len(operand_shape)) if k not in collapsed and k not in operand_batching
    ]
    offset_of = dict(zip(offset_operand_dims, offset_dims, strict=True))
    if operand == 1:
        rank = len(indices_shape)
        if not forward:
            results: list[Expr] = []
            symbol_ranges: list[Interval] = []
            for k in range(rank):
                if k == index_vector_dim:
                    results.append(sym(0))
                    symbol_ranges.append((0, indices_shape[k] - 1))
                else:
                    results.append(dim(batch_of_indices_dim(k)))
            return op.build(
                len(out_shape), len(symbol_ranges), results, _box(out_shape), symbol_ranges
            )
        to_result: dict[int, Expr] = {}
        for k in range(rank):
            if k != index_vector_dim:
                to_result[batch_of_indices_dim(k)] = dim(k)
        results, symbol_ranges = [], []
        for i, size in enumerate(out_shape):
            if i in to_result:
                results.append(to_result[i])
            else:
                results.append(sym(len(symbol_ranges)))
                symbol_ranges.append((0, size - 1))
        return op.build(rank, len(symbol_ranges), results, _box(indices_shape), symbol_ranges)
    # Runtime symbols: the clamped start index along each start_index_map dim.
    runtime = {k: j for j, k in enumerate(start_map)}
    runtime_ranges = [(0, operand_shape[k] - slice_sizes[k]) for k in start_map]
    batch_source = {
        k: batch_of_indices_dim(indices_batching[i]) for i, k in enumerate(operand_batching)
    }
    if not forward:
        results = []
        for k in range(len(operand_shape)):
            if k in batch_source:
                results.append(dim(batch_source[k]))
                continue
            terms = []
            if k in runtime:
                terms.append(sym(runtime[k]))
            if k in offset_of:
                terms.append(dim(offset_of[k]))
            results.append(affine.add(*terms) if terms else const(0))
        return op.build(len(out_shape), len(start_map), results, _box(out_shape), runtime_ranges)
    # Forward: operand element d is read at offset d - start in the slice of
    # any batch element (free symbols after the runtime ones), when that
    # offset lies inside the slice.
    rank = len(operand_shape)
    constraints: dict[Expr, Interval] = {}
    dim_ranges = _box(operand_shape)
    offset_exprs: dict[int, Expr] = {}
    for k in range(rank):
        if k in batch_source:
            continue
        offset = affine.add(dim(k), affine.mul(sym(runtime[k]), -1)) if k in runtime else dim(k)
        if k in runtime:
            constraints[offset] = (0, slice_sizes[k] - 1)
        else:
            dim_ranges[k] = (0, min(operand_shape[k], slice_sizes[k]) - 1)
        offset_exprs[k] = offset
    results = []
    symbol_ranges = list(runtime_ranges)
    to_batch = {i: k for k, i in batch_source.items()}
    for i, size in enumerate(out_shape):
        if i in offset_dims:
            results.append(offset_exprs[offset_operand_dims[offset_dims.index(i)]])
        elif i in to_batch:
            results.append(dim(to_batch[i]))
        else:
            results.append(sym(len(symbol_ranges)))
            symbol_ranges.append((0, size - 1))
    return op.build(rank, len(symbol_ranges), results, dim_ranges, symbol_ranges, constraints)


def _dynamic_slice(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    if forward:
        raise NotImplementedError("stablehlo.dynamic_slice: no input-to-output rule")
    out_shape = op.result_shapes[0]
    if operand > 0:  # a start index scalar
        return _to_scalar(op, out_shape)
    in_shape = op.operand_shapes[0]
    rank = len(in_shape)
    results = [affine.add(dim(k), sym(k)) for k in range(rank)]
    runtime = [(0, n - m) for n, m in zip(in_shape, out_shape, strict=True)]
    return op.build(rank, rank, results, _box(out_shape), runtime)


def _dynamic_update_slice(op: _Op, operand: int, result: int, forward: bool) -> IndexingMap:
    if forward:
        raise NotImplementedError("stablehlo.dynamic_update_slice: no input-to-output rule")
    out_shape = op.result_shapes[0]
    rank = len(out_shape)
    if operand == 0:
        return op.build(rank, 0, _dims(rank), _box(out_shape))
    if operand > 1:
        return _to_scalar(op, out_shape)
    update = op.operand_shapes[1]
    results = [affine.add(dim(k), affine.mul(sym(k), -1)) for k in range(rank)]
    runtime = [(0, n - m) for n, m in zip(out_shape, update, strict=True)]
    constraints = {r: (0, m - 1) for r, m in zip(results, update, strict=True)}
    return op.build(rank, rank, results, _box(out_shape), runtime, constraints)


_RULES = {
    "stablehlo.broadcast": _broadcast_in_dim,
    "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.bitcast_convert": _bitcast_convert,
    "stablehlo.concatenate": _concatenate,
    "stablehlo.dot": _dot_general,
    "stablehlo.dot_general": _dot_general,
    "stablehlo.dynamic_slice": _dynamic_slice,
    "stablehlo.dynamic_update_slice": _dynamic_update_slice,
    "stablehlo.gather": _gather,
    "stablehlo.pad": _pad,
    "stablehlo.reduce": _reduce,
    "stablehlo.reduce_window": _reduce_window,
    "stablehlo.reshape": _reshape,
    "stablehlo.reverse": _reverse,
    "stablehlo.slice": _slice,
    "stablehlo.transpose": _transpose,
}


def supported_ops() -> list[str]:
    """Op names with an output-to-input rule."""
    return sorted({*_RULES, *ELEMENTWISE_OPS, *OPERANDLESS_OPS})


def _indexing(
    op: ir.Operation | ir.OpView, operand_index: int, result_index: int, forward: bool
) -> IndexingMap | None:
    operation = op.operation if isinstance(op, ir.OpView) else op
    name = operation.name
    if len(operation.operands) == 0:
        return None
    if name in ELEMENTWISE_OPS:
        rule = _elementwise
    else:
        rule = _RULES.get(name)
        if rule is None:
            raise NotImplementedError(f"no indexing rule for {name}")
    if not 0 <= operand_index < len(operation.operands):
        raise IndexError(f"{name} has no operand {operand_index}")
    if not 0 <= result_index < len(operation.results):
        raise IndexError(f"{name} has no result {result_index}")
    return rule(_Op(operation), operand_index, result_index, forward)


def output_to_input(
    op: ir.Operation | ir.OpView, operand_index: int, result_index: int = 0
) -> IndexingMap | None:
    """For each index of result ``result_index``, the elements of operand ``operand_index`` read.

    ``None`` for operand-less ops (constant, iota); ``NotImplementedError``
    for ops without a rule; ``ValueError`` for dynamic shapes.
    """
    return _indexing(op, operand_index, result_index, forward=False)


def input_to_output(
    op: ir.Operation | ir.OpView, operand_index: int, result_index: int = 0
) -> IndexingMap | None:
    """For each index of operand ``operand_index``, the elements of the result reading it."""
    return _indexing(op, operand_index, result_index, forward=True)


# ---------------------------------------------------------------------------
# Fusions: functions whose body is one block of StableHLO ops.


def _body(func_op: ir.Operation | ir.OpView) -> ir.Block:
    operation = func_op.operation if isinstance(func_op, ir.OpView) else func_op
    if operation.name != "func.func" or len(operation.regions[0].blocks) != 1:
        raise ValueError("expected a func.func with a single-block body")
    return operation.regions[0].blocks[0]


def value_maps(
    root: ir.Value,
    ops: Iterable[ir.Operation | ir.OpView],
    elementwise_steps: dict[tuple[ir.Type, ir.Type], IndexingMap | None] | None = None,
) -> dict[ir.Value, list[IndexingMap]]:
    """Distinct maps from the indices of ``root`` to every value it reads through ``ops``.

    ``ops`` are in block order (``root``'s definition among them); they are
    walked backwards and each op's output-to-input maps are composed with the
    maps of its results, simplified. Known-empty maps are dropped. An op
    outside ``ops`` is not walked through, but its results get maps.
    ``elementwise_steps`` keeps an elementwise op's map by operand and result
    type, for the next op of those types (in this call, or in the caller's
    next calls with the same dict): building one was half of
    shlo-fuse-elementwise-by-indexing's time.
    """
    steps = {} if elementwise_steps is None else elementwise_steps
    shape = _static_shape(root, "root")
    maps: dict[ir.Value, dict[IndexingMap, None]] = {
        root: {IndexingMap.identity(shape, root.context): None}
    }
    for op in reversed(list(ops)):
        if not any(result in maps for result in op.results):
            continue
        for result_index, result in enumerate(op.results):
            if result not in maps:
                continue
            for operand_index, operand in enumerate(op.operands):
                step = _output_to_input_of_types(op, operand_index, result_index, steps)
                if step is None:
                    continue
                reached = maps.setdefault(operand, {})
                for current in maps[result]:
                    composed = current.compose(step)
                    if not composed.is_known_empty():
                        reached[composed] = None
    return {value: list(found) for value, found in maps.items()}


def _output_to_input_of_types(
    op: ir.Operation | ir.OpView,
    operand_index: int,
    result_index: int,
    elementwise_steps: dict[tuple[ir.Type, ir.Type], IndexingMap | None],
) -> IndexingMap | None:
    """``output_to_input``; an elementwise op's, which depends only on the two types,
    from ``elementwise_steps`` when there."""
    operation = op.operation if isinstance(op, ir.OpView) else op
    if operation.name not in ELEMENTWISE_OPS:
        return output_to_input(operation, operand_index, result_index)
    key = (operation.operands[operand_index].type, operation.results[result_index].type)
    if key not in elementwise_steps:
        elementwise_steps[key] = output_to_input(operation, operand_index, result_index)
    return elementwise_steps[key]


def fusion_output_to_input(
    func_op: ir.Operation | ir.OpView, parameter_index: int, result_index: int = 0
) -> list[IndexingMap]:
    """The distinct maps through which the function's result reads argument ``parameter_index``.

    The maps of the ops on every path from the returned value back to the
    argument are composed and simplified; maps equal after simplification
    count once. An argument the result does not read gives ``[]``.
    """
    block = _body(func_op)
    terminator = list(block.operations)[-1]
    root = terminator.operands[result_index]
    argument = block.arguments[parameter_index]
    return value_maps(root, block.operations).get(argument, [])
