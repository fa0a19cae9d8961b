"""Ops that used to fail on the CPU backend, compiled with shlo.compile and checked against numpy.

Covers strided copies (pad, strided slice, reduce_window with padding,
gather), complex elementwise math, complex bitcasts, complex cbrt, narrow
float dots, dot algorithms, tuples and complex constants.
"""

from __future__ import annotations

import numpy as np
import pytest
import shlo


def run(text: str, *args: np.ndarray):
    return shlo.compile(text, isolate=False)(*args)


# --- copies of strided views (shlo-lower-strided-copies) -----------------------------


@pytest.mark.parametrize(
    ("dtype", "element"), [(np.int64, "i64"), (np.float32, "f32"), (np.complex64, "complex<f32>")]
)
def test_pad_with_interior(dtype, element):
    x = (np.arange(6).reshape(2, 3) + 1).astype(dtype)
    text = f"""
func.func @main(%x: tensor<2x3x{element}>, %v: tensor<{element}>) -> tensor<6x4x{element}> {{
  %0 = stablehlo.pad %x, %v, low = [1, 0], high = [2, 1], interior = [1, 0]
      : (tensor<2x3x{element}>, tensor<{element}>) -> tensor<6x4x{element}>
  return %0 : tensor<6x4x{element}>
}}"""
    got = run(text, x, np.array(-1, dtype))
    want = np.full((6, 4), -1, dtype)
    want[1:4:2, 0:3] = x
    np.testing.assert_array_equal(got, want)


def test_strided_slice_of_a_unit_inner_dimension():
    # Found by the composition tests: the copy of this view was left to
    # memrefCopy, which the JIT lacks ("no symbol main").
    x = np.arange(4, dtype=np.float32).reshape(2, 2, 1)
    text = """
func.func @main(%a: tensor<2x2x1xf32>) -> tensor<1x2x1xf32> {
  %0 = stablehlo.slice %a [1:2:2, 0:2:1, 0:1:2] : (tensor<2x2x1xf32>) -> tensor<1x2x1xf32>
  return %0 : tensor<1x2x1xf32>
}"""
    np.testing.assert_array_equal(run(text, x), x[1:2:2, 0:2:1, 0:1:2])


def test_strided_slice():
    x = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    text = """
func.func @main(%x: tensor<5x7xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.slice %x [1:5:2, 0:7:3] : (tensor<5x7xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}"""
    np.testing.assert_array_equal(run(text, x), x[1:5:2, 0:7:3])


def test_reduce_window_with_padding():
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    text = """
func.func @main(%x: tensor<6x5xf32>) -> tensor<3x5xf32> {
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>,
      window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 2, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<6x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}"""
    padded = np.pad(x, 1, constant_values=-np.inf)
    want = np.array(
        [[padded[2 * i : 2 * i + 3, j : j + 3].max() for j in range(5)] for i in range(3)]
    )
    np.testing.assert_array_equal(run(text, x), want)


def test_gather_rows():
    x = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)
    indices = np.array([[7], [2], [9]], np.int32)
    text = """
func.func @main(%x: tensor<10x4xf32>, %i: tensor<3x1xi32>) -> tensor<3x4xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
      slice_sizes = array<i64: 1, 4>}> : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}"""
    np.testing.assert_array_equal(run(text, x, indices), x[[7, 2, 9]])


# --- complex math (convert-complex-to-standard before the math lowerings) -----------------

UNARY = {
    "tanh": np.tanh,
    "sine": np.sin,
    "cosine": np.cos,
    "exponential": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda z: 1 / np.sqrt(z),
    "tan": np.tan,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize(("dtype", "element"), [(np.complex64, "f32"), (np.complex128, "f64")])
def test_complex_unary(name, dtype, element):
    rng = np.random.default_rng(1)
    z = (rng.uniform(-2, 2, 8) + 1j * rng.uniform(-2, 2, 8)).astype(dtype)
    type_ = f"tensor<8xcomplex<{element}>>"
    text = f"""
func.func @main(%z: {type_}) -> {type_} {{
  %0 = "stablehlo.{name}"(%z) : ({type_}) -> {type_}
  return %0 : {type_}
}}"""
    tolerance = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(run(text, z), UNARY[name](z), rtol=tolerance, atol=tolerance)


def test_complex_divide_f64():
    a = np.array([1 + 2j, -3 + 0.5j, 1e300 + 1e300j], np.complex128)
    b = np.array([3 - 1j, 0.25 + 4j, 1e300 - 1e300j], np.complex128)
    text = """
func.func @main(%a: tensor<3xcomplex<f64>>, %b: tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>> {
  %0 = stablehlo.divide %a, %b : tensor<3xcomplex<f64>>
  return %0 : tensor<3xcomplex<f64>>
}"""
    np.testing.assert_allclose(run(text, a, b), a / b, rtol=1e-14)


@pytest.mark.parametrize(("dtype", "element"), [(np.complex64, "f32"), (np.complex128, "f64")])
def test_complex_cbrt(dtype, element):
    z = np.array([3 + 4j, -8, 0, 1j, -1 - 1j, 27], dtype)
    type_ = f"tensor<6xcomplex<{element}>>"
    text = f"""
func.func @main(%z: {type_}) -> {type_} {{
  %0 = stablehlo.cbrt %z : {type_}
  return %0 : {type_}
}}"""
    want = np.where(z == 0, 0, z.astype(np.complex128) ** (1 / 3))
    tolerance = 1e-6 if dtype == np.complex64 else 1e-14
    np.testing.assert_allclose(run(text, z), want, rtol=tolerance, atol=tolerance)


def test_complex_constant_broadcast():
    z = np.array([1 + 1j, 2 - 3j], np.complex64)
    text = """
func.func @main(%z: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  %c = stablehlo.constant dense<(0.0, 1.0)> : tensor<complex<f32>>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<complex<f32>>) -> tensor<2xcomplex<f32>>
  %0 = stablehlo.add %z, %b : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}"""
    np.testing.assert_array_equal(run(text, z), z + 1j)


# --- bitcast_convert of complex numbers (shlo-lower-complex-bitcast) ------------------------


def test_bitcast_complex_identity():
    z = np.array([[1 - 2j, 3.5 + 0j]], np.complex64)
    text = """
func.func @main(%z: tensor<1x2xcomplex<f32>>) -> tensor<1x2xcomplex<f32>> {
  %0 = stablehlo.bitcast_convert %z : (tensor<1x2xcomplex<f32>>) -> tensor<1x2xcomplex<f32>>
  return %0 : tensor<1x2xcomplex<f32>>
}"""
    np.testing.assert_array_equal(run(text, z), z)


def test_bitcast_c128_to_c64_and_back():
    z = np.array([1.5 - 2j, np.pi + 1e-300j, -0.0 + 7j], np.complex128)
    narrow = """
func.func @main(%z: tensor<3xcomplex<f64>>) -> tensor<3x2xcomplex<f32>> {
  %0 = stablehlo.bitcast_convert %z : (tensor<3xcomplex<f64>>) -> tensor<3x2xcomplex<f32>>
  return %0 : tensor<3x2xcomplex<f32>>
}"""
    # numpy's view has the same little-endian layout as the interpreter.
    want = z.view(np.complex64).reshape(3, 2)
    got = run(narrow, z)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    wide = """
func.func @main(%z: tensor<3x2xcomplex<f32>>) -> tensor<3xcomplex<f64>> {
  %0 = stablehlo.bitcast_convert %z : (tensor<3x2xcomplex<f32>>) -> tensor<3xcomplex<f64>>
  return %0 : tensor<3xcomplex<f64>>
}"""
    back = run(wide, np.ascontiguousarray(got))
    np.testing.assert_array_equal(back.view(np.uint64), z.view(np.uint64))


# --- dot_general (shlo-normalize-dot-general) ----------------------------------------------


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_narrow_float_dot_accumulates_in_f32(element):
    import ml_dtypes

    dtype = np.float16 if element == "f16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(2)
    a = rng.integers(-6, 7, (4, 3)).astype(dtype)
    b = (rng.standard_normal((3, 6)) * 4).astype(dtype)
    text = f"""
func.func @main(%a: tensor<4x3x{element}>, %b: tensor<3x6x{element}>) -> tensor<4x6x{element}> {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<4x3x{element}>, tensor<3x6x{element}>) -> tensor<4x6x{element}>
  return %0 : tensor<4x6x{element}>
}}"""
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(run(text, a, b), want)


def test_dot_with_algorithm():
    a = np.arange(8, dtype=np.int64).reshape(2, 2, 2)
    b = np.array([[[1, 0], [0, 1]], [[2, 1], [0, 1]]], np.int64)
    text = """
func.func @main(%a: tensor<2x2x2xi64>, %b: tensor<2x2x2xi64>) -> tensor<2x2x2xi64> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1],
    algorithm = <lhs_precision_type = tf32, rhs_precision_type = tf32, accumulation_type = f32,
                 lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1,
                 allow_imprecise_accumulation = false>
      : (tensor<2x2x2xi64>, tensor<2x2x2xi64>) -> tensor<2x2x2xi64>
  return %0 : tensor<2x2x2xi64>
}"""
    np.testing.assert_array_equal(run(text, a, b), a @ b)


# --- tuples (shlo-fold-tuples) ---------------------------------------------------------------


def test_tuple_elements():
    x = np.array([1.0, 2.0])
    n = np.array(3, np.int64)
    text = """
func.func @main(%x: tensor<2xf64>, %n: tensor<i64>) -> (tensor<2xf64>, tensor<i64>) {
  %inner = stablehlo.tuple %n : tuple<tensor<i64>>
  %t = stablehlo.tuple %x, %inner : tuple<tensor<2xf64>, tuple<tensor<i64>>>
  %0 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tensor<2xf64>
  %1 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tuple<tensor<i64>>
  %2 = stablehlo.get_tuple_element %1[0] : (tuple<tensor<i64>>) -> tensor<i64>
  return %0, %2 : tensor<2xf64>, tensor<i64>
}"""
    got_x, got_n = run(text, x, n)
    np.testing.assert_array_equal(got_x, x)
    assert got_n == 3
