"""shlo.bytecode: walking MLIR bytecode, and refusing tables MLIR's reader overruns."""

from __future__ import annotations

import pytest
import shlo
from shlo import bytecode
from shlo.io import module_to_bytecode

PROGRAM = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %c = stablehlo.constant dense<1.0> : tensor<4xf32>
  %s = stablehlo.add %x, %c : tensor<4xf32>
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  return %s, %i : tensor<4xf32>, tensor<4xi32>
}
"""


def _with_counts(data: bytes, attributes: int, types: int) -> bytes:
    """``data`` with the offset table's attribute and type counts moved by the given amounts."""
    container = bytecode.read_container(data)
    section = container.by_id()[bytecode.ATTR_TYPE_OFFSET_SECTION]
    reader = bytecode.Reader(section.data)
    num_attributes, num_types = reader.varint(), reader.varint()
    section.data = (
        bytecode.encode_varint(num_attributes + attributes)
        + bytecode.encode_varint(num_types + types)
        + section.data[reader.pos :]
    )
    out = bytearray(container.header)
    for each in container.sections:
        bytecode.write_section(out, each)
    return bytes(out)


@pytest.fixture(scope="module")
def program_bytecode() -> bytes:
    return module_to_bytecode(shlo.load_module(PROGRAM))


def test_container_round_trips(program_bytecode: bytes) -> None:
    assert _with_counts(program_bytecode, 0, 0) == program_bytecode
    assert bytecode.attribute_type_table_overrun(program_bytecode) is None


@pytest.mark.parametrize(
    ("attributes", "types", "kind"), [(1, 0, "attribute"), (-1, 0, "attribute"), (0, -1, "type")]
)
def test_counts_that_groups_overrun_are_refused(
    program_bytecode: bytes, attributes: int, types: int, kind: str
) -> None:
    data = _with_counts(program_bytecode, attributes, types)
    problem = bytecode.attribute_type_table_overrun(data)
    assert problem is not None and f" {kind} entries where the table has" in problem
    # Refused before MLIR reads it: safe to load in this process.
    with pytest.raises(shlo.ShloError, match=r"^prog.mlirbc: error: malformed bytecode: a group"):
        _load(data)


def _load(data: bytes) -> None:
    from shlo.io import new_context, parse_module

    parse_module(data, new_context(), "prog.mlirbc")


def test_tables_that_cannot_be_walked_are_left_to_mlir(program_bytecode: bytes) -> None:
    assert bytecode.attribute_type_table_overrun(program_bytecode[:30]) is None
    assert bytecode.attribute_type_table_overrun(bytecode.BYTECODE_MAGIC) is None
