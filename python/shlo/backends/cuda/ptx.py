"""Device code: a lowered ``gpu.module`` -> LLVM IR -> PTX (llvmlite) -> cubin (ptxas).

MLIR translates the module to LLVM IR text with the LLVM it was built with,
which is newer than llvmlite's: its float literals are first rewritten into
the syntax llvmlite's parser reads (the rest of the syntax reads the same). Math
functions (``__nv_expf`` ...) come from CUDA's libdevice, linked in before
code generation. ptxas, from the ``cuda`` extra's nvidia-cuda-nvcc, turns PTX
into a cubin for one architecture; the CUDA driver can also JIT the PTX.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from shlo._mlir_compat import ir, translate_module_to_llvmir
from shlo.backends.cuda.driver import INSTALL_HINT
from shlo.diagnostics import ShloError, collect_diagnostics

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
SUPPORTED_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")

# Dialects whose ops MLIR's LLVM IR translation handles inside a gpu.module.
_TRANSLATABLE_DIALECTS = ("llvm", "nvvm")


# ---------------------------------------------------------------- tools


def _nvidia_package_dirs() -> list[Path]:
    """The directories of the ``nvidia`` namespace package (the CUDA wheels), if installed."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def _toolkit_dirs() -> list[Path]:
    """A CUDA toolkit installed outside Python: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda."""
    names = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [Path(name) for name in names if name and Path(name).is_dir()]


def find_ptxas() -> str | None:
    """ptxas from the installed CUDA wheel (nvidia-cuda-nvcc), else from PATH or a CUDA
    toolkit; None if absent."""
    for package in _nvidia_package_dirs():
        # cu13 wheels: nvidia/cu13/bin; cu12 wheels: nvidia/cuda_nvcc/bin.
        for candidate in sorted(package.glob("*/bin/ptxas")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which("ptxas")
    candidates = [toolkit / "bin" / "ptxas" for toolkit in _toolkit_dirs()]
    return found or next((str(c) for c in candidates if os.access(c, os.X_OK)), None)


def libdevice_path() -> str | None:
    """CUDA's libdevice.10.bc from the installed CUDA wheels (nvidia-nvvm), else from a CUDA
    toolkit; None if absent."""
    for package in _nvidia_package_dirs():
        for candidate in sorted(package.glob("*/nvvm/libdevice/libdevice.10.bc")):
            return str(candidate)
    for toolkit in _toolkit_dirs():
        candidate = toolkit / "nvvm" / "libdevice" / "libdevice.10.bc"
        if candidate.is_file():
            return str(candidate)
    return None


@functools.cache
def _llvmlite():
    """llvmlite's binding with the NVPTX target initialized; ShloError when not installed."""
    try:
        import llvmlite.binding as llvm
    except ImportError:
        raise ShloError(
            f"the CUDA backend needs llvmlite to generate PTX; {INSTALL_HINT}"
        ) from None
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def _check_arch(arch: str) -> None:
    if arch not in SUPPORTED_ARCHS:
        raise ShloError(
            f"unsupported CUDA architecture {arch!r}; expected one of {', '.join(SUPPORTED_ARCHS)}"
        )


# ---------------------------------------------------------------- MLIR -> LLVM IR


def error_at(location: ir.Location, message: str, filename: str = "") -> ShloError:
    """A ShloError whose diagnostic points at ``location``, in ``filename`` for parsed text."""
    with collect_diagnostics(location.context, filename) as collector:
        location.emit_error(message)
    return ShloError(message, collector.diagnostics)


def _check_translatable(gpu_module: ir.Operation, filename: str) -> None:
    """Refuse any op that the LLVM IR translation would not know (it would crash on it)."""
    foreign: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.split(".", 1)[0] not in _TRANSLATABLE_DIALECTS and op != gpu_module:
            foreign.append(op)
        return ir.WalkResult.ADVANCE

    gpu_module.walk(visit)
    # The casts around an op that did not convert only say that it did not:
    # name the op itself.
    culprits = [op for op in foreign if op.name != "builtin.unrealized_conversion_cast"]
    if foreign:
        op = (culprits or foreign)[0]
        operand_types = ", ".join(str(value.type) for value in op.operands)
        result_types = ", ".join(str(value.type) for value in op.results)
        raise error_at(
            op.location,
            f"'{op.name}' ({operand_types}) -> ({result_types}) in a CUDA kernel has no "
            "lowering to NVVM (not supported by the CUDA backend)",
            filename,
        )


def gpu_module_to_llvm_ir(gpu_module: ir.Operation | ir.OpView, filename: str = "") -> str:
    """LLVM IR text of a ``gpu.module`` whose body is fully in the LLVM and NVVM dialects."""
    op = gpu_module.operation
    if op.name != "gpu.module":
        raise ValueError(f"expected a gpu.module, got '{op.name}'")
    _check_translatable(op, filename)
    return translate_module_to_llvmir(op)


# ---------------------------------------------------------------- LLVM IR for llvmlite


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
        raise ShloError(f"CUDA kernels cannot hold {type_name} constants (literal {literal})")
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


# ---------------------------------------------------------------- LLVM IR -> PTX


def _target_machine(llvm, arch: str):
    target = llvm.Target.from_triple(NVPTX_TRIPLE)
    return target.create_target_machine(cpu=arch, opt=3)


@functools.cache
def _read_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def _link_libdevice(llvm, module) -> None:
    """Link the libdevice functions ``module`` calls, internal so that unused ones are dropped."""
    path = libdevice_path()
    if path is None:
        missing = sorted(f.name for f in module.functions if f.name.startswith("__nv_"))
        raise ShloError(
            f"the CUDA kernels call {', '.join(missing)}, which need CUDA's libdevice "
            f"(nvidia-nvvm); {INSTALL_HINT}"
        )
    libdevice = llvm.parse_bitcode(_read_bytes(path))
    provided = {f.name for f in libdevice.functions if not f.is_declaration}
    provided |= {g.name for g in libdevice.global_variables}
    # libdevice's own triple and layout differ only in spelling; ours win.
    libdevice.triple = module.triple
    libdevice.data_layout = module.data_layout
    module.link_in(libdevice)
    for value in [*module.functions, *module.global_variables]:
        if value.name in provided and not value.is_declaration:
            value.linkage = "internal"


# libdevice asks the code generator about the target through it (NVVMReflect folds the calls).
_NVVM_REFLECT = "__nvvm_reflect"


def _check_resolved(module) -> None:
    """Every called function is an LLVM intrinsic or defined: the PTX must link alone."""
    unresolved = sorted(
        f.name
        for f in module.functions
        if f.is_declaration and not f.name.startswith("llvm.") and f.name != _NVVM_REFLECT
    )
    if unresolved:
        raise ShloError(
            f"the CUDA kernels call {', '.join(unresolved)}, which neither libdevice nor the "
            "kernels define (a math function without a CUDA implementation)"
        )


def llvm_ir_to_ptx(llvm_ir: str, arch: str) -> str:
    """PTX for ``arch`` (e.g. "sm_80") of device LLVM IR, with libdevice linked in."""
    _check_arch(arch)
    llvm = _llvmlite()
    try:
        module = llvm.parse_assembly(to_llvmlite_syntax(llvm_ir))
    except RuntimeError as error:
        raise ShloError(f"llvmlite cannot read the kernels' LLVM IR: {error}") from None
    machine = _target_machine(llvm, arch)
    module.triple = NVPTX_TRIPLE
    module.data_layout = str(machine.target_data)
    if any(f.is_declaration and f.name.startswith("__nv_") for f in module.functions):
        _link_libdevice(llvm, module)
    _check_resolved(module)
    module.verify()
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, tuning)
    passes = builder.getModulePassManager()
    # O3 inlines the internal libdevice functions; global DCE then drops the rest.
    passes.add_global_dead_code_eliminate_pass()
    passes.run(module, builder)
    return machine.emit_assembly(module)


# ---------------------------------------------------------------- PTX -> cubin


def ptx_to_cubin(ptx: str, arch: str) -> bytes:
    """The cubin ptxas assembles from ``ptx`` for ``arch``; ShloError with ptxas's message."""
    _check_arch(arch)
    ptxas = find_ptxas()
    if ptxas is None:
        raise ShloError(f"ptxas is not installed (it comes with nvidia-cuda-nvcc); {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="shlo-ptxas-") as directory:
        source = Path(directory) / "kernels.ptx"
        cubin = Path(directory) / "kernels.cubin"
        source.write_text(ptx, encoding="utf-8")
        result = subprocess.run(
            [ptxas, f"-arch={arch}", "-O3", str(source), "-o", str(cubin)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise ShloError(f"ptxas rejected the PTX for {arch}: {result.stderr.strip()}")
        return cubin.read_bytes()
