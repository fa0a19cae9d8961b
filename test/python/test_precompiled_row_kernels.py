"""f32 reductions and softmax as calls of the kernels built once per machine
(shlo_reduce_f32, shlo_softmax_f32: kernels/rows_f32.c)."""

from __future__ import annotations

import ctypes
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import precompiled, runtime
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.backends.cpu.pipeline import CpuPipeline
from test_precompiled_matmuls import object_symbol_kinds

pytestmark = pytest.mark.skipif(not precompiled.enabled(), reason="no C compiler")

SUM, MAXIMUM, MINIMUM = 0, 1, 2
UNSCALED, MULTIPLIED, DIVIDED = 0, 1, 2
ULP = np.finfo(np.float32).eps


def _bits(value: float) -> int:
    return int(np.float32(value).view(np.uint32))


@pytest.fixture(scope="module")
def kernels() -> ctypes.CDLL:
    library = precompiled.library()
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    library.shlo_reduce_f32.argtypes = [pointer, pointer] + [size] * 6
    library.shlo_softmax_f32.argtypes = [pointer, pointer, pointer] + [size] * 16
    return library


def reduce(kernels, x, outer, reduced, inner, kind, init, threads=2) -> np.ndarray:
    x = np.ascontiguousarray(x, np.float32)
    y = np.full((outer, inner), 7.0, np.float32)
    kernels.shlo_reduce_f32(
        x.ctypes.data, y.ctypes.data, outer, reduced, inner, kind, _bits(init), threads
    )
    return y


def softmax(kernels, x, scaling=UNSCALED, factor=1.0, threads=2) -> np.ndarray:
    """The kernel on dense rows, without a bias."""
    x = np.ascontiguousarray(x, np.float32)
    y = np.full_like(x, 7.0)
    rows, columns = x.shape
    rows_3d, no_bias, dense = (1, 1, rows), (0, 0, 0), (0, 0, columns)
    kernels.shlo_softmax_f32(
        x.ctypes.data, x.ctypes.data, y.ctypes.data, rows, columns, scaling, _bits(factor),
        0, *rows_3d, *no_bias, *dense, 1, threads,
    )  # fmt: skip
    return y


def softmax_reference(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


REDUCTION_SHAPES = [
    # rows (inner 1): four vectors a step, then single vectors, then scalars past them
    (5, 1000, 1),
    (3, 17, 1),
    (2, 64, 1),
    (1, 16, 1),
    # columns: blocks of 128, vectors, scalars; passes of 8 rows and a partial one
    (1, 19, 300),
    (3, 8, 16),
    (2, 5, 129),
    (4, 33, 17),
]


@pytest.mark.parametrize(("outer", "reduced", "inner"), REDUCTION_SHAPES)
@pytest.mark.parametrize("kind", [SUM, MAXIMUM, MINIMUM])
def test_reductions_match_numpy(kernels, outer, reduced, inner, kind) -> None:
    x = np.random.default_rng(0).standard_normal((outer, reduced, inner)).astype(np.float32)
    init = 0.5
    got = reduce(kernels, x, outer, reduced, inner, kind, init)
    if kind == SUM:
        want = x.astype(np.float64).sum(axis=1) + init
        np.testing.assert_allclose(got, want, rtol=0, atol=4 * ULP * reduced**0.5 * 4)
    else:
        extreme = np.maximum if kind == MAXIMUM else np.minimum
        np.testing.assert_array_equal(got, extreme(x.max(1) if kind == MAXIMUM else x.min(1), init))


@pytest.mark.parametrize("inner", [1, 20])  # rows; columns
def test_maximum_and_minimum_propagate_nan_and_order_zeros(kernels, inner) -> None:
    # arith.maximumf and minimumf: NaN if any value is, -0.0 below +0.0.
    rows = np.array(
        [[0.0, -0.0] * 10, [-0.0] * 20, [0.0] * 20, [1.0] * 19 + [np.nan], [np.nan] + [2.0] * 19],
        np.float32,
    )
    x = rows if inner == 1 else np.repeat(rows[:, :, None], inner, axis=2)
    for kind, init in ((MAXIMUM, -np.inf), (MINIMUM, np.inf)):
        got = reduce(kernels, x, 5, 20, inner, kind, init)[:, 0]
        bits = got.view(np.uint32)
        positive_zero, negative_zero = 0, 0x80000000
        want_zeros = [positive_zero, negative_zero, positive_zero]
        if kind == MINIMUM:
            want_zeros = [negative_zero, negative_zero, positive_zero]
        assert list(bits[:3]) == want_zeros
        assert np.isnan(got[3:]).all()


def test_a_sum_of_negative_zeros_from_negative_zero_is_negative_zero(kernels) -> None:
    x = -np.zeros((2, 40), np.float32)
    assert np.signbit(reduce(kernels, x, 2, 40, 1, SUM, -0.0)).all()
    assert not np.signbit(reduce(kernels, x, 2, 40, 1, SUM, 0.0)).any()


@pytest.mark.parametrize(("outer", "reduced", "inner"), [(37, 3000, 1), (3, 70, 1000)])
@pytest.mark.parametrize("kind", [SUM, MAXIMUM])
def test_threads_change_no_bit_of_a_reduction(kernels, outer, reduced, inner, kind) -> None:
    x = np.random.default_rng(1).standard_normal((outer, reduced, inner)).astype(np.float32)
    one = reduce(kernels, x, outer, reduced, inner, kind, 0.0, threads=1)
    for threads in (2, 3):
        np.testing.assert_array_equal(
            reduce(kernels, x, outer, reduced, inner, kind, 0.0, threads=threads), one
        )


@pytest.mark.parametrize(("rows", "columns"), [(3, 5), (4, 16), (7, 100), (64, 512), (2, 77)])
@pytest.mark.parametrize(
    ("scaling", "factor"),
    [(UNSCALED, 1.0), (MULTIPLIED, 0.3), (DIVIDED, 8.0), (DIVIDED, 3.0), (DIVIDED, 0.25)],
)
def test_softmax_matches_numpy(kernels, rows, columns, scaling, factor) -> None:
    x = (np.random.default_rng(2).standard_normal((rows, columns)) * 10).astype(np.float32)
    z = {UNSCALED: x, MULTIPLIED: x * np.float32(factor), DIVIDED: x / np.float32(factor)}
    got = softmax(kernels, x, scaling, factor)
    # exp within 1 ULP, the sum's rounding, and the reciprocal within 1.5 ULP.
    np.testing.assert_allclose(got, softmax_reference(z[scaling]), rtol=8 * ULP, atol=ULP)


def test_softmax_of_extremes(kernels) -> None:
    x = np.array(
        [
            [1.0, np.inf, 2.0],  # inf - inf: NaN, so every result
            [-np.inf] * 3,  # -inf - -inf: NaN
            [np.nan, 1.0, 2.0],
            [1e30, -1e30, 0.0],  # exp's general path: -1e30 rounds to 0
            [-100.0, -100.0, -100.0],  # the same value everywhere: 1/3 each
        ],
        np.float32,
    )
    got = softmax(kernels, x)
    assert np.isnan(got[:3]).all()
    np.testing.assert_array_equal(got[3], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(got[4], [1 / 3] * 3, rtol=ULP)


def test_softmax_of_extremes_in_whole_vectors(kernels) -> None:
    # Rows of 40: the max's vector loop, not only its tail. A wrong max shows as
    # an overflow: exp(88 - -88) is inf.
    x = np.full((4, 40), -88.0, np.float32)
    x[0, 17] = np.inf  # inf - inf: NaN, so every result
    x[1, 17] = np.nan  # the max skips it; the sum is NaN
    x[2, :] = -np.inf
    x[3, 29] = 88.0
    got = softmax(kernels, x)
    assert np.isnan(got[:3]).all()
    expected = np.zeros(40, np.float32)
    expected[29] = 1.0
    np.testing.assert_allclose(got[3], expected, atol=1e-30)


def _product_overflows_where_quotient_does_not(divisor: np.float32) -> np.float32:
    """An x whose product with 1 / divisor rounds to inf and whose quotient does not."""
    x = np.float32(np.finfo(np.float32).max * np.float64(divisor))
    reciprocal = np.float32(1) / divisor
    for _ in range(64):
        with np.errstate(over="ignore"):
            if np.isinf(x * reciprocal) and np.isfinite(x / divisor):
                return x
        x = np.nextafter(x, np.float32(0))
    raise AssertionError("no such x")


def test_a_division_whose_product_would_overflow_divides(kernels) -> None:
    # Multiplied by 1 / 0.03, x would round to inf where x / 0.03 is the largest float:
    # such a vector divides, as shlo-reciprocal-division does. inf would make every
    # result NaN (inf - inf), the largest float a one-hot row.
    divisor = np.float32(0.03)
    x = np.full((1, 20), -1.0, np.float32)
    x[0, 3] = _product_overflows_where_quotient_does_not(divisor)
    want = np.zeros((1, 20), np.float32)
    want[0, 3] = 1.0
    np.testing.assert_array_equal(softmax(kernels, x, DIVIDED, divisor), want)
    # By zero: infinities and NaN, as the division gives.
    assert np.isnan(softmax(kernels, np.ones((2, 20), np.float32), DIVIDED, 0.0)).all()


@pytest.mark.parametrize("columns", [64, 96])  # four vectors; then two single ones
def test_exp_has_the_generated_codes_bits(columns) -> None:
    # Rows of -80 but for one 0 and one z: the max is 0, and the sum rounds to
    # 1 + exp(z) in any order (exp(-80) is 1.8e-35), so the kernel and the generated
    # code agree to the bit where their exps do. z moves along the rows, through every
    # vector; below -86.9 it takes exp's general path. (Rows whose generated vectors
    # have fewer than 32 lanes divide by the sum there: 1 ULP apart.)
    z = np.concatenate([np.linspace(-86.0, 0.0, 3000), np.linspace(-104.0, -86.0, 1000)])
    x = np.full((z.size, columns), -80.0, np.float32)
    rows = np.arange(z.size)
    x[rows, rows % (columns - 1) + 1] = z
    x[:, 0] = 0.0
    exported = export.export(jax.jit(lambda x: jax.nn.softmax(x, axis=-1)), platforms=["cpu"])(x)
    source = exported.mlir_module_serialized
    kernel = CpuPipeline(threads=2, precompiled_kernels=True)
    generated = CpuPipeline(threads=2, precompiled_kernels=False)
    assert "shlo_softmax_f32" in str(
        ir.Module.parse(lower_to_llvm(source, "main", None, kernel).llvm_bytecode, new_context())
    )
    got = shlo.compile(source, pipeline=kernel, isolate=False)(x)
    want = shlo.compile(source, pipeline=generated, isolate=False)(x)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_bias_broadcast_over_heads_and_a_transposed_result(kernels) -> None:
    # GPT-2's attention: logits [batch 2, heads 3, queries 5, keys 40] plus a mask's bias
    # [2, 1, 5, 40] (the same for every head), the result written transposed,
    # [2, 3, 40, 5], as the division that fusion gave the next matmul's layout.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 5, 40)).astype(np.float32)
    bias = np.where(rng.random((2, 1, 5, 40)) > 0.3, 0.0, -1e9).astype(np.float32)
    for transposed in (False, True):
        y = np.full((2, 3, 40, 5) if transposed else (2, 3, 5, 40), 7.0, np.float32)
        result_strides = (600, 200, 1) if transposed else (600, 200, 40)
        kernels.shlo_softmax_f32(
            x.ctypes.data, bias.ctypes.data, y.ctypes.data, 30, 40, MULTIPLIED, _bits(0.5),
            1, 2, 3, 5, 200, 0, 40, *result_strides, 5 if transposed else 1, 2,
        )  # fmt: skip
        want = softmax_reference((x * np.float32(0.5) + bias).reshape(30, 40)).reshape(x.shape)
        got = y.transpose(0, 1, 3, 2) if transposed else y
        np.testing.assert_allclose(got, want, rtol=8 * ULP, atol=ULP)


@pytest.mark.parametrize(("rows", "columns"), [(37, 4096), (1000, 60)])
def test_threads_change_no_bit_of_a_softmax(kernels, rows, columns) -> None:
    x = np.random.default_rng(3).standard_normal((rows, columns)).astype(np.float32)
    one = softmax(kernels, x, DIVIDED, 8.0, threads=1)
    for threads in (2, 3):
        np.testing.assert_array_equal(softmax(kernels, x, DIVIDED, 8.0, threads=threads), one)


def _called_kernels(fn, *args) -> set[str]:
    exported = export.export(jax.jit(fn), platforms=["cpu"])(*args)
    lowered = lower_to_llvm(exported.mlir_module_serialized, "main", None, CpuPipeline(threads=2))
    text = str(ir.Module.parse(lowered.llvm_bytecode, new_context()))
    return {name for name in precompiled.SYMBOLS if f"llvm.call @{name}" in text}


def _random(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


PROGRAMS = [
    # (name, function, input shapes, the kernels it calls)
    ("softmax", lambda x: jax.nn.softmax(x, axis=-1), [(4, 7, 33)], {"shlo_softmax_f32"}),
    (
        "scaled in the exp",
        lambda x: jax.nn.softmax(x * 0.3, axis=-1),
        [(16, 100)],
        {"shlo_softmax_f32"},
    ),
    (
        "attention's scaling",
        lambda x: jax.nn.softmax(x / 8.0, axis=-1),
        [(64, 70)],
        {"shlo_softmax_f32"},
    ),
    (
        "attention",
        lambda q, k, v: jax.nn.softmax(jnp.einsum("hqd,hkd->hqk", q, k) / 8.0, axis=-1) @ v,
        [(2, 40, 16), (2, 40, 16), (2, 40, 16)],
        {"shlo_softmax_f32", "shlo_matmul_f32"},
    ),
    (
        "an added mask bias",
        lambda x, b: jax.nn.softmax(x + b, axis=-1),
        [(2, 3, 16, 40), (2, 1, 16, 40)],
        {"shlo_softmax_f32"},
    ),
    # Flax's attention (GPT-2's): the result is written transposed for the second
    # einsum's layout.
    (
        "flax attention",
        lambda q, k, v, b: jnp.einsum(
            "...hqk,...khd->...qhd",
            jax.nn.softmax(jnp.einsum("...qhd,...khd->...hqk", q, k) + b, axis=-1),
            v,
        ),
        [(1, 24, 3, 16), (1, 24, 3, 16), (1, 24, 3, 16), (1, 1, 24, 24)],
        {"shlo_softmax_f32"},
    ),
    ("softmax over the first axis", lambda x: jax.nn.softmax(x, axis=0), [(33, 7)], set()),
    ("log_softmax", lambda x: jax.nn.log_softmax(x, axis=-1), [(8, 40)], set()),
    (
        "the max used again",
        lambda x: (jax.nn.softmax(x, axis=-1), jnp.max(x, axis=-1)),
        [(8, 40)],
        set(),
    ),
    (
        "masked softmax",
        lambda x, m: jax.nn.softmax(jnp.where(m > 0, x, -1e9), axis=-1),
        [(8, 40), (8, 40)],
        set(),
    ),
    ("sum of rows", lambda x: jnp.sum(x, axis=-1), [(64, 100)], {"shlo_reduce_f32"}),
    ("sum of columns", lambda x: jnp.sum(x, axis=0), [(100, 64)], {"shlo_reduce_f32"}),
    ("sum over the middle", lambda x: jnp.sum(x, axis=1), [(3, 50, 40)], {"shlo_reduce_f32"}),
    ("sum over two axes", lambda x: jnp.sum(x, axis=(1, 2)), [(4, 30, 20)], {"shlo_reduce_f32"}),
    ("max of columns", lambda x: jnp.max(x, axis=0), [(100, 64)], {"shlo_reduce_f32"}),
    ("min of rows", lambda x: jnp.min(x, axis=-1), [(64, 100)], {"shlo_reduce_f32"}),
    ("mean", lambda x: jnp.mean(x, axis=-1), [(64, 100)], {"shlo_reduce_f32"}),
    ("rows shorter than a vector", lambda x: jnp.sum(x, axis=-1), [(64, 8)], set()),
    ("input read again", lambda x: (jnp.sum(x, axis=-1), x * 2), [(64, 100)], set()),
    ("sum of squares", lambda x: jnp.sum(x * x, axis=-1), [(64, 100)], set()),
]


@pytest.mark.parametrize(
    ("fn", "shapes", "called"),
    [pytest.param(fn, shapes, called, id=name) for name, fn, shapes, called in PROGRAMS],
)
def test_programs_call_the_kernels_they_match_and_agree_with_jax(fn, shapes, called) -> None:
    args = [_random(*shape, seed=i) for i, shape in enumerate(shapes)]
    assert _called_kernels(fn, *args) & {"shlo_softmax_f32", "shlo_reduce_f32"} == (
        called - {"shlo_matmul_f32"}
    )
    exported = export.export(jax.jit(fn), platforms=["cpu"])(*args)
    got = shlo.compile(exported.mlir_module_serialized, threads=2, isolate=False)(*args)
    want = jax.jit(fn)(*args)
    got, want = jax.tree.leaves(got), jax.tree.leaves(want)
    for g, w in zip(got, want, strict=True):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=4e-6 * scale)


def test_llvm_code_run_by_the_jit_finds_the_kernels() -> None:
    # The conformance runner's path: LLVM-dialect bytecode compiled in this process.
    def fn(x):
        return jax.nn.softmax(x, axis=-1), jnp.sum(x * 2.0, axis=0)

    x = _random(30, 50)
    exported = export.export(jax.jit(fn), platforms=["cpu"])(x)
    lowered = lower_to_llvm(exported.mlir_module_serialized, "main", None, CpuPipeline())
    assert b"shlo_softmax_f32" in lowered.llvm_bytecode
    function = runtime.LoadedFunction(
        lowered.llvm_bytecode, lowered.input_types, lowered.result_types
    )
    got = function([x])
    np.testing.assert_allclose(got[0], softmax_reference(x), rtol=8 * ULP, atol=ULP)


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
def test_code_compiled_ahead_of_time_carries_the_kernels(tmp_path) -> None:
    def fn(x):
        return jax.nn.softmax(x, axis=-1), jnp.max(x.T, axis=-1)

    exported = export.export(jax.jit(fn), platforms=["cpu"])(_random(20, 30))
    kinds = object_symbol_kinds(tmp_path, exported.mlir_module())
    assert kinds["shlo_softmax_f32"] == "W"  # defined, weak
    assert kinds["shlo_reduce_f32"] == "W"
