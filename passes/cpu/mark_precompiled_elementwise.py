"""shlo-mark-precompiled-elementwise: fused f32 elementwise ops become placeholders for a precompiled kernel.

Ours, as ``shlo-mark-precompiled-kernels`` is (``shlo-call-precompiled-kernels``
has the design). After elementwise
fusion, the bench's chain of eight ops on 4M floats is one
``linalg.generic`` whose vector code (about 100 ops on 128-lane vectors,
exp's and tanh's polynomials included) took LLVM 30-35 ms, and the whole
compile 55 ms against XLA's 28. ``shlo_elementwise_f32``
(``kernels/elementwise_f32.c``) runs the body instead as a small program,
block by block, so the program's own code is a call: the same ops in the
same order, exp and tanh step for step as ``shlo-approximate-math``
computes them, a division by a value a row shares by its reciprocal as
``shlo-reciprocal-division`` computes it, so the generated code's bits. It
runs longer than the generated code (the chain 1.5x). So the fast-compile
strategy gives it every generic it can compute, and the default strategy
(``beside-contractions``) only those computing exp or tanh, where the
program's precompiled matmuls and convolutions do at least that many flops
per value they compute and nothing else would be generated code: the
program is then glue, which LLVM compiles without its optimizing pipeline.
The bench MLP (its gelu: 2048 flops per value) compiled in 16-20 instead
of 40-55 ms and ran 1.018x as long. Beside other generated code the gain
went: GPT-2 and the training step compiled no faster (their kernels are
compiled on both cores) and ran 1.028x and 1.017x as long (docs/cpu.md).

It takes a top-level ``linalg.generic`` (one left outside
``shlo-fuse-rows``' blocks of rows, which keep a reduction's rows in cache)
whose loops are all parallel, whose one result is a static f32 tensor
written in loop order, and whose inputs are static f32 tensors each read in
loop order, a dimension broadcast where its loop is missing or where its
size is 1 and its index 0 (a bias, a scalar, a per-row value). Its body
computes f32 values with ``arith`` add, sub, mul, div, neg, maximumf and
minimumf and ``math`` absf, sqrt, rsqrt, exp and tanh from its inputs and
f32 constants, and does not read the output's value. The body becomes
chains: a value that only the next op reads continues that op's chain (in
registers, in the kernel), any other ends its chain and waits in a slot
until its last use. The program's limits (``MAX_*``, the kernel's too)
bound its inputs, constants, slots and steps; a generic beyond them keeps
its generated code.

  %y = linalg.generic {maps (d0, d1) -> (d0, d1), (d0, d1) -> (d1), (d0, d1) -> (d0, d1)}
         ins(%x, %b : tensor<4x40xf32>, tensor<40xf32>) ...
         { %s = addf %x, %b; %t = tanh %s; %u = mulf %t, %s; %v = subf 0.5, %u; yield %v }
  ==>  (chain 1: x + b into slot 0; chain 2: tanh of slot 0, times slot 0, 0.5 minus it)
  %program = arith.constant dense<[2, 2, 1, 1, 2, 3, 4, 40, 40, 1, 0, 1, 1056964608,
                                   0, 0, 1, 0, 1, 0, 0, 3, 3, 11, -1, 0, 2, 3, 0, 1, 2, 1]>
  %y = call @shlo_precompiled_0(%x, %b, %x, %x, %x, %x, %x, %x, %program)
         {shlo.kernel = "shlo_elementwise_f32", shlo.kernel_arguments = array<i64>}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import arith, ir
from shlo.ir_utils import (
    constant_float,
    linalg_generic_parts,
    ops_named,
    row_major_strides,
    static_shape,
)
from shlo.pass_framework import Pass
from shlo.passes.cpu.call_precompiled_kernels import (
    f32_bits,
    first_free_index,
    placeholder_call,
    replace_with_placeholder,
)
from shlo.passes.cpu.mark_precompiled_kernels import CONV2D_KERNEL, MATMUL_KERNEL

KERNEL = "shlo_elementwise_f32"
# kernels/elementwise_f32.c's limits and step codes.
MAX_RANK, MAX_INPUTS, MAX_CONSTANTS, MAX_SLOTS, MAX_STEPS = 6, 8, 16, 8, 64
BINARY = {
    "arith.addf": 0,
    "arith.subf": 1,
    "arith.mulf": 2,
    "arith.divf": 3,
    "arith.maximumf": 4,
    "arith.minimumf": 5,
}
UNARY = {
    "arith.negf": 6,
    "math.absf": 7,
    "math.sqrt": 8,
    "math.rsqrt": 9,
    "math.exp": 10,
    "math.tanh": 11,
}


def _f32_constant(value: ir.Value) -> int | None:
    """The bits of the f32 scalar an ``arith.constant`` defines as ``value``."""
    if not isinstance(value.type, ir.F32Type):
        return None
    constant = constant_float(value)
    return None if constant is None else f32_bits(constant)


def _strides(affine_map: ir.AffineMap, shape: list[int], loops: int) -> list[int] | None:
    """The input's stride along each loop (0: broadcast), when it reads in loop order."""
    strides = [0] * loops
    row_major = row_major_strides(shape)
    last = -1
    for dim, expr in enumerate(affine_map.results):
        if isinstance(expr, ir.AffineDimExpr):
            if expr.position <= last:
                return None
            last = expr.position
            strides[expr.position] = row_major[dim]
        elif not (isinstance(expr, ir.AffineConstantExpr) and expr.value == 0 and shape[dim] == 1):
            return None
    return strides


def _collapsed(sizes: list[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Loops of one iteration dropped, and neighbours every input walks alike merged."""
    keep = [d for d, size in enumerate(sizes) if size != 1] or [len(sizes) - 1]
    sizes = [sizes[d] for d in keep]
    strides = [[s[d] for d in keep] for s in strides]
    d = len(sizes) - 2
    while d >= 0:
        inner = sizes[d + 1]
        if all(s[d] == s[d + 1] * inner and (s[d] == 0) == (s[d + 1] == 0) for s in strides):
            sizes[d : d + 2] = [sizes[d] * inner]
            for s in strides:
                s[d : d + 2] = [s[d + 1]]
        d -= 1
    return sizes, strides


# An operand of the program: ("input", i), ("constant", c), ("slot", s); and in a
# chain's step, ("value",) for the chain's own value or ("none",) for a unary op's.
Operand = tuple


@dataclass
class _Chain:
    """Steps applied in turn to a value that starts as ``start``; [op, operand, reversed]."""

    start: Operand
    steps: list[list] = field(default_factory=list)
    slot: int = -1


@dataclass
class _Program:
    """The kernel's program for one generic: inputs, constants, chains writing slots."""

    inputs: int
    constants: list[int] = field(default_factory=list)
    chains: list[_Chain] = field(default_factory=list)
    slots: int = 0

    def constant(self, bits: int) -> Operand | None:
        if bits not in self.constants:
            if len(self.constants) == MAX_CONSTANTS:
                return None
            self.constants.append(bits)
        return ("constant", self.constants.index(bits))

    def words(self, sizes: list[int], strides: list[list[int]], result: Operand) -> list[int]:
        """The kernel's program (kernels/elementwise_f32.c has its layout)."""
        base = {"input": 0, "constant": self.inputs, "slot": self.inputs + len(self.constants)}
        special = {"none": -1, "value": -2}

        def number(operand: Operand) -> int:
            kind = operand[0]
            return special[kind] if kind in special else base[kind] + operand[1]

        chains = [
            [chain.slot, number(chain.start), len(chain.steps)]
            + [
                word
                for op, operand, reversed_ in chain.steps
                for word in (op, number(operand), reversed_)
            ]
            for chain in self.chains
        ]
        header = [len(sizes), self.inputs, len(self.constants), self.slots, len(chains)]
        return [
            *header,
            number(result),
            *sizes,
            *(s for input_strides in strides for s in input_strides),
            *self.constants,
            *(word for chain in chains for word in chain),
        ]


def _program(op: ir.Operation, inputs: list[ir.Value]) -> tuple[_Program, Operand] | None:
    """The body of ``op`` as chains, and its result's operand; None when it computes
    what the kernel cannot.

    A value read by the next op alone continues that op's chain, in registers; any
    other value ends its chain and is kept in a slot until its last use.
    """
    block = op.regions[0].blocks[0]
    arguments = list(block.arguments)
    if len(list(arguments[-1].uses)):
        return None
    program = _Program(len(inputs))
    body = list(block.operations)
    last_use: dict[ir.Value, int] = {}
    uses: dict[ir.Value, int] = {}
    for index, inner in enumerate(body):
        for operand in inner.operands:
            last_use[operand] = index
            uses[operand] = uses.get(operand, 0) + 1
    operand_of: dict[ir.Value, Operand] = {
        arg: ("input", i) for i, arg in enumerate(arguments[:-1])
    }
    slot_of: dict[ir.Value, int] = {}
    chain: _Chain | None = None
    value: ir.Value | None = None  # the open chain's

    def close(index: int) -> bool:
        """The open chain's value into a slot: one whose value was last read before ``index``."""
        for held in [v for v, slot in slot_of.items() if last_use[v] < index]:
            free.append(slot_of.pop(held))
        if free:
            chain.slot = free.pop()
        elif program.slots < MAX_SLOTS:
            chain.slot = program.slots
            program.slots += 1
        else:
            return False
        slot_of[value] = chain.slot
        operand_of[value] = ("slot", chain.slot)
        return True

    def known(value: ir.Value) -> bool:
        """Whether ``value`` is an operand, taking a constant defined outside the body."""
        if value not in operand_of:
            bits = _f32_constant(value)
            constant = None if bits is None else program.constant(bits)
            if constant is None:
                return False
            operand_of[value] = constant
        return True

    free: list[int] = []
    for index, inner in enumerate(body[:-1]):
        name = inner.operation.name
        result = inner.results[0] if len(inner.results) == 1 else None
        if name == "arith.constant":
            if not known(result):
                return None
            continue
        code = BINARY.get(name, UNARY.get(name))
        if code is None or result is None or not isinstance(result.type, ir.F32Type):
            return None
        operands = list(inner.operands)
        continues = (
            chain is not None
            and value in operands
            and uses[value] == operands.count(value)
            and len(chain.steps) < MAX_STEPS
        )
        if not continues:
            if chain is not None and not close(index):
                return None
            if not all(known(operand) for operand in operands):
                return None
            chain = _Chain(operand_of[operands[0]])
            program.chains.append(chain)
            value = operands[0]
        if name in UNARY:
            chain.steps.append([code, ("none",), 0])
        else:
            first, second = operands
            other = second if first == value else first
            if other == value:
                chain.steps.append([code, ("value",), 0])
            elif known(other):
                chain.steps.append([code, operand_of[other], int(first != value)])
            else:
                return None
        value = result
    yielded = list(body[-1].operands)
    if chain is None or len(yielded) != 1 or not close(len(body) - 1):
        return None
    if yielded[0] not in operand_of:
        return None
    return program, operand_of[yielded[0]]


def _arguments(op: ir.Operation) -> tuple[list[ir.Value], list[int]] | None:
    """The inputs and the program of a generic the kernel computes, else None."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    if op.parent is None or op.parent.name != "func.func":
        return None
    parts = linalg_generic_parts(op)
    if not parts.all_parallel or len(parts.outputs) != 1 or not parts.inputs:
        return None
    if len(parts.inputs) > MAX_INPUTS:
        return None
    sizes = static_shape(op.results[0])
    result_type = ir.ShapedType(op.results[0].type)
    if sizes is None or not isinstance(result_type.element_type, ir.F32Type):
        return None
    loops = len(sizes)
    output_map = parts.output_maps[0]
    if [getattr(e, "position", None) for e in output_map.results] != list(range(loops)):
        return None
    strides = []
    for value, affine_map in zip(parts.inputs, parts.input_maps, strict=True):
        shape = static_shape(value)
        if shape is None or not isinstance(ir.ShapedType(value.type).element_type, ir.F32Type):
            return None
        input_strides = _strides(affine_map, shape, loops)
        if input_strides is None:
            return None
        strides.append(input_strides)
    found = _program(op, parts.inputs)
    if found is None:
        return None
    program, result = found
    if loops == 0:
        sizes, strides = [1], [[0] for _ in strides]
    sizes, strides = _collapsed(sizes, strides)
    if len(sizes) > MAX_RANK:
        return None
    return list(parts.inputs), program.words(sizes, strides, result)


def _computes_exp_or_tanh(op: ir.Operation) -> bool:
    return any(
        inner.operation.name in ("math.exp", "math.tanh")
        for inner in op.regions[0].blocks[0].operations
    )


_COPYING_TENSOR_OPS = ("tensor.pad", "tensor.insert_slice", "tensor.concat")
# Ops of a linalg op's or a loop's body that are no computation of their own.
_REGION_PARTS = ("linalg.yield", "linalg.index", "scf.yield", "scf.forall.in_parallel")


def _generates_more_than(module: ir.Operation, limit: int) -> bool:
    """Whether more than ``limit`` ops would become loops of generated code: linalg
    ops, loops (blocks of rows), and the tensor ops that become copies. The walk
    stops at the first one past ``limit``."""
    count = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal count
        name = op.name
        if (
            name.startswith(("linalg.", "scf.")) and name not in _REGION_PARTS
        ) or name in _COPYING_TENSOR_OPS:
            count += 1
        return ir.WalkResult.INTERRUPT if count > limit else ir.WalkResult.ADVANCE

    module.walk(visit)
    return count > limit


def _contraction_flops(module: ir.Operation) -> int:
    """The flops of the matmuls and convolutions that call precompiled kernels, each once."""
    flops = 0
    for op in ops_named(module, "func.call"):
        found = placeholder_call(op)
        if found is None:
            continue
        kernel, scalars = found
        if kernel == MATMUL_KERNEL:
            batch, m, n, k = scalars[:4]
            flops += 2 * batch * m * n * k
        elif kernel == CONV2D_KERNEL:
            n, _, _, c, kh, kw, f, oh, ow = scalars[:9]
            flops += 2 * n * oh * ow * f * kh * kw * c
    return flops


@dataclass(frozen=True)
class MarkPrecompiledElementwisePass(Pass):
    """Replace fused f32 elementwise generics by placeholders for ``shlo_elementwise_f32``."""

    argument: ClassVar[str] = "shlo-mark-precompiled-elementwise"
    # 0: every generic the kernel computes (the fast-compile strategy). Else
    # only those whose body computes exp or tanh, and only where the program's
    # precompiled matmuls and convolutions do at least this many flops per
    # value those generics compute and nothing else would be generated code
    # (the default strategy).
    beside_contractions: int = 0

    def run(self, module: ir.Operation) -> None:
        index = first_free_index(module)
        i64 = ir.IntegerType.get_signless(64)
        taken = [
            op
            for op in ops_named(module, "linalg.generic")
            if (not self.beside_contractions or _computes_exp_or_tanh(op))
            and _arguments(op) is not None
        ]
        if self.beside_contractions:
            values = sum(math.prod(static_shape(op.results[0])) for op in taken)
            if _contraction_flops(module) < self.beside_contractions * values:
                return
            if _generates_more_than(module, len(taken)):
                return
        for op in taken:
            # Read again: an input may be the result of a generic replaced before.
            found = _arguments(op)
            if found is None:
                continue
            inputs, words = found
            with op.location, ir.InsertionPoint(op):
                program = arith.ConstantOp(
                    ir.RankedTensorType.get([len(words)], i64),
                    ir.DenseElementsAttr.get(np.array(words, dtype=np.int64)),
                ).result
            # The kernel takes MAX_INPUTS inputs; those past the generic's are unread.
            padded = inputs + [inputs[0]] * (MAX_INPUTS - len(inputs))
            replace_with_placeholder(module, op, KERNEL, [*padded, program], [], index)
            index += 1
