"""The vectorizing strategy: tiles, vectors and threads, checked against jax.

Sizes straddle the vector tile (64 f32 lanes, 32 f64), so full tiles, peeled
remainders and ops smaller than one tile all run; threads split the
outermost parallel loop, including uneven splits. The generated code is
what is tested, so the pipelines here call no precompiled kernel (a plain
softmax or row sum would call one: test_precompiled_row_kernels.py).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, VECTORIZED, CodegenStrategy, CpuPipeline
from shlo.frontend import FRONTEND
from shlo.interpreter import interpret
from shlo.pipeline import run_pipeline


def compiled(function, *args, threads: int = 1):
    text = export.export(jax.jit(function))(*args).mlir_module()
    pipeline = CpuPipeline(strategy=VECTORIZED, threads=threads, precompiled_kernels=False)
    return shlo.compile(text, pipeline=pipeline, isolate=False)


def tensor_codegen_module(function, *args, threads: int = 1, through: str | None = None):
    """The module after the tensor-codegen stage, or after its pass ``through``."""
    text = export.export(jax.jit(function))(*args).mlir_module()
    module = shlo.load_module(text)
    pipeline = CpuPipeline(strategy=VECTORIZED, threads=threads, precompiled_kernels=False)
    elements = pipeline.elements("tensor-codegen")
    if through is not None:
        elements = elements[: next(i for i, e in enumerate(elements) if e.startswith(through)) + 1]
    run_pipeline(module, [*FRONTEND, "shlo-remove-dynamism", *elements])
    return module


def tensor_codegen_ir(function, *args, threads: int = 1) -> str:
    return str(tensor_codegen_module(function, *args, threads=threads))


def check(function, *args, threads: int = 1, rtol: float = 1e-6) -> None:
    got = compiled(function, *args, threads=threads)(*args)
    want = jax.jit(function)(*args)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        if np.issubdtype(w.dtype, np.floating):
            scale = max(float(np.max(np.abs(w))), 1.0)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)
        else:
            np.testing.assert_array_equal(g, w)


RNG = np.random.default_rng(0)


def floats(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def ints(*shape: int) -> np.ndarray:
    return RNG.integers(-1000, 1000, shape).astype(np.int32)


SIZES = [1, 7, 63, 64, 65, 200, 4097]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size", SIZES)
def test_elementwise_chain(size: int, threads: int) -> None:
    def chain(x, y):
        z = jnp.maximum(x * 1.5 + y, 0.25) - jnp.abs(y)
        return jnp.sqrt(z * z + 1.0), jnp.where(x > y, x, -y)

    check(chain, floats(size), floats(size), threads=threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(3, 65), (130, 97), (1, 300), (300, 1), (5, 7, 129)])
def test_reductions_along_every_axis(shape: tuple[int, ...], threads: int) -> None:
    x = floats(*shape)
    for axis in range(len(shape)):
        check(lambda x, axis=axis: jnp.sum(x, axis=axis), x, threads=threads, rtol=1e-5)
        check(lambda x, axis=axis: jnp.max(x, axis=axis), x, threads=threads)
    check(lambda x: jnp.sum(x), x, threads=threads, rtol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_integer_and_boolean_ops(threads: int) -> None:
    a, b = ints(513, 67), ints(513, 67)

    def int_ops(a, b):
        return a * 3 - b, jnp.sum(a, axis=1), jnp.max(a, axis=0), (a > b) & (b > 0), a // 7

    check(int_ops, a, b, threads=threads)


F64_PROGRAM = """
func.func @main(%x: tensor<129x33xf64>) -> (tensor<129x33xf64>, tensor<129xf64>, tensor<129x33xf32>) {
  %two = stablehlo.constant dense<2.0> : tensor<129x33xf64>
  %zero = stablehlo.constant dense<0.0> : tensor<f64>
  %0 = stablehlo.multiply %x, %two : tensor<129x33xf64>
  %1 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1]
      : (tensor<129x33xf64>, tensor<f64>) -> tensor<129xf64>
  %2 = stablehlo.convert %x : (tensor<129x33xf64>) -> tensor<129x33xf32>
  return %0, %1, %2 : tensor<129x33xf64>, tensor<129xf64>, tensor<129x33xf32>
}
"""


def test_f64_and_mixed_widths() -> None:
    x = floats(129, 33, dtype=np.float64)
    pipeline = CpuPipeline(strategy=VECTORIZED, threads=1)
    doubled, sums, narrowed = shlo.compile(F64_PROGRAM, pipeline=pipeline, isolate=False)(x)
    np.testing.assert_array_equal(doubled, x * 2)
    # Partial sums per lane reassociate: bounded by the sum of magnitudes.
    np.testing.assert_allclose(sums, x.sum(axis=1), rtol=0, atol=1e-14 * np.abs(x).sum())
    np.testing.assert_array_equal(narrowed, x.astype(np.float32))


@pytest.mark.parametrize("strategy", [SCALAR_LOOPS, VECTORIZED], ids=lambda s: s.name)
def test_bf16_rounds_after_every_op(strategy: CodegenStrategy) -> None:
    # XLA keeps bf16 intermediates in f32; StableHLO rounds after each op. A
    # dialect conversion once folded the emulation's extf(truncf(x)) to x.
    x = floats(1000).astype(jnp.bfloat16)
    text = export.export(jax.jit(lambda x: jnp.tanh(x * x + 1) * x))(x).mlir_module()
    pipeline = CpuPipeline(strategy=strategy, threads=1)
    got = shlo.compile(text, pipeline=pipeline, isolate=False)(np.asarray(x))
    np.testing.assert_array_equal(got, interpret(text, "main", [np.asarray(x)])[0])


def test_transposes_and_broadcasts() -> None:
    x, row = floats(130, 70), floats(70)

    def layout(x, row):
        return x.T * 2.0, x + row, (x.T + row[:, None]).T

    check(layout, x, row)


@pytest.mark.parametrize("threads", [1, 2])
def test_softmax_and_layernorm(threads: int) -> None:
    x = floats(33, 1000)

    def layernorm(x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5)

    check(lambda x: jax.nn.softmax(x, axis=-1), x, threads=threads, rtol=1e-5)
    check(layernorm, x, threads=threads, rtol=1e-5)


def test_tiles_are_vectorized_and_remainders_peeled() -> None:
    ir = tensor_codegen_ir(lambda x: x * 2.0 + 1.0, floats(1000))
    # 15 full tiles of 64 lanes, then one static tile of the 40 left.
    assert "vector<64xf32>" in ir and "vector<40xf32>" in ir
    assert "linalg.generic" not in ir


def test_row_sums_accumulate_whole_tiles_in_registers() -> None:
    ir = tensor_codegen_ir(lambda x: jnp.sum(x, axis=1), floats(128, 4096))
    # The loop over a row carries one vector of partial sums, reduced once.
    assert "iter_args" in ir and "-> (vector<64xf32>)" in ir
    assert ir.count("vector.multi_reduction") == 1


def test_threads_split_the_outer_loop() -> None:
    x = floats(512, 1024)
    assert "scf.forall" in tensor_codegen_ir(lambda x: x * 2.0, x, threads=2)
    assert "scf.forall" not in tensor_codegen_ir(lambda x: x * 2.0, x, threads=1)
    # Too little work for a second thread.
    assert "scf.forall" not in tensor_codegen_ir(lambda x: x * 2.0, floats(64, 64), threads=2)


def loop_codegen_ir(function, *args, precompiled_kernels: bool = True) -> str:
    text = export.export(jax.jit(function))(*args).mlir_module()
    module = shlo.load_module(text)
    pipeline = CpuPipeline(strategy=VECTORIZED, threads=2, precompiled_kernels=precompiled_kernels)
    run_pipeline(module, [*FRONTEND, "shlo-remove-dynamism", *pipeline.elements("loop-codegen")])
    return str(module)


def layers(x, w):
    for _ in range(4):
        x = jnp.tanh(x @ w) + jnp.sum(x, axis=1, keepdims=True) * 1e-3
    return x


def test_identical_layers_share_their_kernels() -> None:
    x, w = floats(64, 256), floats(256, 256) / 16
    ir = loop_codegen_ir(layers, x, w)
    # Each loop nest of the layer is defined once and called once per layer,
    # in order. The layer's kernels on tensors, left with those calls alone,
    # are inlined into their caller.
    kernels = re.findall(r"func.func private @(shlo_kernel_\d+)", ir)
    calls = re.findall(r"call @(shlo_kernel_\d+)", ir)
    assert len(kernels) >= 2 and calls == kernels * 4
    assert "shlo_tensor_kernel" not in ir
    check(layers, x, w, threads=2, rtol=1e-5)


def test_a_transpose_and_an_elementwise_op_of_the_same_shape_get_their_own_plans() -> None:
    x, y = floats(256, 128), floats(128, 256)
    for function in (lambda x, y: (x * 2.0, y.T), lambda x, y: (y.T, x * 2.0)):
        ir = tensor_codegen_ir(function, x, y)
        # Square tiles for the transpose, rows of 64 lanes for the product.
        assert "vector<16x16xf32>" in ir and "vector<64xf32>" in ir
        check(function, x, y)


def test_a_transpose_of_sizes_off_the_tile_is_vector_code_on_threads() -> None:
    # Attention's softmax divide, written transposed: ViT at 384x384 has 577
    # tokens. Full 16x16 tiles are transposed in registers, the partial ones
    # (37 = 2 x 16 + 5, 100 = 6 x 16 + 4) are scalar.
    x, s = floats(4, 100, 37), floats(4, 100)

    def divide_transposed(x, s):
        return jnp.swapaxes(x / s[:, :, None], 1, 2)

    ir = tensor_codegen_ir(divide_transposed, floats(6, 577, 577), floats(6, 577), threads=2)
    assert "vector<16x16xf32>" in ir and "scf.forall" in ir
    check(divide_transposed, x, s, threads=2)


def test_a_transpose_of_dimension_blocks_is_read_in_square_tiles() -> None:
    # Keys transposed for q @ k^T: heads and head dimension move as one
    # block. Each tile is 16 rows read whole and shuffled, not a permuted read
    # (16 scalar loads per vector, which LLVM merges into a gather).
    def keys_transposed(k):
        return jnp.transpose(k, (1, 2, 0))

    ir = tensor_codegen_ir(keys_transposed, floats(256, 4, 64), threads=2)
    assert "vector.shuffle" in ir and "permutation_map" not in ir
    check(keys_transposed, floats(256, 4, 64), threads=2)


@pytest.mark.parametrize(
    "shape, permutation",
    [
        ((128, 12, 64), (1, 2, 0)),  # GPT-2's keys
        ((4, 128, 2, 2, 64), (2, 3, 4, 0, 1)),  # two blocks swap (a training step's)
        ((3, 37, 5, 19), (0, 2, 3, 1)),  # sizes off the tile
        ((2, 17, 3, 33), (2, 3, 0, 1)),
        ((5, 7, 11, 13, 3), (4, 2, 3, 0, 1)),  # one block in three
        ((64, 1, 48, 2), (2, 3, 0, 1)),  # a unit dimension in a block
    ],
)
def test_transposes_of_dimension_blocks(shape: tuple[int, ...], permutation) -> None:
    x = floats(*shape)
    check(lambda x: jnp.transpose(x, permutation), x, threads=2)
    # Fused with elementwise work and a broadcast along one dimension, and read
    # from a slice of a larger array.
    bias = floats(shape[permutation[-1]])
    check(lambda x, b: jnp.tanh(jnp.transpose(x, permutation) + b), x, bias, threads=2)
    wide = floats(*shape[:-1], 2 * shape[-1] + 3)
    check(lambda w: jnp.transpose(w[..., 3 : 3 + shape[-1]], permutation) * 2.0, wide, threads=2)


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layernorm(x, scale):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * scale


def rmsnorm_residual(x, y):
    h = x + y
    return h * jax.lax.rsqrt((h * h).mean(-1, keepdims=True) + 1e-6), h


# Each group has more values than the 4 MiB shlo-fuse-rows leaves to the cache.
ROW_GROUPS = [
    (softmax, (floats(1024, 4096),)),
    # 16 heads of scores: two row dimensions, the second split into blocks.
    (softmax, (floats(16, 512, 512),)),
    # 2039 rows (a prime): blocks of one row.
    (softmax, (floats(2039, 2000),)),
    # A scale read whole by every block of rows.
    (layernorm, (floats(4096, 1024), floats(1024))),
    # h leaves the group too: computed before it, then read by the norm.
    (rmsnorm_residual, (floats(2048, 2048), floats(2048, 2048))),
]


@pytest.mark.parametrize(("function", "args"), ROW_GROUPS, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("threads", [1, 2])
def test_row_groups_run_one_block_of_rows_at_a_time(function, args, threads: int) -> None:
    ir = tensor_codegen_ir(function, *args, threads=threads)
    # One loop over blocks of rows (and with threads, maybe loops of other ops).
    assert "tensor.parallel_insert_slice" in ir
    assert ir.count("scf.forall (") == 1 or threads > 1
    check(function, *args, threads=threads, rtol=2e-6)


def loop_ir(function, *args, element: str, including: bool, threads: int = 1) -> str:
    """The module after the CPU pipeline's elements up to ``element`` (or through it)."""
    text = export.export(jax.jit(function))(*args).mlir_module()
    module = shlo.load_module(text)
    pipeline = CpuPipeline(strategy=VECTORIZED, threads=threads, precompiled_kernels=False)
    elements = pipeline.elements()
    upto = elements[: elements.index(element) + including]
    run_pipeline(module, [*FRONTEND, "shlo-remove-dynamism", *upto])
    return str(module)


def softmax_and_exponentials(x):
    e = jnp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), e


@pytest.mark.parametrize("threads", [1, 2])
def test_a_row_blocks_exponentials_live_in_its_output_block(threads: int) -> None:
    # softmax over [1024, 4096] in blocks of rows: exp(x - max) is written
    # into the output block, which the divide then updates in place.
    x = floats(1024, 4096)
    element = "shlo-temporaries-in-output-blocks"
    before = loop_ir(softmax, x, element=element, including=False, threads=threads)
    after = loop_ir(softmax, x, element=element, including=True, threads=threads)
    block = re.compile(r"memref\.alloc\(\)[^\n]*: memref<\d+x4096xf32>")
    assert block.search(before) and not block.search(after)
    check(softmax, x, threads=threads, rtol=2e-6)
    # When the exponentials are a result too, the block keeps its own buffer.
    check(softmax_and_exponentials, x, threads=threads, rtol=2e-6)


def test_a_row_blocks_partial_results_live_on_the_stack_of_each_step() -> None:
    # softmax's row maxima and sums for a block of rows: allocated and freed
    # in every step of the OpenMP loop, then on that step's stack. 1000
    # rows do not split evenly over the threads or the blocks.
    x = floats(1000, 4096)
    element = "shlo-small-buffers-on-stack"
    before = loop_ir(softmax, x, element=element, including=False, threads=2)
    after = loop_ir(softmax, x, element=element, including=True, threads=2)
    step_buffer = re.compile(r"memref\.alloc\(\)[^\n]*: memref<\d+xf32>")
    assert len(step_buffer.findall(before)) == 2 and not step_buffer.search(after)
    assert "memref.dealloc" not in after
    scope = after.index("memref.alloca_scope")
    assert after.count("memref.alloca()") == 2 and after.index("memref.alloca()") > scope
    check(softmax, x, threads=2, rtol=2e-6)
    check(softmax_and_exponentials, x, threads=2, rtol=2e-6)


def rows_with_special_values() -> np.ndarray:
    """Rows whose maximum or minimum is NaN, a signed zero, an infinity or ordinary."""
    x = floats(24, 1000)
    x[0, 7] = np.nan  # NaN early, late, and in a lane the tail handles
    x[1, 990] = np.nan
    x[2, 999] = -np.nan
    x[3] = -np.abs(x[3])  # the maximum is a zero of either sign
    x[3, 400] = -0.0
    x[3, 401] = 0.0
    x[4] = -np.abs(x[4])
    x[4, 5] = -0.0  # only -0: the maximum is -0
    x[5] = np.abs(x[5])
    x[5, 600], x[5, 3] = 0.0, -0.0  # the minimum: -0 comes first
    x[6, 123] = np.inf
    x[7, 321] = -np.inf
    x[8] = -np.inf  # a masked row
    x[9] = 0.0
    x[10, :500] = -0.0  # zeros of both signs everywhere
    x[10, 500:] = 0.0
    x[11, 64] = np.nan  # with an infinity too
    x[11, 65] = np.inf
    x[12, :64] = -0.0  # each lane meets -0 before +0, and the tail has neither
    x[12, 64:960] = 0.0
    x[12, 960:] = -1.0
    x[13] = -x[12]  # the same for the minimum
    return x


@pytest.mark.parametrize("threads", [1, 2])
def test_row_maxima_and_minima_keep_nan_and_signed_zeros(threads: int) -> None:
    # Vector accumulators per lane, a peeled tail, threads: the same bits as
    # the reference interpreter's, NaN and the sign of zero included.
    # (jax.jit's XLA is no oracle here: its max over these rows drops row
    # 0's NaN.)
    x = rows_with_special_values()
    for reduce in (lambda x: x.max(-1), lambda x: x.min(-1), softmax):
        text = export.export(jax.jit(reduce))(x).mlir_module()
        got = compiled(reduce, x, threads=threads)(x)
        (want,) = interpret(text, "main", [x])
        assert np.array_equal(np.isnan(got), np.isnan(want))
        if reduce is softmax:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
        else:
            numbers = ~np.isnan(want)  # a NaN's sign carries no meaning
            assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))
            np.testing.assert_array_equal(got, want)


def test_row_groups_that_fit_in_the_cache_stay_separate_loop_nests() -> None:
    # 2 MB of values stay in the L2 cache between the nests: no loop over blocks
    # of rows. Three times as many are fused.
    assert "scf.forall" not in tensor_codegen_ir(softmax, floats(256, 1024), threads=1)
    assert "scf.forall" in tensor_codegen_ir(softmax, floats(768, 1024), threads=1)


# One element of a strided column, broadcast into two readers: each reads it
# as a 0-d vector from a view with stride 2, which the LLVM conversion took
# only with a unit stride ("Failure while creating the ExecutionEngine";
# jax's random_gamma in StableHLO's conformance data).
STRIDED_SCALAR = """
func.func @main(%x: tensor<1x2xi32>, %y: tensor<3xi32>) -> (tensor<1x1xi32>, tensor<1x3xi32>) {
  %a = stablehlo.slice %x [0:1, 1:2] : (tensor<1x2xi32>) -> tensor<1x1xi32>
  %r = stablehlo.reshape %a : (tensor<1x1xi32>) -> tensor<1xi32>
  %b = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<1xi32>) -> tensor<1x1xi32>
  %k = stablehlo.constant dense<7> : tensor<1x1xi32>
  %c = stablehlo.xor %b, %k : tensor<1x1xi32>
  %by = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<3xi32>) -> tensor<1x3xi32>
  %bb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<1xi32>) -> tensor<1x3xi32>
  %d = stablehlo.add %by, %bb : tensor<1x3xi32>
  return %c, %d : tensor<1x1xi32>, tensor<1x3xi32>
}
"""


def test_a_scalar_read_from_a_strided_column_compiles_and_matches_interpreter() -> None:
    args = [np.array([[5, 9]], np.int32), np.array([1, 2, 3], np.int32)]
    got = shlo.compile(STRIDED_SCALAR, isolate=False)(*args)
    for actual, expected in zip(got, interpret(STRIDED_SCALAR, "main", args)):
        np.testing.assert_array_equal(actual, expected)


def bf16_specials(size: int) -> np.ndarray:
    """bf16 values with every special case (signed zeros, infinities, NaN, subnormals,
    the extremes), then random values of every magnitude, ``size`` in all."""
    finfo = jnp.finfo(jnp.bfloat16)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, float(finfo.max), -float(finfo.max)]
    specials += [float(finfo.smallest_subnormal), -float(finfo.smallest_subnormal)]
    specials += [float(finfo.smallest_normal), 1.0, -1.0, 0.5, 88.0, -88.0, 1e-30]
    scales = RNG.choice([1e-38, 1e-20, 1e-3, 1.0, 1e3, 1e20, 1e38], size)
    values = np.concatenate(
        [specials, RNG.standard_normal(size - len(specials)) * scales[len(specials) :]]
    )
    return values.astype(jnp.bfloat16)


def same_values(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN (of any sign), and the sign of every zero."""
    got, want = np.asarray(got).astype(np.float32), np.asarray(want).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def bf16_ops(x, y, wide):
    return (
        x + y, x * y, x / y, jnp.maximum(x, y), jnp.minimum(x, y), -x, jnp.abs(x),
        jnp.exp(x), jnp.log(x), jnp.tanh(x), jnp.sqrt(x), jnp.floor(x), jnp.round(x),
        jnp.sign(x), jnp.where(x < y, x, y), x.astype(jnp.float32), wide.astype(jnp.bfloat16),
        x.astype(jnp.int32), x.astype(jnp.float16), jnp.expm1(x), jnp.log1p(x),
        jax.lax.erf(x), jax.nn.sigmoid(x), jnp.sin(x), x**y, jnp.arctan2(x, y),
    )  # fmt: skip


@pytest.mark.parametrize("size", [1024, 1000])
def test_bf16_vectors_give_the_bits_of_scalar_code_and_the_interpreter(size: int) -> None:
    # Vectorized bf16 code (extf, f32 arithmetic, a rounding truncf per op)
    # must round like the scalar loops, special values included.
    x, y = bf16_specials(size), bf16_specials(size)[::-1].copy()
    # f32 values halfway between bf16 neighbours (ties to even), and beyond bf16's range.
    wide = (x.astype(np.float32).view(np.uint32) | np.uint32(0x8000)).view(np.float32)
    wide[:4] = [3.4e38, -3.4e38, 1e-45, 3.3961776e38]
    args = (x, y, wide)
    text = export.export(jax.jit(bf16_ops))(*args).mlir_module()
    vectorized = shlo.compile(text, pipeline=CpuPipeline(strategy=VECTORIZED), isolate=False)
    scalar = shlo.compile(text, pipeline=CpuPipeline(strategy=SCALAR_LOOPS), isolate=False)
    reference = interpret(text, "main", [np.asarray(a) for a in args])
    for got, want, oracle in zip(vectorized(*args), scalar(*args), reference):
        same_values(got, want)
        if got.dtype != np.int32:  # the interpreter's NaN -> int differs from XLA's
            same_values(got, oracle)


def test_bf16_kernels_are_vectorized() -> None:
    x = floats(1000).astype(jnp.bfloat16)
    assert "xbf16>" in tensor_codegen_ir(lambda x: x * 2.0 + 1.0, x)
    # A bf16 weight widened and transposed for a matmul (GPT-2 in bf16).
    ir = tensor_codegen_ir(lambda w: w.T.astype(jnp.float32), floats(64, 96).astype(jnp.bfloat16))
    assert "vector<16x16xbf16>" in ir and "vector<16x16xf32>" in ir


@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_matmul_and_row_sums_match_the_interpreter(threads: int) -> None:
    x, w = floats(33, 96).astype(jnp.bfloat16), floats(80, 96).astype(jnp.bfloat16)

    def layer(x, w):
        return x @ w.T, jnp.sum(x, axis=1), jnp.max(x, axis=0)

    text = export.export(jax.jit(layer))(x, w).mlir_module()
    pipeline = CpuPipeline(strategy=VECTORIZED, threads=threads)
    got = shlo.compile(text, pipeline=pipeline, isolate=False)(np.asarray(x), np.asarray(w))
    want = interpret(text, "main", [np.asarray(x), np.asarray(w)])
    for g, w_ in zip(got, want):
        g32, w32 = np.asarray(g, np.float32), np.asarray(w_, np.float32)
        # bf16 partial sums in another order: within a few bf16 roundings of the sum.
        np.testing.assert_allclose(g32, w32, rtol=0, atol=0.05 * max(np.abs(w32).max(), 1))


@pytest.mark.parametrize(
    ("function", "shape"),
    [
        (lambda s: jnp.einsum("bij->ji", s), (4, 33, 65)),
        (lambda v: jax.lax.associative_scan(jnp.add, v), (1000,)),
    ],
    ids=["transposed-row-sums", "associative-scan"],
)
def test_bf16_vectors_of_odd_lengths_are_not_made(function, shape) -> None:
    # Vectors of 65, 62, 15, 7 and 3 bf16 lanes aborted LLVM's x86 backend;
    # such ops stay scalar loops.
    x = floats(*shape).astype(jnp.bfloat16)
    text = export.export(jax.jit(function))(x).mlir_module()
    got = shlo.compile(text, pipeline=CpuPipeline(strategy=VECTORIZED))(np.asarray(x))
    want = interpret(text, "main", [np.asarray(x)])[0]
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), atol=0.1)


# Generics the vectorizer cannot take (a gather through tensor.extract in the
# body, a concatenation's scf.if) still split their outer loop over threads.
NOT_VECTORIZED = [
    (
        lambda x, i: jnp.take_along_axis(x, i, 1),
        (floats(800, 300), RNG.integers(0, 300, (800, 100)).astype(np.int32)),
    ),
    (lambda a, b: jnp.concatenate([a, b], -1) * 2.0, (floats(500, 100), floats(500, 57))),
]


@pytest.mark.parametrize(("function", "args"), NOT_VECTORIZED, ids=["take_along", "fused_concat"])
def test_generics_not_vectorized_run_on_threads(function, args) -> None:
    assert "scf.forall" in tensor_codegen_ir(function, *args, threads=2)
    assert "scf.forall" not in tensor_codegen_ir(function, *args, threads=1)
    check(function, *args, threads=2)


@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_kernels_prefetch_the_weight_they_read_next(transposed: bool) -> None:
    # x @ w (a Flax Dense) and x @ w.T (a PyTorch Linear, GPT-2's Conv1D),
    # generated: the kernel prefetches lines of the weight argument, and the
    # result is unchanged (the k blocks' last rows and columns clamp their
    # prefetches).
    x = floats(40, 300)
    w = floats(288, 300) if transposed else floats(300, 288)

    def linear(x, w):
        return x @ w.T if transposed else x @ w

    ir = loop_codegen_ir(linear, x, w, precompiled_kernels=False)
    prefetched = re.findall(r"memref.prefetch .*, read, locality<2>, data : (memref<\w+>)", ir)
    assert prefetched and set(prefetched) == {f"memref<{w.shape[0]}x{w.shape[1]}xf32>"}
    check(linear, x, w, threads=2, rtol=1e-5)


def test_a_mask_read_by_two_kernels_is_bytes_that_both_vectorize() -> None:
    # One mask broadcast into two kernels stays an array between them: i8,
    # which the readers load as vectors (an i1 array would keep them scalar
    # loops). A mask the function returns is still numpy's bools.
    def where_twice(a, x, y):
        m = a > 0
        return jnp.where(m[:, None], x, 0.0), jnp.where(m[:, None], 1.0, y * 2)

    args = (floats(300), floats(300, 70), floats(300, 70))
    ir = tensor_codegen_ir(where_twice, *args)
    assert re.search(r"vector<\d+xi8>", ir) and not re.search(r"tensor<\d+xi1>", ir)
    check(where_twice, *args, threads=2)
    check(lambda a, x, y: (*where_twice(a, x, y), a > 0), *args, threads=2)


def test_a_reduction_over_the_leading_loops_computes_on_whole_vectors() -> None:
    # ResNet's pooling of a residual block: the channels are the vector, the
    # spatial loops are reduced, so the vectorizer's shapes end in unit dims
    # (vector<64x1x1xf32>), which LLVM got as 64 one-lane ops per arith op:
    # 49 ms of LLVM's time for this one kernel, 12 once they are dropped.
    def pooled(x, scale, bias, residual):
        return jnp.mean(jnp.maximum(x * scale + bias + residual, 0.0), axis=(1, 2))

    args = floats(1, 28, 28, 128), floats(128), floats(128), floats(1, 28, 28, 128)
    ir = tensor_codegen_ir(pooled, *args, threads=2)
    assert "vector<64xf32>" in ir
    assert not re.search(r"vector<\d+(x1)+x[fi]\d+>", ir)
    check(pooled, *args, threads=2, rtol=1e-5)


def test_only_functions_with_trailing_unit_dims_get_those_patterns() -> None:
    # The patterns cost every function they run on (35 ms of the training
    # step's compile when they ran on all): the plan marks the functions of
    # ops vectorized along a loop that is not their last.
    def marked(function, *args) -> int:
        module = tensor_codegen_module(function, *args, through="shlo-plan-vector-codegen")
        functions = [op for op in module.body.operations if op.operation.name == "func.func"]
        return sum("shlo.drop_unit_dims" in f.operation.attributes for f in functions)

    assert marked(lambda x: jnp.sum(x, axis=(1, 2)), floats(1, 28, 28, 128)) == 1
    assert marked(lambda x: jnp.sum(x, axis=1), floats(128, 4096)) == 0
    assert marked(lambda x: x * 2.0, floats(64, 1000)) == 0
