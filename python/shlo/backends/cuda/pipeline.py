"""The CUDA pipeline: linalg on tensors -> GPU kernels (PTX, cubin) and a host LLVM module.

The input is the shared ``shlo.to_linalg`` stage's output: static linalg on
tensors. The stages:

1. tensor: elementwise fusion, as the CPU backend does it;
2. bufferize: as the CPU backend (identity layouts, results as out-parameters);
3. kernels: every linalg op becomes an ``scf.parallel`` loop nest, tiled to
   blocks of ``THREADS_PER_BLOCK`` threads, mapped to the grid and outlined
   into one ``gpu.module``. Loops outside any ``scf.parallel`` (a while loop's
   iterations, 0-d computations) stay host code: every buffer is CUDA managed
   memory, which the host may read and write, and each launch is synchronous;
4. device: the ``gpu.module`` to the LLVM and NVVM dialects, then LLVM IR,
   PTX and a cubin (``shlo.backends.cuda.ptx``);
5. host: the ``gpu.module`` becomes a ``gpu.binary`` holding the PTX (the
   driver JIT-compiles it for the device at hand), and the host code goes to
   the LLVM dialect with the CPU backend's conventions (one pointer to the
   buffers' data pointers; allocations through ``_mlir_memref_to_llvm_alloc``,
   which the CUDA runtime implements with managed memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shlo import progress
from shlo._mlir_compat import arith, gpu, ir, tensor
from shlo.backends.cuda.ptx import (
    error_at,
    find_ptxas,
    gpu_module_to_llvm_ir,
    llvm_ir_to_ptx,
    ptx_to_cubin,
)
from shlo.diagnostics import ShloError
from shlo.io import module_to_bytecode
from shlo.ir_utils import VIEW_OPS, defining_op, linalg_fill, ops_named, viewed_buffer
from shlo.linalg_stages import BUFFERIZE, ELEMENTWISE_FUSION, HOST_TO_LLVM_START
from shlo.pipeline import run_pipeline

# Threads per block of every kernel: a multiple of the warp size that fits
# every architecture's register file for the small loop bodies we generate.
THREADS_PER_BLOCK = 256

# The name of the one gpu.module (and gpu.binary) holding every kernel.
KERNEL_MODULE = "shlo_kernels"

# Elementwise chains become one kernel; bufferized as on the CPU.
TENSOR_STAGE = ELEMENTWISE_FUSION
BUFFERIZE_STAGE = BUFFERIZE


def kernel_stage(threads_per_block: int = THREADS_PER_BLOCK) -> list[str]:
    """Pipeline elements from loops over buffers to gpu.launch_func and outlined kernels."""
    return [
        # Reductions over rows: a block of threads per output element.
        "shlo-parallel-reductions",
        # Matmuls: a tile of outputs per thread, accumulated in registers.
        "shlo-register-tiled-matmuls",
        # Copies between buffers become kernels, which any memory suits.
        "shlo-copies-to-kernels",
        # Other reductions and contractions keep their reduction dimensions as a
        # serial scf.for inside each thread (one thread per output element).
        "func.func(convert-linalg-to-parallel-loops)",
        "canonicalize",
        # Consecutive threads on consecutive addresses, and full blocks.
        "shlo-innermost-parallel-dim-first",
        # Blocks of threads_per_block iterations of the (now innermost) first dimension; the
        # inner loop keeps a constant size (and a bounds check inside), which
        # convert-parallel-loops-to-gpu needs for its block size.
        "func.func(scf-parallel-loop-tiling{"
        f"parallel-loop-tile-sizes={threads_per_block} no-min-max-bounds=true}})",
        # Outer loops to blocks, inner loops to threads.
        "func.func(gpu-map-parallel-loops)",
        "func.func(convert-parallel-loops-to-gpu)",
        "canonicalize",
        # Constants go into the kernels instead of becoming kernel parameters.
        "func.func(gpu-launch-sink-index-computations)",
        "gpu-kernel-outlining",
    ]


def device_stage(arch: str) -> list[str]:
    """Pipeline elements that take the gpu.module's body to the LLVM and NVVM dialects."""
    return [
        f"nvvm-attach-target{{chip={arch}}}",
        "gpu.module("
        + ",".join(
            (
                "convert-linalg-to-loops",
                # Complex math becomes arith and math, which libdevice covers.
                "convert-complex-to-standard",
                "expand-strided-metadata",
                "lower-affine",
                "convert-scf-to-cf",
                "convert-gpu-to-nvvm",
                # What libdevice does not cover and NVPTX has instructions
                # for (ctpop, ctlz, cttz); after the libdevice calls above.
                "convert-math-to-llvm",
                "convert-nvvm-to-llvm",
                "convert-complex-to-llvm",
                "canonicalize",
                "cse",
                "reconcile-unrealized-casts",
            )
        )
        + ")",
    ]


HOST_STAGE = (
    *HOST_TO_LLVM_START,
    # Host code is CPU code: the CPU's precise expm1/log1p (upstream's lose
    # every digit near 0) and its f8/f6/f4 conversions, as in its pipeline.
    "shlo-precise-libm-calls",
    "shlo-expand-small-float-conversions",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-arith-to-llvm",
    "convert-complex-to-llvm",
    "convert-func-to-llvm",
    # gpu.launch_func stays, with LLVM operands; its translation to LLVM IR
    # loads the gpu.binary and launches on a fresh stream it synchronizes.
    "gpu-to-llvm",
    "convert-cf-to-llvm",
    "convert-index-to-llvm",
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
)


@dataclass(frozen=True)
class Kernel:
    """One kernel: its name in the PTX and its parameters' LLVM types, in order."""

    name: str
    parameter_types: tuple[str, ...]


@dataclass(frozen=True)
class CudaLowered:
    """What the CUDA runtime needs to run @main.

    ``host_llvm_bytecode`` is the host module in the LLVM dialect (MLIR
    bytecode) with a ``gpu.binary`` holding ``ptx``; ``cubin`` is that PTX
    assembled for the requested architecture, None when ptxas is missing.
    The types are @main's tensor types before lowering.
    """

    host_llvm_bytecode: bytes
    ptx: str
    cubin: bytes | None
    kernels: tuple[Kernel, ...]
    input_types: tuple[str, ...]
    result_types: tuple[str, ...]
    arch: str = "sm_80"
    # The buffers (inputs, then results) host code reads or writes: device
    # memory of a caller is staged through managed memory for these.
    host_accessed: tuple[int, ...] = ()
    # Whether host code touches any buffer: then every launch is waited for.
    host_reads_memory: bool = True


def _symbol_name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _top_level_ops(module: ir.Module, name: str) -> list[ir.Operation]:
    return [op.operation for op in module.body.operations if op.operation.name == name]


def _main_types(module: ir.Module) -> tuple[tuple[str, ...], tuple[str, ...]]:
    for op in _top_level_ops(module, "func.func"):
        if _symbol_name(op) == "main":
            function_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            inputs = tuple(str(t) for t in function_type.inputs)
            return inputs, tuple(str(t) for t in function_type.results)
    raise ShloError("the module has no @main to lower for CUDA")


def _launches(module: ir.Module) -> list[ir.Operation]:
    return ops_named(module.operation, "gpu.launch_func")


def merge_kernel_modules(module: ir.Module) -> ir.Operation | None:
    """Move every outlined kernel into one gpu.module named KERNEL_MODULE; None if no kernel.

    gpu-kernel-outlining makes one gpu.module per kernel: one module gives one
    PTX, one cubin and one module load in the runtime. Each module names its
    kernel after the enclosing function, so the kernels take their modules'
    names, which are unique.
    """
    kernel_modules = _top_level_ops(module, "gpu.module")
    if not kernel_modules:
        return None
    merged = kernel_modules[0]
    merged_body = merged.regions[0].blocks[0]
    with module.context:
        for launch in _launches(module):
            module_name = ir.SymbolRefAttr(launch.attributes["kernel"]).value[0]
            launch.attributes["kernel"] = ir.SymbolRefAttr.get([KERNEL_MODULE, module_name])
        for kernel_module in kernel_modules:
            for op in list(kernel_module.regions[0].blocks[0].operations):
                op = op.operation
                if op.name == "gpu.func":
                    op.attributes["sym_name"] = ir.StringAttr.get(_symbol_name(kernel_module))
                if kernel_module != merged:
                    merged_body.append(op.detach_from_parent())
            if kernel_module != merged:
                kernel_module.erase()
        merged.attributes["sym_name"] = ir.StringAttr.get(KERNEL_MODULE)
    return merged


def kernels_of(kernel_module: ir.Operation) -> tuple[Kernel, ...]:
    """The kernels of a gpu.module lowered to the LLVM dialect, with their parameter types."""
    kernels = []
    for op in kernel_module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "llvm.func" and "gpu.kernel" in op.attributes:
            parameters = op.regions[0].blocks[0].arguments
            kernels.append(Kernel(_symbol_name(op), tuple(str(p.type) for p in parameters)))
    return tuple(kernels)


def check_kernels_read_device_memory(module: ir.Module, filename: str = "") -> None:
    """Refuse kernel arguments in host-only memory (globals, stack): the device cannot read them."""
    for launch in _launches(module):
        for operand in launch.operands:
            if not isinstance(operand.type, ir.MemRefType):
                continue
            source = defining_op(viewed_buffer(operand))
            if source is not None and source.name in ("memref.get_global", "memref.alloca"):
                raise error_at(
                    launch.location,
                    f"internal error: a CUDA kernel would read host memory ({source.name})",
                    filename,
                )


# Ops that pass a buffer on without the host reading or writing its memory.
_NO_HOST_ACCESS = frozenset(("gpu.launch_func", "memref.dealloc", "memref.dim"))


def host_accessed_buffers(module: ir.Module) -> tuple[int, ...]:
    """The indices of @main's buffers (inputs, then results) that host code reads or writes.

    Run after the kernels are outlined. Every other buffer is touched by
    kernels only, so a call may pass it in device memory; these must be in
    memory the host can reach. Conservative: a buffer handed to anything but
    a kernel launch, a view or a deallocation counts as accessed.
    """
    main = next(
        (op for op in _top_level_ops(module, "func.func") if _symbol_name(op) == "main"), None
    )
    if main is None:
        return ()
    arguments = main.regions[0].blocks[0].arguments
    origin: dict[ir.Value, int] = {argument: index for index, argument in enumerate(arguments)}
    accessed: set[int] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        op = op.operation
        sources = {origin[v] for v in op.operands if v in origin}
        if sources:
            if op.name in VIEW_OPS or op.name == "memref.extract_strided_metadata":
                for result in op.results:
                    origin[result] = next(iter(sources)) if len(sources) == 1 else -1
                accessed.update(sources if len(sources) > 1 else ())
            elif op.name not in _NO_HOST_ACCESS:
                accessed.update(sources)
        return ir.WalkResult.ADVANCE

    main.walk(visit, ir.WalkOrder.PRE_ORDER)
    accessed.discard(-1)
    return tuple(sorted(accessed))


# Host ops that neither read nor write a buffer's memory: the launches, copies
# and fills queued on the stream, allocation, views, and scalar arithmetic.
_NO_MEMORY_ACCESS_PREFIXES = ("arith.", "index.", "math.")
_NO_MEMORY_ACCESS = frozenset(
    (
        *VIEW_OPS,
        *_NO_HOST_ACCESS,
        "func.func",
        "func.return",
        "gpu.memcpy",
        "gpu.memset",
        "gpu.alloc",
        "gpu.dealloc",
        "memref.alloc",
        "memref.extract_strided_metadata",
        "ub.poison",
    )
)


def host_reads_memory(module: ir.Module) -> bool:
    """Whether @main's host code reads or writes any buffer (a load, a store, a memcpy).

    If not, its kernels may run asynchronously on one stream and the call
    waits once at its end; if so, each launch is waited for, so the host
    reads what the kernels wrote and writes nothing a kernel still uses.
    """
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        name = op.operation.name
        if name not in _NO_MEMORY_ACCESS and not name.startswith(_NO_MEMORY_ACCESS_PREFIXES):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    for op in _top_level_ops(module, "func.func"):
        op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


# gpu::CompilationTarget::Assembly: the object is PTX text, JIT-compiled by the driver.
_PTX_FORMAT = 2


def replace_by_binary(kernel_module: ir.Operation, ptx: str) -> None:
    """Put a gpu.binary holding ``ptx`` for the module's NVVM target where the module was."""
    with kernel_module.context, kernel_module.location:
        target = ir.ArrayAttr(kernel_module.attributes["targets"])[0]
        ptx_object = gpu.ObjectAttr.get(target, _PTX_FORMAT, ptx.encode())
        # Without an explicit handler the op is built with a null one, and
        # printing it crashes. select_object<0>: the only object, the PTX.
        handler = ir.Attribute.parse("#gpu.select_object<0>")
        with ir.InsertionPoint(kernel_module):
            gpu.BinaryOp(
                _symbol_name(kernel_module),
                ir.ArrayAttr.get([ptx_object]),
                offloadingHandler=handler,
            )
    kernel_module.erase()


def _scalar_splat(op: ir.Operation) -> ir.Attribute | None:
    """The element of a splat constant that an arith.constant can hold, else None.

    Complex constants are never read here: the bindings cannot cast their
    attribute (a TypeError), so they take the copy path.
    """
    element = op.results[0].type.element_type
    if not isinstance(element, ir.IntegerType | ir.FloatType | ir.IndexType):
        return None
    attribute = op.attributes["value"]
    if not isinstance(attribute, ir.DenseElementsAttr) or not attribute.is_splat:
        return None
    return attribute.get_splat_value()


def copy_constants_to_buffers(module: ir.Module) -> None:
    """Make every tensor constant a buffer of its own, so that kernels never read host memory.

    Bufferized as they are, constants would be host globals (memref.get_global),
    which a kernel cannot read. Splats become a linalg.fill (a kernel); other
    constants a copy of the global into an allocation (CUDA managed memory).
    """
    for op in ops_named(module.operation, "arith.constant"):
        value = op.results[0]
        if not isinstance(value.type, ir.RankedTensorType) or not list(value.uses):
            continue
        splat = _scalar_splat(op)
        with op.location, ir.InsertionPoint.after(op):
            if splat is not None:
                scalar = arith.ConstantOp(value.type.element_type, splat)
                empty = tensor.EmptyOp(value.type.shape, value.type.element_type)
                replacement = linalg_fill(scalar.result, empty.result)
            else:
                replacement = ir.Operation.create(
                    "bufferization.alloc_tensor",
                    results=[value.type],
                    operands=[value],
                    attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 1, 0])},
                ).result
        value.replace_all_uses_except(replacement, replacement.owner.operation)


def prepare_for_cuda(
    source: bytes | str, entry: str, arg_types: Sequence[str] | None, filename: str, max_bytes: int
) -> tuple[ir.Module, tuple[list[str], list[str]]]:
    """The shared frontend and linalg stage for ``entry``: static linalg on tensors, and
    @main's (input, result) types from before integers became signless."""
    from shlo.frontend import prepare_static
    from shlo.to_linalg import to_linalg_stage

    module, inputs, results = prepare_static(source, entry, arg_types, filename, max_bytes)
    run_pipeline(module, to_linalg_stage("cuda"), filename)
    return module, ([str(t) for t in inputs], [str(t) for t in results])


def outline_kernels(module: ir.Module, filename: str) -> None:
    """Linalg on tensors -> buffers, with every kernel outlined and launched from @main."""
    run_pipeline(module, list(TENSOR_STAGE), filename, verify_each=False)
    copy_constants_to_buffers(module)
    for stage in (BUFFERIZE_STAGE, kernel_stage()):
        run_pipeline(module, list(stage), filename, verify_each=False)
    check_kernels_read_device_memory(module, filename)


def lower_to_cuda(
    module: ir.Module,
    arch: str = "sm_80",
    filename: str = "<module>",
    entry_types: tuple[Sequence[str], Sequence[str]] | None = None,
) -> CudaLowered:
    """Lower a static linalg-on-tensors @main to kernels for ``arch`` and a host LLVM module.

    ``module`` is changed in place (it ends as the host module). Ops the CUDA
    backend cannot compile raise ShloError naming the op and its location.
    ``entry_types`` are @main's (input, result) tensor types before the linalg
    stage made integers signless; by default, the module's.
    """
    input_types, result_types = entry_types or _main_types(module)
    input_types, result_types = tuple(input_types), tuple(result_types)
    progress.stage("kernels")
    outline_kernels(module, filename)
    host_accessed = host_accessed_buffers(module)
    reads_memory = host_reads_memory(module)
    kernel_module = merge_kernel_modules(module)
    ptx, cubin, kernels = "", None, ()
    if kernel_module is not None:
        progress.stage("PTX")
        run_pipeline(module, device_stage(arch), filename, verify_each=False)
        # The pass manager may have replaced the op: find it again by name.
        kernel_module = _top_level_ops(module, "gpu.module")[0]
        kernels = kernels_of(kernel_module)
        ptx = llvm_ir_to_ptx(gpu_module_to_llvm_ir(kernel_module, filename), arch)
        cubin = ptx_to_cubin(ptx, arch) if find_ptxas() is not None else None
        replace_by_binary(kernel_module, ptx)
    progress.stage("host code")
    run_pipeline(module, list(HOST_STAGE), filename, verify_each=False)
    return CudaLowered(
        module_to_bytecode(module),
        ptx,
        cubin,
        kernels,
        input_types,
        result_types,
        arch,
        host_accessed,
        reads_memory,
    )
