"""Swapping the code-generation strategy: per-op-kind recipes change only their ops."""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re

import numpy as np
import pytest
import shlo
from shlo.backends.cpu import codegen_recipes
from shlo.backends.cpu.codegen_recipes import (
    DEFAULT_L2_CACHE,
    MATMUL_THREAD_TILE,
    PARTIAL_TILES,
    matmul_k_tile,
    matmul_thread_tile,
)
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, CpuPipeline
from shlo.dtypes import numpy_dtype
from shlo.frontend import FRONTEND
from shlo.pipeline import run_pipeline

MATMUL_RELU = """
func.func @main(%a: tensor<64x40xf32>, %b: tensor<40x48xf32>) -> tensor<64x48xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x40xf32>, tensor<40x48xf32>) -> tensor<64x48xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<64x48xf32>
  %1 = stablehlo.maximum %0, %zero : tensor<64x48xf32>
  return %1 : tensor<64x48xf32>
}
"""
TILED = dataclasses.replace(SCALAR_LOOPS, name="tiled-matmul", recipes=("tile-matmul-32",))
# These tests are about the code the recipes generate; by default f32 matmuls call the
# precompiled kernel instead (test_precompiled_matmuls.py).
GeneratedMatmuls = functools.partial(CpuPipeline, precompiled_kernels=False)


@pytest.fixture(autouse=True)
def avx512_register_tiles(monkeypatch):
    """The recipes' code is checked with AVX-512's register tiles, whatever the host's
    (an AVX2 host's are smaller: codegen_recipes.MATMUL_REGISTER_TILE)."""
    for name, tile in [
        ("MATMUL_REGISTER_TILE", (8, 32)),
        ("FEW_COLUMNS_REGISTER_TILE", (8, 16)),
        ("MATMUL_REGISTER_TILE_64", (8, 16)),
        ("FEW_COLUMNS_REGISTER_TILE_64", (8, 8)),
        ("CONV_REGISTER_TILE", (8, 32)),
    ]:
        monkeypatch.setattr(codegen_recipes, name, tile)


def tensor_codegen_ir(pipeline: CpuPipeline) -> str:
    module = shlo.load_module(MATMUL_RELU)
    run_pipeline(module, FRONTEND + pipeline.elements(through="tensor-codegen"))
    return str(module)


def test_recipe_tiles_only_contractions() -> None:
    default = tensor_codegen_ir(GeneratedMatmuls(strategy=SCALAR_LOOPS))
    tiled = tensor_codegen_ir(GeneratedMatmuls(strategy=TILED))
    assert "scf.for" not in default
    assert tiled.count("scf.for") == 2
    # 32x32 output tiles; the last column tile is partial (48 = 32 + 16).
    assert re.search(r"linalg.matmul ins\(.* : tensor<32x40xf32>, tensor<40x\?xf32>\)", tiled)
    # The elementwise maximum is not a contraction: it stays whole.
    assert "tensor<64x48xf32>) outs(" in tiled
    assert "transform." not in tiled


def test_swapped_strategy_gives_the_same_results() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 40)).astype(np.float32)
    b = rng.standard_normal((40, 48)).astype(np.float32)
    want = np.maximum(a @ b, 0)
    for pipeline in (GeneratedMatmuls(), GeneratedMatmuls(strategy=TILED)):
        got = shlo.compile(MATMUL_RELU, isolate=False, pipeline=pipeline)(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unknown_recipe_is_reported() -> None:
    bad = dataclasses.replace(SCALAR_LOOPS, recipes=("tile-everything",))
    with pytest.raises(shlo.ShloError, match="unknown codegen recipe 'tile-everything'"):
        shlo.compile(MATMUL_RELU, isolate=False, pipeline=GeneratedMatmuls(strategy=bad))


# The vectorize-matmul and vectorize-conv recipes with the passes their vector
# code needs after bufferization, on two threads (the tiles of scf.forall
# become OpenMP work). Everything else keeps the scalar loops.
VECTOR_RECIPES = dataclasses.replace(
    SCALAR_LOOPS,
    name="vector-recipes",
    recipes=("vectorize-matmul", "vectorize-conv"),
    loop_passes=(
        *SCALAR_LOOPS.loop_passes,
        "scf-forall-to-parallel",
        "convert-scf-to-openmp{num-threads=2}",
        # The sums across the lanes of the dot-rows recipe's accumulators.
        "func.func(lower-vector-multi-reduction{lowering-strategy=inner-reduction})",
        "convert-vector-to-scf{full-unroll=true}",
        "func.func(lower-vector-mask)",
        # Inlines the memref.alloca_scope of each OpenMP loop body before the
        # control-flow lowering splits it into blocks.
        "canonicalize",
    ),
)


def dot_source(
    lhs: tuple[int, ...], rhs: tuple[int, ...], dims: str, result: tuple[int, ...], element: str
) -> str:
    def tensor(shape: tuple[int, ...]) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{element}>"

    return f"""
func.func @main(%a: {tensor(lhs)}, %b: {tensor(rhs)}) -> {tensor(result)} {{
  %0 = stablehlo.dot_general %a, %b, {dims} : ({tensor(lhs)}, {tensor(rhs)}) -> {tensor(result)}
  return %0 : {tensor(result)}
}}
"""


def matmul_source(m: int, k: int, n: int, element: str = "f32") -> str:
    return dot_source((m, k), (k, n), "contracting_dims = [1] x [0]", (m, n), element)


def batch_matmul_source(b: int, m: int, k: int, n: int, element: str = "f32") -> str:
    dims = "batching_dims = [0] x [0], contracting_dims = [2] x [1]"
    return dot_source((b, m, k), (b, k, n), dims, (b, m, n), element)


def lowered_loops(source: str) -> str:
    module = shlo.load_module(source)
    run_pipeline(
        module,
        FRONTEND + GeneratedMatmuls(strategy=VECTOR_RECIPES).elements(through="loop-codegen"),
    )
    return str(module)


def run_f32(source: str, *shapes: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(sum(map(sum, shapes)))
    args = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    got = shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=VECTOR_RECIPES))(
        *args
    )
    return got, args


def assert_close_f32(got: np.ndarray, want: np.ndarray, depth: int) -> None:
    # f32 products summed in another order: the error grows with the depth.
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * depth)


# Full tiles, partial tiles in every dimension, single rows and columns (1xN,
# Nx1), a contraction of depth 1, and sizes below one register tile.
MATMUL_SHAPES = [
    (1, 1, 1),
    (1, 7, 1),
    (5, 3, 7),
    (1, 100, 33),
    (33, 1, 100),
    (100, 37, 1),
    (1, 64, 256),
    (256, 64, 1),
    (8, 16, 32),
    (67, 129, 300),
    (130, 260, 70),
    (128, 512, 512),
    # Fewer than 32 columns: 16-column register tiles and a partial one.
    (64, 40, 24),
    (100, 9, 31),
    (40, 20, 16),
]


@pytest.mark.parametrize(("m", "k", "n"), MATMUL_SHAPES)
def test_vectorized_matmul_matches_numpy(m: int, k: int, n: int) -> None:
    got, (a, b) = run_f32(matmul_source(m, k, n), (m, k), (k, n))
    assert_close_f32(got, (a.astype(np.float64) @ b).astype(np.float32), k)


# Up to 8 rows: the narrow tiles (1 x 128 up to 3 rows, 2 x 128 up to 8),
# the columns split evenly over the threads; partial register tiles in both
# dimensions, an even and an odd row count, and the 8x32 tiles from 9 rows.
NARROW_SHAPES = [
    (1, 1, 1),
    (1, 512, 1408),
    (2, 129, 257),
    (3, 64, 7),
    (4, 100, 300),
    (5, 70, 129),
    (8, 33, 640),
    (9, 40, 260),
]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(("m", "k", "n"), NARROW_SHAPES)
def test_narrow_matmuls_match_numpy(m: int, k: int, n: int, threads: int) -> None:
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    pipeline = GeneratedMatmuls(strategy=VECTOR_RECIPES, threads=threads)
    got = shlo.compile(matmul_source(m, k, n), isolate=False, pipeline=pipeline)(a, b)
    assert_close_f32(got, (a.astype(np.float64) @ b).astype(np.float32), k)


@pytest.mark.parametrize(
    ("m", "accumulators"),
    [
        (1, "vector<1x128xf32>"),
        (3, "vector<1x128xf32>"),
        (8, "vector<2x128xf32>"),
        (9, "vector<8x32xf32>"),
    ],
)
def test_narrow_matmuls_split_their_columns_over_the_threads(m: int, accumulators: str) -> None:
    module = shlo.load_module(matmul_source(m, 512, 1000))
    pipeline = GeneratedMatmuls(strategy=VECTOR_RECIPES, threads=3)
    run_pipeline(module, FRONTEND + pipeline.elements(through="tensor-codegen"))
    tiles = str(module)
    assert re.search(rf"scf.for .* iter_args\(.*\) -> \({accumulators}\)", tiles)
    # Three threads, each a third of the columns (rounded up), or 256-row,
    # 128-column tiles from 9 rows.
    assert re.search(
        r"scf\.forall .* in \((1, )?3\)" if m <= 8 else r"scf\.forall .* in \(1, 8\)", tiles
    )
    assert ("d0 * 334" in tiles) == (m <= 8)


def transposed_weight_source(m: int, k: int, n: int) -> str:
    """x[m, k] @ w[n, k].T, as jax exports a tied output layer."""
    return dot_source((m, k), (n, k), "contracting_dims = [1] x [1]", (m, n), "f32")


# Dot products of w's rows, up to 8 rows of x: full and partial tiles of 4
# rows of w, k in and out of steps of 16 lanes, k = 1.
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(
    ("m", "k", "n"),
    [(1, 1, 1), (1, 768, 1000), (2, 100, 257), (3, 7, 9), (8, 48, 130), (9, 40, 70)],
)
def test_narrow_matmuls_of_a_transposed_weight_match_numpy(
    m: int, k: int, n: int, threads: int
) -> None:
    rng = np.random.default_rng(m * k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    pipeline = GeneratedMatmuls(strategy=VECTOR_RECIPES, threads=threads)
    got = shlo.compile(transposed_weight_source(m, k, n), isolate=False, pipeline=pipeline)(x, w)
    assert_close_f32(got, (x.astype(np.float64) @ w.T).astype(np.float32), k)


def test_narrow_matmul_of_a_transposed_weight_reads_its_rows() -> None:
    module = shlo.load_module(transposed_weight_source(2, 768, 1000))
    pipeline = GeneratedMatmuls(strategy=VECTOR_RECIPES, threads=2)
    run_pipeline(module, FRONTEND + pipeline.elements(through="tensor-codegen"))
    tiles = str(module)
    # No transposed copy of w: 16 lanes of k of 4 of its rows at a time, summed across once.
    assert "768x1000" not in tiles and "tensor<1000x768xf32>" in tiles
    assert re.search(r"scf.for .* iter_args\(.*\) -> \(vector<1x4x16xf32>\)", tiles)
    assert "vector.reduction <add>" in tiles or "vector.multi_reduction <add>" in tiles
    assert re.search(r"scf\.forall .* in \((1, )?2\)", tiles)


@pytest.mark.parametrize(
    ("b", "m", "k", "n"), [(1, 1, 1, 1), (2, 5, 3, 7), (3, 67, 129, 45), (4, 64, 32, 256)]
)
def test_vectorized_batch_matmul_matches_numpy(b: int, m: int, k: int, n: int) -> None:
    got, (x, y) = run_f32(batch_matmul_source(b, m, k, n), (b, m, k), (b, k, n))
    assert_close_f32(got, (x.astype(np.float64) @ y).astype(np.float32), k)


def run_f64(source: str, *shapes: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(sum(map(sum, shapes)))
    args = [rng.standard_normal(shape) for shape in shapes]
    got = shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=VECTOR_RECIPES))(
        *args
    )
    return got, args


def assert_close_f64(got: np.ndarray, want: np.ndarray, depth: int) -> None:
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15 * depth)


# The f32 shapes, with f64's 16-lane tiles: fewer than 16 columns take the
# 8-column tiles.
F64_MATMUL_SHAPES = [*MATMUL_SHAPES, (40, 20, 8), (33, 17, 15), (9, 300, 47)]


@pytest.mark.parametrize(("m", "k", "n"), F64_MATMUL_SHAPES)
def test_vectorized_f64_matmul_matches_numpy(m: int, k: int, n: int) -> None:
    got, (a, b) = run_f64(matmul_source(m, k, n, "f64"), (m, k), (k, n))
    assert_close_f64(got, a @ b, k)


@pytest.mark.parametrize(("b", "m", "k", "n"), [(2, 5, 3, 7), (3, 67, 129, 45), (2, 16, 8, 12)])
def test_vectorized_f64_batch_matmul_matches_numpy(b: int, m: int, k: int, n: int) -> None:
    got, (x, y) = run_f64(batch_matmul_source(b, m, k, n, "f64"), (b, m, k), (b, k, n))
    assert_close_f64(got, x @ y, k)


@pytest.mark.parametrize(("n", "lanes"), [(256, 16), (12, 8)])
def test_vectorized_f64_matmul_is_register_tiled_fma_code(n: int, lanes: int) -> None:
    loops = lowered_loops(matmul_source(128, 64, n, "f64"))
    # 8 rows x 16 columns of f64 accumulators (8 for fewer than 16 columns):
    # 8 FMAs per k step, the accumulators in registers across the k loop.
    assert loops.count("vector.fma") == 8
    assert f"vector<{lanes}xf64>" in loops
    assert "vector.contract" not in loops
    assert re.search(rf"scf.for .* iter_args\(.*\) -> \(vector<8x{lanes}xf64>\)", loops)


def test_vectorized_matmul_matches_jax_with_a_transposed_operand_and_relu() -> None:
    jax = pytest.importorskip("jax")
    source = """
func.func @main(%a: tensor<96x80xf32>, %b: tensor<72x80xf32>) -> tensor<96x72xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [1] : (tensor<96x80xf32>, tensor<72x80xf32>) -> tensor<96x72xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<96x72xf32>
  %1 = stablehlo.maximum %0, %zero : tensor<96x72xf32>
  return %1 : tensor<96x72xf32>
}
"""
    got, (a, b) = run_f32(source, (96, 80), (72, 80))
    want = jax.jit(lambda a, b: jax.numpy.maximum(a @ b.T, 0))(a, b)
    assert_close_f32(got, np.asarray(want), 80)


@pytest.mark.parametrize("rows", [64, 600])
def test_matmuls_that_copy_their_rhs_into_blocks_match_jax(rows: int) -> None:
    """Rhs blocks copied in the matmul's loops: an rhs computed in the program and
    returned too, read by two matmuls, next to a transposed rhs; 600 rows span three
    row tiles, each copying every block again."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def program(x, w, v):
        h = jnp.tanh(w)
        a = x @ h
        b = (x * 2.0) @ h
        return a - b, h, a @ v.T

    rng = np.random.default_rng(rows)
    x, w, v = (
        rng.standard_normal(shape).astype(np.float32)
        for shape in ((rows, 70), (70, 300), (50, 300))
    )
    exported = jax.export.export(jax.jit(program))(x, w, v)
    pipeline = GeneratedMatmuls(threads=2)
    module = shlo.load_module(exported.mlir_module())
    stages = pipeline.elements(through="tensor-codegen")
    # Through the inline after the recipes (the frontend inlines too).
    run_pipeline(module, FRONTEND + stages[: stages.index("inline{default-pipeline=}") + 1])
    # Blocks of the rhs's 70 rows and a thread tile's columns, in the loops.
    assert re.search(r"tensor.empty\(%\w+\) : tensor<70x\?xf32>", str(module))
    got = shlo.compile(exported, isolate=False, pipeline=pipeline)(x, w, v)
    want = jax.jit(program)(x, w, v)
    for depth, g, e in zip((70, 1, 300), got, want, strict=True):
        assert_close_f32(np.asarray(g), np.asarray(e), depth)


def test_batch_matmuls_that_copy_their_rhs_into_blocks_match_jax() -> None:
    """Attention's softmax(q k^T) v: the batch matmul with v copies v's blocks."""
    jax = pytest.importorskip("jax")

    def attention(q, k, v):
        scores = jax.numpy.einsum("bqd,bkd->bqk", q, k)
        return jax.numpy.einsum("bqk,bkd->bqd", jax.nn.softmax(scores, axis=-1), v)

    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((4, 96, 40)).astype(np.float32) for _ in range(3))
    exported = jax.export.export(jax.jit(attention))(q, k, v)
    pipeline = GeneratedMatmuls(threads=2)
    module = shlo.load_module(exported.mlir_module())
    elements = FRONTEND + pipeline.elements(through="tensor-codegen")
    outline = next(i for i, e in enumerate(elements) if "shlo-outline-contractions" in e)
    run_pipeline(module, elements[: outline + 1])
    assert re.search(
        r"linalg.copy \{shlo.fused_block\} ins\(%\w+ : tensor<4x96x40xf32>\)", str(module)
    )
    got = shlo.compile(exported, isolate=False, pipeline=pipeline)(q, k, v)
    assert_close_f32(np.asarray(got), np.asarray(jax.jit(attention)(q, k, v)), 96)


def test_shape_matchers_take_the_element_width_of_their_shape() -> None:
    # A [64, 64] f32 product at 2 threads gets a matcher of its own sizes, for
    # 32-bit elements (the name of its sizes once made it a 64-bit matcher);
    # an f64 one gets the general 64-bit matchers only.
    from shlo.backends.cpu.codegen_recipes import transform_module_text

    f32 = transform_module_text(("vectorize-matmul",), 2, [("matmul", (64, 64), 32)])
    assert "@match_matmul_32_filled_64x64 ->" in f32
    assert "match_matmul_64" not in f32
    f64 = transform_module_text(("vectorize-matmul",), 2, [("matmul", (64, 64), 64)])
    assert "@match_matmul_64_filled_64 ->" in f64
    assert "_64x64" not in f64


# Every kind of op the recipes transform, at both widths, with few rows and
# few columns too: every matcher of the recipes.
EVERY_CONTRACTION = [
    (name, shape, bits)
    for bits in (32, 64)
    for name, shape in (
        ("matmul", (2, 16)),
        ("matmul", (6, 64)),
        ("matmul", (64, 64)),
        ("batch_matmul", (4, 64, 16)),
        ("batch_matmul", (4, 64, 64)),
        ("conv_1d_nwc_wcf", (1, 8, 16)),
        ("conv_2d_nhwc_hwcf", (1, 8, 8, 16)),
        ("depthwise_conv_2d_nhwc_hwc", (1, 8, 8, 16)),
        ("dot_rows", ()),
    )
]


def match_pairs(text: str) -> list[str]:
    return re.findall(r"@match_\w+ -> @vectorize_\w+", text)


def test_recipes_are_written_for_the_ops_of_the_module_only() -> None:
    # Each compile parses the sequences and tries every matcher on every op:
    # the ones no op of the module can meet are left out, and the rest keep
    # their order, so each op meets the same first match as with all of them.
    from shlo.backends.cpu.codegen_recipes import transform_module_text

    recipes = ("vectorize-matmul", "vectorize-conv")
    every = match_pairs(transform_module_text(recipes, 2, EVERY_CONTRACTION))
    assert len(every) == len(set(every)) >= 30

    none = transform_module_text(recipes, 2, [])
    assert none.count("transform.named_sequence") == 1  # the empty main sequence

    square = transform_module_text(recipes, 2, [("matmul", (128, 128), 32)])
    # Its own sizes' matchers (its thread tile is not the default), then the general ones.
    assert match_pairs(square)[-2:] == [
        "@match_matmul_32_filled -> @vectorize_matmul_filled",
        "@match_matmul_32 -> @vectorize_matmul",
    ]
    assert all(p.startswith("@match_matmul_32_") for p in match_pairs(square)[:-2])
    assert not re.search(r"few_columns|matvec|narrow|_64\b", " ".join(match_pairs(square)))
    assert "@vectorize_conv" not in square and "@vectorize_batch_matmul" not in square

    small = match_pairs(transform_module_text(recipes, 2, [("matmul", (2, 16), 32)]))
    assert [p for p in every if p in small] == small
    for kind in ("matvec", "narrow", "few_columns"):
        assert any(f"_32_{kind} ->" in p for p in small), kind

    convs = match_pairs(
        transform_module_text(recipes, 2, [("conv_2d_nhwc_hwcf", (1, 8, 8, 16), 64)])
    )
    assert convs and all("conv_2d_nhwc_hwcf_64" in p for p in convs)


def test_dot_rows_alone_keep_the_matmul_recipe() -> None:
    # x[4, 256] @ w[512, 256].T becomes a generic tagged shlo.dot_rows, no
    # linalg.matmul: the matmul recipe must still be written for it.
    from shlo.backends.cpu.codegen_recipes import transform_module_text

    text = transform_module_text(("vectorize-matmul",), 2, [("dot_rows", (), 0)])
    assert "@vectorize_dot_rows" in text and not match_pairs(text)
    source = """func.func @main(%x: tensor<4x256xf32>, %w: tensor<512x256xf32>) -> tensor<4x512xf32> {
      %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1]
        : (tensor<4x256xf32>, tensor<512x256xf32>) -> tensor<4x512xf32>
      return %0 : tensor<4x512xf32>
    }"""
    assert "vector.reduction" in lowered_loops(source)
    got, (x, w) = run_f32(source, (4, 256), (512, 256))
    assert_close_f32(got, x @ w.T, 256)


def test_recipes_verify_the_vectorizer_output_before_any_pattern() -> None:
    # Invalid IR from the vectorizer must fail the compile, not be folded by
    # the patterns after it into wrong code (see test_compositions.py).
    from shlo.backends.cpu.codegen_recipes import transform_module_text

    text = transform_module_text(("vectorize-matmul", "vectorize-conv"), 2, EVERY_CONTRACTION)
    actions = text.split("transform.named_sequence @vectorize_")[1:]
    vectorizing = [a for a in actions if "transform.structured.vectorize" in a]
    assert len(vectorizing) >= 10
    for action in vectorizing:
        last_vectorize = action.rindex("transform.structured.vectorize")
        first_pattern = action.index("transform.apply_patterns", last_vectorize)
        assert "transform.verify" in action[last_vectorize:first_pattern]


def test_vectorized_matmul_is_register_tiled_fma_code() -> None:
    loops = lowered_loops(matmul_source(128, 64, 256))
    # 8 rows x 32 columns of accumulators: 8 FMAs of 32 lanes per k step.
    assert loops.count("vector.fma") == 8
    assert "vector<32xf32>" in loops
    assert "omp.parallel" in loops
    assert "vector.contract" not in loops
    # The accumulators stay in registers across the k loop.
    assert re.search(r"scf.for .* iter_args\(.*\) -> \(vector<8x32xf32>\)", loops)


@pytest.mark.parametrize("element", ["i32", "i64", "f64", "f16", "bf16"])
def test_other_element_types_are_exact_and_vectorized(element: str) -> None:
    source = matmul_source(19, 23, 41, element)
    # Integers are vectorized (exact in any order), 64-bit types by recipes
    # of their own; f16 and bf16 products are widened to f32 products before
    # code generation.
    assert "vector<" in lowered_loops(source)
    dtype = numpy_dtype(element)
    rng = np.random.default_rng(1)
    # Small integers: every product and sum is exact in each of these types.
    a = rng.integers(-20, 20, (19, 23)).astype(dtype)
    b = rng.integers(-20, 20, (23, 41)).astype(dtype)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(dtype)
    for strategy in (SCALAR_LOOPS, VECTOR_RECIPES):
        got = shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=strategy))(
            a, b
        )
        np.testing.assert_array_equal(got, want)


def test_mixed_width_integer_matmul_is_widened_and_vectorized() -> None:
    # i8 x i8 into i32: shlo-widen-integer-dots converts the operands to i32,
    # and the i32 matmul recipe takes the product.
    source = """
func.func @main(%a: tensor<9x17xi8>, %b: tensor<17x33xi8>) -> tensor<9x33xi32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<9x17xi8>, tensor<17x33xi8>) -> tensor<9x33xi32>
  return %0 : tensor<9x33xi32>
}
"""
    assert "vector<" in lowered_loops(source)
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (9, 17)).astype(np.int8)
    b = rng.integers(-128, 128, (17, 33)).astype(np.int8)
    got = shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=VECTOR_RECIPES))(
        a, b
    )
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def conv_source(
    x: tuple[int, ...],
    w: tuple[int, ...],
    stride: int,
    pad: int,
    dilation: int,
    element: str,
    groups: int = 1,
) -> tuple[str, tuple[int, ...]]:
    n, h, wd, _ = x
    kh, kw, _, f = w
    out = (
        n,
        (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1,
        (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1,
        f,
    )

    def tensor(shape: tuple[int, ...]) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{element}>"

    source = f"""
func.func @main(%x: {tensor(x)}, %w: {tensor(w)}) -> {tensor(out)} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {{stride = [{stride}, {stride}], pad = [[{pad}, {pad}], [{pad}, {pad}]],
    rhs_dilate = [{dilation}, {dilation}]}}
    {{batch_group_count = 1 : i64, feature_group_count = {groups} : i64}}
    : ({tensor(x)}, {tensor(w)}) -> {tensor(out)}
  return %0 : {tensor(out)}
}}
"""
    return source, out


# (input NHWC, filter HWIO, stride, padding, dilation): full and partial
# register tiles (8 columns x 32 channels), strides, dilations, 1x1 filters,
# a single input channel and images smaller than one tile.
CONV_CASES = [
    ((1, 56, 56, 64), (3, 3, 64, 64), 1, 1, 1),
    ((1, 17, 13, 5), (3, 3, 5, 7), 1, 1, 1),
    ((2, 9, 11, 16), (3, 2, 16, 40), 2, 0, 1),
    ((1, 20, 24, 3), (5, 5, 3, 33), 1, 2, 2),
    ((1, 8, 16, 32), (1, 1, 32, 32), 1, 0, 1),
    ((3, 4, 5, 1), (2, 2, 1, 1), 1, 0, 1),
    # 24 output channels (8-channel tiles); 56 (32, and 24 retiled by 8).
    ((1, 14, 14, 24), (3, 3, 24, 24), 1, 1, 1),
    ((1, 10, 9, 8), (3, 3, 8, 56), 1, 1, 1),
]


def jax_conv(
    image: np.ndarray, kernel: np.ndarray, stride: int, pad: int, dilation: int, groups: int = 1
) -> np.ndarray:
    """The NHWC x HWIO convolution as jax computes it, at full precision."""
    import jax

    return jax.lax.conv_general_dilated(
        image,
        kernel,
        (stride, stride),
        [(pad, pad), (pad, pad)],
        rhs_dilation=(dilation, dilation),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=groups,
        precision=jax.lax.Precision.HIGHEST,
    )


@pytest.mark.parametrize(("x", "w", "stride", "pad", "dilation"), CONV_CASES)
def test_vectorized_conv_matches_jax(
    x: tuple[int, ...], w: tuple[int, ...], stride: int, pad: int, dilation: int
) -> None:
    pytest.importorskip("jax")
    source, _ = conv_source(x, w, stride, pad, dilation, "f32")
    got, (image, kernel) = run_f32(source, x, w)
    want = jax_conv(image, kernel, stride, pad, dilation)
    assert_close_f32(got, np.asarray(want), w[0] * w[1] * w[2])


def test_vectorized_conv_is_register_tiled_fma_code() -> None:
    source, _ = conv_source((1, 16, 16, 64), (3, 3, 64, 64), 1, 1, 1, "f32")
    loops = lowered_loops(source)
    assert loops.count("vector.fma") == 8
    assert "omp.parallel" in loops
    # Accumulators carried in registers through the kh, kw and ic loops.
    assert len(re.findall(r"scf.for .* -> \(vector<1x8x32xf32>\)", loops)) == 3


# (input NWC, filter WIO, stride, padding, dilation): Whisper's stem (3000
# frames of 80 and 384 channels, then stride 2), partial tiles, dilation.
CONV_1D_CASES = [
    ((1, 300, 80), (3, 80, 384), 1, 1, 1),
    ((1, 301, 384), (3, 384, 384), 2, 1, 1),
    ((2, 37, 5), (4, 5, 7), 1, 2, 2),
    ((3, 4, 1), (2, 1, 1), 1, 0, 1),
    # wav2vec2's positional convolution, one group of 24 channels; 56 output
    # channels (32 and a partial tile of 24), 100 columns (thread tiles of 64
    # and 36: a dynamic partial register tile).
    ((1, 227, 24), (128, 24, 24), 1, 0, 1),
    ((1, 102, 40), (3, 40, 56), 1, 0, 1),
]


def conv_1d_source(x, w, stride: int, pad: int, dilation: int) -> str:
    jax = pytest.importorskip("jax")

    def conv(image, kernel):
        return jax.lax.conv_general_dilated(
            image,
            kernel,
            (stride,),
            [(pad, pad)],
            rhs_dilation=(dilation,),
            dimension_numbers=("NWC", "WIO", "NWC"),
        )

    shapes = [jax.ShapeDtypeStruct(shape, np.float32) for shape in (x, w)]
    return jax.export.export(jax.jit(conv))(*shapes).mlir_module()


@pytest.mark.parametrize(("x", "w", "stride", "pad", "dilation"), CONV_1D_CASES)
def test_vectorized_conv_1d_matches_numpy(
    x: tuple[int, ...], w: tuple[int, ...], stride: int, pad: int, dilation: int
) -> None:
    got, (image, kernel) = run_f32(conv_1d_source(x, w, stride, pad, dilation), x, w)
    padded = np.pad(image.astype(np.float64), [(0, 0), (pad, pad), (0, 0)])
    taps = [
        padded[:, k * dilation : k * dilation + stride * (got.shape[1] - 1) + 1 : stride]
        for k in range(w[0])
    ]
    want = sum(tap @ kernel[k] for k, tap in enumerate(taps))
    assert_close_f32(got, want.astype(np.float32), w[0] * w[1])


# Fewer than 32 output channels (8-channel register tiles), and 32 with a
# partial tile that is not a power of two lanes (retiled by 8).
NARROW_CHANNEL_CONVS = [
    (conv_1d_source, (1, 100, 16), (3, 16, 56)),
    (conv_1d_source, (1, 99, 24), (9, 24, 24)),
    (lambda x, w: conv_source(x, w, 1, 1, 1, "f32")[0], (1, 28, 28, 24), (3, 3, 24, 24)),
    (lambda x, w: conv_source(x, w, 1, 1, 1, "f32")[0], (1, 10, 9, 8), (3, 3, 8, 56)),
    (lambda x, w: conv_source(x, w, 1, 1, 1, "f32")[0], (1, 7, 7, 5), (3, 3, 5, 12)),
]


@pytest.mark.parametrize(("make", "x", "w"), NARROW_CHANNEL_CONVS)
def test_partial_conv_tiles_are_vector_code_of_power_of_two_lanes(make, x, w) -> None:
    source = make(x, w, 1, 1, 1) if make is conv_1d_source else make(x, w)
    loops = lowered_loops(source)
    assert "vector.fma" in loops
    # No scalar multiply-adds of a partial tile, and no odd-sized accumulators.
    assert not re.search(r"arith.mulf .* : f32\n", loops)
    lanes = {int(n) for n in re.findall(r"vector<1x\d+x(\d+)xf32>", loops)}
    assert lanes <= {1, 2, 4, 8, 16, 32}, lanes


def test_vectorized_conv_1d_is_register_tiled_fma_code() -> None:
    loops = lowered_loops(conv_1d_source((1, 256, 16), (3, 16, 64), 1, 1, 1))
    assert loops.count("vector.fma") == 8
    assert "omp.parallel" in loops
    # Accumulators carried in registers through the kw and ic loops.
    assert len(re.findall(r"scf.for .* -> \(vector<1x8x32xf32>\)", loops)) == 2


@pytest.mark.parametrize("element", ["i32", "i64", "f64"])
def test_conv_of_other_element_types_is_exact(element: str) -> None:
    source, _ = conv_source((1, 10, 12, 8), (3, 3, 8, 40), 1, 1, 1, element)
    assert "vector<" in lowered_loops(source)
    dtype = numpy_dtype(element)
    rng = np.random.default_rng(3)
    x = rng.integers(-20, 20, (1, 10, 12, 8)).astype(dtype)
    w = rng.integers(-20, 20, (3, 3, 8, 40)).astype(dtype)
    results = [
        shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=strategy))(x, w)
        for strategy in (SCALAR_LOOPS, VECTOR_RECIPES)
    ]
    np.testing.assert_array_equal(results[0], results[1])
    assert np.abs(results[0]).max() > 0


# f64 convolutions: 8x16 register tiles (8x8 below 16 output channels), the
# scalar loops' results within f64 rounding. Depthwise ones too (groups).
@pytest.mark.parametrize(
    ("x", "w", "stride", "pad", "dilation", "groups"),
    [
        *[(*case, 1) for case in CONV_CASES[1:]],
        ((1, 12, 10, 16), (3, 3, 1, 16), 1, 1, 1, 16),
        ((1, 9, 9, 40), (3, 3, 1, 40), 2, 1, 1, 40),
    ],
)
def test_vectorized_f64_conv_matches_scalar_loops(
    x: tuple[int, ...],
    w: tuple[int, ...],
    stride: int,
    pad: int,
    dilation: int,
    groups: int,
) -> None:
    source, _ = conv_source(x, w, stride, pad, dilation, "f64", groups)
    loops = lowered_loops(source)
    assert "vector.fma" in loops and "xf64>" in loops
    rng = np.random.default_rng(sum(x) + sum(w))
    image, kernel = rng.standard_normal(x), rng.standard_normal(w)
    scalar, vector = (
        shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=strategy))(
            image, kernel
        )
        for strategy in (SCALAR_LOOPS, VECTOR_RECIPES)
    )
    np.testing.assert_allclose(vector, scalar, rtol=1e-12, atol=1e-13 * w[0] * w[1] * w[2])


# Depthwise (feature_group_count = channels): (input NHWC, filter height and
# width, stride, padding, dilation).
DEPTHWISE_CASES = [
    ((1, 56, 56, 64), (3, 3), 1, 1, 1),
    ((1, 17, 13, 40), (3, 3), 1, 1, 1),
    ((2, 9, 11, 16), (3, 2), 2, 0, 1),
    ((1, 12, 20, 35), (5, 5), 1, 2, 2),
    ((1, 3, 3, 1), (2, 2), 1, 0, 1),
    ((1, 14, 14, 24), (3, 3), 1, 1, 1),
    ((1, 9, 9, 56), (3, 3), 1, 1, 1),
]


@pytest.mark.parametrize(("x", "window", "stride", "pad", "dilation"), DEPTHWISE_CASES)
def test_vectorized_depthwise_conv_matches_jax(
    x: tuple[int, ...], window: tuple[int, int], stride: int, pad: int, dilation: int
) -> None:
    pytest.importorskip("jax")
    channels = x[3]
    w = (*window, 1, channels)
    source, _ = conv_source(x, w, stride, pad, dilation, "f32", groups=channels)
    got, (image, kernel) = run_f32(source, x, w)
    want = jax_conv(image, kernel, stride, pad, dilation, groups=channels)
    assert_close_f32(got, np.asarray(want), window[0] * window[1])


def test_vectorized_depthwise_conv_is_vector_code() -> None:
    source, _ = conv_source((1, 16, 16, 64), (3, 3, 1, 64), 1, 1, 1, "f32", groups=64)
    loops = lowered_loops(source)
    assert "vector.fma" in loops
    assert "omp.parallel" in loops
    # Accumulators carried in registers through the kh and kw loops.
    assert len(re.findall(r"scf.for .* -> \(vector<1x8x32xf32>\)", loops)) == 2


def test_vectorized_matmul_accumulates_into_an_init_that_is_not_a_fill() -> None:
    # Not from StableHLO (whose dots start from zero): the init is an argument,
    # so the recipe's variant without a fused fill runs.
    source = """
func.func @main(%a: tensor<67x129xf32>, %b: tensor<129x300xf32>, %c: tensor<67x300xf32>) -> tensor<67x300xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<67x129xf32>, tensor<129x300xf32>) outs(%c : tensor<67x300xf32>) -> tensor<67x300xf32>
  return %0 : tensor<67x300xf32>
}
"""
    assert "vector.fma" in lowered_loops(source)
    rng = np.random.default_rng(4)
    a, b, c = (
        rng.standard_normal(s).astype(np.float32) for s in ((67, 129), (129, 300), (67, 300))
    )
    c_before = c.copy()
    got = shlo.compile(source, isolate=False, pipeline=GeneratedMatmuls(strategy=VECTOR_RECIPES))(
        a, b, c
    )
    assert_close_f32(got, (c + a.astype(np.float64) @ b).astype(np.float32), 129)
    # The caller's init is read, never written.
    np.testing.assert_array_equal(c, c_before)


def test_recipes_in_the_vectorized_strategy_match_numpy() -> None:
    # With the vectorized strategy's own passes (elementwise ops, fills, threads).
    from shlo.backends.cpu.pipeline import VECTORIZED

    strategy = dataclasses.replace(VECTORIZED, recipes=("vectorize-matmul", "vectorize-conv"))
    rng = np.random.default_rng(5)
    for m, k, n in ((67, 129, 300), (256, 64, 384), (1, 40, 3)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        pipeline = GeneratedMatmuls(strategy=strategy, threads=2)
        got = shlo.compile(matmul_source(m, k, n), isolate=False, pipeline=pipeline)(a, b)
        assert_close_f32(got, (a.astype(np.float64) @ b).astype(np.float32), k)
    # Narrow ones, and dot products of a transposed weight's rows.
    for m, k, n in ((2, 100, 257), (8, 48, 130)):
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        pipeline = GeneratedMatmuls(strategy=strategy, threads=2)
        got = shlo.compile(matmul_source(m, k, n), isolate=False, pipeline=pipeline)(x, w.T.copy())
        assert_close_f32(got, (x.astype(np.float64) @ w.T).astype(np.float32), k)
        source = transposed_weight_source(m, k, n)
        got = shlo.compile(source, isolate=False, pipeline=pipeline)(x, w)
        assert_close_f32(got, (x.astype(np.float64) @ w.T).astype(np.float32), k)


def test_partial_tile_marks_are_erased() -> None:
    loops = lowered_loops(matmul_source(67, 129, 300))
    # Partial tiles exist (masked vectors) and were marked for the recipe only.
    assert (
        "vector.create_mask" in loops or "vector.constant_mask" in loops or "arith.select" in loops
    )
    assert PARTIAL_TILES not in loops


@pytest.mark.parametrize(("m", "k", "n"), [(0, 5, 7), (3, 0, 4), (4, 6, 0)])
def test_empty_matmuls_keep_scalar_loops(m: int, k: int, n: int) -> None:
    # Tiling an empty dimension crashes MLIR: the recipe must not match.
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    got = shlo.compile(matmul_source(m, k, n), pipeline=GeneratedMatmuls(strategy=VECTOR_RECIPES))(
        a, b
    )
    np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize(("x", "w"), [((0, 5, 5, 2), (3, 3, 2, 4)), ((1, 5, 5, 2), (3, 3, 2, 0))])
def test_empty_convs_keep_scalar_loops(x: tuple[int, ...], w: tuple[int, ...]) -> None:
    source, out = conv_source(x, w, 1, 1, 1, "f32")
    got = shlo.compile(source, pipeline=GeneratedMatmuls(strategy=VECTOR_RECIPES))(
        np.ones(x, np.float32), np.ones(w, np.float32)
    )
    np.testing.assert_array_equal(got, np.zeros(out, np.float32))


def test_matmuls_sharing_one_fill_both_fuse_it() -> None:
    # The first action fuses a copy of the fill into its threads' tiles; the
    # second matmul still reads the original fill.
    source = """
func.func @main(%a: tensor<40x50xf32>, %b: tensor<50x60xf32>, %c: tensor<50x60xf32>) -> (tensor<40x60xf32>, tensor<40x60xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x60xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<40x60xf32>) -> tensor<40x60xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<40x50xf32>, tensor<50x60xf32>) outs(%f : tensor<40x60xf32>) -> tensor<40x60xf32>
  %1 = linalg.matmul ins(%a, %c : tensor<40x50xf32>, tensor<50x60xf32>) outs(%f : tensor<40x60xf32>) -> tensor<40x60xf32>
  return %0, %1 : tensor<40x60xf32>, tensor<40x60xf32>
}
"""
    assert lowered_loops(source).count("vector.fma") == 16
    (x, y), (a, b, c) = run_f32(source, (40, 50), (50, 60), (50, 60))
    assert_close_f32(x, (a.astype(np.float64) @ b).astype(np.float32), 50)
    assert_close_f32(y, (a.astype(np.float64) @ c).astype(np.float32), 50)


@pytest.mark.parametrize(
    ("shape", "threads", "tile"),
    [
        # 256 + 1 rows would leave one thread all the 256-row tiles.
        ((257, 384), 2, (136, 128)),
        ((300, 512), 2, (152, 128)),
        # Three column tiles: two row tiles make six, three per thread.
        ((128, 384), 2, (64, 128)),
        # Already even: the default tile.
        ((1024, 1024), 2, (256, 128)),
        ((128, 768), 2, (256, 128)),
        # Six matrices split three and three whatever their rows.
        ((6, 257, 257), 2, (256, 128)),
        ((257, 384), 1, (256, 128)),
    ],
)
def test_matmul_thread_tiles_balance_the_threads(
    shape: tuple[int, ...], threads: int, tile: tuple[int, int]
) -> None:
    assert matmul_thread_tile(shape, threads) == tile


def test_matmul_of_257_rows_splits_its_rows_evenly() -> None:
    module = shlo.load_module(matmul_source(257, 64, 384))
    pipeline = GeneratedMatmuls(strategy=VECTOR_RECIPES, threads=2)
    run_pipeline(module, FRONTEND + pipeline.elements(through="tensor-codegen"))
    tiles = str(module)
    # Two row tiles of 136 and 121 rows, three column tiles of 128.
    assert re.search(r"scf\.forall .* in \(2, 3\)", tiles)
    assert "d0 * 136" in tiles and "d0 * 256" not in tiles
    assert re.search(r"scf.for .* iter_args\(.*\) -> \(vector<8x32xf32>\)", tiles)


@pytest.mark.parametrize(
    ("l2", "columns", "bits", "k_tile"),
    [
        # 2 MB, 16 ways: rows 16 KB apart repeat their sets every 8 rows.
        ((16, 128 * 1024), 4096, 32, 64),
        ((16, 128 * 1024), 2048, 32, 128),
        ((16, 128 * 1024), 8192, 32, 32),
        ((16, 128 * 1024), 2048, 64, 64),
        # Strides that are no large power of two keep the whole block.
        ((16, 128 * 1024), 1024, 32, 256),
        ((16, 128 * 1024), 3072, 32, 256),
        ((16, 128 * 1024), 768, 32, 256),
        ((16, 128 * 1024), 1, 32, 256),
        # 512 KB, 8 ways: 4 rows per period and 4 ways for the block.
        ((8, 64 * 1024), 4096, 32, 16),
        ((8, 64 * 1024), 1024, 32, 64),
        # Never below MIN_MATMUL_K_TILE.
        ((2, 4096), 4096, 32, 16),
    ],
)
def test_matmul_k_tile_keeps_a_block_in_half_of_each_l2_set(
    monkeypatch: pytest.MonkeyPatch, l2: tuple[int, int], columns: int, bits: int, k_tile: int
) -> None:
    monkeypatch.setattr(codegen_recipes, "l2_cache", lambda: l2)
    assert matmul_k_tile(columns, bits) == k_tile


def test_l2_cache_is_read_from_sys_or_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    caches = {
        "index0": {"level": "1", "type": "Data", "ways_of_associativity": "12"},
        "index2": {"level": "2", "type": "Unified", "ways_of_associativity": "8"},
        "index3": {"level": "3", "type": "Unified", "ways_of_associativity": "15"},
    }
    for index, fields in caches.items():
        (tmp_path / index).mkdir()
        for name, value in {
            **fields,
            "number_of_sets": "1024",
            "coherency_line_size": "64",
        }.items():
            (tmp_path / index / name).write_text(value + "\n")
    for directory, want in ((tmp_path, (8, 64 * 1024)), (tmp_path / "none", DEFAULT_L2_CACHE)):
        monkeypatch.setattr(codegen_recipes, "CPU_CACHES", str(directory))
        codegen_recipes.l2_cache.cache_clear()
        try:
            assert codegen_recipes.l2_cache() == want
        finally:
            codegen_recipes.l2_cache.cache_clear()


def test_matmul_of_4096_columns_walks_its_rhs_in_blocks_of_64_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """300 rows of the rhs: four blocks of 64 and a partial one of 44, results as numpy's."""
    monkeypatch.setattr(codegen_recipes, "l2_cache", lambda: DEFAULT_L2_CACHE)
    module = shlo.load_module(matmul_source(40, 300, 4096))
    run_pipeline(
        module,
        FRONTEND + GeneratedMatmuls(strategy=VECTOR_RECIPES).elements(through="tensor-codegen"),
    )
    tiles = str(module)
    assert re.search(r"scf\.for %\w+ = %c0 to %c300 step %c64 ", tiles)
    assert "step %c256" not in tiles
    got, (a, b) = run_f32(matmul_source(40, 300, 4096), (40, 300), (300, 4096))
    assert_close_f32(got, (a.astype(np.float64) @ b).astype(np.float32), 300)


# Shapes whose thread tiles are not the default, with partial register tiles
# in the last row tile, and batches.
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize(
    ("b", "m", "k", "n"), [(0, 257, 40, 384), (0, 300, 17, 200), (0, 130, 9, 390), (5, 70, 20, 100)]
)
def test_balanced_thread_tiles_match_numpy(b: int, m: int, k: int, n: int, threads: int) -> None:
    rng = np.random.default_rng(m + k + n)
    shape = (m, n) if b == 0 else (b, m, n)
    assert matmul_thread_tile(shape, threads) != MATMUL_THREAD_TILE
    x = rng.standard_normal((m, k) if b == 0 else (b, m, k)).astype(np.float32)
    y = rng.standard_normal((k, n) if b == 0 else (b, k, n)).astype(np.float32)
    source = matmul_source(m, k, n) if b == 0 else batch_matmul_source(b, m, k, n)
    pipeline = GeneratedMatmuls(strategy=VECTOR_RECIPES, threads=threads)
    got = shlo.compile(source, isolate=False, pipeline=pipeline)(x, y)
    assert_close_f32(got, (x.astype(np.float64) @ y).astype(np.float32), k)


@pytest.mark.parametrize(
    ("n", "accumulators"), [(24, "vector<8x16xf32>"), (32, "vector<8x32xf32>")]
)
def test_matmul_of_few_columns_has_16_column_tiles(n: int, accumulators: str) -> None:
    module = shlo.load_module(matmul_source(256, 64, n))
    run_pipeline(
        module,
        FRONTEND + GeneratedMatmuls(strategy=VECTOR_RECIPES).elements(through="tensor-codegen"),
    )
    tiles = str(module)
    assert re.search(rf"scf.for .* iter_args\(.*\) -> \({accumulators}\)", tiles)
    # Not 32 lanes masked to 24.
    assert ("vector<8x32xf32>" in tiles) == (n == 32)


def test_vectorized_batch_matmul_of_few_columns_matches_numpy() -> None:
    got, (x, y) = run_f32(batch_matmul_source(3, 33, 17, 24), (3, 33, 17), (3, 17, 24))
    assert_close_f32(got, (x.astype(np.float64) @ y).astype(np.float32), 17)
