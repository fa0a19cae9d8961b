"""LLVM IR text from MLIR's LLVM, rewritten for the older LLVM of llvmlite.

MLIR translates a module to LLVM IR text with the LLVM it was built with,
which is newer than llvmlite's. Only float literals read differently: LLVM
23+ prints exact bit patterns (``f0x...``), signed infinities and NaNs and
decimals that the old parser misreads or rejects. ``to_llvmlite_syntax``
rewrites them as the hex bits the old parser takes; the rest of the syntax
reads the same. Used for PTX (``shlo.backends.cuda.ptx``) and for the CPU's
glue-only modules (``shlo.backends.cpu.glue_codegen``).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from shlo.diagnostics import ShloError


@dataclass(frozen=True)
class _FloatFormat:
    bits: int
    mantissa_bits: int
    legacy_prefix: str  # what llvmlite's parser wants before the hex bits


_FLOAT_FORMATS = {
    "half": _FloatFormat(16, 10, "0xH"),
    "bfloat": _FloatFormat(16, 7, "0xR"),
    "float": _FloatFormat(32, 23, "0x"),
    "double": _FloatFormat(64, 52, "0x"),
}

# LLVM's floating-point types; a literal belongs to the last one before it on its line
# (``fadd float %a, 1.5``, ``call float @f(float 1.5)``, ``<2 x half> <half 1.0, ...>``).
_FLOAT_TYPE = re.compile(r"\b(half|bfloat|float|double|x86_fp80|fp128|ppc_fp128)\b")

# The literals that LLVM 23+ prints and llvmlite's LLVM misreads or rejects:
# exact bit patterns (f0x...), signed infinities and NaNs, and decimals, which
# the old parser reads as double and refuses for float when not exact there.
_FLOAT_LITERAL = re.compile(
    r"(?<=[\s\[<(,])"
    r"(?P<literal>f0x[0-9A-Fa-f]+"
    r"|[+-](?:inf|qnan)"
    r"|[+-]s?nan\(0x[0-9A-Fa-f]+\)"
    r"|[+-]?0x[0-9A-Fa-f]*\.?[0-9A-Fa-f]*p[+-]?\d+"
    r"|[+-]?\d+\.\d*(?:[eE][+-]?\d+)?)"
    r"(?=[\s,)\]>}]|$)"
)
_DECIMAL = re.compile(r"[+-]?\d+\.\d*(?:[eE][+-]?\d+)?")


def _literal_bits(literal: str, fmt: _FloatFormat) -> int:
    """The bit pattern of ``literal`` in ``fmt``."""
    if literal.startswith("f0x"):
        return int(literal[3:], 16)
    sign = (1 << (fmt.bits - 1)) if literal.startswith("-") else 0
    exponent_all_ones = ((1 << (fmt.bits - 1 - fmt.mantissa_bits)) - 1) << fmt.mantissa_bits
    quiet_bit = 1 << (fmt.mantissa_bits - 1)
    body = literal.lstrip("+-")
    if body == "inf":
        return sign | exponent_all_ones
    if body == "qnan":
        return sign | exponent_all_ones | quiet_bit
    if body.startswith(("nan(", "snan(")):
        payload = int(body[body.index("(") + 1 : -1], 16)
        quiet = quiet_bit if body.startswith("nan") else 0
        return sign | exponent_all_ones | quiet | payload
    if "p" in body:  # C99 hexadecimal, exact in double for every type we support
        return _value_bits(float.fromhex(literal), fmt)
    return _value_bits(float(literal), fmt)


def _value_bits(value: float, fmt: _FloatFormat) -> int:
    """The bits of ``value`` (a double) rounded to ``fmt``.

    Decimal -> double -> narrower type rounds twice; harmless here because the
    printer only writes decimals that round-trip, far from a rounding midpoint.
    """
    if fmt.bits == 64:
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if fmt.bits == 32:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if fmt.mantissa_bits == 10:
        return struct.unpack("<H", struct.pack("<e", value))[0]
    # bfloat: the top half of the float, rounded to nearest even.
    single = struct.unpack("<I", struct.pack("<f", value))[0]
    return (single + 0x7FFF + ((single >> 16) & 1)) >> 16


def _float_bits_as_double(bits: int) -> int:
    """The double holding the float with ``bits`` (llvmlite's parser wants float hex as double)."""
    sign = (bits >> 31) << 63
    exponent = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    if exponent == 0xFF:  # infinities and NaNs keep their payload bits
        return sign | (0x7FF << 52) | (mantissa << 29)
    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _legacy_literal(literal: str, type_name: str) -> str:
    if type_name == "double" and _DECIMAL.fullmatch(literal):
        return literal  # decimal doubles read the same in every LLVM
    fmt = _FLOAT_FORMATS.get(type_name)
    if fmt is None:
        raise ShloError(f"llvmlite cannot read {type_name} constants (literal {literal})")
    bits = _literal_bits(literal, fmt)
    if fmt.bits == 32:
        return f"0x{_float_bits_as_double(bits):016X}"
    return f"{fmt.legacy_prefix}{bits:0{fmt.bits // 4}X}"


def _rewrite_line(line: str) -> str:
    types = list(_FLOAT_TYPE.finditer(line))
    if not types:
        return line
    pieces: list[str] = []
    position = 0
    for match in _FLOAT_LITERAL.finditer(line):
        before = [t for t in types if t.end() <= match.start()]
        if not before:
            continue
        pieces += [line[position : match.start()], _legacy_literal(match["literal"], before[-1][1])]
        position = match.end()
    return "".join(pieces) + line[position:]


def to_llvmlite_syntax(llvm_ir: str) -> str:
    """``llvm_ir`` as printed by MLIR's LLVM, rewritten for the older LLVM of llvmlite."""
    lines = []
    for line in llvm_ir.splitlines():
        if line.lstrip().startswith(";"):
            lines.append(line)
            continue
        lines.append(_rewrite_line(line))
    return "\n".join(lines) + "\n"
