"""shlo.fast_walks: ops found by a walk in C are those, in the order, the bindings' walk finds."""

from __future__ import annotations

import os
import tempfile

import pytest
from shlo import _worker, fast_walks
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu.runtime import linker
from shlo.diagnostics import ShloError
from shlo.ir_utils import op_count, ops_named, ops_with_attributes

NESTED = """
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<4xf32>
  %0:2 = stablehlo.while(%i = %n, %v = %x) : tensor<i32>, tensor<4xf32>
  cond {
    %z = stablehlo.constant dense<0> : tensor<i32>
    %p = stablehlo.compare GT, %i, %z : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.subtract %i, %one : tensor<i32>
    %w = stablehlo.add %v, %c : tensor<4xf32>
    stablehlo.return %j, %w : tensor<i32>, tensor<4xf32>
  }
  %1 = call @twice(%0#1) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @twice(%y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %y, %y : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.fixture
def c_walks():
    """fast_walks enabled for the test, then as it was."""
    driver = linker()
    if driver is None:
        pytest.skip("no C compiler to build the walk with")
    saved = fast_walks._library
    fast_walks.enable(driver)
    yield
    fast_walks._library = saved


def python_walk(root: ir.Operation, *names: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


@pytest.mark.parametrize(
    "names",
    [
        ("stablehlo.constant",),
        ("stablehlo.add", "stablehlo.return", "func.func"),
        ("stablehlo.while",),
        ("stablehlo.multiply",),
        ("stablehlo.add", "stablehlo.ad", "stablehlo.addd"),  # lengths differ
    ],
)
def test_c_walk_finds_what_the_bindings_walk_finds(c_walks, names):
    module = ir.Module.parse(NESTED, new_context())
    found = fast_walks.ops_named(module.operation, names)
    assert found is not None
    expected = python_walk(module.operation, *names)
    assert [op.name for op in found] == [op.name for op in expected]
    assert found == expected  # the same ops, in the same (pre-)order
    assert ops_named(module.operation, *names) == expected


def test_c_walk_of_a_nested_op_stays_inside_it(c_walks):
    module = ir.Module.parse(NESTED, new_context())
    (loop,) = ops_named(module.operation, "stablehlo.while")
    inside = ops_named(loop, "stablehlo.constant", "stablehlo.while")
    assert [op.name for op in inside] == ["stablehlo.while"] + ["stablehlo.constant"] * 2


def test_ops_found_in_c_can_be_rewritten(c_walks):
    module = ir.Module.parse(NESTED, new_context())
    for add in ops_named(module.operation, "stablehlo.add"):
        with ir.InsertionPoint(add), add.location:
            multiply = ir.Operation.create(
                "stablehlo.multiply", results=[add.results[0].type], operands=list(add.operands)
            )
        add.results[0].replace_all_uses_with(multiply.results[0])
        add.erase()
    module.operation.verify()
    assert ops_named(module.operation, "stablehlo.add") == []
    assert len(ops_named(module.operation, "stablehlo.multiply")) == 2


def test_without_the_c_walk_ops_named_walks_in_python(monkeypatch):
    monkeypatch.setattr(fast_walks, "_library", None)
    module = ir.Module.parse(NESTED, new_context())
    assert fast_walks.ops_named(module.operation, ["stablehlo.add"]) is None
    assert len(ops_named(module.operation, "stablehlo.add")) == 2


def test_a_compiler_that_fails_is_an_error_and_leaves_python_walks(monkeypatch):
    monkeypatch.setattr(fast_walks, "_library", None)
    with pytest.raises(ShloError, match=r"compiling fast_walks\.so failed"):
        fast_walks.enable("false")
    assert not fast_walks.enabled()


def test_building_the_c_walk_leaves_no_file(monkeypatch):
    """Built in memory: a worker killed while it builds leaves nothing in the temp directory."""
    driver = linker()
    if driver is None:
        pytest.skip("no C compiler")
    monkeypatch.setattr(fast_walks, "_library", None)
    temp = tempfile.gettempdir()
    before = set(os.listdir(temp))
    fast_walks.enable(driver)
    assert fast_walks.enabled()
    # Other tests running at the same time may make directories of their own.
    for entry in set(os.listdir(temp)) - before:
        path = os.path.join(temp, entry)
        assert "fast_walks" not in entry
        if os.path.isdir(path):
            try:
                assert "fast_walks.so" not in os.listdir(path)
            except FileNotFoundError:
                pass  # removed meanwhile by whoever made it


def test_the_worker_enables_c_walks_where_it_can_build_them(monkeypatch):
    if linker() is None:
        pytest.skip("no C compiler")
    monkeypatch.setattr(fast_walks, "_library", None)
    monkeypatch.setattr(_worker, "_fast_walks_tried", False)
    _worker._try_fast_walks()
    assert fast_walks.enabled()
    assert _worker._fast_walks_tried


def test_c_walk_finds_ops_by_attribute_as_python_does(c_walks):
    module = ir.Module.parse(NESTED, new_context())
    adds = ops_named(module.operation, "stablehlo.add")
    adds[1].attributes["shlo.tag"] = ir.UnitAttr.get(module.context)
    names = ("shlo.tag", "sym_visibility")  # a discardable and an inherent attribute
    found = fast_walks.ops_with_attributes(module.operation, names)
    expected = [
        op
        for op in python_walk(module.operation, *_all_names(module))
        if any(name in op.attributes for name in names)
    ]
    assert found is not None
    assert [op.name for op in found] == ["func.func", "stablehlo.add"]  # @twice and its add
    assert found == expected
    assert ops_with_attributes(module.operation, *names) == expected
    assert fast_walks.ops_with_attributes(module.operation, ["shlo.missing"]) == []


def _all_names(module: ir.Module) -> list[str]:
    names: list[str] = []
    module.operation.walk(lambda op: (names.append(op.name), ir.WalkResult.ADVANCE)[1])
    return names


def test_without_the_c_walk_ops_with_attributes_walks_in_python(monkeypatch):
    monkeypatch.setattr(fast_walks, "_library", None)
    module = ir.Module.parse(NESTED, new_context())
    assert fast_walks.ops_with_attributes(module.operation, ["sym_visibility"]) is None
    assert [op.name for op in ops_with_attributes(module.operation, "sym_visibility")] == [
        "func.func"
    ]


def test_c_walk_counts_the_ops_python_counts(c_walks):
    module = ir.Module.parse(NESTED, new_context())
    expected = len(_all_names(module))
    assert fast_walks.op_count(module.operation) == expected
    assert op_count(module.operation) == expected
    (loop,) = ops_named(module.operation, "stablehlo.while")
    assert op_count(loop) == 8  # the while, and the 3 + 4 ops of its regions


def test_without_the_c_walk_op_count_walks_in_python(monkeypatch):
    monkeypatch.setattr(fast_walks, "_library", None)
    module = ir.Module.parse(NESTED, new_context())
    assert fast_walks.op_count(module.operation) is None
    assert op_count(module.operation) == len(_all_names(module))
