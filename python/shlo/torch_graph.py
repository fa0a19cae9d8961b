"""Mends of ``torch.export`` graphs, before torch-mlir 20261001's importer reads them.

Each one rewrites the FX graph of an ``ExportedProgram`` in place, where
torch.export's output and what torch-mlir converts (correctly) disagree: a
refusal, a crash, or a silent wrong answer, each found on a transformers
model, a torch.nn layer or a probe against eager PyTorch (docs/embedding.md).
``reshape_instead_of_view`` runs on the exported program,
``mend_decomposed`` on it once decomposed. Imports PyTorch: only
``shlo.torch`` uses it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

aten = torch.ops.aten


def mend_decomposed(program: Any) -> None:
    """Every mend of a decomposed program, in order."""
    _clamp_slice_scatter_ends(program)
    _contiguous_strides_as_defaults(program)
    _symbolic_numbers_as_tensors(program)
    _float_scalars_for_float_tensors(program)
    _fold_integer_division_of_constants(program)
    _compare_in_the_promoted_type(program)
    _comparisons_with_itself(program)
    # The mends read the graph's nodes, not its code: one recompile serves them all.
    program.graph_module.recompile()


def _value(item: Any) -> Any:
    """The example value of a graph node (its fake tensor or symbolic number), or ``item``."""
    return item.meta.get("val") if isinstance(item, torch.fx.Node) else item


def _replace(graph: Any, node: Any, replacement: Any) -> None:
    """``node``'s uses become ``replacement``'s, and ``node`` goes."""
    node.replace_all_uses_with(replacement)
    graph.erase_node(node)


def reshape_instead_of_view(program: Any) -> None:
    """Make the graph's ``aten.view`` calls ``aten.reshape``, in place.

    ``run_decompositions`` traces the graph again, on fake tensors whose
    strides can differ from the eager ones that ``torch.export`` saw: in
    transformers' GPT-2 (torch 2.13) the attention output is contiguous in
    eager, so the export records no copy for its ``.contiguous()``, but it is
    transposed on fake tensors, and the next ``view`` fails ("Cannot view a
    tensor"). ``reshape`` is that same view wherever the strides allow one
    and a copy elsewhere, so values and aliasing stay as they were.
    """
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
    slice_scatter = torch.ops.aten.slice_scatter.default
    for node in program.graph_module.graph.nodes:
        if node.target is not slice_scatter or len(node.args) < 5:
            continue
        source, dim, end = node.args[0], node.args[2], node.args[4]
        value = _value(source) if isinstance(source, torch.fx.Node) else None
        size = value.shape[dim] if value is not None else None
        if isinstance(end, int) and isinstance(size, int) and end > size:
            node.args = (*node.args[:4], size, *node.args[5:])


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
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    def contiguous(sizes: Sequence[Any], strides: Sequence[Any]) -> bool:
        expected = 1
        for size, stride in reversed(list(zip(sizes, strides, strict=True))):
            if size is None or stride is None or not statically_known_true(stride == expected):
                return False
            expected = expected * size
        return True

    for node in program.graph_module.graph.nodes:
        if node.target is aten.empty_strided.default and len(node.args) == 2:
            sizes, strides = node.args
            if contiguous([_value(s) for s in sizes], [_value(s) for s in strides]):
                node.target = aten.empty.memory_format
                node.args = (sizes,)
        elif node.target is aten.as_strided.default and 3 <= len(node.args) <= 4:
            source, sizes, strides = node.args[:3]
            offset = node.args[3] if len(node.args) == 4 else node.kwargs.get("storage_offset")
            tensor = _value(source)
            size_values = [_value(s) for s in sizes]
            if (
                tensor is not None
                and offset in (None, 0)
                and contiguous(list(tensor.shape), list(tensor.stride()))
                and contiguous(size_values, [_value(s) for s in strides])
                and statically_known_true(math.prod(size_values) == tensor.numel())
            ):
                node.target = aten.reshape.default
                node.args = (source, sizes)
                node.kwargs = {}


def _symbolic_numbers_as_tensors(program: Any) -> None:
    """Wrap each symbolic number that an op takes where a tensor goes in a 0-d tensor,
    in place.

    Decompositions compute with sizes (``F.pad(x, (1, 2), mode="reflect")``
    makes ``aten.sub.Tensor(n - 1, arange)``), and torch-mlir 20261001's
    importer passes the ``!torch.int`` as the tensor operand, a program that
    does not verify. ``aten.scalar_tensor`` of int64 (an integer) or the
    default float type (a float) promotes as the number did.
    """

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
    for node in list(graph.nodes):
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or fake_mode is None:
            continue
        args = list(node.args)
        for index, argument in enumerate(schema.arguments[: len(args)]):
            item = args[index]
            if str(argument.type) != "Tensor" or not isinstance(item, torch.fx.Node):
                continue
            dtype = number_type(_value(item))
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
    for node in program.graph_module.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or schema.name.startswith("aten::pow"):
            continue
        values = [_value(a) for a in node.all_input_nodes]
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


def _fold_integer_division_of_constants(program: Any) -> None:
    """Fold each integer ``aten.div.Tensor_mode`` of a constant-filled tensor by a number or
    another such tensor, in place, with torch's semantics.

    torch-mlir 20261001 folds these itself with unsigned arithmetic:
    ``full_like(x, -2) // 2`` gave -2^63, ``full_like(x, 3) // -3`` gave 0, a
    silent wrong answer. A division whose dividend is computed reaches its
    conversion, which is right.
    """
    fills = (aten.full_like.default, aten.full.default)

    def fill_value(item: Any) -> Any:
        if _is_integer(item):
            return item
        if isinstance(item, torch.fx.Node) and item.target in fills and len(item.args) >= 2:
            return item.args[1] if _is_integer(item.args[1]) else None
        return None

    graph = program.graph_module.graph
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
        _replace(graph, node, folded)


def _compare_in_the_promoted_type(program: Any) -> None:
    """Convert the integer or boolean tensor of each comparison with a float number to the
    type torch compares them in, in place.

    torch-mlir 20261001's folder crashes (SIGSEGV) on such a comparison of a
    constant-filled tensor (``full_like(x, 2) > 2.5``). Converted first, the
    comparison is one of floats, as torch computes it.
    """
    comparisons = {getattr(aten, name).Scalar for name in ("eq", "ne", "lt", "le", "gt", "ge")}
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.target not in comparisons or len(node.args) != 2:
            continue
        tensor, number = node.args
        value = _value(tensor) if isinstance(tensor, torch.fx.Node) else None
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


def _comparisons_with_itself(program: Any) -> None:
    """Make each comparison of a floating-point tensor with itself a NaN test, in place.

    torch-mlir 20261001 folds ``x == x`` to true, which is false where x is NaN
    (the usual NaN test), a silent wrong answer. ``x == x``, ``x <= x`` and
    ``x >= x`` are ``~isnan(x)``; ``x != x`` is ``isnan(x)``; ``x < x`` and
    ``x > x`` are false.
    """
    not_nan = {aten.eq.Tensor, aten.le.Tensor, aten.ge.Tensor}
    never = {aten.lt.Tensor, aten.gt.Tensor}
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.target not in (*not_nan, *never, aten.ne.Tensor) or len(node.args) != 2:
            continue
        lhs, rhs = node.args
        value = _value(lhs) if isinstance(lhs, torch.fx.Node) else None
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
        _replace(graph, node, replacement)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
