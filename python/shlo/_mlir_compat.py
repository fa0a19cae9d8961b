"""The only module that imports the MLIR distribution.

The distribution is the PyPI wheel torch-mlir==20261001, used purely as a
packaging of the upstream MLIR Python bindings, the StableHLO dialect and its
passes. Switching to another distribution means changing this file alone.

Binding behaviour relied on (checked against that wheel):
- importing ``torch_mlir.ir`` registers every upstream dialect and pass;
- StableHLO passes go into the global registry once, via
  ``register_stablehlo_passes``;
- the CHLO dialect is registered but not loadable by name: it is loaded as a
  dependent dialect of a pass that runs, so ``new_context`` runs one.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence

from torch_mlir import ir, passmanager, rewrite
from torch_mlir._mlir_libs import _stablehlo
from torch_mlir._mlir_libs._stablehlo import ConvDimensionNumbers, GatherDimensionNumbers

# The CUDA backend builds gpu.binary ops.
from torch_mlir.dialects import affine, arith, bufferization, gpu, memref, quant, scf, tensor
from torch_mlir.execution_engine import ExecutionEngine

# The wheel has no Python op modules for these dialects, and the bindings try
# (and fail) to import one each time they wrap an op of the dialect: a 25x
# slowdown of every walk. Empty modules make the lookup succeed once.
for _dialect in ("stablehlo", "chlo", "vhlo"):
    _name = f"torch_mlir.dialects.{_dialect}"
    sys.modules.setdefault(_name, types.ModuleType(_name))

__all__ = [
    "ConvDimensionNumbers",
    "ExecutionEngine",
    "GatherDimensionNumbers",
    "affine",
    "arith",
    "bufferization",
    "current_version",
    "defer_engine_teardown",
    "deserialize_portable_artifact",
    "destroy_finished_engines",
    "eval_module",
    "gpu",
    "ir",
    "memref",
    "minimum_version",
    "new_context",
    "new_torch_context",
    "passmanager",
    "quant",
    "rewrite",
    "scf",
    "serialize_portable_artifact",
    "tensor",
    "torch_decompositions",
    "torch_fx_import",
    "use_linalg_without_opdsl",
    "write_object_file",
]


def __getattr__(name: str) -> object:
    """``linalg`` and ``translate_module_to_llvmir``, imported on first use.

    Their modules take 60 and 40 ms to import, 40% of ``import shlo``; the
    process that calls compiled code needs neither (its worker compiles).
    """
    if name == "linalg":
        from torch_mlir.dialects import linalg

        return linalg
    if name == "fill_builtin_region":
        from torch_mlir._mlir_libs._mlirDialectsLinalg import fill_builtin_region

        return fill_builtin_region
    if name == "translate_module_to_llvmir":
        # The CUDA backend translates gpu.module bodies to LLVM IR.
        from torch_mlir.dialects.llvm import translate_module_to_llvmir

        return translate_module_to_llvmir
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A pass that lists chlo as a dependent dialect, run on a module holding one
# function so that the pass manager really schedules it.
_LOAD_CHLO_PIPELINE = "builtin.module(stablehlo-compatibility-expander,stablehlo-legalize-to-vhlo)"


@functools.cache
def _register_passes() -> None:
    _stablehlo.register_stablehlo_passes()


# Made by prepare_context while the worker waits for its next request.
_prepared_context: ir.Context | None = None


def new_context() -> ir.Context:
    """A context with all passes registered; StableHLO, CHLO, VHLO and LOADED_DIALECTS loaded."""
    global _prepared_context
    context, _prepared_context = _prepared_context, None
    if context is None:
        context = _make_context()
    if _contexts_to_release is not None:
        _contexts_to_release.append(context)
    return context


# Destroying a context, its dialects and uniqued types and attributes, takes
# about 1.7 ms, an eighth of a small program's compile. In the worker the
# last reference to a request's context died as the request's frames
# unwound, before its reply; or, held by a reference cycle, at whichever
# later collection found it, often in the middle of another compile. The
# worker keeps each context it hands out and drops them while it waits for
# its next request (release_finished_contexts).
_contexts_to_release: list[ir.Context] | None = None


def defer_context_teardown() -> None:
    """From now on ``new_context`` keeps each context it hands out for
    ``release_finished_contexts``."""
    global _contexts_to_release
    if _contexts_to_release is None:
        _contexts_to_release = []


def release_finished_contexts(
    stop: Callable[[], bool] = lambda: False, keep_at_most: int = 2
) -> None:
    """Drop the contexts ``new_context`` handed out, the last reference to each
    once its request is done, until ``stop()`` says to leave the rest for later,
    but keep no more than ``keep_at_most`` (a context holds its program's
    constants); no request may be using one."""
    contexts = _contexts_to_release
    while contexts and (len(contexts) > keep_at_most or not stop()):
        contexts.pop()


_LINALG = "torch_mlir.dialects.linalg"


def use_linalg_without_opdsl() -> None:
    """Make ``torch_mlir.dialects.linalg`` the dialect's op classes, without its OpDSL.

    The bindings import a dialect's module the first time they wrap one of its
    ops, and linalg's also builds the OpDSL's named-op functions: 70-100 ms,
    a fifth of a process's first compilation. shlo builds linalg ops with the
    generated classes and ``fill_builtin_region``. The worker calls this at
    its start; any other attribute (``linalg.matmul(...)``) imports the real
    module then.
    """
    if _LINALG in sys.modules:
        return
    from torch_mlir._mlir_libs import _mlirDialectsLinalg
    from torch_mlir.dialects import _linalg_enum_gen, _linalg_ops_gen

    module = types.ModuleType(_LINALG, "linalg's op classes (shlo.use_linalg_without_opdsl)")
    for source in (_mlirDialectsLinalg, _linalg_ops_gen, _linalg_enum_gen):
        module.__dict__.update(
            (key, value)
            for key, value in vars(source).items()
            # Not the generated op builders (fill, copy, matmul, ...): the real
            # module's are the OpDSL's, which take other arguments (outs=).
            if not key.startswith("__")
            and not (source is _linalg_ops_gen and key[:1].islower() and callable(value))
        )

    def real_module_attribute(name: str) -> object:
        del sys.modules[_LINALG]
        try:
            real = importlib.import_module(_LINALG)
        except ImportError:
            sys.modules[_LINALG] = module
            raise
        return getattr(real, name)

    module.__getattr__ = real_module_attribute  # type: ignore[attr-defined]
    sys.modules[_LINALG] = module


def prepare_context() -> ir.Context:
    """Make the next ``new_context()`` now, ahead of time, and return it; nobody
    else uses it until then.

    The worker calls this between requests: a context takes about 4.5 ms to
    make, 15% of a small program's compile, and the host links the previous
    program's code meanwhile. Only the worker calls it, one request at a
    time, so no two threads take the same context.
    """
    global _prepared_context
    if _prepared_context is None:
        _prepared_context = _make_context()
    return _prepared_context


# The dialects a context loads when it is made: those whose ops shlo's own
# code creates (Operation.create and the dialects' op classes need them
# loaded) or whose types it parses. Every other registered dialect loads
# when the parser, the bytecode reader or a pass's dependencies first need
# it. Loading all of them (spirv, rocdl, nvvm, tosa, ...) made every
# canonicalize and greedy pattern run set up their ops' patterns too: the
# lowering of `x * 2 + 1` took 12.0 instead of 9.8 ms, the bench matmul's
# 26.1 instead of 23.3 ms, to the same LLVM IR.
LOADED_DIALECTS = (
    "builtin",
    "func",
    "arith",
    "math",
    "complex",
    "index",
    "ub",
    "shape",
    "quant",
    "sparse_tensor",
    "tensor",
    "linalg",
    "affine",
    "scf",
    "cf",
    "memref",
    "bufferization",
    "vector",
    "transform",
    "pdl",
    "pdl_interp",
    "omp",
    "llvm",
    "gpu",
)


def _make_context() -> ir.Context:
    _register_passes()
    context = ir.Context(load_on_create_dialects=LOADED_DIALECTS)
    _stablehlo.register_dialect(context)
    # Printing IR between passes requires single-threaded execution, and
    # Python passes are not reentrant.
    context.enable_multithreading(False)
    with context, ir.Location.unknown():
        seed = ir.Module.parse("func.func private @load_dependent_dialects()")
        passmanager.PassManager.parse(_LOAD_CHLO_PIPELINE).run(seed.operation)
    return context


def serialize_portable_artifact(module: ir.Module, target_version: str) -> bytes:
    """StableHLO portable artifact (VHLO bytecode) of ``module`` for ``target_version``."""
    text = module.operation.get_asm(enable_debug_info=True)
    return _stablehlo.serialize_portable_artifact_str(text, target_version)


def deserialize_portable_artifact(context: ir.Context, data: bytes) -> ir.Module:
    return _stablehlo.deserialize_portable_artifact(context, data)


def eval_module(module: ir.Module, args: list[ir.Attribute]) -> list[ir.Attribute]:
    """Run @main in StableHLO's reference interpreter. It aborts on some bad input."""
    return list(_stablehlo.eval_module(module, args))


def current_version() -> str:
    return _stablehlo.get_current_version()


def minimum_version() -> str:
    return _stablehlo.get_minimum_version()


def new_torch_context() -> ir.Context:
    """``new_context()`` with torch-mlir's torch dialect too, and so its passes registered.

    Needs no PyTorch: the dialect and its passes are native code of the wheel.
    """
    from torch_mlir.dialects import torch as torch_dialect

    context = new_context()
    torch_dialect.register_dialect(context)
    return context


def torch_decompositions() -> dict:
    """The decomposition table torch-mlir's FX importer expects a ``torch.export`` program in."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    return get_decomposition_table()


def torch_fx_import(program: object, function_name: str) -> ir.Module:
    """A ``torch.export.ExportedProgram`` as a torch-dialect module, its weights as constants.

    Imports PyTorch (through the importer), so only a caller that has it calls this.
    """
    from torch_mlir.extras.fx_importer import FxImporter

    importer = FxImporter(context=new_torch_context(), py_attr_tracker=_tracker_keeping_alive())
    importer.import_frozen_program(program, func_name=function_name)
    return importer.module


def _tracker_keeping_alive() -> object:
    """A literal tracker for torch-mlir's importer that keeps what it tracks alive.

    The importer remembers the literal made of each tensor by the tensor's
    ``id()``, holding only a weak reference. It converts each bool constant
    to a temporary uint8 tensor first, which dies as soon as its literal is
    made, so the next bool constant's temporary may get the same ``id()``
    and silently take the first one's values: GPT-Neo's local-attention mask
    became its global one (torch-mlir 20261001). Alive until the import
    ends, no two tracked tensors share an ``id()``.
    """
    from torch_mlir.extras.fx_importer import RefTracker

    class KeepingAlive(RefTracker):
        def __init__(self) -> None:
            super().__init__()
            self.alive: dict[int, object] = {}

        def track(self, referrent: object) -> object:
            self.alive[id(referrent)] = referrent
            return super().track(referrent)

    return KeepingAlive()


class _StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


def _string_ref(text: str) -> _StringRef:
    data = text.encode()
    return _StringRef(data, len(data))


@functools.cache
def _execution_engine_capi() -> ctypes.CDLL:
    """The MLIR C API (the bindings' own library) with its ExecutionEngine functions
    typed, called through ctypes, which releases the GIL for the call (the
    bindings' ExecutionEngine holds it)."""
    from torch_mlir import _mlir_libs

    capi = ctypes.CDLL(
        os.path.join(os.path.dirname(_mlir_libs.__file__), "libTorchMLIRAggregateCAPI.so")
    )
    pointer = ctypes.c_void_p
    capi.mlirModuleFromOperation.argtypes = [pointer]
    capi.mlirModuleFromOperation.restype = pointer
    capi.mlirExecutionEngineCreate.argtypes = [
        pointer,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(_StringRef),
        ctypes.c_bool,
        ctypes.c_bool,
    ]
    capi.mlirExecutionEngineCreate.restype = pointer
    capi.mlirExecutionEngineRegisterSymbol.argtypes = [pointer, _StringRef, pointer]
    capi.mlirExecutionEngineLookup.argtypes = [pointer, _StringRef]
    capi.mlirExecutionEngineLookup.restype = pointer
    capi.mlirExecutionEngineDumpToObjectFile.argtypes = [pointer, _StringRef]
    capi.mlirExecutionEngineDestroy.argtypes = [pointer]
    return capi


# Options of the wheel's LLVM for the code the ExecutionEngine generates.
# Loop strength reduction was the largest part of code generation after
# instruction selection (the training step's module: 135 of 859 ms), for
# loops that are ours: their address arithmetic is plain already, and the
# bench models ran as fast without it (docs/cpu.md).
LLVM_OPTIONS = ("-disable-lsr",)


@functools.cache
def apply_llvm_options() -> None:
    """Give ``LLVM_OPTIONS`` to the wheel's LLVM, once per process.

    LLVM reads options as a command line, process-wide. The C API sends its
    errors nowhere: an unknown, misspelt or repeated option is dropped
    without a word, so a test checks that these reach the code generator
    (test_cpu_runtime.py), and they are only ever ours, never the user's.
    """
    capi = _execution_engine_capi()
    arguments = [b"shlo", *(option.encode() for option in LLVM_OPTIONS)]
    capi.LLVMParseCommandLineOptions.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.c_char_p,
    ]
    capi.LLVMParseCommandLineOptions(
        len(arguments), (ctypes.c_char_p * len(arguments))(*arguments), None
    )


@functools.cache
def _capsule_functions() -> tuple[Callable[[object], bytes], Callable[[object, bytes], int]]:
    """Python's PyCapsule_GetName and PyCapsule_GetPointer, through ctypes."""
    name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)
    pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
    return (
        name(("PyCapsule_GetName", ctypes.pythonapi)),
        pointer(("PyCapsule_GetPointer", ctypes.pythonapi)),
    )


def operation_pointer(operation: ir.Operation) -> int:
    """The C API's pointer to ``operation`` (the bindings hand it out in a capsule)."""
    capsule = operation._CAPIPtr
    name, pointer = _capsule_functions()
    return pointer(capsule, name(capsule))


def c_api_function(name: str) -> int:
    """The address of the MLIR C API function ``name`` in the bindings' library."""
    address = ctypes.cast(getattr(_execution_engine_capi(), name), ctypes.c_void_p).value
    assert address is not None
    return address


@functools.cache
def _operation_capsules() -> tuple[Callable[[int, int, None], object], int]:
    """PyCapsule_New, and the name the bindings give an operation's capsule (its
    address: a capsule keeps the pointer, and the bindings' string lives as long)."""
    new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    get_name = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)
    context = ir.Context(load_on_create_dialects=[])
    capsule = ir.Module.create(ir.Location.unknown(context)).operation._CAPIPtr
    name = get_name(("PyCapsule_GetName", ctypes.pythonapi))(capsule)
    assert name is not None
    return new(("PyCapsule_New", ctypes.pythonapi)), name


def operations_at(pointers: Sequence[int]) -> list[ir.Operation]:
    """The bindings' handles of the operations at ``pointers`` (C API values)."""
    new, name = _operation_capsules()
    create = ir.Operation._CAPICreate
    return [create(new(pointer, name, None)) for pointer in pointers]


def write_object_file(
    module: ir.Operation,
    path: str,
    defines: str,
    opt_level: int,
    shared_libs: Sequence[str] = (),
    symbols: Mapping[str, int] | None = None,
) -> None:
    """Write to ``path`` the object code the ExecutionEngine makes of ``module`` (a
    builtin.module of the LLVM dialect) that defines ``defines``.

    ``symbols`` gives the address of each function the code calls that neither
    the module nor ``shared_libs`` defines. The C API is called without the
    GIL, so threads compile modules at once: those of one context only while
    it has multithreading enabled, since the translation reads its uniquers.
    """
    capi = _execution_engine_capi()
    apply_llvm_options()
    paths = (_StringRef * max(len(shared_libs), 1))(*map(_string_ref, shared_libs))
    handle = capi.mlirModuleFromOperation(operation_pointer(module))
    engine = capi.mlirExecutionEngineCreate(handle, opt_level, len(shared_libs), paths, True, False)
    if not engine:
        raise RuntimeError("LLVM could not translate the module or make a JIT for this machine")
    try:
        for name, address in (symbols or {}).items():
            capi.mlirExecutionEngineRegisterSymbol(engine, _string_ref(name), address)
        # Code is generated on the first lookup.
        if not capi.mlirExecutionEngineLookup(engine, _string_ref(defines)):
            raise RuntimeError(f"the JIT has no symbol {defines}")
        capi.mlirExecutionEngineDumpToObjectFile(engine, _string_ref(path))
    finally:
        if _teardown_deferred:
            _engines_to_destroy.append(engine)
        else:
            capi.mlirExecutionEngineDestroy(engine)


# Tearing an engine down takes about 2 ms (its JIT and LLVM context), 5% of
# a small program's compile: the worker destroys the engines of a request
# while it waits for the next one (destroy_finished_engines).
_teardown_deferred = False
_engines_to_destroy: list[int] = []


def defer_engine_teardown() -> None:
    """From now on ``write_object_file`` leaves its engine to ``destroy_finished_engines``."""
    global _teardown_deferred
    _teardown_deferred = True


def destroy_finished_engines(
    stop: Callable[[], bool] = lambda: False, keep_at_most: int = 8
) -> None:
    """Destroy the engines ``write_object_file`` left, until ``stop()`` says to
    leave the rest for later, but keep no more than ``keep_at_most``; no thread
    may be writing one."""
    while _engines_to_destroy and (len(_engines_to_destroy) > keep_at_most or not stop()):
        _execution_engine_capi().mlirExecutionEngineDestroy(_engines_to_destroy.pop())
