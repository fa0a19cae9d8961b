"""shlo-lower-sort: lower stablehlo.sort to a stable bottom-up merge sort in scf loops.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.sort`` alone. Every sort becomes a stable O(n log n) merge sort,
whatever ``is_stable`` says. The operands are transposed so that the sorted
dimension is the last one and reshaped to ``B x n``. For each of the ``B`` rows,
a permutation of ``0..n-1`` is merge-sorted (ping-ponging between two halves
of one ``2n`` index tensor), with the comparator, moved inline, deciding on
0-d tensors: the right element is taken only when ``comparator(right, left)``
is true, which keeps equal elements in order. The operands are then gathered
through the permutation. Unsigned element types are bitcast to signless
around the loops.

  %0 = "stablehlo.sort"(%x) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<8xf32>) -> tensor<8xf32>
  ==>
  %x2 = stablehlo.reshape %x : (tensor<8xf32>) -> tensor<1x8xf32>
  %r = scf.for %row = %c0 to %c1 step %c1 iter_args(%out = %empty) -> (tensor<1x8xf32>) {
    %iota = scf.for ...                               // perm[k] = k
    %perm = scf.for %pass = %c0 to %c3 step %c1 ... {   // runs of 1, 2, 4
      scf.for %lo = ... {                             // one merge per pair of runs
        scf.for %k = %lo to %hi ... {
          %take_right = scf.if %both_left_and_right -> (i1) {
            %a = tensor.from_elements (tensor.extract %x2[%row, %right]) : tensor<f32>
            %b = tensor.from_elements (tensor.extract %x2[%row, %left]) : tensor<f32>
            %lt = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
            ...
    }
    %gathered = scf.for %k ... { tensor.insert (tensor.extract %x2[%row, %perm[k]]) ... }
  }
  %0 = stablehlo.reshape %r : (tensor<1x8xf32>) -> tensor<8xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_templates import replace_with_template, signless_element
from shlo.ir_utils import ops_named, tensor_type_text
from shlo.pass_framework import Pass, PassError

COMPARATOR = "comparator"


def _permute(values: list[int], permutation: list[int]) -> list[int]:
    return [values[p] for p in permutation]


def _array(values: list[int]) -> str:
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


def _merge_sort_template(
    types: list[ir.RankedTensorType], dimension: int, comparator_types: list[ir.Type]
) -> str:
    """The text of ``@template``: sort ``types``-typed operands along ``dimension``."""
    shape = list(types[0].shape)
    rank = len(shape)
    n = shape[dimension]
    rows = math.prod(shape) // n
    passes = (n - 1).bit_length()  # ceil(log2(n)) merge passes
    count = len(types)
    storage = [signless_element(t.element_type) for t in types]
    # The sorted dimension goes last.
    perm = [d for d in range(rank) if d != dimension] + [dimension]
    inverse = [perm.index(d) for d in range(rank)]
    transposed = _permute(shape, perm)
    lines: list[str] = []
    emit = lines.append

    row_types = [tensor_type_text([rows, n], s) for s in storage]
    # Operands as B x n tensors of signless elements.
    x: list[str] = []
    for i, type_ in enumerate(types):
        value = f"%arg{i}"
        if storage[i] != type_.element_type:
            emit(
                f'%s{i} = "stablehlo.bitcast_convert"({value}) : ({type_}) -> '
                f"{tensor_type_text(shape, storage[i])}"
            )
            value = f"%s{i}"
        if perm != list(range(rank)):
            emit(
                f'%t{i} = "stablehlo.transpose"({value}) <{{permutation = {_array(perm)}}}> : '
                f"({tensor_type_text(shape, storage[i])}) -> "
                f"{tensor_type_text(transposed, storage[i])}"
            )
            value = f"%t{i}"
        if transposed != [rows, n]:
            emit(
                f'%rs{i} = "stablehlo.reshape"({value}) : '
                f"({tensor_type_text(transposed, storage[i])}) -> "
                f"{tensor_type_text([rows, n], storage[i])}"
            )
            value = f"%rs{i}"
        x.append(value)
        emit(f"%e{i} = tensor.empty() : {tensor_type_text([rows, n], storage[i])}")

    perm_type = f"tensor<{2 * n}xindex>"
    final_offset = (passes % 2) * n

    def scalar_tensor(name: str, i: int, row: str, col: str) -> str:
        """Operand ``i`` at ``[row, col]`` as a 0-d tensor of the comparator's type."""
        emit(f"%{name}_e = tensor.extract {x[i]}[{row}, {col}] : {row_types[i]}")
        emit(f"%{name} = tensor.from_elements %{name}_e : tensor<{storage[i]}>")
        wanted = str(comparator_types[2 * i])
        if wanted == f"tensor<{storage[i]}>":
            return f"%{name}"
        emit(
            f'%{name}_c = "stablehlo.bitcast_convert"(%{name}) : (tensor<{storage[i]}>) -> {wanted}'
        )
        return f"%{name}_c"

    emit("%c0 = arith.constant 0 : index")
    emit("%c1 = arith.constant 1 : index")
    emit("%c2 = arith.constant 2 : index")
    emit(f"%cn = arith.constant {n} : index")
    emit(f"%crows = arith.constant {rows} : index")
    emit(f"%cpasses = arith.constant {passes} : index")
    emit(f"%cfinal = arith.constant {final_offset} : index")
    emit(f"%perm_empty = tensor.empty() : {perm_type}")
    outs = ", ".join(f"%o{i} = %e{i}" for i in range(count))
    emit(
        f"%sorted:{count} = scf.for %row = %c0 to %crows step %c1 iter_args({outs}) -> "
        f"({', '.join(row_types)}) {{"
    )
    # perm[k] = k in the first half.
    emit(
        f"%iota = scf.for %k = %c0 to %cn step %c1 iter_args(%p = %perm_empty) -> ({perm_type}) {{"
    )
    emit(f"%p2 = tensor.insert %k into %p[%k] : {perm_type}")
    emit(f"scf.yield %p2 : {perm_type}")
    emit("}")
    # Pass `pass` merges runs of `width` = 2^pass from one half into the other.
    emit(
        f"%merged = scf.for %pass = %c0 to %cpasses step %c1 iter_args(%p = %iota) -> "
        f"({perm_type}) {{"
    )
    emit("%width = arith.shli %c1, %pass : index")
    emit("%step = arith.shli %width, %c1 : index")
    emit("%parity = arith.remui %pass, %c2 : index")
    emit("%src = arith.muli %parity, %cn : index")
    emit("%dst = arith.subi %cn, %src : index")
    emit(f"%pass_out = scf.for %lo = %c0 to %cn step %step iter_args(%q = %p) -> ({perm_type}) {{")
    emit("%lo_w = arith.addi %lo, %width : index")
    emit("%mid = arith.minui %lo_w, %cn : index")
    emit("%lo_s = arith.addi %lo, %step : index")
    emit("%hi = arith.minui %lo_s, %cn : index")
    emit(
        "%run:3 = scf.for %k = %lo to %hi step %c1 iter_args(%i = %lo, %j = %mid, %r = %q) -> "
        f"(index, index, {perm_type}) {{"
    )
    emit("%i_ok = arith.cmpi ult, %i, %mid : index")
    emit("%j_ok = arith.cmpi ult, %j, %hi : index")
    emit("%both = arith.andi %i_ok, %j_ok : i1")
    emit("%take_right = scf.if %both -> (i1) {")
    emit("%si = arith.addi %src, %i : index")
    emit("%sj = arith.addi %src, %j : index")
    emit(f"%left = tensor.extract %r[%si] : {perm_type}")
    emit(f"%right = tensor.extract %r[%sj] : {perm_type}")
    arguments = []
    for i in range(count):
        # comparator(right, left): is the right element strictly less?
        arguments.append(scalar_tensor(f"lhs{i}", i, "%row", "%right"))
        arguments.append(scalar_tensor(f"rhs{i}", i, "%row", "%left"))
    emit(
        f"%less = func.call @{COMPARATOR}({', '.join(arguments)}) : "
        f"({', '.join(str(t) for t in comparator_types)}) -> tensor<i1>"
    )
    emit("%less_e = tensor.extract %less[] : tensor<i1>")
    emit("scf.yield %less_e : i1")
    emit("} else {")
    # One run is exhausted: take from the right exactly when the left one is.
    emit("scf.yield %j_ok : i1")
    emit("}")
    emit("%pick = arith.select %take_right, %j, %i : index")
    emit("%spick = arith.addi %src, %pick : index")
    emit(f"%moved = tensor.extract %r[%spick] : {perm_type}")
    emit("%dk = arith.addi %dst, %k : index")
    emit(f"%r2 = tensor.insert %moved into %r[%dk] : {perm_type}")
    emit("%i1 = arith.addi %i, %c1 : index")
    emit("%j1 = arith.addi %j, %c1 : index")
    emit("%i2 = arith.select %take_right, %i, %i1 : index")
    emit("%j2 = arith.select %take_right, %j1, %j : index")
    emit(f"scf.yield %i2, %j2, %r2 : index, index, {perm_type}")
    emit("}")
    emit(f"scf.yield %run#2 : {perm_type}")
    emit("}")
    emit(f"scf.yield %pass_out : {perm_type}")
    emit("}")
    # Gather every operand's row through the permutation.
    outs = ", ".join(f"%g{i} = %o{i}" for i in range(count))
    emit(
        f"%gathered:{count} = scf.for %k = %c0 to %cn step %c1 iter_args({outs}) -> "
        f"({', '.join(row_types)}) {{"
    )
    emit("%fk = arith.addi %cfinal, %k : index")
    emit(f"%from = tensor.extract %merged[%fk] : {perm_type}")
    for i in range(count):
        emit(f"%v{i} = tensor.extract {x[i]}[%row, %from] : {row_types[i]}")
        emit(f"%w{i} = tensor.insert %v{i} into %g{i}[%row, %k] : {row_types[i]}")
    emit(f"scf.yield {', '.join(f'%w{i}' for i in range(count))} : {', '.join(row_types)}")
    emit("}")
    emit(f"scf.yield {', '.join(f'%gathered#{i}' for i in range(count))} : {', '.join(row_types)}")
    emit("}")

    # Back to the operands' shapes and types.
    results = []
    for i, type_ in enumerate(types):
        value = f"%sorted#{i}"
        if transposed != [rows, n]:
            emit(
                f'%y{i} = "stablehlo.reshape"({value}) : ({row_types[i]}) -> '
                f"{tensor_type_text(transposed, storage[i])}"
            )
            value = f"%y{i}"
        if perm != list(range(rank)):
            emit(
                f'%u{i} = "stablehlo.transpose"({value}) <{{permutation = {_array(inverse)}}}> : '
                f"({tensor_type_text(transposed, storage[i])}) -> "
                f"{tensor_type_text(shape, storage[i])}"
            )
            value = f"%u{i}"
        if storage[i] != type_.element_type:
            emit(
                f'%z{i} = "stablehlo.bitcast_convert"({value}) : '
                f"({tensor_type_text(shape, storage[i])}) -> {type_}"
            )
            value = f"%z{i}"
        results.append(value)

    signature = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
    result_types = ", ".join(str(t) for t in types)
    body = "\n    ".join(lines)
    return (
        f"func.func private @{COMPARATOR}({', '.join(str(t) for t in comparator_types)})"
        " -> tensor<i1>\n"
        f"func.func @template({signature}) -> ({result_types}) {{\n    {body}\n"
        f"    return {', '.join(results)} : {result_types}\n}}\n"
    )


def lower_sort(op: ir.Operation) -> None:
    types = []
    for value in op.operands:
        type_ = value.type
        if not isinstance(type_, ir.RankedTensorType) or not type_.has_static_shape:
            raise PassError(op.location, "expected statically shaped operands")
        types.append(type_)
    rank = types[0].rank
    dimension = (
        ir.IntegerAttr(op.attributes["dimension"]).value if "dimension" in op.attributes else -1
    )
    if dimension < 0:
        dimension += rank
    if not 0 <= dimension < rank:
        raise PassError(op.location, f"expected a dimension in [-{rank}, {rank})")
    comparator_types = [argument.type for argument in op.regions[0].blocks[0].arguments]
    for i, type_ in enumerate(types):
        expected = ir.RankedTensorType.get([], type_.element_type)
        if comparator_types[2 * i] != expected or comparator_types[2 * i + 1] != expected:
            raise PassError(op.location, f"expected comparator arguments of type {expected}")
    if types[0].shape[dimension] <= 1 or 0 in types[0].shape:
        # Nothing to reorder.
        for result, operand in zip(op.results, op.operands):
            result.replace_all_uses_with(operand)
        op.erase()
        return
    text = _merge_sort_template(types, dimension, comparator_types)
    replace_with_template(op, text, {COMPARATOR: op.regions[0]})


@dataclass(frozen=True)
class LowerSortPass(Pass):
    """Lower stablehlo.sort to a stable bottom-up merge sort in scf loops."""

    argument: ClassVar[str] = "shlo-lower-sort"

    def run(self, module: ir.Operation) -> None:
        # Innermost first, so a sort nested in a comparator is lowered before
        # its region is moved.
        for op in reversed(ops_named(module, "stablehlo.sort")):
            lower_sort(op)
