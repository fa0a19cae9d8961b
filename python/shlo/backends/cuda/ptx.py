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
import shutil
import subprocess
import tempfile
from pathlib import Path

from shlo._mlir_compat import ir, translate_module_to_llvmir
from shlo.backends.cuda.driver import INSTALL_HINT
from shlo.diagnostics import ShloError, collect_diagnostics
from shlo.llvmlite_ir import to_llvmlite_syntax

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
