"""shlo-outline-repeated-layers: a run of identical layers becomes one function and a call per layer.

Ours because upstream is missing it: MLIR's outlining works on regions that
are already marked, and nothing finds repeats in a flat block. A model
exported from JAX is one flat function: GPT-2's twelve transformer blocks
are twelve copies of the same ~100 StableHLO ops, and every pass and every
transform after this one did its work twelve times (XLA's compile does too,
but each of our passes costs more per op). Here the ops of each function's
block are matched as a sequence: a stretch that repeats back to back,
op for op, with the same types, attributes and data flow (each op reads the
same earlier op of its copy, or the copy's inputs in the same order), becomes
a private function that each copy calls. The calls carry ``no_inline``, so
the inliner that puts outlined contractions back leaves them alone; later
passes see each layer once, and LLVM compiles the layer's glue once.

Constants and iotas a copy reads are copied into the function (the
fusions and recipes after this see them as constants), and take part in
the comparison; any other value from outside the copy is an argument.
A copy's results are the values that ops after it read, the same for every
copy. Ops with regions count only when their regions read nothing from
outside, and ops with effects the decompositions rewrite per call site
(custom calls, collectives, random numbers) stop a match.

A call stores what crosses it, so the copies start where the fewest
elements cross (any rotation of a repeat repeats) and never where a link
of an elementwise chain would (a value with one reader that fuses it);
repeats whose calls would still cut fusions are left alone (see
``_keeps_fusions``).

  %a1 = stablehlo.add %x, %w1 : tensor<8xf32>
  %b1 = stablehlo.tanh %a1 : tensor<8xf32>
  %r1 = stablehlo.add %b1, %x : tensor<8xf32>
  %a2 = stablehlo.add %r1, %w2 : tensor<8xf32>
  %b2 = stablehlo.tanh %a2 : tensor<8xf32>
  %r2 = stablehlo.add %b2, %r1 : tensor<8xf32>
  ==>
  %r1 = call @shlo_layer_0(%x, %w1) {no_inline} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %r2 = call @shlo_layer_0(%r1, %w2) {no_inline} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.func private @shlo_layer_0(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8xf32>
    %1 = stablehlo.tanh %0 : tensor<8xf32>
    %2 = stablehlo.add %1, %arg0 : tensor<8xf32>
    return %2 : tensor<8xf32>
  }

Where no run repeats op for op, the layers may still differ in small
values computed from the function's arguments and constants alone: Flax
BERT's layers each slice their own row of the head mask, which broke every
repeat (its 4 layers went through the passes 4 times, 633 linalg ops
instead of 347). Ops that differ between the copies that way move before
the run, and each call takes its copy's result.

(The example's layers have three ops; by default the pass takes layers of
at least 24 ops and runs that save at least 200, where calls save more
compile time than they cost.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.analysis.indexing import ELEMENTWISE_OPS
from shlo.ir_utils import defining_op
from shlo.pass_framework import Pass
from shlo.passes.cpu.outline_kernels import defined_functions

PREFIX = "shlo_layer_"
# Runs of layers sought per function (a training step: the forward layers, then the
# backward ones).
MAX_RUNS = 4
# Candidate repeats compared op for op per run, the most ops saved first.
MAX_TRIES = 8
# Ops whose lowering depends on the call site or that the decompositions
# rewrite with module-level state: never moved into a layer.
_STAYS = frozenset(
    (
        "stablehlo.custom_call",
        "stablehlo.rng",
        "stablehlo.rng_bit_generator",
        "stablehlo.all_reduce",
        "stablehlo.all_gather",
        "stablehlo.all_to_all",
        "stablehlo.reduce_scatter",
        "stablehlo.collective_permute",
        "stablehlo.collective_broadcast",
        "stablehlo.replica_id",
        "stablehlo.partition_id",
        "stablehlo.infeed",
        "stablehlo.outfeed",
        "stablehlo.send",
        "stablehlo.recv",
        "stablehlo.after_all",
        "func.call",
        "func.return",
    )
)
# Ops with no operands that each layer gets a copy of, compared by their attributes.
_COPIED = ("stablehlo.constant", "stablehlo.iota", "arith.constant")


def _complex_constant(op: ir.Operation) -> bool:
    """Whether ``op`` is a constant of complex numbers, whose value the bindings
    cannot read: taking the attribute aborts the process."""
    return op.name in _COPIED and any(
        isinstance(ir.ShapedType(result.type).element_type, ir.ComplexType)
        for result in op.results
        if isinstance(result.type, ir.ShapedType)
    )


def _attributes(op: ir.Operation) -> tuple:
    """``op``'s attributes, by name, compared without printing them: attributes
    and types are unique in their context, so equal ones are the same object
    (and a large constant is not printed)."""
    attributes = op.attributes
    return tuple(
        (named.name, named.attr) for named in map(attributes.__getitem__, range(len(attributes)))
    )


def _types(values) -> tuple[ir.Type, ...]:
    return tuple(value.type for value in values)


def _op_text(op: ir.Operation) -> tuple | None:
    """What makes two ops the same computation, their operands aside; None: never outlined.

    Ops nested in regions are described by the same parts, with their
    operands as positions inside the op; a region that reads a value from
    outside its op gives None.
    """
    if op.name in _STAYS or _complex_constant(op):
        return None
    parts: list = [op.name, _attributes(op), _types(op.results)]
    if len(op.regions):
        inner: dict[ir.Value, tuple[int, int]] = {}
        nested: list[ir.Operation] = []

        def collect(child: ir.Operation) -> ir.WalkResult:
            if child != op:
                nested.append(child)
            return ir.WalkResult.ADVANCE

        op.walk(collect, ir.WalkOrder.PRE_ORDER)
        # Block arguments of every region first, then each nested op's results.
        for r, region in enumerate(op.regions):
            for b, block in enumerate(region.blocks):
                for a, argument in enumerate(block.arguments):
                    inner[argument] = (-1 - r, b * 1000 + a)
                    parts.append(argument.type)
        for position, child in enumerate(nested):
            if child.name in _STAYS or _complex_constant(child):
                return None
            for region in child.regions:
                for block in region.blocks:
                    for a, argument in enumerate(block.arguments):
                        inner[argument] = (position, -1 - a)
            operands = []
            for value in child.operands:
                if value not in inner:
                    return None  # reads from outside the op
                operands.append(inner[value])
            parts.append(
                (
                    child.name,
                    _attributes(child),
                    _types(child.results),
                    tuple(operands),
                )
            )
            for i, result in enumerate(child.results):
                inner[result] = (position, i)
    return tuple(parts)


@dataclass
class _Layer:
    """One copy: its ops, the values it reads from outside, and its shape for comparison."""

    ops: list[ir.Operation]
    inputs: list[ir.Value]
    copied: list[ir.Operation]  # the constants it reads, in order of first read
    shape: tuple
    read_later: set[tuple[int, int]]  # (op, result) that ops after the layer read


def _layer(ops: list[ir.Operation], texts: list[tuple]) -> _Layer:
    local: dict[ir.Value, tuple[int, int]] = {}
    inputs: dict[ir.Value, int] = {}
    copied: dict[ir.Value, int] = {}
    shape = []
    for position, (op, text) in enumerate(zip(ops, texts)):
        operands = []
        for value in op.operands:
            if value in local:
                operands.append(local[value])
                continue
            producer = defining_op(value)
            if (
                producer is not None
                and producer.name in _COPIED
                and not _complex_constant(producer)
            ):
                index = copied.setdefault(value, len(copied))
                operands.append(("copied", index, _attributes(producer), value.type))
            else:
                operands.append(("input", inputs.setdefault(value, len(inputs))))
        shape.append((text, tuple(operands)))
        for i, result in enumerate(op.results):
            local[result] = (position, i)
    members = set(ops)
    read_later = {
        local[result]
        for op in ops
        for result in op.results
        if any(use.owner.operation not in members for use in result.uses)
    }
    return _Layer(
        ops,
        list(inputs),
        [defining_op(value) for value in copied],
        tuple(shape),
        read_later,
    )


# Producers that the fusions after this pass merge into their readers.
_FUSED = ELEMENTWISE_OPS | {
    "stablehlo.broadcast_in_dim",
    "stablehlo.reshape",
    "stablehlo.transpose",
    "stablehlo.slice",
    "stablehlo.concatenate",
    "stablehlo.pad",
    "stablehlo.reverse",
}


# Readers that take an elementwise producer into their loops (a reduction's
# rows); a matmul or convolution reads its operands from memory.
_FUSED_WITH_PRODUCERS = frozenset(("stablehlo.reduce",))


def _keeps_fusions(layers: list[_Layer], moved: set[ir.Operation]) -> bool:
    """Whether the calls cut no fusion but at the ends of the run.

    Between two layers only what is stored anyway may pass: a layer after
    the first reads, besides the layers before it, only arguments, values
    every layer reads (computed once, as before), the small results of the
    ops ``moved`` before the run, and results of ops that
    are not fused into their readers anyway (a matmul's, a reduction's); a
    layer before the last has no elementwise reader outside the run; and no
    value passed from layer to layer is an elementwise op's with one reader
    that fuses it (a link of a chain that fusion makes one loop; GPT-2's
    residual stream has several readers, and a CNN block's ReLU feeds a
    convolution: both are stored either way). Otherwise the
    function boundary stores what fusion kept in registers: a training
    step's backward layers read the forward pass's activations, each the
    result of an elementwise op, and its optimizer's updates, grouped by
    step across the parameters, look like layers too (outlined, the step
    took 32 ms instead of 26).
    """
    members = {op for layer in layers for op in layer.ops}
    for position, value in enumerate(layers[1].inputs):
        shared = all(layer.inputs[position] == value for layer in layers)
        for layer in layers[1:]:
            producer = defining_op(layer.inputs[position])
            if producer is not None and producer not in members and not shared:
                if producer.name in _FUSED and producer not in moved:
                    return False
    for layer in layers[:-1]:
        for op, i in layer.read_later:
            result = layer.ops[op].results[i]
            if _chain_link(result):
                return False
            for use in result.uses:
                reader = use.owner.operation
                if reader not in members and reader.name in _FUSED:
                    return False
    return True


def _repeats(
    keys: np.ndarray, min_layer_ops: int, min_saved_ops: int, sampled: bool = True
) -> list[tuple[int, int, int]]:
    """(start, length, stretch) of back-to-back repeats of ``keys``, the most ops saved first.

    For each length, the longest stretch where every key equals the one
    ``length`` places later: from ``start``, ``stretch + length`` keys repeat
    with period ``length``, ``stretch // length + 1`` whole copies. Only the
    lengths ``_candidate_lengths`` keeps are looked at, unless not ``sampled``
    (the tests compare the two).
    """
    found = []
    lengths = (
        _candidate_lengths(keys, min_layer_ops, min_saved_ops)
        if sampled
        else range(max(min_layer_ops, 1), len(keys) // 2 + 1)
    )
    for length in lengths:
        equal = np.concatenate(([False], keys[:-length] == keys[length:], [False]))
        edges = np.flatnonzero(np.diff(equal.astype(np.int8)))
        if not len(edges):
            continue
        starts, ends = edges[0::2], edges[1::2]
        longest = int(np.argmax(ends - starts))
        stretch = int(ends[longest] - starts[longest])
        if stretch // length * length >= min_saved_ops:
            found.append((int(starts[longest]), length, stretch))
    found.sort(key=lambda run: -(run[2] // run[1]) * run[1])
    return found


def _candidate_lengths(keys: np.ndarray, min_layer_ops: int, min_saved_ops: int) -> list[int]:
    """The lengths that may repeat over ``min_saved_ops`` keys: those where the keys at
    two consecutive multiples of ``min_saved_ops // 2`` equal the keys ``length`` later.

    A stretch of at least ``min_saved_ops`` such keys holds two consecutive
    multiples, so no length ``_repeats`` keeps is left out; sampled for all
    lengths at once, this leaves a few lengths to look at position by
    position (GPT-2's 1254 ops: 2 of 604, 10 ms -> 1 ms).
    """
    n = len(keys)
    lengths = np.arange(max(min_layer_ops, 1), n // 2 + 1)
    step = min_saved_ops // 2
    if step < 1 or not len(lengths):
        return lengths.tolist()
    samples = np.arange(0, n, step)
    later = samples + lengths[:, None]
    equal = (later < n) & (keys[samples] == keys[np.minimum(later, n - 1)])
    return lengths[(equal[:, :-1] & equal[:, 1:]).any(axis=1)].tolist()


def _elements(value: ir.Value) -> int:
    type_ = value.type
    if isinstance(type_, ir.ShapedType) and type_.has_static_shape:
        return math.prod(type_.shape)
    return 1


_FUSING_READERS = _FUSED | _FUSED_WITH_PRODUCERS


def _chain_link(value: ir.Value) -> bool:
    """Whether ``value`` is a link of a chain that fusion makes one loop: an
    elementwise op's result with one reader that fuses it."""
    producer = defining_op(value)
    if producer is None or producer.name not in _FUSED:
        return False
    return _one_fusing_reader([use.owner.operation for use in value.uses])


def _one_fusing_reader(readers: list[ir.Operation]) -> bool:
    return len(readers) == 1 and readers[0].name in _FUSING_READERS


# Added to a boundary's cost for each chain link it cuts: any other boundary is better.
_LINK_COST = 1 << 40


def _cut_costs(ops: list[ir.Operation]) -> tuple[np.ndarray, np.ndarray]:
    """For each boundary p before ``ops[p]``: the elements of the values that
    ops before it make and ops after it read, which a call at p would store
    (``_LINK_COST`` for a chain link, whose store fusion would have saved).
    And for each op, the position of the reader of its chain links (-1: none)."""
    position = {op: index for index, op in enumerate(ops)}
    costs = np.zeros(len(ops) + 1, dtype=np.int64)
    link_readers = np.full(len(ops), -1, dtype=np.int64)
    for index, op in enumerate(ops):
        fused = op.name in _FUSED
        for result in op.results:
            last = index
            readers = [use.owner.operation for use in result.uses]
            for reader in readers:
                while reader not in position:
                    reader = reader.parent
                last = max(last, position[reader])
            if last > index:
                # Boundaries index + 1 .. last cut this value.
                link = fused and _one_fusing_reader(readers)
                size = _LINK_COST if link else _elements(result)
                costs[index + 1] += size
                costs[last + 1] -= size
                if link:
                    link_readers[index] = max(link_readers[index], last)
    return np.cumsum(costs), link_readers


def _outline_layers(module: ir.Operation, layers: list[_Layer], name: str) -> None:
    """Move the first layer into function ``name``; every layer becomes a call to it."""
    first = layers[0]
    read_later = sorted(set().union(*(layer.read_later for layer in layers)))
    result_types = [first.ops[op].results[i].type for op, i in read_later]
    with ir.InsertionPoint(module.regions[0].blocks[0]), first.ops[-1].location:
        function = ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(
                    ir.FunctionType.get([v.type for v in first.inputs], result_types)
                ),
                "sym_visibility": ir.StringAttr.get("private"),
            },
            regions=1,
        )
        entry = function.regions[0].blocks.append(*[v.type for v in first.inputs])
    # A layer reads the results of the layers before it: their calls' results now.
    renamed: dict[ir.Value, ir.Value] = {}
    for layer in layers:
        with ir.InsertionPoint(layer.ops[0]), layer.ops[-1].location:
            call = ir.Operation.create(
                "func.call",
                results=result_types,
                operands=[renamed.get(value, value) for value in layer.inputs],
                attributes={
                    "callee": ir.FlatSymbolRefAttr.get(name),
                    "no_inline": ir.UnitAttr.get(),
                },
            )
        members = set(layer.ops)
        for (op, i), replacement in zip(read_later, call.results):
            result = layer.ops[op].results[i]
            renamed[result] = replacement
            for use in list(result.uses):
                if use.owner.operation not in members:
                    use.owner.operands[use.operand_number] = replacement
    # The first layer's ops move into the function, reading its arguments
    # and their own copies of the constants.
    with ir.InsertionPoint(entry), first.ops[-1].location:
        returned = ir.Operation.create(
            "func.return",
            operands=[first.ops[op].results[i] for op, i in read_later],
        )
    replacements = dict(zip(first.inputs, entry.arguments))
    for constant in first.copied:
        replacements[constant.results[0]] = constant.clone(ir.InsertionPoint(returned)).results[0]
    for op in first.ops:
        op.move_before(returned)
        for index, value in enumerate(op.operands):
            if value in replacements:
                op.operands[index] = replacements[value]
    for layer in layers[1:]:
        for op in reversed(layer.ops):
            op.erase()


def _copies_at_best_cut(
    cut_costs: np.ndarray,
    link_readers: np.ndarray,
    run: tuple[int, int, int],
    min_saved_ops: int,
) -> list[int] | None:
    """Where each copy of a repeat starts, starting where a boundary between two stores least.

    Every rotation of a repeating stretch repeats too; the first found cuts
    GPT-2's blocks inside the attention, where a [12, 128, 128] score tensor
    crossed each call (2% slower than no calls), rather than at the residual
    stream's [128, 768] between blocks. A rotation past the stretch's slack
    gives one copy less.
    """
    start, length, stretch = run
    shift = int(np.argmin(cut_costs[start : start + length]))
    count = (stretch - shift) // length + 1
    if count < 2 or (count - 1) * length < min_saved_ops:
        return None
    begin = start + shift
    # _keeps_fusions refuses any two or more consecutive copies of which one
    # but the last passes a chain link on: when every copy but the last
    # does (a long elementwise chain), no copy need be built and compared.
    ends = np.arange(begin + length, begin + count * length, length)
    passed_on = link_readers[begin : begin + (count - 1) * length].reshape(-1, length).max(1)
    if np.all(passed_on >= ends):
        return None
    return list(range(begin, begin + count * length, length))


def _outline_one_run(
    module: ir.Operation, block: ir.Block, name: str, min_layer_ops: int, min_saved_ops: int
) -> bool:
    """Outline the run of identical layers in ``block`` that saves the most ops, if any.

    Where no run repeats op for op, one more try lets the layers differ in
    small slices of the function's arguments: Flax BERT's layers each take
    their row of the head mask, ``slice %mask [i:i+1, 0:8]``, which broke
    every repeat. Such an op moves before the run, and its result becomes
    an argument of the layer.
    """
    ops = [op.operation for op in block.operations]
    # A run saves (copies - 1) x its layer's ops, at least min_saved_ops with
    # layers of at least min_layer_ops: a shorter block holds none, and is
    # not described op by op (attention's 19 ops: 0.33 ms a compile).
    if len(ops) < min_saved_ops + min_layer_ops:
        return False
    texts = [_op_text(op) for op in ops]
    cut_costs = link_readers = None
    for relaxed in (False, True):
        # The ops that may move are sought only once no run repeats op for op.
        movable = _movable_ops(block, ops, texts) if relaxed else set()
        if relaxed and not movable:
            return False
        # Cheap keys for finding candidates: an op that never moves matches nothing,
        # and a movable one matches any op of its name and types.
        ids: dict[tuple, int] = {}
        keys = np.array(
            [
                -1 - i
                if text is None
                else ids.setdefault(
                    (op.name, _types(op.results)) if i in movable else text, len(ids)
                )
                for i, (op, text) in enumerate(zip(ops, texts))
            ]
        )
        runs = _repeats(keys, min_layer_ops, min_saved_ops)[:MAX_TRIES]
        if runs and cut_costs is None:
            cut_costs, link_readers = _cut_costs(ops)
        for run in runs:
            firsts = _copies_at_best_cut(cut_costs, link_readers, run, min_saved_ops)
            if firsts is None:
                continue
            # Op for op, every copy's ops are the same: only a relaxed match moves any.
            moved = _differing_positions(ops, texts, firsts, run[1]) if relaxed else []
            if any(f + p not in movable for f in firsts for p in moved):
                continue
            stays = [p for p in range(run[1]) if p not in moved]
            layers = [
                _layer([ops[f + p] for p in stays], [texts[f + p] for p in stays]) for f in firsts
            ]
            layers = _longest_same(layers)
            saved = (len(layers) - 1) * len(layers[0].ops)
            if len(layers) < 2 or saved < min_saved_ops:
                continue
            first = ops.index(layers[0].ops[0]) - stays[0]
            copies = range(first, first + len(layers) * run[1], run[1])
            moving = [ops[copy + p] for copy in copies for p in moved]
            # What they read must come before the run (block arguments: no producer).
            producers = {defining_op(v) for op in moving for v in op.operands} - {None}
            if not producers <= set(ops[:first]):
                continue
            if _keeps_fusions(layers, set(moving)):
                for op in moving:
                    op.move_before(layers[0].ops[0])
                _outline_layers(module, layers, name)
                return True
    return False


# A moved op's result is stored to cross a call; one this small costs nothing to speak of.
MAX_MOVED_ELEMENTS = 4096


def _movable_ops(block: ir.Block, ops: list[ir.Operation], texts: list[tuple | None]) -> set[int]:
    """Positions of the ops that may move before a run of layers: without regions,
    never outlined otherwise, computed from ``block``'s arguments and constants
    alone (no layer's value), and with small results."""
    invariant = set(block.arguments)
    movable = set()
    for i, (op, text) in enumerate(zip(ops, texts)):
        if text is None or len(op.regions) or not all(v in invariant for v in op.operands):
            continue
        invariant.update(op.results)
        if op.name not in _COPIED and all(_elements(r) <= MAX_MOVED_ELEMENTS for r in op.results):
            movable.add(i)
    return movable


def _differing_positions(
    ops: list[ir.Operation], texts: list[tuple | None], firsts: list[int], length: int
) -> list[int]:
    """The positions in a copy whose op is not the same in every copy."""
    return [p for p in range(length) if len({texts[f + p] for f in firsts}) > 1]


def _longest_same(layers: list[_Layer]) -> list[_Layer]:
    """The longest run of consecutive copies with the same data flow.

    The first layer of a model may differ from the rest in its inputs alone
    (two streams that start as the same value).
    """
    best: list[_Layer] = []
    begin = 0
    for end in range(1, len(layers) + 1):
        if end == len(layers) or layers[end].shape != layers[begin].shape:
            if end - begin > len(best):
                best = layers[begin:end]
            begin = end
    return best


@dataclass(frozen=True)
class OutlineRepeatedLayersPass(Pass):
    """Outline back-to-back identical runs of ops (a model's layers) into one function each."""

    argument: ClassVar[str] = "shlo-outline-repeated-layers"
    # A layer shorter than this is not worth a function: each function costs
    # the passes after this one a fixed time, and its calls and fusion
    # boundaries cost the program some.
    min_layer_ops: int = 24
    # Nor is a run that saves fewer ops: the CNN's two identical residual
    # blocks (38 ops) compiled no faster outlined, and ran 4% slower.
    min_saved_ops: int = 200

    def run(self, module: ir.Operation) -> None:
        outlined = 0
        for function in defined_functions(module):
            if len(function.regions[0].blocks) != 1:
                continue
            block = function.regions[0].blocks[0]
            for _ in range(MAX_RUNS):
                name = f"{PREFIX}{outlined}"
                if not _outline_one_run(
                    module, block, name, self.min_layer_ops, self.min_saved_ops
                ):
                    break
                outlined += 1
