"""shlo-test-print-indexing-maps: print every op's indexing maps to stdout, for FileCheck.

Ours because upstream is missing: XLA's indexing analysis has no MLIR or
StableHLO counterpart; this pass shows what ``shlo.analysis.indexing``
computes (docs/indexing.md). For each ``func.func`` it prints a header
``indexing maps of @name``, then for each op of the body: the op's result
names and op name, and per (result, operand) pair the output-to-input map in
XLA's textual form. ``input-to-output=true`` prints the other direction,
``fusion=true`` adds the maps through which the function's first result reads
each argument (``fusion_output_to_input``). Operand-less ops print ``no
operands``, ops without a rule ``no indexing rule``. The IR is unchanged.

  %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<10x20xf32>) -> tensor<20x10xf32>
  ==>
  indexing maps of @main
  %0 = stablehlo.transpose
  result 0 -> operand 0:
  (d0, d1) -> (d1, d0)
  domain:
  d0 in [0, 19]
  d1 in [0, 9]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.analysis.indexing import (
    fusion_output_to_input,
    input_to_output,
    output_to_input,
)
from shlo.ir_utils import functions, string_value
from shlo.pass_framework import Pass


def _op_lines(op: ir.Operation, forward: bool) -> list[str]:
    names = ", ".join(result.get_name() for result in op.results)
    lines = [f"{names} = {op.name}" if names else op.name]
    if len(op.operands) == 0:
        return [*lines, "no operands"]
    compute = input_to_output if forward else output_to_input
    for result_index in range(len(op.results)):
        for operand_index in range(len(op.operands)):
            try:
                indexing = compute(op, operand_index, result_index)
            except NotImplementedError:
                return [*lines, "no indexing rule"]
            except ValueError as error:
                return [*lines, f"no indexing maps: {error}"]
            header = (
                f"operand {operand_index} -> result {result_index}:"
                if forward
                else f"result {result_index} -> operand {operand_index}:"
            )
            lines += [header, str(indexing)]
    return lines


def _fusion_lines(func: ir.Operation) -> list[str]:
    block = func.regions[0].blocks[0]
    lines = []
    for index, argument in enumerate(block.arguments):
        try:
            maps = fusion_output_to_input(func, index)
        except (NotImplementedError, ValueError) as error:
            return [*lines, f"fusion: no indexing maps: {error}"]
        if not maps:
            lines.append(f"fusion: result 0 does not read {argument.get_name()}")
        for indexing in maps:
            lines += [f"fusion: result 0 -> {argument.get_name()}:", str(indexing)]
    return lines


@dataclass(frozen=True)
class TestPrintIndexingMapsPass(Pass):
    """Print every op's indexing maps to stdout, for FileCheck."""

    argument: ClassVar[str] = "shlo-test-print-indexing-maps"
    input_to_output: bool = False
    fusion: bool = False

    def run(self, module: ir.Operation) -> None:
        lines: list[str] = []
        for func in functions(module):
            if len(func.regions[0].blocks) == 0:
                continue  # a declaration
            name = string_value(func.attributes["sym_name"])
            lines.append(f"indexing maps of @{name}")
            block = func.regions[0].blocks[0]
            for op in list(block.operations)[:-1]:  # the terminator has no maps
                lines += _op_lines(op.operation, self.input_to_output)
            if self.fusion and len(list(block.operations)[-1].operands) > 0:
                lines += _fusion_lines(func)
        sys.stdout.write("\n".join(lines) + "\n")
        # shlo-opt writes the module to the binary buffer: keep the order.
        sys.stdout.flush()
