"""shlo-lower-rng: lower stablehlo.rng_bit_generator and stablehlo.rng to integer StableHLO.

Ours because upstream is wrong: ``stablehlo-legalize-to-linalg`` lowers
``rng_bit_generator`` to bits that differ from XLA's for PHILOX (3-element
states, most shapes and widths) and DEFAULT, and fails on empty outputs; its
``rng`` pattern covers only uniform floats, with a generator of its own. Both
ops become elementwise StableHLO arithmetic on ``ui32``/``ui64`` tensors that
reproduces XLA's CPU backend (``xla/hlo/builder/lib/prng.cc``) bit for bit:
THREE_FRY is Threefry-2x32 with 20 rounds, PHILOX is Philox-4x32 with 10
rounds, and DEFAULT is PHILOX, as on XLA:CPU. Element types narrower than 32
bits keep the low bits of 32-bit outputs; floating-point outputs are the bits,
bitcast.

``stablehlo.rng`` (implementation-defined output) follows XLA's ``RngExpander``
on top of Philox: uniform floats from the top mantissa bits, uniform integers
by remainder, normals by Box-Muller. Having no state operand, each op gets a
fixed key of its own (its position in the module) and a zero counter, so a
program's random values are deterministic.

  %state, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
  ==>
  %key = stablehlo.reshape (stablehlo.slice %s [0:1]) : tensor<ui64>
  %counter = stablehlo.reshape (stablehlo.slice %s [1:2]) : tensor<ui64>
  %iota = stablehlo.iota dim = 0 : tensor<4xui64>
  %inputs = stablehlo.add (stablehlo.broadcast_in_dim %counter), %iota : tensor<4xui64>
  ...                                  // split into ui32 halves; 20 Threefry rounds of
  %x0 = stablehlo.add %x0, %x1 ...     // add, shift_left/shift_right_logical/or (rotate), xor
  %bits = stablehlo.or %x0_wide, (stablehlo.shift_left %x1_wide, 32) : tensor<4xui64>
  %state = stablehlo.concatenate %key1, (stablehlo.add %counter, 4), dim = 0 : tensor<2xui64>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import ml_dtypes
from shlo._mlir_compat import ir
from shlo.dtypes import numpy_dtype
from shlo.ir_templates import replace_with_template
from shlo.ir_utils import ops_named, tensor_type_text
from shlo.pass_framework import Pass, PassError
from shlo.template_builder import TemplateBuilder

U32 = "ui32"
U64 = "ui64"
MASK32 = 0xFFFFFFFF

# Threefry-2x32 rotation distances and key-schedule parity constant.
THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
THREEFRY_PARITY = 0x1BD11BDA
# Philox-4x32 multipliers and Weyl key increments.
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10

# Keys for stablehlo.rng: a fixed base plus the golden-ratio step per op.
RNG_KEY_BASE = 0x243F6A8885A308D3
RNG_KEY_STEP = 0x9E3779B97F4A7C15


class _Ops:
    """StableHLO ops appended to a TemplateBuilder, tracking each value's shape and element type."""

    def __init__(self, builder: TemplateBuilder) -> None:
        self.b = builder
        self._shapes: dict[str, tuple[list[int], str]] = {}

    def shape(self, value: str) -> list[int]:
        return self._shapes[value][0]

    def elem(self, value: str) -> str:
        return self._shapes[value][1]

    def argument(self, shape: Sequence[int], elem: str) -> str:
        value = self.b.argument(tensor_type_text(shape, elem))
        self._shapes[value] = (list(shape), elem)
        return value

    def op(
        self,
        name: str,
        operands: Sequence[str],
        shape: Sequence[int],
        elem: str,
        properties: str = "",
    ) -> str:
        value = self.b.op(name, operands, tensor_type_text(shape, elem), properties)
        self._shapes[value] = (list(shape), elem)
        return value

    def const(self, shape: Sequence[int], elem: str, value: int | float) -> str:
        text = f"{value:.17e}" if isinstance(value, float) else str(value)
        result = self.b.constant(tensor_type_text(shape, elem), f"dense<{text}>")
        self._shapes[result] = (list(shape), elem)
        return result

    def like(self, x: str, value: int | float) -> str:
        return self.const(self.shape(x), self.elem(x), value)

    def binary(self, name: str, x: str, y: str | int | float) -> str:
        if not isinstance(y, str):
            y = self.like(x, y)
        return self.op(f"stablehlo.{name}", [x, y], self.shape(x), self.elem(x))

    def unary(self, name: str, x: str) -> str:
        return self.op(f"stablehlo.{name}", [x], self.shape(x), self.elem(x))

    def add(self, x: str, y: str | int | float) -> str:
        return self.binary("add", x, y)

    def mul(self, x: str, y: str | int | float) -> str:
        return self.binary("multiply", x, y)

    def xor(self, x: str, y: str | int) -> str:
        return self.binary("xor", x, y)

    def shl(self, x: str, bits: int) -> str:
        return self.binary("shift_left", x, bits)

    def shr(self, x: str, bits: int) -> str:
        return self.binary("shift_right_logical", x, bits)

    def convert(self, x: str, elem: str) -> str:
        return x if self.elem(x) == elem else self.op("stablehlo.convert", [x], self.shape(x), elem)

    def bitcast(self, x: str, elem: str) -> str:
        if self.elem(x) == elem:
            return x
        return self.op("stablehlo.bitcast_convert", [x], self.shape(x), elem)

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        if self.shape(x) == list(shape):
            return x
        return self.op("stablehlo.reshape", [x], shape, self.elem(x))

    def broadcast(self, scalar: str, shape: Sequence[int]) -> str:
        """A 0-d tensor broadcast to ``shape``."""
        return self.broadcast_along(scalar, shape, []) if shape else scalar

    def broadcast_along(self, x: str, shape: Sequence[int], dims: Sequence[int]) -> str:
        """``x`` broadcast to ``shape``, its dimensions becoming ``dims``."""
        return self.op(
            "stablehlo.broadcast_in_dim",
            [x],
            shape,
            self.elem(x),
            f"broadcast_dimensions = {_array(dims)}",
        )

    def iota(self, shape: Sequence[int], elem: str, dim: int) -> str:
        return self.op("stablehlo.iota", [], shape, elem, f"iota_dimension = {dim} : i64")

    def slice(self, x: str, start: Sequence[int], limit: Sequence[int]) -> str:
        shape = [hi - lo for lo, hi in zip(start, limit)]
        if shape == self.shape(x):
            return x
        return self.op(
            "stablehlo.slice",
            [x],
            shape,
            self.elem(x),
            f"start_indices = {_array(start)}, limit_indices = {_array(limit)}, "
            f"strides = {_array([1] * len(shape))}",
        )

    def concatenate(self, values: Sequence[str], dim: int) -> str:
        shape = list(self.shape(values[0]))
        shape[dim] = sum(self.shape(v)[dim] for v in values)
        return self.op(
            "stablehlo.concatenate", values, shape, self.elem(values[0]), f"dimension = {dim} : i64"
        )

    def compare(self, direction: str, x: str, y: str, compare_type: str) -> str:
        return self.op(
            "stablehlo.compare",
            [x, y],
            self.shape(x),
            "i1",
            f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
            f"compare_type = #stablehlo<comparison_type {compare_type}>",
        )

    def select(self, pred: str, x: str, y: str) -> str:
        return self.op("stablehlo.select", [pred, x, y], self.shape(x), self.elem(x))

    def element(self, vector: str, index: int) -> str:
        """Element ``index`` of a 1-d tensor, as a 0-d tensor."""
        return self.reshape(self.slice(vector, [index], [index + 1]), [])

    def stack(self, scalars: Sequence[str]) -> str:
        """0-d tensors as one 1-d tensor."""
        return self.concatenate([self.reshape(s, [1]) for s in scalars], 0)

    # --- 64-bit words as pairs of 32-bit words ---------------------------------------

    def low_high(self, x: str) -> tuple[str, str]:
        """The low and high 32 bits of a ui64 tensor, as ui32 tensors."""
        low = self.convert(self.binary("and", x, MASK32), U32)
        return low, self.convert(self.shr(x, 32), U32)

    def join(self, low: str, high: str) -> str:
        """The ui64 tensor whose low and high 32 bits are ``low`` and ``high``."""
        return self.binary("or", self.convert(low, U64), self.shl(self.convert(high, U64), 32))


def _array(values: Sequence[int]) -> str:
    return "array<i64" + (": " + ", ".join(str(v) for v in values) if values else "") + ">"


# --- Threefry-2x32 ----------------------------------------------------------------------


def _threefry2x32(o: _Ops, x0: str, x1: str, key: str) -> tuple[str, str]:
    """Threefry-2x32 (20 rounds) of the counters ``x0, x1`` under the 0-d ui64 ``key``."""
    shape = o.shape(x0)
    k0, k1 = o.low_high(key)
    ks = [k0, k1, o.xor(o.xor(o.like(k0, THREEFRY_PARITY), k0), k1)]
    x0 = o.add(x0, o.broadcast(ks[0], shape))
    x1 = o.add(x1, o.broadcast(ks[1], shape))
    for block in range(5):
        for rotation in THREEFRY_ROTATIONS[block % 2]:
            x0 = o.add(x0, x1)
            rotated = o.binary("or", o.shl(x1, rotation), o.shr(x1, 32 - rotation))
            x1 = o.xor(x0, rotated)
        # Key injection: words (block+1, block+2) of the schedule, plus the block count.
        x0 = o.add(x0, o.broadcast(ks[(block + 1) % 3], shape))
        x1 = o.add(x1, o.broadcast(o.add(ks[(block + 2) % 3], block + 1), shape))
    return x0, x1


def _threefry_counters(o: _Ops, counter: str, shape: list[int]) -> tuple[str, str, str]:
    """XLA's per-element Threefry inputs for ``shape`` (as ui32 halves) and the next counter."""
    counters = o.broadcast(counter, shape)
    stride = 1
    for dim in range(len(shape) - 1, -1, -1):
        if shape[dim] < 2:
            continue
        index = o.iota(shape, U64, dim)
        counters = o.add(counters, o.mul(index, stride) if stride > 1 else index)
        stride *= shape[dim]
    low, high = o.low_high(counters)
    return low, high, o.add(counter, math.prod(shape))


def _split_in_halves(shape: list[int]) -> tuple[list[int], int]:
    """XLA's SplitShapeIntoHalves: the half shape and the dimension that was split."""
    if not shape:
        return [1], 0
    even = [d for d, size in enumerate(shape) if size % 2 == 0]
    split = even[0] if even else max(range(len(shape)), key=lambda d: (shape[d], -d))
    half = [*shape[:split], (shape[split] + 1) // 2, 1, *shape[split + 1 :]]
    return half, split


def _threefry_bits(
    o: _Ops, key: str, counter: str, shape: list[int], width: int
) -> tuple[str, str]:
    """``width``-bit (32 or 64) Threefry outputs of ``shape`` and the next counter."""
    if width == 64:
        low, high, next_counter = _threefry_counters(o, counter, shape)
        x0, x1 = _threefry2x32(o, low, high, key)
        return o.join(x0, x1), next_counter
    # 32 bits: one Threefry block gives two outputs, interleaved along the split dimension.
    half, split = _split_in_halves(shape)
    low, high, next_counter = _threefry_counters(o, counter, half)
    x0, x1 = _threefry2x32(o, low, high, key)
    if not shape:
        return o.reshape(x0, []), next_counter
    # Block i gives outputs 2i and 2i + 1 along the split dimension. Selecting
    # between the broadcast halves gives the rounds one consumer, so they fuse
    # into one loop (that computes each block twice, cheaper than 40 loops).
    pair_shape = list(half)
    pair_shape[split + 1] = 2
    joined = o.join(x0, x1)
    wide = o.broadcast_along(joined, pair_shape, range(len(half)))
    low, high = o.low_high(wide)
    first = o.compare("EQ", o.iota(pair_shape, U32, split + 1), o.like(low, 0), "UNSIGNED")
    pairs = o.select(first, low, high)
    padded = list(shape)
    padded[split] = half[split] * 2
    bits = o.reshape(pairs, padded)
    return o.slice(bits, [0] * len(shape), shape), next_counter


# --- Philox-4x32 ------------------------------------------------------------------------


def _philox4x32(o: _Ops, words: list[str], key: str) -> list[str]:
    """Philox-4x32 (10 rounds) of the counter words ``words`` under the 0-d ui64 ``key``."""
    shape = o.shape(words[0])
    k0, k1 = o.low_high(key)

    def mul_high_low(x: str, multiplier: int) -> tuple[str, str]:
        product = o.mul(o.convert(x, U64), multiplier)
        return o.low_high(product)[::-1]

    for round_ in range(PHILOX_ROUNDS):
        if round_:
            k0, k1 = o.add(k0, PHILOX_W[0]), o.add(k1, PHILOX_W[1])
        high0, low0 = mul_high_low(words[0], PHILOX_M[0])
        high1, low1 = mul_high_low(words[2], PHILOX_M[1])
        words = [
            o.xor(o.xor(high1, words[1]), o.broadcast(k0, shape)),
            low1,
            o.xor(o.xor(high0, words[3]), o.broadcast(k1, shape)),
            low0,
        ]
    return words


def _add_u128(o: _Ops, low: str, high: str, delta: str) -> tuple[str, str]:
    """(low, high) + delta as a 128-bit sum; ``delta`` is ui64 and low/high broadcast to it."""
    new_low = o.add(o.broadcast(low, o.shape(delta)), delta)
    high = o.broadcast(high, o.shape(delta))
    carry = o.compare("LT", new_low, o.broadcast(low, o.shape(delta)), "UNSIGNED")
    return new_low, o.select(carry, o.add(high, 1), high)


def _philox_bits(
    o: _Ops, key: str, low: str, high: str, count: int, width: int
) -> tuple[str, str, str]:
    """``count`` ``width``-bit (32 or 64) Philox outputs as a 1-d tensor, and the next 128-bit counter."""
    units = count * (width // 32)
    blocks = (units + 3) // 4
    counter_low, counter_high = _add_u128(o, low, high, o.iota([blocks], U64, 0))
    words = _philox4x32(o, [*o.low_high(counter_low), *o.low_high(counter_high)], key)
    next_low, next_high = _add_u128(o, low, high, o.const([], U64, blocks))
    # Block b gives outputs 4b..4b+3 (2b, 2b+1 when 64-bit): words 0, 1 then 2, 3.
    # Selecting between the two broadcast word pairs gives the rounds a single
    # consumer, so they fuse into one loop (that computes each block twice,
    # cheaper than one loop per round).
    pairs = [o.join(words[0], words[1]), o.join(words[2], words[3])]
    first = o.compare("EQ", o.iota([blocks, 2], U64, 1), o.const([blocks, 2], U64, 0), "UNSIGNED")
    wide = [o.broadcast_along(pair, [blocks, 2], [0]) for pair in pairs]
    stacked = o.select(first, wide[0], wide[1])
    if width == 32:
        halves = [o.reshape(half, [blocks, 2, 1]) for half in o.low_high(stacked)]
        stacked = o.concatenate(halves, 2)
    flat = o.reshape(stacked, [math.prod(o.shape(stacked))])
    return o.slice(flat, [0], [count]), next_low, next_high


# --- stablehlo.rng_bit_generator ---------------------------------------------------------


def _bit_width(op: ir.Operation, elem: ir.Type) -> int:
    # Narrow outputs are bitcast from ui2/ui4/ui8/ui16, so 6-bit floats are out.
    if isinstance(elem, (ir.FloatType, ir.IntegerType)) and elem.width in (2, 4, 8, 16, 32, 64):
        return elem.width
    raise PassError(
        op.location,
        f"expected an integer or float output of 2, 4, 8, 16, 32 or 64 bits, got {elem}",
    )


def _to_output(o: _Ops, bits: str, elem: ir.Type, width: int) -> str:
    """32/64-bit unsigned ``bits`` as ``width``-bit values of type ``elem``."""
    if width < 32:
        bits = o.convert(o.binary("and", bits, (1 << width) - 1), f"ui{width}")
    return o.bitcast(bits, str(elem))


def lower_rng_bit_generator(op: ir.Operation) -> None:
    algorithm = str(op.attributes["rng_algorithm"]).split()[-1].rstrip(">")
    state_type = ir.RankedTensorType(op.operands[0].type)
    output_type = ir.RankedTensorType(op.results[1].type)
    state_elem = state_type.element_type
    if not isinstance(state_elem, ir.IntegerType) or state_elem.width != 64:
        raise PassError(op.location, f"expected a 64-bit integer initial_state, got {state_elem}")
    if not output_type.has_static_shape or not state_type.has_static_shape:
        raise PassError(op.location, "expected static shapes")
    size = state_type.shape[0]
    if algorithm == "DEFAULT":
        algorithm = "PHILOX"  # XLA:CPU's default
    if algorithm == "THREE_FRY" and size != 2:
        raise PassError(op.location, "expected a THREE_FRY initial_state of 2 elements")
    if algorithm == "PHILOX" and size not in (2, 3):
        raise PassError(op.location, "expected a PHILOX initial_state of 2 or 3 elements")
    width = _bit_width(op, output_type.element_type)
    shape = list(output_type.shape)

    o = _Ops(TemplateBuilder())
    state = o.bitcast(o.argument([size], str(state_elem)), U64)
    key = o.element(state, 0)
    if algorithm == "THREE_FRY":
        bits, counter = _threefry_bits(o, key, o.element(state, 1), shape, max(width, 32))
        new_state = o.stack([key, counter])
    else:
        # A 2-element state holds the 128-bit counter's low word after the key,
        # with the key doubling as the high word; only the low word is updated.
        low = o.element(state, 1)
        high = o.element(state, 2) if size == 3 else key
        flat, next_low, next_high = _philox_bits(
            o, key, low, high, math.prod(shape), max(width, 32)
        )
        bits = o.reshape(flat, shape)
        new_state = o.stack([key, next_low, next_high] if size == 3 else [key, next_low])
    results = [
        o.bitcast(new_state, str(state_elem)),
        _to_output(o, bits, output_type.element_type, width),
    ]
    replace_with_template(op, o.b.function(results))


# --- stablehlo.rng -----------------------------------------------------------------------


def _mantissa_bits(elem: ir.FloatType) -> int:
    """Explicit mantissa bits of ``elem``, so that unit values stay below 1 once converted."""
    if elem.width >= 32:
        return 52 if elem.width == 64 else 23
    try:
        return int(ml_dtypes.finfo(numpy_dtype(str(elem))).nmant)
    except ValueError:
        return 23


def _uniform_unit(o: _Ops, bits: str, compute: str, mantissa: int) -> str:
    """Floats in [0, 1) of type ``compute`` (f32 or f64) from the top ``mantissa`` bits of ``bits``."""
    total = 64 if o.elem(bits) == U64 else 32
    values = o.convert(o.shr(bits, total - mantissa), compute)
    return o.mul(values, math.ldexp(1.0, -mantissa))


def lower_rng(op: ir.Operation, key_value: int) -> None:
    distribution = str(op.attributes["rng_distribution"]).split()[-1].rstrip(">")
    result_type = ir.RankedTensorType(op.results[0].type)
    if not result_type.has_static_shape:
        raise PassError(op.location, "expected a static result type")
    elem = result_type.element_type
    shape = list(result_type.shape)
    count = math.prod(shape)

    o = _Ops(TemplateBuilder())
    a = o.argument([], str(elem))
    b = o.argument([], str(elem))
    shape_operand = ir.RankedTensorType(op.operands[2].type)
    o.argument(list(shape_operand.shape), str(shape_operand.element_type))
    key = o.const([], U64, key_value)
    zero = o.const([], U64, 0)

    if isinstance(elem, ir.FloatType):
        compute = "f64" if elem.width == 64 else "f32"
        width = 64 if compute == "f64" else 32
        a_c, b_c = o.convert(a, compute), o.convert(b, compute)
        if distribution == "UNIFORM":
            bits, _, _ = _philox_bits(o, key, zero, zero, count, width)
            unit = _uniform_unit(o, bits, compute, _mantissa_bits(elem))
            values = o.add(
                o.mul(unit, o.broadcast(o.binary("subtract", b_c, a_c), [count])),
                o.broadcast(a_c, [count]),
            )
        else:
            # Box-Muller on pairs: the sines fill the first half, the cosines the second.
            pairs = (count + 1) // 2
            bits, _, _ = _philox_bits(o, key, zero, zero, 2 * pairs, width)
            unit = _uniform_unit(o, bits, compute, 52 if compute == "f64" else 23)
            u1 = o.binary("maximum", o.slice(unit, [0], [pairs]), 1.0e-7)
            v1 = o.mul(o.slice(unit, [pairs], [2 * pairs]), 2.0 * math.pi)
            radius = o.unary("sqrt", o.mul(o.unary("log", u1), -2.0))
            normal = o.concatenate(
                [o.mul(o.unary("sine", v1), radius), o.mul(o.unary("cosine", v1), radius)], 0
            )
            normal = o.slice(normal, [0], [count])
            values = o.add(o.broadcast(a_c, [count]), o.mul(normal, o.broadcast(b_c, [count])))
        result = o.convert(o.reshape(values, shape), str(elem))
    elif isinstance(elem, ir.IntegerType) and distribution == "UNIFORM":
        width = 64 if elem.width == 64 else 32
        unsigned = f"ui{width}"
        # Narrow types (and i1) are drawn in 32 bits; their [a, b) range still fits.
        compute = unsigned if elem.is_unsigned else f"i{width}"
        a_c, b_c = o.convert(a, compute), o.convert(b, compute)
        span = o.binary("subtract", o.bitcast(b_c, unsigned), o.bitcast(a_c, unsigned))
        # An empty range (b <= a) yields a rather than dividing by zero.
        span = o.select(o.compare("EQ", span, o.like(span, 0), "UNSIGNED"), o.like(span, 1), span)
        bits, _, _ = _philox_bits(o, key, zero, zero, count, width)
        dist = o.binary("remainder", bits, o.broadcast(span, [count]))
        half = o.shr(dist, 1)
        offset = o.add(
            o.bitcast(half, compute), o.bitcast(o.binary("subtract", dist, half), compute)
        )
        values = o.add(o.broadcast(a_c, [count]), offset)
        result = o.convert(o.reshape(values, shape), str(elem))
    else:
        raise PassError(
            op.location, f"expected a float or integer UNIFORM rng, got {distribution} of {elem}"
        )
    replace_with_template(op, o.b.function([result]))


@dataclass(frozen=True)
class LowerRngPass(Pass):
    """Lower stablehlo.rng_bit_generator and stablehlo.rng to integer StableHLO."""

    argument: ClassVar[str] = "shlo-lower-rng"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.rng_bit_generator"):
            lower_rng_bit_generator(op)
        for index, op in enumerate(ops_named(module, "stablehlo.rng")):
            key = (RNG_KEY_BASE + index * RNG_KEY_STEP) % (1 << 64)
            lower_rng(op, key)
