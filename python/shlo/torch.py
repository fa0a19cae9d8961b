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

    if isinstance(module, torch.export.ExportedProgram):
        program = module
    else:
        args = (
            tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,)
        )
        program = torch.export.export(module, args, kwargs or {}, dynamic_shapes=dynamic_shapes)
        _reshape_instead_of_view(program)
    from shlo.torch_decompositions import decomposition_table

    decomposed = program.run_decompositions(decomposition_table())
    _clamp_slice_scatter_ends(decomposed)
    _contiguous_strides_as_defaults(decomposed)
    _symbolic_numbers_as_tensors(decomposed)
    _float_scalars_for_float_tensors(decomposed)
    _fold_integer_division_of_constants(decomposed)
    _compare_in_the_promoted_type(decomposed)
    _comparisons_with_itself(decomposed)
    return decomposed


def _reshape_instead_of_view(program: Any) -> None:
    """Make the graph's ``aten.view`` calls ``aten.reshape``, in place.

    ``run_decompositions`` traces the graph again, on fake tensors whose
    strides can differ from the eager ones that ``torch.export`` saw: in
    transformers' GPT-2 (torch 2.13) the attention output is contiguous in
    eager, so the export records no copy for its ``.contiguous()``, but it is
    transposed on fake tensors, and the next ``view`` fails ("Cannot view a
    tensor"). ``reshape`` is that same view wherever the strides allow one
    and a copy elsewhere, so values and aliasing stay as they were.
    """
    import torch

    view, reshape = torch.ops.aten.view.default, torch.ops.aten.reshape.default
    nodes = [n for n in program.graph_module.graph.nodes if n.target is view]
    for node in nodes:
        node.target = reshape
    if nodes:
        program.graph_module.recompile()


def _clamp_slice_scatter_ends(program: Any) -> None:
    """Give each ``aten.slice_scatter`` an end no larger than its dimension, in place.

    ``x[1:, 1:] = y`` becomes a slice_scatter whose end is 2^63 - 1, and
    torch-mlir's conversion of it to StableHLO then allocates by that end
    and dies of std::bad_alloc (transformers' BEiT, torch-mlir 20261001).
    A static dimension is the same end; a symbolic one is left as it is.
    """
    import torch

    slice_scatter = torch.ops.aten.slice_scatter.default
    changed = False
    for node in program.graph_module.graph.nodes:
        if node.target is not slice_scatter or len(node.args) < 5:
            continue
        source, dim, end = node.args[0], node.args[2], node.args[4]
        value = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        size = value.shape[dim] if value is not None else None
        if isinstance(end, int) and isinstance(size, int) and end > size:
            node.args = (*node.args[:4], size, *node.args[5:])
            changed = True
    if changed:
        program.graph_module.recompile()


def _contiguous_strides_as_defaults(program: Any) -> None:
    """Drop strides that are the contiguous ones from the graph, in place.

    torch-mlir 20261001 takes explicit strides only when it can see that
    they are the default ones, which it cannot for symbolic sizes:
    - ``nn.GRU``, ``nn.LSTM`` and ``nn.RNN`` decompose to ``empty_strided``
      with strides computed from the sizes; torch-mlir emits a runtime
      assertion ("not all strides are default") that its conversion to
      StableHLO cannot lower;
    - ``nn.GroupNorm`` decomposes to ``as_strided`` views of its [batch, 8]
      scales; the importer refuses symbolic sizes there.
    An ``empty_strided`` whose strides torch's symbolic shapes prove
    contiguous for every size becomes ``empty``; an ``as_strided`` at offset
    0 that reads a contiguous tensor's elements in order, with as many
    elements, becomes ``reshape``. Anything else stays as it is.
    """
    import math

    import torch
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    def value(item: Any) -> Any:
        return item.meta.get("val") if isinstance(item, torch.fx.Node) else item

    def contiguous(sizes: Sequence[Any], strides: Sequence[Any]) -> bool:
        expected = 1
        for size, stride in reversed(list(zip(sizes, strides, strict=True))):
            if size is None or stride is None or not statically_known_true(stride == expected):
                return False
            expected = expected * size
        return True

    aten = torch.ops.aten
    changed = False
    for node in program.graph_module.graph.nodes:
        if node.target is aten.empty_strided.default and len(node.args) == 2:
            sizes, strides = node.args
            if contiguous([value(s) for s in sizes], [value(s) for s in strides]):
                node.target = aten.empty.memory_format
                node.args = (sizes,)
                changed = True
        elif node.target is aten.as_strided.default and 3 <= len(node.args) <= 4:
            source, sizes, strides = node.args[:3]
            offset = node.args[3] if len(node.args) == 4 else node.kwargs.get("storage_offset")
            tensor = value(source)
            size_values = [value(s) for s in sizes]
            if (
                tensor is not None
                and offset in (None, 0)
                and contiguous(list(tensor.shape), list(tensor.stride()))
                and contiguous(size_values, [value(s) for s in strides])
                and statically_known_true(math.prod(size_values) == tensor.numel())
            ):
                node.target = aten.reshape.default
                node.args = (source, sizes)
                node.kwargs = {}
                changed = True
    if changed:
        program.graph_module.recompile()


def _symbolic_numbers_as_tensors(program: Any) -> None:
    """Wrap each symbolic number that an op takes where a tensor goes in a 0-d tensor,
    in place.

    Decompositions compute with sizes (``F.pad(x, (1, 2), mode="reflect")``
    makes ``aten.sub.Tensor(n - 1, arange)``), and torch-mlir 20261001's
    importer passes the ``!torch.int`` as the tensor operand, a program that
    does not verify. ``aten.scalar_tensor`` of int64 (an integer) or the
    default float type (a float) promotes as the number did.
    """
    import torch

    def number_type(value: Any) -> Any:
        if isinstance(value, torch.SymBool):
            return torch.bool
        if isinstance(value, torch.SymInt):
            return torch.int64
        if isinstance(value, torch.SymFloat):
            return torch.get_default_dtype()
        return None

    from torch._subclasses.fake_tensor import FakeTensor

    graph = program.graph_module.graph
    # The importer reads each node's type from a fake tensor of the export's mode.
    fake_modes = (n.meta.get("val") for n in graph.nodes)
    fake_mode = next((v.fake_mode for v in fake_modes if isinstance(v, FakeTensor)), None)
    changed = False
    for node in list(graph.nodes):
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or fake_mode is None:
            continue
        args = list(node.args)
        for index, argument in enumerate(schema.arguments[: len(args)]):
            item = args[index]
            if str(argument.type) != "Tensor" or not isinstance(item, torch.fx.Node):
                continue
            dtype = number_type(item.meta.get("val"))
            if dtype is None:
                continue
            with graph.inserting_before(node):
                wrapped = graph.call_function(
                    torch.ops.aten.scalar_tensor.default, (item,), {"dtype": dtype}
                )
            with fake_mode:
                wrapped.meta["val"] = torch.empty((), dtype=dtype)
            args[index] = wrapped
        if args != list(node.args):
            node.args = tuple(args)
            changed = True
    if changed:
        program.graph_module.recompile()


def _float_scalars_for_float_tensors(program: Any) -> None:
    """Make each integer ``Scalar`` argument of an op on floating-point tensors a float,
    in place.

    torch-mlir 20261001's folders misread an integer scalar combined with a
    floating-point splat tensor (``torch.full_like``, ``zeros``, ``ones``): a
    negative one as unsigned (``full_like(x, 0.5) + -3`` gave 1.8e19), and
    comparisons with it folded to the wrong constant (``full_like(x, 0.5) > 0``
    was false, so ``torch.where`` picked the other side). These are silent
    wrong answers. With a floating-point tensor, torch converts the integer
    to the tensor's type in any case, so a float argument means the same;
    exponents stay integers (``x ** 2`` is not ``x ** 2.0`` to every lowering).
    """
    import torch

    changed = False
    for node in program.graph_module.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or schema.name.startswith("aten::pow"):
            continue
        values = [a.meta.get("val") for a in node.all_input_nodes]
        if not any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values):
            continue
        # Scalars, and numbers where a tensor goes (add.Tensor(x, -3) after decomposition).
        scalar_positions = {
            index: argument.name
            for index, argument in enumerate(schema.arguments)
            if str(argument.type) in ("number", "Optional[number]", "Tensor")
        }
        args = list(node.args)
        kwargs = dict(node.kwargs)
        floats = 0
        for index, name in scalar_positions.items():
            if index < len(args) and _is_integer(args[index]):
                args[index] = float(args[index])
                floats += 1
            elif name in kwargs and _is_integer(kwargs[name]):
                kwargs[name] = float(kwargs[name])
                floats += 1
        if floats:  # -3.0 == -3: compare counts, not the lists
            node.args, node.kwargs = tuple(args), kwargs
            changed = True
    if changed:
        program.graph_module.recompile()


def _fold_integer_division_of_constants(program: Any) -> None:
    """Fold each integer ``aten.div.Tensor_mode`` of a constant-filled tensor by a number or
    another such tensor, in place, with torch's semantics.

    torch-mlir 20261001 folds these itself with unsigned arithmetic:
    ``full_like(x, -2) // 2`` gave -2^63, ``full_like(x, 3) // -3`` gave 0, a
    silent wrong answer. A division whose dividend is computed reaches its
    conversion, which is right.
    """
    import torch

    aten = torch.ops.aten
    fills = (aten.full_like.default, aten.full.default)

    def fill_value(item: Any) -> Any:
        if _is_integer(item):
            return item
        if isinstance(item, torch.fx.Node) and item.target in fills and len(item.args) >= 2:
            return item.args[1] if _is_integer(item.args[1]) else None
        return None

    graph = program.graph_module.graph
    changed = False
    for node in list(graph.nodes):
        if node.target is not aten.div.Tensor_mode or len(node.args) != 2:
            continue
        result = node.meta.get("val")
        dividend, divisor = node.args
        numerator, denominator = fill_value(dividend), fill_value(divisor)
        if (
            result is None
            or result.is_floating_point()
            or not isinstance(dividend, torch.fx.Node)
            or numerator is None
            or not denominator  # unknown, or torch's ZeroDivisionError
            or tuple(dividend.meta["val"].shape) != tuple(result.shape)
            or dividend.meta["val"].dtype != result.dtype
        ):
            continue
        mode = node.kwargs.get("rounding_mode")
        quotient = torch.div(torch.tensor(numerator), torch.tensor(denominator), rounding_mode=mode)
        with graph.inserting_before(node):
            folded = graph.call_function(aten.full_like.default, (dividend, int(quotient)))
        folded.meta = dict(node.meta)
        node.replace_all_uses_with(folded)
        graph.erase_node(node)
        changed = True
    if changed:
        program.graph_module.recompile()


def _compare_in_the_promoted_type(program: Any) -> None:
    """Convert the integer or boolean tensor of each comparison with a float number to the
    type torch compares them in, in place.

    torch-mlir 20261001's folder crashes (SIGSEGV) on such a comparison of a
    constant-filled tensor (``full_like(x, 2) > 2.5``). Converted first, the
    comparison is one of floats, as torch computes it.
    """
    import torch

    aten = torch.ops.aten
    comparisons = {getattr(aten, name).Scalar for name in ("eq", "ne", "lt", "le", "gt", "ge")}
    graph = program.graph_module.graph
    changed = False
    for node in list(graph.nodes):
        if node.target not in comparisons or len(node.args) != 2:
            continue
        tensor, number = node.args
        value = tensor.meta.get("val") if isinstance(tensor, torch.fx.Node) else None
        if value is None or value.is_floating_point() or value.is_complex():
            continue
        if not isinstance(number, float):
            continue
        with graph.inserting_before(node):
            converted = graph.call_function(
                torch.ops.prims.convert_element_type.default,
                (tensor, torch.result_type(value, number)),
            )
        converted.meta["val"] = value.to(torch.result_type(value, number))
        node.args = (converted, number)
        changed = True
    if changed:
        program.graph_module.recompile()


def _comparisons_with_itself(program: Any) -> None:
    """Make each comparison of a floating-point tensor with itself a NaN test, in place.

    torch-mlir 20261001 folds ``x == x`` to true, which is false where x is NaN
    (the usual NaN test), a silent wrong answer. ``x == x``, ``x <= x`` and
    ``x >= x`` are ``~isnan(x)``; ``x != x`` is ``isnan(x)``; ``x < x`` and
    ``x > x`` are false.
    """
    import torch

    aten = torch.ops.aten
    not_nan = {aten.eq.Tensor, aten.le.Tensor, aten.ge.Tensor}
    never = {aten.lt.Tensor, aten.gt.Tensor}
    graph = program.graph_module.graph
    changed = False
    for node in list(graph.nodes):
        if node.target not in (*not_nan, *never, aten.ne.Tensor) or len(node.args) != 2:
            continue
        lhs, rhs = node.args
        value = lhs.meta.get("val") if isinstance(lhs, torch.fx.Node) else None
        if lhs is not rhs or value is None or not value.is_floating_point():
            continue
        with graph.inserting_before(node):
            nan = graph.call_function(aten.isnan.default, (lhs,))
            nan.meta = dict(node.meta)
            if node.target in not_nan:
                replacement = graph.call_function(aten.logical_not.default, (nan,))
            elif node.target in never:
                replacement = graph.call_function(aten.zeros_like.default, (nan,))
            else:
                replacement = nan
            replacement.meta = dict(node.meta)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        changed = True
    if changed:
        program.graph_module.recompile()


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
    return TorchFunction(export(module, example_inputs, dynamic_shapes), target, **options)
