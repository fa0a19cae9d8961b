"""shlo-lower-fft: lower stablehlo.fft to DFT contractions against constant twiddle matrices.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.fft`` alone. Each transformed axis of length n <= 128 (or prime)
becomes a direct O(n^2) DFT: a ``stablehlo.dot_general`` of the real and
imaginary parts against cosine and sine matrices built here with numpy,
followed by a transpose that puts the axis back in place. Longer composite
axes are split once per level Cooley-Tukey style (``n = n1 * n2``: reshape,
DFT over n1, twiddle multiply, DFT over n2, transpose), so work is
O(n (n1 + n2)) and constants O(n). Everything is computed in f64 (f32 inputs
are widened and the result rounded once), with twiddles reduced to the first
octant so that symmetric values are exact. IFFT and IRFFT divide by each axis
length; RFFT transforms the innermost axis first and keeps ``n // 2 + 1``
frequencies, IRFFT transforms it last from its Hermitian half.

  %0 = stablehlo.fft %x, type = RFFT, length = [4] : (tensor<2x4xf32>) -> tensor<2x3xcomplex<f32>>
  ==>
  %re = stablehlo.convert %x : (tensor<2x4xf32>) -> tensor<2x4xf64>
  %cos = stablehlo.constant dense<"0x..."> : tensor<4x3xf64>
  %sin = stablehlo.constant dense<"0x..."> : tensor<4x3xf64>
  %yr = stablehlo.dot_general %re, %cos, contracting_dims = [1] x [0] : (tensor<2x4xf64>, tensor<4x3xf64>) -> tensor<2x3xf64>
  %yi = stablehlo.dot_general %re, %sin, contracting_dims = [1] x [0] : (tensor<2x4xf64>, tensor<4x3xf64>) -> tensor<2x3xf64>
  %0 = stablehlo.complex (convert %yr), (convert %yi) : tensor<2x3xcomplex<f32>>
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_templates import replace_with_template
from shlo.ir_utils import ops_named, tensor_type_text
from shlo.pass_framework import Pass, PassError
from shlo.template_builder import TemplateBuilder, dense_hex

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
# The element type the DFT is computed in, whatever the operand's precision.
COMPUTE = "f64"
# Longer composite axes are split in two (Cooley-Tukey) rather than
# contracted against an n x n matrix.
DIRECT_MAX = 128


def unit_roots(n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of ``2 pi r / n`` for r in 0..n-1, exact at multiples of pi/4.

    Each angle is reduced with integer arithmetic to [0, pi/4] before calling
    cos/sin, so the table has the exact symmetries of the unit circle.
    """
    r = np.arange(n, dtype=np.int64)
    quadrant, rest = np.divmod(4 * r, n)  # angle = (quadrant + rest / n) * pi / 2
    upper = 2 * rest > n  # past pi/4 within the quadrant: use the complement
    folded = np.where(upper, n - rest, rest).astype(np.float64)
    phi = (np.pi / 2) * folded / n
    c, s = np.cos(phi), np.sin(phi)
    s = np.where(2 * rest == n, c, s)  # pi/4 itself: cos and sin must agree
    c, s = np.where(upper, s, c), np.where(upper, c, s)
    # Adding +0.0 turns -0.0 into +0.0.
    cos = np.choose(quadrant, [c, -s, -c, s]) + 0.0
    sin = np.choose(quadrant, [s, c, -s, -c]) + 0.0
    return cos, sin


def dft_matrices(
    n: int, rows: int, columns: int, sign: int, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """Real and imaginary parts of ``W[i, j] = scale * exp(sign * 2 pi i * i j / n)``."""
    cos, sin = unit_roots(n)
    phase = np.outer(np.arange(rows), np.arange(columns)) % n
    # Adding +0.0 turns the -0.0 entries into +0.0.
    return cos[phase] * scale + 0.0, sign * sin[phase] * scale + 0.0


def hermitian_matrices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Matrices taking the ``n // 2 + 1`` half spectrum to a real signal of length n.

    ``x = re @ C - im @ S``: terms whose mirror image ``n - k`` is implied
    count twice; the imaginary parts of the DC and Nyquist terms drop out.
    """
    half = n // 2 + 1
    weight = np.full(half, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    c, s = dft_matrices(n, half, n, +1, 1.0 / n)
    return c * weight[:, None], s * weight[:, None]


def split_length(n: int) -> tuple[int, int] | None:
    """``(n1, n2)`` with ``n1 * n2 == n`` and ``n1`` the largest factor up to sqrt(n).

    None when ``n`` is small enough for a direct DFT, or prime.
    """
    if n <= DIRECT_MAX:
        return None
    for n1 in range(math.isqrt(n), 1, -1):
        if n % n1 == 0:
            return n1, n // n1
    return None


def _fft_type(op: ir.Operation) -> str:
    match = re.search(r"fft_type\s+(\w+)", str(op.attributes["fft_type"]))
    if match is None or match.group(1) not in FFT_TYPES:
        raise PassError(op.location, "expected fft_type FFT, IFFT, RFFT or IRFFT")
    return match.group(1)


def _fft_length(op: ir.Operation) -> list[int]:
    attr = op.attributes["fft_length"]
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(attr)
    return [int(v) for v in ir.DenseIntElementsAttr(attr)]


class _Dft:
    """Values as f64 (real, imaginary) pairs, transformed one axis at a time."""

    def __init__(self, builder: TemplateBuilder, shape: list[int]) -> None:
        self.b = builder
        self.shape = shape

    def f64(self, shape: list[int]) -> str:
        return tensor_type_text(shape, COMPUTE)

    def parts(self, value: str, element: ir.Type) -> tuple[str, str | None]:
        """(real, imaginary or None) of ``value`` in f64."""
        if isinstance(element, ir.ComplexType):
            part_type = tensor_type_text(self.shape, element.element_type)
            pieces = [self.b.op(f"stablehlo.{p}", [value], part_type) for p in ("real", "imag")]
            real, imag = (self.widen(p, element.element_type) for p in pieces)
            return real, imag
        return self.widen(value, element), None

    def widen(self, value: str, element: ir.Type) -> str:
        if str(element) == COMPUTE:
            return value
        return self.b.op("stablehlo.convert", [value], self.f64(self.shape))

    def _dot(self, value: str, matrix: str, axis: int, shape: list[int], columns: int) -> str:
        result = [size for d, size in enumerate(shape) if d != axis] + [columns]
        numbers = (
            f"#stablehlo.dot<lhs_contracting_dimensions = [{axis}], "
            "rhs_contracting_dimensions = [0]>"
        )
        return self.b.op(
            "stablehlo.dot_general",
            [value, matrix],
            self.f64(result),
            f"dot_dimension_numbers = {numbers}",
        )

    def _restore_axis(self, value: str, axis: int, rank: int) -> str:
        """Move the contraction's trailing result dimension back to ``axis``."""
        if axis == rank - 1:
            return value
        permutation = [d if d < axis else (rank - 1 if d == axis else d - 1) for d in range(rank)]
        return self.b.transpose(value, permutation)

    def apply(
        self,
        real: str,
        imag: str | None,
        axis: int,
        matrices: tuple[np.ndarray, np.ndarray],
        real_output: bool = False,
    ) -> tuple[str, str | None]:
        """``y[.., j, ..] = sum_i x[.., i, ..] * (C + iS)[i, j]`` along ``axis``."""
        c, s = matrices
        cos = self.b.constant(self.f64(list(c.shape)), dense_hex(c))
        sin = self.b.constant(self.f64(list(s.shape)), dense_hex(s))
        shape = list(self.shape)
        out_shape = list(shape)
        out_shape[axis] = c.shape[1]
        dot_shape = [size for d, size in enumerate(out_shape) if d != axis] + [c.shape[1]]
        typ = self.f64(dot_shape)

        def dot(value: str, matrix: str) -> str:
            return self._dot(value, matrix, axis, shape, c.shape[1])

        if imag is None:
            out_real, out_imag = dot(real, cos), dot(real, sin)
        else:
            out_real = self.b.op("stablehlo.subtract", [dot(real, cos), dot(imag, sin)], typ)
            out_imag = None
            if not real_output:
                out_imag = self.b.op("stablehlo.add", [dot(real, sin), dot(imag, cos)], typ)
        self.shape = out_shape
        out_real = self._restore_axis(out_real, axis, len(shape))
        if out_imag is not None:
            out_imag = self._restore_axis(out_imag, axis, len(shape))
        return out_real, out_imag

    def _reshape(self, value: str, shape: list[int]) -> str:
        return self.b.op("stablehlo.reshape", [value], self.f64(shape))

    def complex_dft(
        self, real: str, imag: str | None, axis: int, n: int, sign: int, scale: float
    ) -> tuple[str, str]:
        """``y[k] = scale * sum_j x[j] exp(sign 2 pi i j k / n)`` along ``axis``.

        For ``n = n1 * n2`` the axis is viewed as ``(j1, j2)``, ``j = j1 n2 + j2``:
        a DFT of length n1 over j1, a twiddle ``exp(sign 2 pi i k1 j2 / n)``, a
        DFT of length n2 over j2, and the result ``(k1, k2)`` is read as
        ``k = k2 n1 + k1``. O(n (n1 + n2)) work and O(n) constants.
        """
        factors = split_length(n)
        if factors is None:
            out_real, out_imag = self.apply(real, imag, axis, dft_matrices(n, n, n, sign, scale))
            assert out_imag is not None
            return out_real, out_imag
        n1, n2 = factors
        outer, inner = self.shape[:axis], self.shape[axis + 1 :]
        self.shape = [*outer, n1, n2, *inner]
        real = self._reshape(real, self.shape)
        imag = None if imag is None else self._reshape(imag, self.shape)
        real, imag = self.complex_dft(real, imag, axis, n1, sign, 1.0)
        cos, sin = unit_roots(n)
        phase = np.outer(np.arange(n1), np.arange(n2)) % n
        twiddle_cos, twiddle_sin = cos[phase] * scale + 0.0, sign * sin[phase] * scale + 0.0
        dims = [axis, axis + 1]
        c = self.b.broadcast(
            self.b.constant(self.f64([n1, n2]), dense_hex(twiddle_cos)), self.shape, dims
        )
        t = self.b.broadcast(
            self.b.constant(self.f64([n1, n2]), dense_hex(twiddle_sin)), self.shape, dims
        )
        typ = self.f64(self.shape)

        def mul(x: str, y: str) -> str:
            return self.b.op("stablehlo.multiply", [x, y], typ)

        real, imag = (
            self.b.op("stablehlo.subtract", [mul(real, c), mul(imag, t)], typ),
            self.b.op("stablehlo.add", [mul(real, t), mul(imag, c)], typ),
        )
        real, imag = self.complex_dft(real, imag, axis + 1, n2, sign, 1.0)
        rank = len(self.shape)
        swap = [*range(axis), axis + 1, axis, *range(axis + 2, rank)]
        real, imag = self.b.transpose(real, swap), self.b.transpose(imag, swap)
        self.shape = [*outer, n, *inner]
        return self._reshape(real, self.shape), self._reshape(imag, self.shape)

    def slice_axis(self, value: str, axis: int, size: int) -> str:
        """The first ``size`` entries of ``axis``."""
        shape = [*self.shape[:axis], size, *self.shape[axis + 1 :]]
        limits = ", ".join(str(d) for d in shape)
        starts = ", ".join("0" for _ in shape)
        steps = ", ".join("1" for _ in shape)
        return self.b.op(
            "stablehlo.slice",
            [value],
            self.f64(shape),
            f"start_indices = array<i64: {starts}>, limit_indices = array<i64: {limits}>, "
            f"strides = array<i64: {steps}>",
        )

    def hermitian_extend(self, real: str, imag: str, n: int) -> tuple[str, str]:
        """The full length-n spectrum along the last axis from its ``n // 2 + 1`` half.

        ``X[n - k] = conj(X[k])`` fills the entries past the half.
        """
        axis = len(self.shape) - 1
        half = self.shape[axis]
        mirror = n - half
        if mirror == 0:
            return real, imag
        tail_shape = [*self.shape[:axis], mirror]
        limits = [*self.shape[:axis], mirror + 1]

        def tail(value: str, negate: bool) -> str:
            rank = len(self.shape)
            piece = self.b.op(
                "stablehlo.slice",
                [value],
                self.f64(tail_shape),
                f"start_indices = array<i64: {', '.join(['0'] * axis + ['1'])}>, "
                f"limit_indices = array<i64: {', '.join(str(d) for d in limits)}>, "
                f"strides = array<i64: {', '.join(['1'] * rank)}>",
            )
            piece = self.b.op(
                "stablehlo.reverse",
                [piece],
                self.f64(tail_shape),
                f"dimensions = array<i64: {axis}>",
            )
            return self.b.op("stablehlo.negate", [piece], self.f64(tail_shape)) if negate else piece

        self.shape = [*self.shape[:axis], n]

        def join(value: str, negate: bool) -> str:
            return self.b.op(
                "stablehlo.concatenate",
                [value, tail(value, negate)],
                self.f64(self.shape),
                f"dimension = {axis} : i64",
            )

        return join(real, False), join(imag, True)


def fft_template(
    operand_type: ir.RankedTensorType,
    result_type: ir.RankedTensorType,
    fft_type: str,
    lengths: list[int],
) -> str:
    b = TemplateBuilder()
    x = b.argument(str(operand_type))
    shape = list(operand_type.shape)
    rank = len(shape)
    axes = list(range(rank - len(lengths), rank))
    dft = _Dft(b, shape)
    real, imag = dft.parts(x, operand_type.element_type)

    if fft_type in ("FFT", "IFFT"):
        sign, inverse = (-1, False) if fft_type == "FFT" else (+1, True)
        for axis, n in reversed(list(zip(axes, lengths))):
            scale = 1.0 / n if inverse else 1.0
            real, imag = dft.complex_dft(real, imag, axis, n, sign, scale)
    elif fft_type == "RFFT":
        n = lengths[-1]
        if split_length(n) is None:
            real, imag = dft.apply(real, imag, axes[-1], dft_matrices(n, n, n // 2 + 1, -1, 1.0))
        else:
            real, imag = dft.complex_dft(real, imag, axes[-1], n, -1, 1.0)
            real, imag = (dft.slice_axis(v, axes[-1], n // 2 + 1) for v in (real, imag))
            dft.shape[axes[-1]] = n // 2 + 1
        for axis, n in reversed(list(zip(axes[:-1], lengths[:-1]))):
            real, imag = dft.complex_dft(real, imag, axis, n, -1, 1.0)
    else:  # IRFFT
        for axis, n in reversed(list(zip(axes[:-1], lengths[:-1]))):
            real, imag = dft.complex_dft(real, imag, axis, n, +1, 1.0 / n)
        n = lengths[-1]
        assert imag is not None
        if split_length(n) is None:
            real, imag = dft.apply(real, imag, axes[-1], hermitian_matrices(n), real_output=True)
        else:
            # The imaginary part of the inverse of a Hermitian spectrum is dropped.
            real, imag = dft.hermitian_extend(real, imag, n)
            real, _ = dft.complex_dft(real, imag, axes[-1], n, +1, 1.0 / n)
            imag = None

    # Round once to the result's precision.
    element = result_type.element_type
    if imag is None:
        return b.function([b.convert(real, str(element))])
    part = str(ir.ComplexType(element).element_type)
    parts = [b.convert(real, part), b.convert(imag, part)]
    return b.function([b.op("stablehlo.complex", parts, str(result_type))])


def _check(op: ir.Operation, fft_type: str, lengths: list[int]) -> None:
    operand_type = ir.RankedTensorType(op.operands[0].type)
    result_type = ir.RankedTensorType(op.results[0].type)
    if not (operand_type.has_static_shape and result_type.has_static_shape):
        raise PassError(op.location, "expected static shapes")
    if not 1 <= len(lengths) <= min(3, operand_type.rank):
        raise PassError(op.location, "expected 1 to 3 fft_length values, at most the rank")
    if any(n <= 0 for n in lengths):
        raise PassError(op.location, "expected positive fft_length values")
    for type_ in (operand_type, result_type):
        element = type_.element_type
        if isinstance(element, ir.ComplexType):
            element = element.element_type
        if str(element) not in ("f32", "f64"):
            raise PassError(op.location, "expected f32, f64 or complex element types")
    # The other axes keep their length; the innermost one may change size.
    half = lengths[-1] // 2 + 1
    innermost = {"FFT": (lengths[-1],) * 2, "IFFT": (lengths[-1],) * 2}.get(
        fft_type, (lengths[-1], half) if fft_type == "RFFT" else (half, lengths[-1])
    )
    trailing_in = list(operand_type.shape[-len(lengths) :])
    trailing_out = list(result_type.shape[-len(lengths) :])
    if trailing_in != [*lengths[:-1], innermost[0]] or trailing_out != [
        *lengths[:-1],
        innermost[1],
    ]:
        raise PassError(op.location, "expected trailing dimensions matching fft_length")


def lower_fft(op: ir.Operation) -> None:
    fft_type = _fft_type(op)
    lengths = _fft_length(op)
    _check(op, fft_type, lengths)
    text = fft_template(
        ir.RankedTensorType(op.operands[0].type),
        ir.RankedTensorType(op.results[0].type),
        fft_type,
        lengths,
    )
    replace_with_template(op, text)


@dataclass(frozen=True)
class LowerFftPass(Pass):
    """Lower stablehlo.fft to DFT contractions against constant twiddle matrices."""

    argument: ClassVar[str] = "shlo-lower-fft"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.fft"):
            lower_fft(op)
