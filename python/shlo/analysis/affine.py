"""Affine expressions as plain tuples, their conversion to MLIR, and a range-aware simplifier.

The simplifier works on Python tuples rather than on ``ir.AffineExpr``: it
rewrites many small expressions, and each step through the bindings would
cross into C++. ``to_mlir`` builds the MLIR expression (MLIR's own
constructors fold constants and reassociate sums on the way) and
``from_mlir`` reads one back, so an expression that went through MLIR once
is a faithful mirror of the uniqued ``ir.AffineExpr``.

Expression trees:

- ``("c", value)``, ``("d", position)``, ``("s", position)``;
- ``(kind, lhs, rhs)`` with kind ``add``, ``mul``, ``mod``, ``floordiv`` or
  ``ceildiv``; ``mod``, ``floordiv`` and ``ceildiv`` have MLIR's semantics
  (floor rounding, ``mod`` non-negative for a positive divisor).

Upstream's simplifier (``simplify_affine_expr``) knows nothing about the
ranges of dimensions and symbols, so it cannot remove ``d0 floordiv 8`` for
``d0 in [0, 7]``. ``Simplifier`` brings the ranges: it puts each expression in
a linear form (a sum of atoms times coefficients plus a constant) and applies

- ``(c*A + R) floordiv c -> A + R floordiv c`` and ``(c*A + R) mod c -> R mod c``;
- ``R floordiv c -> k`` and ``R mod c -> R - k*c`` when ``R`` stays in
  ``[k*c, k*c + c - 1]``;
- ``(g*R) floordiv (g*m) -> R floordiv m`` and ``(g*R) mod (g*m) -> g*(R mod m)``;
- ``(x floordiv a) floordiv b -> x floordiv (a*b)``, ``(x mod a) mod b -> x mod b``
  when ``b`` divides ``a``, and ``(x floordiv a) mod b -> (x mod (a*b)) floordiv a``;
- mixed-radix recombination: ``(b1/b2)*((x mod M) floordiv b1) + (x mod b1) floordiv b2
  -> (x mod M) floordiv b2``, whose simplest case is ``c*(x floordiv c) + x mod c -> x``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from shlo._mlir_compat import ir

Expr = tuple  # see the module docstring
Interval = tuple[int, int]

BINARY_KINDS = ("add", "mul", "mod", "floordiv", "ceildiv")
# Wide enough for any index; products of two of them stay exact in Python.
UNBOUNDED: Interval = (-(1 << 62), 1 << 62)


def const(value: int) -> Expr:
    return ("c", int(value))


def dim(position: int) -> Expr:
    return ("d", position)


def sym(position: int) -> Expr:
    return ("s", position)


def add(*terms: Expr) -> Expr:
    result = terms[0]
    for term in terms[1:]:
        result = ("add", result, term)
    return result


def mul(expr: Expr, factor: int) -> Expr:
    return ("mul", expr, const(factor))


def floordiv(expr: Expr, divisor: int) -> Expr:
    return ("floordiv", expr, const(divisor))


def mod(expr: Expr, divisor: int) -> Expr:
    return ("mod", expr, const(divisor))


# ---------------------------------------------------------------------------
# Conversion to and from MLIR.


def from_mlir(expr: ir.AffineExpr) -> Expr:
    """The tuple form of an ``ir.AffineExpr``."""
    # The constructors return the class that was asked for (get_add gives an
    # AffineAddExpr even when MLIR folded the sum into a product): downcast first.
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineConstantExpr):
        return ("c", expr.value)
    if isinstance(expr, ir.AffineDimExpr):
        return ("d", expr.position)
    if isinstance(expr, ir.AffineSymbolExpr):
        return ("s", expr.position)
    for cls, kind in (
        (ir.AffineAddExpr, "add"),
        (ir.AffineMulExpr, "mul"),
        (ir.AffineModExpr, "mod"),
        (ir.AffineFloorDivExpr, "floordiv"),
        (ir.AffineCeilDivExpr, "ceildiv"),
    ):
        if isinstance(expr, cls):
            return (kind, from_mlir(expr.lhs), from_mlir(expr.rhs))
    raise TypeError(f"unknown affine expression {expr}")


def to_mlir(expr: Expr, context: ir.Context) -> ir.AffineExpr:
    """Build ``expr`` with MLIR's constructors (which fold and reassociate a little)."""
    return _to_mlir(expr, context).maybe_downcast()


def _to_mlir(expr: Expr, context: ir.Context) -> ir.AffineExpr:
    kind = expr[0]
    if kind == "c":
        return ir.AffineConstantExpr.get(expr[1], context)
    if kind == "d":
        return ir.AffineDimExpr.get(expr[1], context)
    if kind == "s":
        return ir.AffineSymbolExpr.get(expr[1], context)
    lhs, rhs = _to_mlir(expr[1], context), _to_mlir(expr[2], context)
    if kind == "add":
        return ir.AffineExpr.get_add(lhs, rhs)
    if kind == "mul":
        return ir.AffineExpr.get_mul(lhs, rhs)
    if kind == "mod":
        return ir.AffineExpr.get_mod(lhs, rhs)
    if kind == "floordiv":
        return ir.AffineExpr.get_floor_div(lhs, rhs)
    return ir.AffineExpr.get_ceil_div(lhs, rhs)


def canonical(expr: Expr, context: ir.Context) -> Expr:
    """``expr`` as MLIR would store it."""
    return from_mlir(to_mlir(expr, context))


# ---------------------------------------------------------------------------
# Structure helpers.


def substitute(
    expr: Expr, dims: Sequence[Expr] | None, symbols: Sequence[Expr] | None = None
) -> Expr:
    """Replace ``d_i`` by ``dims[i]`` and ``s_j`` by ``symbols[j]`` (kept when None)."""
    kind = expr[0]
    if kind == "c":
        return expr
    if kind == "d":
        return dims[expr[1]] if dims is not None else expr
    if kind == "s":
        return symbols[expr[1]] if symbols is not None else expr
    return (kind, substitute(expr[1], dims, symbols), substitute(expr[2], dims, symbols))


def used(expr: Expr, kind: str) -> set[int]:
    """Positions of the dimensions (``kind="d"``) or symbols (``"s"``) in ``expr``."""
    if expr[0] == kind:
        return {expr[1]}
    if expr[0] in BINARY_KINDS:
        return used(expr[1], kind) | used(expr[2], kind)
    return set()


def compile_expr(expr: Expr) -> Callable[[Sequence[int], Sequence[int]], int]:
    """A Python function ``(dims, symbols) -> int`` that evaluates ``expr``."""
    kind = expr[0]
    if kind == "c":
        value = expr[1]
        return lambda d, s: value
    if kind == "d":
        position = expr[1]
        return lambda d, s: d[position]
    if kind == "s":
        position = expr[1]
        return lambda d, s: s[position]
    lhs, rhs = compile_expr(expr[1]), compile_expr(expr[2])
    if kind == "add":
        return lambda d, s: lhs(d, s) + rhs(d, s)
    if kind == "mul":
        return lambda d, s: lhs(d, s) * rhs(d, s)
    if kind == "floordiv":
        return lambda d, s: lhs(d, s) // rhs(d, s)
    if kind == "ceildiv":
        return lambda d, s: -(-lhs(d, s) // rhs(d, s))
    # MLIR's mod is never negative for a positive divisor, as Python's %.
    return lambda d, s: lhs(d, s) % rhs(d, s)


def evaluate(expr: Expr, dims: Sequence[int], symbols: Sequence[int] = ()) -> int:
    return compile_expr(expr)(dims, symbols)


# ---------------------------------------------------------------------------
# Linear forms.


class Linear:
    """``sum(coefficient * atom) + constant``; atoms are dims, symbols or non-linear terms."""

    __slots__ = ("constant", "terms")

    def __init__(self, terms: Mapping[Expr, int] | None = None, constant: int = 0) -> None:
        self.terms: dict[Expr, int] = {a: k for a, k in (terms or {}).items() if k}
        self.constant = constant

    @classmethod
    def atom(cls, atom: Expr, coefficient: int = 1) -> Linear:
        return cls({atom: coefficient})

    def is_constant(self) -> bool:
        return not self.terms

    def single_atom(self) -> Expr | None:
        """The atom when this form is exactly ``1 * atom``."""
        if self.constant == 0 and len(self.terms) == 1:
            ((atom, coefficient),) = self.terms.items()
            if coefficient == 1:
                return atom
        return None

    def __add__(self, other: Linear | int) -> Linear:
        if isinstance(other, int):
            return Linear(self.terms, self.constant + other)
        terms = dict(self.terms)
        for atom, coefficient in other.terms.items():
            terms[atom] = terms.get(atom, 0) + coefficient
        return Linear(terms, self.constant + other.constant)

    def scale(self, factor: int) -> Linear:
        return Linear({a: k * factor for a, k in self.terms.items()}, self.constant * factor)

    def gcd(self, divisor: int) -> int:
        return math.gcd(divisor, self.constant, *self.terms.values())

    def divide_exact(self, factor: int) -> Linear:
        return Linear({a: k // factor for a, k in self.terms.items()}, self.constant // factor)

    def residue(self, modulus: int) -> tuple[tuple[tuple[Expr, int], ...], int]:
        """A key equal for two forms whose difference is a multiple of ``modulus``."""
        terms = tuple(
            sorted(
                ((a, k % modulus) for a, k in self.terms.items() if k % modulus),
                key=lambda item: sort_key(item[0]),
            )
        )
        return terms, self.constant % modulus

    def to_expr(self) -> Expr:
        """Dims, then symbols, then other atoms, then the constant, summed left to right."""
        parts: list[Expr] = []
        for atom in sorted(self.terms, key=sort_key):
            coefficient = self.terms[atom]
            parts.append(atom if coefficient == 1 else mul(atom, coefficient))
        if self.constant or not parts:
            parts.append(const(self.constant))
        return add(*parts)


_KIND_ORDER = {"d": 0, "s": 1, "mul": 2, "floordiv": 3, "ceildiv": 4, "mod": 5, "c": 6, "add": 7}


def sort_key(expr: Expr) -> tuple:
    kind = expr[0]
    if kind in ("c", "d", "s"):
        return (_KIND_ORDER[kind], expr[1])
    return (_KIND_ORDER[kind], sort_key(expr[1]), sort_key(expr[2]))


def _split_divisible(form: Linear, divisor: int) -> tuple[Linear, Linear]:
    """``(q, r)`` with ``form == divisor * q + r``; ``q`` takes every multiple of ``divisor``."""
    quotient, remainder = _split_constant(form.constant, divisor)
    outside = Linear(constant=quotient)
    rest = Linear(constant=remainder)
    for atom, coefficient in form.terms.items():
        if coefficient % divisor == 0:
            outside.terms[atom] = coefficient // divisor
        else:
            rest.terms[atom] = coefficient
    return outside, rest


def _split_constant(constant: int, divisor: int) -> tuple[int, int]:
    """``(q, r)``: ``constant = q*divisor + r``, ``r`` of the constant's sign, ``|r| < divisor``.

    Keeps ``(d0 - 3) floordiv 7`` as it is; ``(d0 + 9) floordiv 8`` becomes
    ``(d0 + 1) floordiv 8 + 1``.
    """
    remainder = int(math.fmod(constant, divisor))
    return (constant - remainder) // divisor, remainder


def _floor_interval(interval: Interval, divisor: int) -> Interval:
    return (interval[0] // divisor, interval[1] // divisor)


def _digit(atom: Expr) -> tuple[Expr, int | None, int] | None:
    """``(x, M, b)`` when ``atom`` is ``(x mod M) floordiv b`` (M None: no mod; b 1: no div)."""
    kind = atom[0]
    if kind == "floordiv" and atom[2][0] == "c" and atom[2][1] > 0:
        inner = atom[1]
        if inner[0] == "mod" and inner[2][0] == "c" and inner[2][1] > 0:
            return inner[1], inner[2][1], atom[2][1]
        return inner, None, atom[2][1]
    if kind == "mod" and atom[2][0] == "c" and atom[2][1] > 0:
        return atom[1], atom[2][1], 1
    return None


class Simplifier:
    """Rewrites expressions using the inclusive ranges of dims, symbols and constrained terms."""

    def __init__(
        self,
        dim_ranges: Sequence[Interval],
        symbol_ranges: Sequence[Interval] = (),
        constraints: Mapping[Expr, Interval] | None = None,
    ) -> None:
        self.dim_ranges = list(dim_ranges)
        self.symbol_ranges = list(symbol_ranges)
        self.constraints = dict(constraints or {})
        self._linear: dict[Expr, Linear] = {}
        self._ranges: dict[Expr, Interval] = {}

    # -- ranges ------------------------------------------------------------

    def range_of(self, expr: Expr) -> Interval:
        """An inclusive interval holding every value of ``expr`` on the domain."""
        cached = self._ranges.get(expr)
        if cached is not None:
            return cached
        lo, hi = self._raw_range(expr)
        bound = self.constraints.get(expr)
        if bound is not None:
            lo, hi = max(lo, bound[0]), min(hi, bound[1])
        self._ranges[expr] = (lo, hi)
        return lo, hi

    def _raw_range(self, expr: Expr) -> Interval:
        kind = expr[0]
        if kind == "c":
            return expr[1], expr[1]
        if kind == "d":
            return self.dim_ranges[expr[1]]
        if kind == "s":
            return self.symbol_ranges[expr[1]]
        lhs, rhs = self.range_of(expr[1]), self.range_of(expr[2])
        if kind == "add":
            return lhs[0] + rhs[0], lhs[1] + rhs[1]
        if kind == "mul":
            products = [a * b for a in lhs for b in rhs]
            return min(products), max(products)
        if rhs[0] != rhs[1] or rhs[0] <= 0:
            return UNBOUNDED
        divisor = rhs[0]
        if kind == "floordiv":
            return _floor_interval(lhs, divisor)
        if kind == "ceildiv":
            return -(-lhs[0] // divisor), -(-lhs[1] // divisor)
        if lhs[0] // divisor == lhs[1] // divisor:
            return lhs[0] % divisor, lhs[1] % divisor
        return 0, divisor - 1

    def linear_range(self, form: Linear) -> Interval:
        lo = hi = form.constant
        for atom, coefficient in form.terms.items():
            a, b = self.range_of(atom)
            lo += min(a * coefficient, b * coefficient)
            hi += max(a * coefficient, b * coefficient)
        bound = self.constraints.get(form.to_expr()) if self.constraints else None
        if bound is not None:
            lo, hi = max(lo, bound[0]), min(hi, bound[1])
        return lo, hi

    # -- simplification ----------------------------------------------------

    def simplify(self, expr: Expr) -> Expr:
        return self.linear(expr).to_expr()

    def linear(self, expr: Expr) -> Linear:
        cached = self._linear.get(expr)
        if cached is None:
            cached = self._recombine(self._linear_uncached(expr))
            self._linear[expr] = cached
        return cached

    def _linear_uncached(self, expr: Expr) -> Linear:
        kind = expr[0]
        if kind == "c":
            return Linear(constant=expr[1])
        if kind in ("d", "s"):
            return Linear.atom(expr)
        lhs, rhs = self.linear(expr[1]), self.linear(expr[2])
        if kind == "add":
            return lhs + rhs
        if kind == "mul":
            if rhs.is_constant():
                return lhs.scale(rhs.constant)
            if lhs.is_constant():
                return rhs.scale(lhs.constant)
            operands = sorted((lhs.to_expr(), rhs.to_expr()), key=sort_key)
            return Linear.atom(("mul", *operands))
        if not rhs.is_constant() or rhs.constant <= 0:
            return Linear.atom((kind, lhs.to_expr(), rhs.to_expr()))
        divisor = rhs.constant
        if kind == "floordiv":
            return self.floordiv(lhs, divisor)
        if kind == "ceildiv":
            return self.ceildiv(lhs, divisor)
        return self.mod(lhs, divisor)

    def floordiv(self, form: Linear, divisor: int) -> Linear:
        if divisor == 1:
            return form
        outside, rest = _split_divisible(form, divisor)
        if rest.is_constant():
            return outside + rest.constant // divisor
        lo, hi = self.linear_range(rest)
        if lo // divisor == hi // divisor:
            return outside + lo // divisor
        common = rest.gcd(divisor)
        if common > 1:
            return outside + self.floordiv(rest.divide_exact(common), divisor // common)
        inner = rest.single_atom()
        if inner is not None and inner[0] == "floordiv" and inner[2][0] == "c" and inner[2][1] > 0:
            return outside + self.floordiv(self.linear(inner[1]), inner[2][1] * divisor)
        return outside + Linear.atom(floordiv(rest.to_expr(), divisor))

    def ceildiv(self, form: Linear, divisor: int) -> Linear:
        if divisor == 1:
            return form
        outside, rest = _split_divisible(form, divisor)
        lo, hi = self.linear_range(rest)
        if -(-lo // divisor) == -(-hi // divisor):
            return outside + -(-lo // divisor)
        return outside + Linear.atom(("ceildiv", rest.to_expr(), const(divisor)))

    def mod(self, form: Linear, divisor: int) -> Linear:
        if divisor == 1:
            return Linear()
        rest = _split_divisible(form, divisor)[1]
        if rest.is_constant():
            return Linear(constant=rest.constant % divisor)
        lo, hi = self.linear_range(rest)
        if lo // divisor == hi // divisor:
            return rest + -(lo // divisor) * divisor
        common = rest.gcd(divisor)
        if common > 1:
            return self.mod(rest.divide_exact(common), divisor // common).scale(common)
        inner = rest.single_atom()
        if inner is not None and inner[0] in ("mod", "floordiv") and inner[2][0] == "c":
            if inner[0] == "mod" and inner[2][1] % divisor == 0:
                return self.mod(self.linear(inner[1]), divisor)
            if inner[0] == "floordiv":
                below = inner[2][1]
                return self.floordiv(self.mod(self.linear(inner[1]), below * divisor), below)
        return Linear.atom(mod(rest.to_expr(), divisor))

    def _recombine(self, form: Linear) -> Linear:
        """Merge digit pairs: ``(b1/b2)*((x mod M) floordiv b1) + (x mod b1) floordiv b2``."""
        changed = True
        while changed:
            changed = False
            digits = [(atom, _digit(atom)) for atom in form.terms]
            for upper, upper_digit in digits:
                if upper_digit is None:
                    continue
                x_upper, modulus, base = upper_digit
                if modulus is not None and modulus % base:
                    continue
                for lower, lower_digit in digits:
                    if lower_digit is None or lower is upper:
                        continue
                    x_lower, lower_modulus, lower_base = lower_digit
                    if lower_modulus != base or base % lower_base:
                        continue
                    k_lower = form.terms[lower]
                    if form.terms[upper] != k_lower * (base // lower_base):
                        continue
                    if self.linear(x_upper).residue(base) != self.linear(x_lower).residue(base):
                        continue
                    merged = self.linear(x_upper)
                    if modulus is not None:
                        merged = self.mod(merged, modulus)
                    merged = self.floordiv(merged, lower_base)
                    rest = Linear(
                        {a: k for a, k in form.terms.items() if a not in (upper, lower)},
                        form.constant,
                    )
                    form = rest + merged.scale(k_lower)
                    changed = True
                    break
                if changed:
                    break
        return form


def interval_box(ranges: Iterable[Interval]) -> list[range]:
    return [range(lo, hi + 1) for lo, hi in ranges]
