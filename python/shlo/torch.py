"""PyTorch embedding: ``shlo.torch.compile``.

The path is torch.export, then torch-mlir's FX importer (in the pinned MLIR
wheel) to the torch dialect, then torch-mlir's own pipelines to StableHLO,
then shlo's compiler. What torch-mlir's StableHLO needs beyond that is done
where every program gets it: ``dense_resource`` weights are read as
constants when a module is loaded (``shlo.resources``), and the ``shape``
dialect ops of shape-polymorphic exports become StableHLO as refinement
starts (``shlo-remove-dynamism``), so they fold.

The import runs in this process (it walks the Python graph); the torch-mlir
passes may abort on programs they do not expect, so they run in the worker
unless ``isolate=False``. PyTorch is imported only by the functions here
that take a module, never by ``import shlo`` or by the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from shlo import progress
from shlo._mlir_compat import ir, torch_fx_import
from shlo.diagnostics import ShloError

# torch-mlir's pipelines as its fx.export_and_import runs them for
# OutputType.STABLEHLO, up to its backend-contract check: that check rejects
# the shape computations of shape-polymorphic exports (tensor.dim,
# tensor.from_elements, shape.cstr_broadcastable), which shlo's refinement
# turns into StableHLO (shlo-legalize-shape-computations) and folds.
TORCH_TO_STABLEHLO = [
    "func.func(torch-match-quantized-custom-ops)",
    "torchdynamo-export-to-torch-backend-pipeline",
    # Its conversion of sort and topk does not verify for dynamic shapes.
    "shlo-torch-sort-to-stablehlo",
    "func.func(convert-torch-to-stablehlo)",
    "func.func(chlo-legalize-to-stablehlo)",
    "func.func(convert-torch-to-arith)",
    "func.func(canonicalize)",
    "func.func(cse)",
    "torch-func-backend-type-conversion-for-stablehlo",
    "func.func(canonicalize)",
    "func.func(torch-finalizing-backend-type-conversion-for-stablehlo)",
    # Its stablehlo.dot ops become dot_general, as torch-mlir's pipeline ends.
    "func.func(stablehlo-legalize-deprecated-ops{fail-on-unused=false})",
]

# Element types numpy has no buffer for: they cross as integers of the same width.
_BITS_OF = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}


def lower_to_stablehlo(torch_module: bytes) -> bytes:
    """The StableHLO bytecode of a torch-dialect module's bytecode (a worker task)."""
    from shlo._mlir_compat import new_torch_context
    from shlo.io import module_to_bytecode
    from shlo.pipeline import run_pipeline

    progress.stage("torch to stablehlo")
    module = ir.Module.parse(torch_module, new_torch_context())
    run_pipeline(module, TORCH_TO_STABLEHLO, "<torch.export>")
    return module_to_bytecode(module)


def export(
    module: Any, example_inputs: Sequence[Any], dynamic_shapes: Any = None, kwargs: Any = None
) -> Any:
    """``torch.export`` of ``module``, decomposed into the ops torch-mlir imports."""
    import torch

    from shlo import torch_graph
    from shlo.torch_decompositions import decomposition_table

    if isinstance(module, torch.export.ExportedProgram):
        program = module
    else:
        args = (
            tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,)
        )
        program = torch.export.export(module, args, kwargs or {}, dynamic_shapes=dynamic_shapes)
        torch_graph.reshape_instead_of_view(program)
    decomposed = program.run_decompositions(decomposition_table())
    torch_graph.mend_decomposed(decomposed)
    return decomposed


class _WithEveryBuffer:
    """An exported program whose ``state_dict`` also holds its non-persistent buffers.

    torch.export keeps a buffer registered with ``persistent=False`` (BERT's
    position ids, Llama's rotary frequencies) in ``constants``, while
    torch-mlir's importer looks every buffer up in ``state_dict``.
    """

    def __init__(self, program: Any) -> None:
        self._program = program
        buffers = program.graph_signature.non_persistent_buffers
        constants = program.constants
        extra = {name: constants[name] for name in buffers if name in constants}
        self.state_dict = {**program.state_dict, **extra}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._program, name)


def to_stablehlo(program: Any, isolate: bool = True, timeout: float | None = None) -> bytes:
    """The StableHLO bytecode of an exported (and decomposed) program."""
    from shlo.io import module_to_bytecode
    from shlo.isolation import shared_worker

    progress.stage("torch import")
    try:
        imported = torch_fx_import(_WithEveryBuffer(program), "main")
    except Exception as error:  # the importer raises what it meets: NotImplementedError, ...
        raise ShloError(f"torch-mlir's FX importer cannot import the program: {error}") from None
    try:
        # An op the importer gets wrong makes a program that does not verify:
        # say so here, not as the worker's failure to read it.
        imported.operation.verify()
    except ir.MLIRError as error:
        raise ShloError(
            f"torch-mlir's FX importer made a program that does not verify: {error}"
        ) from None
    torch_module = module_to_bytecode(imported)
    if isolate:
        return shared_worker().call(
            "torch_to_stablehlo", timeout=timeout, torch_module=torch_module
        )
    return lower_to_stablehlo(torch_module)


class TorchFunction:
    """A compiled ``torch.export`` program, called like the module with torch tensors."""

    def __init__(self, program: Any, target: str = "cpu", **options: Any) -> None:
        from shlo.compiler import compile as compile_program

        self.program = program
        signature = program.module_call_graph[0].signature
        self._in_spec, self._out_spec = signature.in_spec, signature.out_spec
        stablehlo = to_stablehlo(program, options.get("isolate", True), options.get("timeout"))
        self.executable = compile_program(stablehlo, target, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch
        from torch.utils import _pytree

        leaves, spec = _pytree.tree_flatten((args, kwargs))
        if spec != self._in_spec:
            raise TypeError(
                f"arguments of structure {spec} do not match the export's {self._in_spec}"
            )
        inputs = [to_numpy(leaf) for leaf in leaves if isinstance(leaf, torch.Tensor)]
        results = self.executable(*inputs)
        outputs = list(results) if isinstance(results, tuple) else [results]
        return _pytree.tree_unflatten([_to_torch(array) for array in outputs], self._out_spec)


def to_numpy(tensor: Any) -> np.ndarray:
    """The tensor's values as a numpy array, without a copy where the layout allows."""
    import torch

    tensor = tensor.detach().cpu().contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    if name in _BITS_OF:
        return tensor.view(getattr(torch, _BITS_OF[name])).numpy().view(getattr(ml_dtypes, name))
    return tensor.numpy()


def _to_torch(array: np.ndarray) -> Any:
    """A torch tensor over the result's memory."""
    import torch

    name = array.dtype.name
    if name in _BITS_OF:
        return torch.from_numpy(array.view(_BITS_OF[name])).view(getattr(torch, name))
    return torch.from_numpy(array)


def compile(
    module: Any,
    example_inputs: Sequence[Any] = (),
    dynamic_shapes: Any = None,
    *,
    target: str = "cpu",
    **options: Any,
) -> TorchFunction:
    """Compile ``module`` (a ``torch.nn.Module``, or an ``ExportedProgram``) with shlo.

    ``example_inputs`` and ``dynamic_shapes`` are as ``torch.export.export``
    takes them; with ``torch.export.Dim`` dynamic dimensions the compiled code
    is specialized per call shape. The result is called like the module, with
    torch tensors, and returns torch tensors in the module's output structure.
    Parameters and buffers are frozen into the program as constants, so a
    module with buffers that its forward mutates (BatchNorm in training
    mode) must be put in eval mode first. ``options`` go to ``shlo.compile``.
    """
    if options.get("isolate", True):
        from shlo.compiler import prepare

        prepare(target)  # the worker starts while torch exports
    return TorchFunction(export(module, example_inputs, dynamic_shapes), target, **options)
