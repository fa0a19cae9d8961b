"""shlo.compile's limits and edge cases: array sizes, the shape cache, entries, paths, quantization."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import shlo
from shlo.frontend import DEFAULT_MAX_BYTES, default_max_bytes

HUGE_ARGUMENT = """func.func @main(%a: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> {
  return %a : tensor<65536x65536xf32>
}
"""

# An 80 GB intermediate from a scalar argument; the result is a scalar.
HUGE_INTERMEDIATE = """func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %b = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<100000x200000xf32>
  %c = stablehlo.exponential %b : tensor<100000x200000xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<100000x200000xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
"""

DYNAMIC = """func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.negate %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


# 1.6 GB of sort buffers for a one-element result: allocated when the code runs.
SORT_OF_A_BIG_BROADCAST = """
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %b = stablehlo.broadcast_in_dim %x, dims = [] : (tensor<f32>) -> tensor<400000000xf32>
  %r = "stablehlo.sort"(%b) ({
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) {dimension = 0 : i64, is_stable = false} : (tensor<400000000xf32>) -> tensor<400000000xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%r init: %z) applies stablehlo.maximum across dimensions = [0]
      : (tensor<400000000xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}
"""

ALLOCATION_FAILURE_HOST = f"""
import resource
import numpy as np, shlo
executable = shlo.compile({SORT_OF_A_BIG_BROADCAST!r}, max_bytes=8 << 30)
# Within the byte limit, but more than this process may allocate.
resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, resource.RLIM_INFINITY))
try:
    executable(np.array(1.0, np.float32))
except MemoryError as error:
    print("MemoryError:", error)
"""


def test_failed_allocation_in_generated_code_is_an_error_not_a_segfault() -> None:
    host = subprocess.run(
        [sys.executable, "-c", ALLOCATION_FAILURE_HOST],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert host.returncode == 0, host.stderr[-2000:]
    assert "MemoryError: the compiled code could not allocate a buffer" in host.stdout, host.stdout


def test_default_limit_is_at_most_16_gib(monkeypatch) -> None:
    monkeypatch.delenv("SHLO_MAX_BYTES", raising=False)
    assert 0 < default_max_bytes() <= DEFAULT_MAX_BYTES == 16 << 30


def test_huge_argument_is_rejected_before_allocation(tmp_path) -> None:
    path = tmp_path / "huge.mlir"
    path.write_text(HUGE_ARGUMENT)
    with pytest.raises(shlo.ShloError) as caught:
        shlo.compile(path, max_bytes=8 << 30)
    assert str(caught.value) == (
        f"{path}:1:1: error: argument 0 of func.func has type tensor<65536x65536xf32> "
        "(17179869184 bytes), more than the limit of 8589934592 bytes "
        "(raise it with max_bytes= or SHLO_MAX_BYTES)"
    )


@pytest.mark.parametrize("isolate", [True, False])
def test_huge_intermediate_names_its_op(monkeypatch, isolate: bool) -> None:
    monkeypatch.delenv("SHLO_MAX_BYTES", raising=False)
    with pytest.raises(shlo.ShloError) as caught:
        shlo.compile(HUGE_INTERMEDIATE, isolate=isolate)
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.line == 2
    assert diagnostic.message.startswith(
        "result 0 of stablehlo.broadcast_in_dim has type tensor<100000x200000xf32> "
        "(80000000000 bytes), more than the limit of"
    )


def test_limit_from_the_environment_applies_per_shape(monkeypatch) -> None:
    monkeypatch.setenv("SHLO_MAX_BYTES", "4000")
    exe = shlo.compile(DYNAMIC)
    x = np.arange(1000, dtype=np.float32)  # exactly 4000 bytes
    np.testing.assert_array_equal(exe(x), -x)
    with pytest.raises(
        shlo.ShloError, match=r"tensor<1001xf32> \(4004 bytes\), more than the limit of 4000"
    ):
        exe(np.zeros(1001, np.float32))
    monkeypatch.setenv("SHLO_MAX_BYTES", "-1")
    with pytest.raises(shlo.ShloError, match=r"SHLO_MAX_BYTES='-1': expected a positive number"):
        shlo.compile(DYNAMIC)(x)


def test_shape_cache_evicts_the_least_recently_used() -> None:
    exe = shlo.compile(DYNAMIC, cache_size=2)
    arrays = {n: np.arange(n, dtype=np.float32) for n in (1, 2, 3)}

    def signature(n: int):
        return (((n,), "f32"),)

    for n in (1, 2, 1, 3):  # 2 is the least recently used when 3 arrives
        np.testing.assert_array_equal(exe(arrays[n]), -arrays[n])
    assert exe.compiled_signatures == [signature(1), signature(3)]
    np.testing.assert_array_equal(exe(arrays[2]), -arrays[2])
    assert exe.compiled_signatures == [signature(3), signature(2)]
    with pytest.raises(ValueError, match="cache_size must be at least 1"):
        shlo.compile(DYNAMIC, cache_size=0)


def test_entry_that_calls_main() -> None:
    source = """
    func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = stablehlo.negate %x : tensor<3xf32>
      return %0 : tensor<3xf32>
    }
    func.func @other(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = call @main(%x) : (tensor<3xf32>) -> tensor<3xf32>
      %1 = stablehlo.multiply %0, %0 : tensor<3xf32>
      %2 = stablehlo.add %1, %0 : tensor<3xf32>
      return %2 : tensor<3xf32>
    }
    """
    x = np.array([1, 2, -3], np.float32)
    for isolate in (True, False):
        np.testing.assert_array_equal(
            shlo.compile(source, entry="other", isolate=isolate)(x), x * x - x
        )
        np.testing.assert_array_equal(shlo.compile(source, isolate=isolate)(x), -x)


PRIVATE_MAIN = """func.func private @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.negate %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


def test_private_main_compiles_and_refine_says_why_it_cannot(tmp_path) -> None:
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(shlo.compile(PRIVATE_MAIN)(x), -x)
    path = tmp_path / "private.mlir"
    path.write_text(PRIVATE_MAIN)
    with pytest.raises(shlo.ShloError) as caught:
        shlo.refine(path, ["tensor<2xf32>"])
    assert str(caught.value) == (
        f"{path}:1:1: error: @main is private; the entry function must be public"
    )


@pytest.mark.parametrize("storage", ["u8", "u8<1:255>"])
def test_unsigned_quantized_arguments(storage: str) -> None:
    element = f"!quant.uniform<{storage}:f32, 0.5:3>"
    source = f"""
    func.func @main(%x: tensor<4x{element}>) -> tensor<4xf32> {{
      %0 = stablehlo.uniform_dequantize %x : (tensor<4x{element}>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }}
    """
    exe = shlo.compile(source)
    assert exe.params == [((4,), "ui8")]
    stored = np.array([1, 3, 4, 255], np.uint8)
    np.testing.assert_array_equal(exe(stored), (stored.astype(np.float32) - 3) * 0.5)


@pytest.mark.parametrize("path", ["/missing/file.mlir", "missing.mlirbc", "no/such/dir/prog"])
def test_missing_file_is_named(path: str) -> None:
    # shlo.compile and shlo.load_module decide what names a file the same way.
    for load in (shlo.compile, shlo.load_module):
        with pytest.raises(shlo.ShloError, match=f"^no such file: {path}$"):
            load(path)


def test_argument_without_a_numpy_dtype_is_a_shlo_error() -> None:
    source = "func.func @main(%a: tensor<4xindex>) -> tensor<4xindex> {\n  return %a : tensor<4xindex>\n}"
    with pytest.raises(
        shlo.ShloError, match=r"^argument 0 of @main has element type index, which numpy"
    ):
        shlo.compile(source)


def test_function_name_that_is_not_utf8(tmp_path) -> None:
    path = tmp_path / "name.mlir"
    path.write_bytes(
        b'func.func @"ma\xffin"(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
        b"  return %a : tensor<2xf32>\n}\n"
    )
    with pytest.raises(shlo.ShloError) as caught:
        shlo.compile(path)
    assert str(caught.value) == (
        f"{path}:1:1: error: no function @main in the module; it has @ma\ufffdin"
    )


def test_interpreter_refuses_complex_results_instead_of_aborting() -> None:
    from shlo.isolation import shared_worker

    source = """func.func @main(%a: tensor<2xf32>) -> tensor<2xcomplex<f32>> {
  %0 = stablehlo.complex %a, %a : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}
"""
    args = [np.array([1, 3], np.float32)]
    with pytest.raises(
        shlo.ShloError,
        match=r"1:1: error: result 0 of @main has type tensor<2xcomplex<f32>>; the reference interpreter cannot return complex",
    ):
        shared_worker().call("interpret", source=source, entry="main", args=args)


def element_access(index: int, op: str) -> str:
    """A linalg program that reads (or writes) one element at a constant ``index``."""
    access = {
        "tensor.extract": "%e = tensor.extract %x[%i] : tensor<8xf32>\n"
        "  %r = tensor.insert %e into %x[%c0] : tensor<8xf32>",
        "tensor.insert": "%e = tensor.extract %x[%c0] : tensor<8xf32>\n"
        "  %r = tensor.insert %e into %x[%i] : tensor<8xf32>",
    }[op]
    return f"""func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {{
  %c0 = arith.constant 0 : index
  %i = arith.constant {index} : index
  {access}
  return %r : tensor<8xf32>
}}
"""


@pytest.mark.parametrize("op", ["tensor.extract", "tensor.insert"])
@pytest.mark.parametrize("index", [-2147483648, -1, 8, 1 << 40])
def test_constant_index_outside_the_array_is_located_not_run(tmp_path, op: str, index: int) -> None:
    # Out of bounds is undefined behavior: the generated code would touch
    # memory outside the array, in the caller's process (a fuzz case crashed it).
    path = tmp_path / "access.mlir"
    path.write_text(element_access(index, op))
    with pytest.raises(shlo.ShloError) as error:
        shlo.compile(str(path))
    message = str(error.value)
    assert f"access.mlir:{4 if op == 'tensor.extract' else 5}:" in message
    assert (
        f"at index {index} of dimension 0 of tensor<8xf32>: expected an index in [0, 8)" in message
    )


@pytest.mark.parametrize("op", ["tensor.extract", "tensor.insert"])
def test_constant_index_inside_the_array_runs(op: str) -> None:
    x = np.arange(8, dtype=np.float32)
    got = shlo.compile(element_access(7, op))(x)
    want = x.copy()
    if op == "tensor.extract":
        want[0] = x[7]
    else:
        want[7] = x[0]
    np.testing.assert_array_equal(got, want)
