"""Cumulative reduce_windows (shlo-lower-reduce-window-scan) against jax and the interpreter.

jax exports jnp.cumsum & co. as a reduce_window over the whole axis; the pass
makes them linear-time loops. Windows that are not scans must stay as they
are, and every result must match jax or the reference interpreter.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import shlo
from jax import export
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.frontend import FRONTEND
from shlo.interpreter import interpret
from shlo.pipeline import run_pipeline

SCANS = {
    "cumsum": jax.lax.cumsum,
    "cumprod": jax.lax.cumprod,
    "cummax": jax.lax.cummax,
    "cummin": jax.lax.cummin,
}
# (shape, axis): ranks 1-3, every axis, a size-1 axis and odd sizes.
LAYOUTS = [((1,), 0), ((7,), 0), ((3, 5), 0), ((3, 5), 1), ((2, 3, 4), 0), ((2, 3, 4), 1)]
LAYOUTS += [((2, 3, 5), 2), ((4, 1, 3), 1)]


def jax_text(fn, *args) -> str:
    return str(export.export(jax.jit(fn), platforms=["cpu"])(*args).mlir_module())


def inputs(name: str, dtype: type, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, _ in LAYOUTS:
        if np.issubdtype(dtype, np.integer):
            # Small factors keep products readable; wrap-around would match anyway.
            low, high = (-2, 3) if name == "cumprod" else (-50, 50)
            arrays.append(rng.integers(low, high, shape).astype(dtype))
        elif name == "cumprod":
            arrays.append(rng.uniform(0.5, 1.5, shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def lowered_to_linalg(text: str) -> str:
    module = shlo.load_module(text)
    pipeline = CpuPipeline().elements(through="legalize-to-linalg")
    run_pipeline(module, [*FRONTEND, "shlo-remove-dynamism", *pipeline])
    return str(module)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("name", sorted(SCANS))
def test_jax_scans_match_jax(name: str, dtype: type, reverse: bool) -> None:
    scan = SCANS[name]

    def fn(*xs):
        return tuple(
            scan(x, axis=axis, reverse=reverse) for x, (_, axis) in zip(xs, LAYOUTS, strict=True)
        )

    args = inputs(name, dtype, seed=len(name) + reverse)
    text = jax_text(fn, *args)
    got = shlo.compile(text, isolate=False)(*args)
    want = jax.jit(fn)(*args)
    for (shape, axis), a, b in zip(LAYOUTS, got, want, strict=True):
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        if np.issubdtype(dtype, np.integer) or name in ("cummax", "cummin"):
            np.testing.assert_array_equal(a, b, err_msg=f"{shape} axis {axis}")
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"{shape} axis {axis}")


def test_jnp_functions_on_long_axes_match_jax() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 999)).astype(np.float32)
    flags = rng.integers(0, 2, (1001,)).astype(np.bool_)
    small = rng.integers(0, 255, (4, 257)).astype(np.uint8)

    def fn(x, flags, small):
        return (
            jnp.cumsum(x, axis=1),
            jnp.cumsum(x.T, axis=0),
            jnp.cumprod(1 + x / 1000, axis=1),
            jnp.cumulative_sum(x, axis=1, include_initial=True),
            jnp.cumsum(flags),  # bools are summed as integers
            jax.lax.cummax(small, axis=1, reverse=True),
            jax.lax.cummin(small, axis=0),
        )

    text = jax_text(fn, x, flags, small)
    assert "stablehlo.reduce_window" not in lowered_to_linalg(text)
    got = shlo.compile(text, isolate=False)(x, flags, small)
    want = jax.jit(fn)(x, flags, small)
    for a, b in zip(got, want, strict=True):
        b = np.asarray(b)
        assert a.dtype == b.dtype
        if np.issubdtype(a.dtype, np.integer):
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)


def test_pass_fires_on_jax_scans() -> None:
    x = np.zeros((6, 40), np.float32)
    for scan in SCANS.values():
        for reverse in (False, True):
            for axis in (0, 1):
                text = jax_text(lambda x: scan(x, axis=axis, reverse=reverse), x)
                assert "stablehlo.reduce_window" in text
                lowered = lowered_to_linalg(text)
                assert "reduce_window" not in lowered and "pooling" not in lowered
                assert "scf.for" in lowered


def window_program(
    element: str,
    shape: list[int],
    window: list[int],
    padding: list[tuple[int, int]],
    body: str,
    init: str | None = None,
    extra: str = "",
    result_shape: list[int] | None = None,
) -> str:
    """``@main(x[, init])``: a reduce_window of ``x`` with a one-op ``body``."""

    def tensor(sizes: list[int]) -> str:
        return "tensor<" + "".join(f"{s}x" for s in sizes) + f"{element}>"

    operand, result = tensor(shape), tensor(result_shape or shape)
    scalar = f"tensor<{element}>"
    pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
    init_param = "" if init else f", %init: {scalar}"
    constant = f"%init = stablehlo.constant dense<{init}> : {scalar}" if init else ""
    return f"""
func.func @main(%x: {operand}{init_param}) -> {result} {{
  {constant}
  %0 = "stablehlo.reduce_window"(%x, %init) <{{
      padding = dense<[{pads}]> : tensor<{len(shape)}x2xi64>,
      window_dimensions = array<i64: {", ".join(map(str, window))}>{extra}}}> ({{
  ^bb0(%a: {scalar}, %b: {scalar}):
    %r = {body} %a, %b : {scalar}
    stablehlo.return %r : {scalar}
  }}) : ({operand}, {scalar}) -> {result}
  return %0 : {result}
}}
"""


def after_pass(text: str) -> str:
    module = shlo.load_module(text)
    run_pipeline(module, ["shlo-lower-reduce-window-scan"])
    return str(module)


def check_against_interpreter(text: str, args: list[np.ndarray], rtol: float = 0.0) -> None:
    """The compiled result equals the interpreter's (within ``rtol`` when nonzero)."""
    got = shlo.compile(text, isolate=False)(*args)
    (want,) = interpret(text, "main", args)
    assert got.dtype == want.dtype
    if rtol == 0:
        np.testing.assert_array_equal(got, want)
        if np.issubdtype(got.dtype, np.floating) or got.dtype == ml_dtypes.bfloat16:
            # assert_array_equal takes -0.0 for 0.0; a NaN's sign is unspecified.
            numbers = ~np.isnan(want.astype(np.float64))
            np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))
    else:
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol
        )


RNG = np.random.default_rng(3)
# (element, body, init, arguments): idempotent ops take any init, even a
# run-time one; add and multiply need their identity.
INTERPRETER_CASES = {
    "max-runtime-init": ("f32", "stablehlo.maximum", None, RNG.standard_normal(9)),
    "max-signed-zeros": ("f32", "stablehlo.maximum", "0xFF800000", [-0.0, 0.0, -0.0] * 3),
    "min-nan": ("f32", "stablehlo.minimum", "0x7F800000", [1, -1, 2, 0, np.nan, -3, 4, 5, 6]),
    "min-ui8": ("ui8", "stablehlo.minimum", None, RNG.integers(0, 256, 9)),
    "max-i1": ("i1", "stablehlo.maximum", "false", RNG.integers(0, 2, 9)),
    "and-i1": ("i1", "stablehlo.and", "true", RNG.integers(0, 2, 9)),
    "or-i8": ("i8", "stablehlo.or", "0", RNG.integers(-128, 128, 9)),
    "add-i1": ("i1", "stablehlo.add", "false", RNG.integers(0, 2, 9)),
    "add-ui32-wraps": ("ui32", "stablehlo.add", "0", RNG.integers(2**31, 2**32, 9)),
    "mul-i16": ("i16", "stablehlo.multiply", "1", RNG.integers(-3, 4, 9)),
    "add-f32-minus-zero": ("f32", "stablehlo.add", "-0.0", -np.zeros(9)),
    "add-f32-plus-zero": ("f32", "stablehlo.add", "0.0", -np.zeros(9)),
    "add-f16": ("f16", "stablehlo.add", "0.0", RNG.standard_normal(9)),
    "mul-bf16": ("bf16", "stablehlo.multiply", "1.0", RNG.uniform(0.5, 2.0, 9)),
    "add-complex": (
        "complex<f32>",
        "stablehlo.add",
        "(0.0, 0.0)",
        RNG.standard_normal(9) + 1j * RNG.standard_normal(9),
    ),
}
FLOAT_RTOL = {"f32": 1e-6, "f16": 1e-2, "bf16": 1e-2}
DTYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "ui8": np.uint8,
    "i1": np.bool_,
    "i8": np.int8,
    "ui32": np.uint32,
    "i16": np.int16,
    "complex<f32>": np.complex64,
}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("case", sorted(INTERPRETER_CASES))
def test_scans_match_the_interpreter(case: str, reverse: bool) -> None:
    element, body, init, values = INTERPRETER_CASES[case]
    dtype = DTYPES[element]
    x = np.asarray(values).astype(dtype).reshape(3, 3)
    # A window longer than the axis (5 > 3) is still a scan.
    padding = [(0, 0), (0, 4) if reverse else (4, 0)]
    text = window_program(element, [3, 3], [1, 5], padding, body, init)
    assert "reduce_window" not in after_pass(text)
    # A run-time init that clips some of the values.
    args = [x] if init else [x, np.asarray(0.5 if dtype == np.float32 else 100, dtype)]
    if element.startswith("complex"):
        # The interpreter cannot return complex values: numpy is the oracle.
        got = shlo.compile(text, isolate=False)(x)
        flip = (lambda a: a[:, ::-1]) if reverse else (lambda a: a)
        np.testing.assert_allclose(got, flip(np.cumsum(flip(x), axis=1)), rtol=1e-6, atol=1e-6)
        return
    if reverse and body in ("stablehlo.add", "stablehlo.multiply") and element in FLOAT_RTOL:
        # A reverse scan adds x[n - 1] first, the interpreter x[i] first.
        check_against_interpreter(text, args, rtol=FLOAT_RTOL[element])
    else:
        # Forward scans combine in the interpreter's order, and the other
        # ops are exact in any order: bit for bit.
        check_against_interpreter(text, args)


# Windows on a 4x5 operand that are not a scan along one axis, or whose init
# is not the identity: (window, padding, body, init, attributes, result shape).
NOT_SCANS = {
    "sliding-3": ([1, 3], [(0, 0), (2, 0)], "stablehlo.add", "0.0", "", [4, 5]),
    "too-short": ([1, 4], [(0, 0), (3, 0)], "stablehlo.add", "0.0", "", [4, 5]),
    "both-sides": ([1, 5], [(0, 0), (2, 2)], "stablehlo.add", "0.0", "", [4, 5]),
    "two-axes": ([4, 5], [(3, 0), (4, 0)], "stablehlo.add", "0.0", "", [4, 5]),
    "strided": (
        [1, 5],
        [(0, 0), (4, 0)],
        "stablehlo.add",
        "0.0",
        ", window_strides = array<i64: 1, 2>",
        [4, 3],
    ),
    "base-dilated": (
        [1, 5],
        [(0, 0), (4, 0)],
        "stablehlo.add",
        "0.0",
        ", base_dilations = array<i64: 1, 2>",
        [4, 9],
    ),
    "window-dilated": (
        [1, 3],
        [(0, 0), (4, 0)],
        "stablehlo.maximum",
        "0xFF800000",
        ", window_dilations = array<i64: 1, 2>",
        [4, 5],
    ),
    "add-init-one": ([1, 5], [(0, 0), (4, 0)], "stablehlo.add", "1.0", "", [4, 5]),
    "mul-init-two": ([1, 5], [(0, 0), (0, 4)], "stablehlo.multiply", "2.0", "", [4, 5]),
    "subtract": ([1, 5], [(0, 0), (4, 0)], "stablehlo.subtract", "0.0", "", [4, 5]),
}


@pytest.mark.parametrize("case", sorted(NOT_SCANS))
def test_other_windows_are_left_alone(case: str) -> None:
    window, padding, body, init, extra, result_shape = NOT_SCANS[case]
    text = window_program("f32", [4, 5], window, padding, body, init, extra, result_shape)
    assert "stablehlo.reduce_window" in after_pass(text)
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    check_against_interpreter(text, [x], rtol=1e-6)


def test_variadic_reduce_window_is_left_alone() -> None:
    text = """
func.func @main(%x: tensor<6xf32>, %y: tensor<6xi32>) -> (tensor<6xf32>, tensor<6xi32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %i = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "stablehlo.reduce_window"(%x, %y, %z, %i) <{padding = dense<[[5, 0]]> : tensor<1x2xi64>,
      window_dimensions = array<i64: 6>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
    %s = stablehlo.add %a, %c : tensor<f32>
    %t = stablehlo.add %b, %d : tensor<i32>
    stablehlo.return %s, %t : tensor<f32>, tensor<i32>
  }) : (tensor<6xf32>, tensor<6xi32>, tensor<f32>, tensor<i32>) -> (tensor<6xf32>, tensor<6xi32>)
  return %0#0, %0#1 : tensor<6xf32>, tensor<6xi32>
}
"""
    assert "stablehlo.reduce_window" in after_pass(text)


def executed_inserts(text: str) -> tuple[int, int]:
    """How many element writes the lowered scan runs, and how many linalg ops are left.

    Every ``tensor.insert`` runs once per iteration of the scf.for loops around
    it; their (static) trip counts multiply.
    """
    module = shlo.load_module(text)
    run_pipeline(module, ["shlo-lower-reduce-window-scan", "canonicalize"])
    total = 0

    def constant(value) -> int:
        return int(str(value.owner.attributes["value"]).split(":")[0])

    def visit(op, trips: int) -> None:
        nonlocal total
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if inner.name == "tensor.insert":
                        total += trips
                    count = trips
                    if inner.name == "scf.for":
                        lower, upper, step = (constant(v) for v in list(inner.operands)[:3])
                        count *= max(0, -(-(upper - lower) // step))
                    visit(inner, count)

    visit(module.operation, 1)
    return total, str(module).count("linalg.")


@pytest.mark.parametrize(
    "shape,axis", [((1000,), 0), ((3, 700), 1), ((700, 3), 0), ((2, 300, 3), 1)]
)
def test_scan_cost_is_linear(shape: tuple[int, ...], axis: int) -> None:
    # A window over the whole axis costs n per output in a pooling loop: n^2 in all.
    x = np.zeros(shape, np.float32)
    text = jax_text(lambda x: jnp.cumsum(x, axis=axis), x)
    writes, linalg_ops = executed_inserts(text)
    assert writes == x.size
    assert linalg_ops == 0
