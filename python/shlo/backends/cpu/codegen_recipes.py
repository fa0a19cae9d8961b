"""Per-op-kind code generation recipes, written in MLIR's transform dialect.

A recipe says how the linalg ops of one kind (contractions, convolutions,
reductions, elementwise) are transformed before bufferization: tiling,
packing, vectorization. ``CodegenStrategy.recipes`` names the recipes to apply;
``shlo-insert-codegen-recipes`` puts their transform sequence into the module,
upstream's ``transform-interpreter`` applies it, and
``shlo-erase-codegen-recipes`` removes it again. Swapping a recipe changes
only how that kind of op is generated.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shlo.disk_cache import host_has_avx512

# The linalg ops of each kind, as stablehlo-legalize-to-linalg emits them.
OP_KINDS: dict[str, tuple[str, ...]] = {
    "contraction": ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.dot"),
    "convolution": (
        "linalg.conv_1d_nwc_wcf",
        "linalg.conv_2d_nhwc_hwcf",
        "linalg.conv_3d_ndhwc_dhwcf",
        "linalg.depthwise_conv_2d_nhwc_hwc",
        "linalg.depthwise_conv_2d_nhwc_hwcm",
    ),
}


# The ops whose shapes and element widths the recipes are written for.
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", *OP_KINDS["convolution"])

# A (batch) matmul or convolution of the module: linalg op name without
# ``linalg.``, static result shape, element bit width. A generic tagged
# DOT_ROWS is ("dot_rows", (), 0).
ContractionShape = tuple[str, tuple[int, ...], int]


@dataclass(frozen=True)
class Recipe:
    """A transform applied to every op of ``kind``; ``%ops`` is the handle to them."""

    name: str
    kind: str
    transform: str
    # Named sequences (matchers and actions) that ``transform`` calls, placed
    # before the main sequence, for a number of threads and the module's
    # matmuls and convolutions.
    definitions: Callable[[int, Sequence[ContractionShape]], str] = lambda threads, shapes: ""
    # The ContractionShape names of the ops the recipe transforms, when only
    # those: without one in the module, it is left out.
    transforms: tuple[str, ...] | None = None

    def applies_to(self, shapes: Sequence[ContractionShape]) -> bool:
        return self.transforms is None or any(name in self.transforms for name, _, _ in shapes)

    def sequence_body(self, index: int) -> str:
        names = ", ".join(f'"{op}"' for op in OP_KINDS[self.kind])
        # Every handle gets the recipe's index: recipes share one sequence.
        body = re.sub(r"%(?!root\b)([A-Za-z_]\w*)", rf"%\g<1>{index}", self.transform)
        return (
            f"    %ops{index} = transform.structured.match ops{{[{names}]}} in %root"
            " : (!transform.any_op) -> !transform.any_op\n"
            f"    {body}\n"
        )


def _match_bits(
    matcher: str,
    op_name: str,
    loops: int,
    filled: bool = False,
    limits: Sequence[tuple[int, int]] = (),
    sizes: Sequence[int] = (),
    bits: int = 32,
) -> str:
    """A matcher for ``op_name`` whose two inputs and init have ``bits``-bit elements.

    Every one of its ``loops`` iteration dimensions must be non-empty (tiling
    an empty one crashes). ``filled``: only if a linalg.fill produces the
    init, which is matched too. ``limits``: (dimension, most) pairs, only if
    each such dimension has at most that many iterations. ``sizes``: only if
    the leading dimensions have exactly these many.

    f32 is what the recipes are tuned for; i32 passes too and stays exact
    (integer products and sums are the same in any order), and 64 bits
    (f64, i64) have matmul recipes of their own. Mixed and other widths
    (i8 x i8 -> i32, f16, complex) keep the scalar loops.
    """
    checks = "".join(
        f"    %{name} = transform.match.structured.{part} %s[{index}]"
        " : (!transform.any_op) -> !transform.any_value\n"
        f"    %{name}_bits = transform.match.structured.elemental_bitwidth %{name}"
        " : (!transform.any_value) -> !transform.param<i64>\n"
        f"    transform.match.param.cmpi eq %{name}_bits, %bits : !transform.param<i64>\n"
        for name, part, index in (("lhs", "input", 0), ("rhs", "input", 1), ("acc", "init", 0))
    ) + "".join(
        f"    %d{i} = transform.match.structured.dim %s[{i}]"
        " : (!transform.any_op) -> !transform.param<i64>\n"
        f"    transform.match.param.cmpi gt %d{i}, %c0 : !transform.param<i64>\n"
        for i in range(loops)
    )
    checks += "".join(
        f"    %size{i} = transform.param.constant {size} : i64 -> !transform.param<i64>\n"
        f"    transform.match.param.cmpi eq %d{i}, %size{i} : !transform.param<i64>\n"
        for i, size in enumerate(sizes)
    )
    checks += "".join(
        f"    %most{i} = transform.param.constant {most} : i64 -> !transform.param<i64>\n"
        f"    transform.match.param.cmpi le %d{dimension}, %most{i} : !transform.param<i64>\n"
        for i, (dimension, most) in enumerate(limits)
    )
    results = "!transform.any_op, !transform.any_op" if filled else "!transform.any_op"
    fill = (
        "  %fill = transform.get_producer_of_operand %op[2]"
        " : (!transform.any_op) -> !transform.any_op\n"
        '  transform.match.operation_name %fill ["linalg.fill"] : !transform.any_op\n'
        if filled
        else ""
    )
    return (
        f"transform.named_sequence @{matcher}"
        f"(%op: !transform.any_op {{transform.readonly}}) -> ({results}) {{\n"
        f'  transform.match.operation_name %op ["{op_name}"] : !transform.any_op\n'
        "  %m = transform.match.structured failures(propagate) %op"
        " : (!transform.any_op) -> !transform.any_op {\n"
        "  ^bb0(%s: !transform.any_op):\n"
        f"    %bits = transform.param.constant {bits} : i64 -> !transform.param<i64>\n"
        "    %c0 = transform.param.constant 0 : i64 -> !transform.param<i64>\n"
        f"{checks}"
        "    transform.match.structured.yield %s : !transform.any_op\n"
        "  }\n"
        f"{fill}"
        f"  transform.yield {'%op, %fill' if filled else '%op'} : {results}\n"
        "}\n"
    )


# Marks a transpose or copy that feeds a contraction: the recipe computes it
# one (k_tile x thread tile) block at a time, in cache, instead of all at once.
FUSED_BLOCK = "shlo.fused_block"

# Marks a matmul of few rows and a transposed f32 weight, rewritten as dot
# products of the weight's rows (see shlo-outline-contractions).
DOT_ROWS = "shlo.dot_rows"

# Marks the loops over partial tiles that peeling splits off.
PARTIAL_TILES = "shlo.partial_tiles"

# Marks a recipe's scf.forall over a contraction's thread tiles: after
# bufferization, shlo-sequential-small-foralls runs those with too little
# work on one thread.
CONTRACTION_TILES = "shlo.contraction_tiles"


def _peel(loop: str, tag: str | None = None) -> str:
    """Split full tiles from the last partial one; nothing to do (a silenced failure) if none.

    The partial one is annotated PARTIAL_TILES, and ``tag`` if given.
    """
    tags = [PARTIAL_TILES] + ([tag] if tag else [])
    return (
        f"  transform.sequence {loop} : !transform.any_op failures(suppress) {{\n"
        "  ^bb0(%loop: !transform.any_op):\n"
        '    %for = transform.cast %loop : !transform.any_op to !transform.op<"scf.for">\n'
        "    %full, %partial = transform.loop.peel %for"
        ' : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)\n'
        + "".join(
            f'    transform.annotate %partial "{name}" : !transform.any_op\n' for name in tags
        )
        + "  }\n"
    )


def sizes_text(values: Sequence[int]) -> str:
    """Tile sizes as a transform op writes them: [8, 32, 1]."""
    return "[" + ", ".join(map(str, values)) + "]"


def _lower_contractions_and_hoist(scope: str) -> str:
    """vector.contract -> outer products -> vector.fma; accumulators out of the reduction loops."""
    any_op = "!transform.any_op"
    # Twice: the first round folds all-true masks, which exposes their
    # transfers to the permutation patterns only in the second (else
    # broadcasts stay inside the contractions and lower badly).
    to_contract = (
        f"  transform.apply_patterns to {scope} {{\n"
        "    transform.apply_patterns.vector.reduction_to_contract\n"
        "    transform.apply_patterns.vector.transfer_permutation_patterns\n"
        "    transform.apply_patterns.canonicalization\n"
        f"  }} : {any_op}\n"
    )
    return (
        # The vectorizer's output is verified before any pattern runs: invalid
        # IR from it (an upstream bug) fails the compile instead of being
        # folded into wrong code.
        f"  transform.verify {scope} : {any_op}\n"
        # Masked (partial) tiles: their unit reductions fold to multiply-adds
        # first, which lower far better than masked contractions.
        f"  %partial = transform.structured.match attributes {{{PARTIAL_TILES}}} in {scope}"
        f" : ({any_op}) -> {any_op}\n"
        f"  transform.apply_patterns to %partial {{\n"
        "    transform.apply_patterns.canonicalization\n"
        f"  }} : {any_op}\n" + to_contract * 2 + f"  transform.apply_cse to {scope} : {any_op}\n"
        f"  transform.apply_patterns to {scope} {{\n"
        "    transform.apply_patterns.vector.lower_masked_transfers\n"
        '    transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"\n'
        "    transform.apply_patterns.vector.lower_outerproduct\n"
        f"  }} : {any_op}\n"
        # The accumulators: read before the reduction loops, carried in
        # registers, written after. Hoisting goes out one loop per round.
        f'  %fors = transform.structured.match ops{{["scf.for"]}} in {scope}'
        f" : ({any_op}) -> {any_op}\n"
        f"  transform.apply_licm to %fors : {any_op}\n"
        + f"  transform.loop.hoist_loop_invariant_subsets %fors : {any_op}\n"
        * 3
        # Drops the loop-carried values the hoisting left unused.
        + f"  transform.apply_patterns to {scope} {{\n"
        "    transform.apply_patterns.canonicalization\n"
        f"  }} : {any_op}\n"
    )


def _vectorize_contraction(
    action: str,
    op_name: str,
    batch: int,
    thread_tile: tuple[int, int] | int,
    register_tile: tuple[int, int],
    k_tile: int,
    filled: bool = False,
) -> str:
    """Tiles for threads, the cache and registers, then FMAs on register-held accumulators.

    ``thread_tile``: the (rows, columns) of the result in one tile of the
    threads' scf.forall, or a number of threads that split the columns
    evenly. ``batch`` leading batch dimensions (tiled by 1). An (mr x nr) accumulator
    tile lives in vector registers across the k loop: each k step broadcasts
    mr values of the lhs and FMAs them with nr values of the rhs row
    (vector.contract -> outer products -> vector.fma). Full tiles are peeled
    from partial ones, which are masked. ``filled``: the action also takes the
    linalg.fill of the init and fills each thread's tile right before using
    it (in cache) instead of the whole result first.
    """
    ones = (1,) * batch
    zeros = (0,) * batch
    any_op = "!transform.any_op"
    fill_argument = f", %fill: {any_op} {{transform.consumed}}" if filled else ""
    threads = (
        f"num_threads {sizes_text((*ones, 1, thread_tile))}"
        if isinstance(thread_tile, int)
        else f"tile_sizes {sizes_text(ones + thread_tile)}"
    )
    parts = [
        f"transform.named_sequence @{action}(%op: {any_op} {{transform.consumed}}"
        f"{fill_argument}) {{\n",
        # scf.forall over output tiles: the threads.
        f"  %tile, %forall = transform.structured.tile_using_forall %op"
        f" {threads} : ({any_op}) -> ({any_op}, {any_op})\n",
        f'  transform.annotate %forall "{CONTRACTION_TILES}" : {any_op}\n',
        f"  %fused, %container = transform.structured.fuse_into_containing_op %fill into %forall"
        f" : ({any_op}, {any_op}) -> ({any_op}, {any_op})\n"
        if filled
        else "",
        f'  %func = transform.get_parent_op %forall {{op_name = "func.func"}}'
        f" : ({any_op}) -> {any_op}\n"
        f"  %transposes = transform.structured.match attributes {{{FUSED_BLOCK}}} in %func"
        f" : ({any_op}) -> {any_op}\n"
        f"  %tforall, %tcontainer = transform.structured.fuse_into_containing_op %transposes"
        f" into %forall : ({any_op}, {any_op}) -> ({any_op}, {any_op})\n",
        # The k loop outside: a (k_tile x nr) slice of the rhs stays in L1.
        f"  %ktile, %kloop = transform.structured.tile_using_for %tile"
        f" tile_sizes {sizes_text((*zeros, 0, 0, k_tile))} : ({any_op}) -> ({any_op}, {any_op})\n",
        f"  %tk, %tkcontainer = transform.structured.fuse_into_containing_op %tforall"
        f" into %kloop : ({any_op}, {any_op}) -> ({any_op}, {any_op})\n"
        # The fused transposes write slices of the whole transpose's empty
        # tensor: each block gets a buffer of its own size (k_tile x tile).
        f"  transform.apply_patterns to %forall {{\n"
        "    transform.apply_patterns.tensor.fold_tensor_empty\n"
        f"  }} : {any_op}\n",
        f"  %reg, %loops:{batch + 3} = transform.structured.tile_using_for %ktile"
        f" tile_sizes {sizes_text(ones + register_tile + (1,))}"
        f" : ({any_op}) -> ({', '.join([any_op] * (batch + 4))})\n",
        # Inner loop first: peeling the outer one copies the inner one's halves.
        _peel(f"%loops#{batch + 1}"),
        _peel(f"%loops#{batch}"),
        f'  %tiles = transform.structured.match ops{{["{op_name}"]}} in %forall'
        f" : ({any_op}) -> {any_op}\n",
        f"  transform.foreach %tiles : {any_op} {{\n",
        f"  ^bb0(%t: {any_op}):\n",
        f"    transform.structured.vectorize %t vector_sizes"
        f" {sizes_text(ones + register_tile + (1,))} : {any_op}\n",
        "  }\n",
        _lower_contractions_and_hoist("%forall"),
        "  transform.yield\n",
        "}\n",
    ]
    return "".join(parts)


# The (rows, columns) of a matmul's result that one thread computes at a
# time, at most, and of the accumulators held in registers: 16 of AVX-512's
# 32 zmm registers, or 12 of AVX2's 16 ymm ones, which leaves room for the
# rhs's row and the lhs's broadcast value. With 8 x 32 on AVX2 (32 ymm
# registers of accumulators) the 1024^3 matmul spilled and took 2.3x as long
# (Zen 3; MLP 1.3-1.7x).
AVX512 = host_has_avx512()
MATMUL_THREAD_TILE = (256, 128)
MATMUL_REGISTER_TILE = (8, 32) if AVX512 else (6, 16)
# Rows of the rhs (k steps) per block of a thread tile, at most: a block of
# 256 x 128 floats, 128 KB, stays in L2 while the thread's register tiles
# walk it (see matmul_k_tile).
MATMUL_K_TILE = 256
MIN_MATMUL_K_TILE = 16
# L2's ways and the bytes after which its set indices repeat, where the host
# does not say (/sys): 2 MB, 16 ways, as on the Xeons the bench runs on.
DEFAULT_L2_CACHE = (16, 128 * 1024)


CPU_CACHES = "/sys/devices/system/cpu/cpu0/cache"


@functools.cache
def l2_cache() -> tuple[int, int]:
    """The host's L2 cache: (ways, bytes spanned by its sets), from Linux's /sys."""

    def field(index: str, name: str) -> str:
        with open(os.path.join(CPU_CACHES, index, name), encoding="ascii") as file:
            return file.read().strip()

    try:
        for index in sorted(os.listdir(CPU_CACHES)):
            if field(index, "level") == "2" and field(index, "type") in ("Unified", "Data"):
                ways, sets, line = (
                    int(field(index, name))
                    for name in ("ways_of_associativity", "number_of_sets", "coherency_line_size")
                )
                span = sets * line
                if ways > 0 and span > 0:
                    return ways, span
    except (OSError, ValueError):
        pass
    return DEFAULT_L2_CACHE


def matmul_k_tile(columns: int, bits: int) -> int:
    """The rows of the rhs per block, for a matmul of ``columns`` columns of ``bits``-bit elements.

    A block's rows lie ``columns * bits / 8`` bytes apart in the rhs. Where
    that stride is a multiple of a large power of two, they fall into few of
    L2's sets: with 2 MB pages (numpy asks the kernel for them above 4 MB),
    rows 16 KB apart (4096 f32 columns) all map to 1 in 8 of the sets, so a
    block of 256 rows holds 32 lines per set of 16 ways and is evicted
    before the next register tile reads it again. The block keeps at most
    half the ways of each set (the other half for the lhs and the result):
    [256, 1024] x [1024, 4096] ran in 18.0 ms with blocks of 256 rows, 15.3
    with 128 and 10.5 with 64; [256, 1024] x [1024, 2048] in 6.7 and 4.3 ms
    (256 and 128 rows), 1024 columns the same either way.
    """
    ways, span = l2_cache()
    stride = columns * bits // 8
    if stride == 0:
        return MATMUL_K_TILE
    # Rows before the set indices repeat.
    period = span // math.gcd(stride, span)
    k_tile = MATMUL_K_TILE
    while k_tile > MIN_MATMUL_K_TILE and k_tile > period * ways // 2:
        k_tile //= 2
    return k_tile


# Matrix products of few rows (a decoding step's x @ w): the most rows and
# the register tile of each kind. Their time is reading the weights from
# memory. The threads split the columns in equal parts, and each walks its
# part of k_tile rows at a time, which streams better than the 8x32 tiles'
# 128-byte pieces of 256 rows. Ten [2, 512] x [512, 1408] x [1408, 512]
# pairs of a tanh MLP (58 MB of weights, above the L3 cache) took 0.55-0.6
# of XLA's time, against 0.73 with the 8x32 tiles; with 4 and 8 rows, the
# (2 x 128) tile took 0.67 and 0.68 (the 1 x 128 one 0.73 and 0.78).
NARROW_MATMULS = (("matvec", 3, (1, 128)), ("narrow", 8, (2, 128)))
NARROW_K_TILE = 64
NARROW_MAX_ROWS = max(rows for _, rows, _ in NARROW_MATMULS)


def _ceil_div(value: int, divisor: int) -> int:
    return -(-value // divisor)


def _round_up(value: int, multiple: int) -> int:
    return _ceil_div(value, multiple) * multiple


def _busiest_thread_work(shape: Sequence[int], tile_rows: int, threads: int) -> int:
    """The most work (result elements, partial register tiles counted whole) that one thread
    gets when the tiles of ``shape`` (batch..., rows, columns) are ``tile_rows`` x
    MATMUL_THREAD_TILE's columns.

    OpenMP's static schedule gives the threads runs of the scf.forall's tiles
    in row-major order (batch, row tile, column tile), the first ones one
    tile more where the count does not divide evenly.
    """
    *batch, rows, columns = shape
    tile_columns = MATMUL_THREAD_TILE[1]
    register_rows, register_columns = MATMUL_REGISTER_TILE
    row_tiles, column_tiles = _ceil_div(rows, tile_rows), _ceil_div(columns, tile_columns)
    last_rows = _round_up(rows - (row_tiles - 1) * tile_rows, register_rows)
    tile_row_sizes = (tile_rows, last_rows)
    all_rows = (row_tiles - 1) * tile_rows + last_rows
    all_columns = (column_tiles - 1) * tile_columns + _round_up(
        columns - (column_tiles - 1) * tile_columns, register_columns
    )

    def before(tile: int) -> int:  # the work of the tiles before this one
        row, column = divmod(tile, column_tiles)
        matrix, row = divmod(row, row_tiles)
        this_rows = tile_row_sizes[row == row_tiles - 1]
        return (matrix * all_rows + row * tile_rows) * all_columns + this_rows * (
            column * tile_columns
        )

    tiles = math.prod(batch) * row_tiles * column_tiles
    share, extra = divmod(tiles, threads)
    starts = [k * share + min(k, extra) for k in range(threads + 1)]
    return max(before(end) - before(start) for start, end in itertools.pairwise(starts))


def matmul_thread_tile(result_shape: Sequence[int], threads: int) -> tuple[int, int]:
    """The (rows, columns) of one thread tile of a (batch) matmul's result of ``result_shape``.

    MATMUL_THREAD_TILE's columns, and the most rows (a multiple of the
    register tile's, up to MATMUL_THREAD_TILE's) that keep the busiest
    thread's work within 5% of the least it can be. 257 rows in tiles of 256
    gave one thread all the tiles of 256 rows and the other those of 1:
    DINOv2's matmuls (257 tokens) ran at one thread's speed.
    """
    rows = result_shape[-2]
    if 0 in result_shape:  # no tiles: the matchers leave it alone
        return MATMUL_THREAD_TILE
    register_rows = MATMUL_REGISTER_TILE[0]
    candidates = range(
        register_rows, min(_round_up(rows, register_rows), MATMUL_THREAD_TILE[0]) + 1, register_rows
    )
    work = {size: _busiest_thread_work(result_shape, size, threads) for size in candidates}
    least = min(work.values())
    tile_rows = max(size for size, busiest in work.items() if busiest <= least * 1.05)
    # One tile of all the rows is one tile of MATMUL_THREAD_TILE's rows.
    return (tile_rows if tile_rows < rows else MATMUL_THREAD_TILE[0]), MATMUL_THREAD_TILE[1]


# Fewer than 32 columns: 16-column register tiles, and a partial one of the
# rest. A tile of 24 columns masked from 32 lanes multiplied every step
# through broadcasts, transposes and a select: [1024, 1024] x [1024, 24] took
# 1.46x XLA's time.
FEW_COLUMNS_REGISTER_TILE = (8, 16) if AVX512 else (6, 8)
# f64 (and i64) matmuls: the same registers of accumulators hold half the
# lanes. [1024, 1024] x [1024, 1024] f64 took 231 ms as scalar loops (9
# GFLOP/s; XLA 31 ms, numpy 22).
MATMUL_REGISTER_TILE_64 = (8, 16) if AVX512 else (6, 8)
FEW_COLUMNS_REGISTER_TILE_64 = (8, 8) if AVX512 else (6, 4)


def matmul_register_tile(columns: int) -> tuple[int, int]:
    """The (rows, columns) of a matmul's accumulators held in registers, for its columns."""
    return FEW_COLUMNS_REGISTER_TILE if columns < MATMUL_REGISTER_TILE[1] else MATMUL_REGISTER_TILE


def _has_op(
    shapes: Sequence[ContractionShape],
    name: str,
    bits: int,
    most_rows: int | None = None,
    most_columns: int | None = None,
) -> bool:
    """Whether ``shapes`` has a ``name`` op of ``bits``-bit elements, with at most
    ``most_rows`` rows (its result's first dimension) and ``most_columns`` columns
    (its last) when given."""
    return any(
        op == name
        and op_bits == bits
        and (most_rows is None or shape[0] <= most_rows)
        and (most_columns is None or shape[-1] <= most_columns)
        for op, shape, op_bits in shapes
    )


def _shape_suffix(shape: Sequence[int]) -> str:
    return "_" + "x".join(map(str, shape))


# The linalg ops (without ``linalg.``) that @vectorize_matmuls' matchers take.
_MATMULS = ("matmul", "batch_matmul")


def _matmul_definitions(threads: int, shapes: Sequence[ContractionShape]) -> str:
    """f32 matrix products on AVX-512: 8x32 accumulator tiles (16 zmm registers), or narrow ones.

    ``@vectorize_matmuls`` applies the first action whose matcher takes an
    op: narrow ones first; then those for each 32-bit one of ``shapes``
    whose thread tile is not MATMUL_THREAD_TILE or whose k tile is not
    MATMUL_K_TILE, which match its sizes exactly; then those of fewer than
    32 columns; then the general ones.
    The 64-bit ones have 8x16 tiles. Only the matchers that may take one of
    ``shapes`` are written (in the same order, so each op meets the same first
    match): every sequence is parsed and tried on each op on each compile.
    """
    narrow_kinds = [
        (kind, rows, register_tile)
        for kind, rows, register_tile in NARROW_MATMULS
        if _has_op(shapes, "matmul", 32, most_rows=rows)
    ]
    narrow = _vectorize_dot_rows(threads) + "".join(
        _match_bits(
            f"match_matmul_32_{kind}{suffix}", "linalg.matmul", 3, filled, limits=[(0, rows)]
        )
        + _vectorize_contraction(
            f"vectorize_matmul_{kind}{suffix}",
            "linalg.matmul",
            0,
            threads,
            register_tile,
            NARROW_K_TILE,
            filled,
        )
        for kind, rows, register_tile in narrow_kinds
        for suffix, filled in (("_filled", True), ("", False))
    )
    pairs = [
        f"@match_matmul_32_{kind}{suffix} -> @vectorize_matmul_{kind}{suffix}"
        for kind, _, _ in narrow_kinds
        for suffix in ("_filled", "")
    ]
    # (op name, element bits, exact sizes, thread tile, register tile, k tile, limits,
    # name suffix)
    variants = []
    for name, shape, bits in dict.fromkeys(shapes):
        if name not in _MATMULS or bits != 32 or (name == "matmul" and shape[0] <= NARROW_MAX_ROWS):
            continue
        tile, k_tile = matmul_thread_tile(shape, threads), matmul_k_tile(shape[-1], bits)
        if (tile, k_tile) != (MATMUL_THREAD_TILE, MATMUL_K_TILE):
            register_tile = matmul_register_tile(shape[-1])
            suffix = _shape_suffix(shape)
            variants.append((name, 32, shape, tile, register_tile, k_tile, [], suffix))
    widths = [
        (32, MATMUL_REGISTER_TILE, FEW_COLUMNS_REGISTER_TILE, ""),
        (64, MATMUL_REGISTER_TILE_64, FEW_COLUMNS_REGISTER_TILE_64, "_64"),
    ]
    for batch, name in enumerate(_MATMULS):
        for bits, register_tile, few_columns_tile, width in widths:
            most_columns = register_tile[1] - 1
            if _has_op(shapes, name, bits, most_columns=most_columns):
                variants.append(
                    (
                        name,
                        bits,
                        (),
                        MATMUL_THREAD_TILE,
                        few_columns_tile,
                        MATMUL_K_TILE,
                        [(batch + 1, most_columns)],
                        f"{width}_few_columns",
                    )
                )
            if _has_op(shapes, name, bits):
                variants.append(
                    (name, bits, (), MATMUL_THREAD_TILE, register_tile, MATMUL_K_TILE, [], width)
                )
    definitions = []
    for name, bits, shape, thread_tile, register_tile, k_tile, limits, variant in variants:
        batch = 1 if name == "batch_matmul" else 0
        for suffix, filled in (("_filled", True), ("", False)):
            matcher, action = (
                f"match_{name}_{bits}{suffix}{variant}",
                f"vectorize_{name}{suffix}{variant}",
            )
            definitions.append(
                _match_bits(
                    matcher,
                    f"linalg.{name}",
                    batch + 3,
                    filled,
                    limits=limits,
                    sizes=shape,
                    bits=bits,
                )
                + _vectorize_contraction(
                    action, f"linalg.{name}", batch, thread_tile, register_tile, k_tile, filled
                )
            )
            pairs.append(f"@{matcher} -> @{action}")
    return narrow + "".join(definitions) + _apply_first_match("vectorize_matmuls", pairs)


# Rows of the weight per register tile of a DOT_ROWS op, and lanes of k: an
# accumulator vector of k lanes per row, summed across once after the k loop.
DOT_ROWS_TILE = (4, 16)


def _vectorize_dot_rows(threads: int) -> str:
    """``x[m, k] w[n, k] -> [m, n]``: the threads split w's rows, each streams its own part.

    One register tile is ``DOT_ROWS_TILE`` = (nr rows of w, kr lanes of k),
    for one row of x at a time (the nr rows stay in L1 for the next row of
    x): nr accumulators of kr lanes take x[m, k:k+kr] * w[n, k:k+kr] along k
    (tile_reduction_using_for), then each is summed across its lanes. Partial
    tiles (in n or k) are masked.
    """
    any_op = "!transform.any_op"
    rows, lanes = DOT_ROWS_TILE
    return (
        f"transform.named_sequence @vectorize_dot_rows(%op: {any_op} {{transform.consumed}}) {{\n"
        f"  %tile, %forall = transform.structured.tile_using_forall %op"
        f" num_threads [1, {threads}] : ({any_op}) -> ({any_op}, {any_op})\n"
        f'  transform.annotate %forall "{CONTRACTION_TILES}" : {any_op}\n'
        # Loops n (outer), m: the rows of w are read from memory once.
        f"  %reg, %loops:2 = transform.structured.tile_using_for %tile tile_sizes [1, {rows}, 0]"
        f" interchange = [1, 0, 2] : ({any_op}) -> ({any_op}, {any_op}, {any_op})\n"
        # Full tiles of nr rows apart from the last: static sizes, no masks
        # (and no allocation per tile).
        + _peel("%loops#0")
        + "  transform.apply_patterns to %forall {\n"
        "    transform.apply_patterns.canonicalization\n"
        f"  }} : {any_op}\n"
        f'  %tiles = transform.structured.match ops{{["linalg.generic"]}} in %forall'
        f" : ({any_op}) -> {any_op}\n"
        f"  transform.foreach %tiles : {any_op} {{\n"
        f"  ^bb0(%t: {any_op}):\n"
        f"    %fill, %split, %combine, %kloop = transform.structured.tile_reduction_using_for %t"
        f" by tile_sizes = [0, 0, {lanes}]"
        f" : ({any_op}) -> ({any_op}, {any_op}, {any_op}, {any_op})\n"
        + "".join(
            f"    transform.structured.vectorize %{handle} vector_sizes [1, {rows}, {lanes}]"
            f" : {any_op}\n"
            for handle in ("split", "combine", "fill")
        )
        + "  }\n"
        + _lower_contractions_and_hoist("%forall")
        + "  transform.yield\n"
        "}\n"
    )


# Mark the partial tiles of a convolution's output channels and columns
# (see _retile_partial_tiles).
PARTIAL_CHANNELS = "shlo.partial_channels"
PARTIAL_COLUMNS = "shlo.partial_columns"
# Output channels per register tile of a partial channel tile.
PARTIAL_CHANNEL_TILE = 8


def _retile_partial_tiles(op_name: str, tag: str, sizes: Sequence[int]) -> str:
    """Tile the ``op_name`` ops in ``%forall``'s loops tagged ``tag`` again, by ``sizes``
    (one non-zero), and peel: the vectorizer takes only static shapes, and LLVM
    lowers vectors of a power of two lanes well.

    A channel tile of 24 lanes (56 or 88 channels, which leave 24 after tiles
    of 32) carried its accumulators through per-lane shuffles
    (11 GFLOP/s): it becomes three of 8. A partial tile of a dynamic number of
    columns (the last of a 1-D convolution's thread tiles) stayed a scalar
    loop: it becomes a loop of one-column tiles.
    """
    any_op = "!transform.any_op"
    loops = "%" + tag.replace(".", "_")
    # Before canonicalization, which folds the loops of one iteration with their tags.
    return (
        f"  {loops} = transform.structured.match attributes {{{tag}}} in %forall"
        f" : ({any_op}) -> {any_op}\n"
        f"  transform.foreach {loops} : {any_op} {{\n"
        f"  ^bb0(%rest_loop: {any_op}):\n"
        f'    %rest_ops = transform.structured.match ops{{["{op_name}"]}} in %rest_loop'
        f" : ({any_op}) -> {any_op}\n"
        f"    transform.foreach %rest_ops : {any_op} {{\n"
        f"    ^bb0(%rest: {any_op}):\n"
        f"      %retiled, %retile_loop = transform.structured.tile_using_for %rest"
        f" tile_sizes {sizes_text(sizes)} : ({any_op}) -> ({any_op}, {any_op})\n"
        + _peel("%retile_loop")
        + "    }\n"
        "  }\n"
    )


def _vectorize_conv_tiles(op_name: str, decompose: bool) -> str:
    """The end of a convolution action: each full tile in ``%forall`` (static sizes after
    canonicalization) vectorized (a 2-D one ``decompose``d to 1-D first); FMAs, hoisting."""
    any_op = "!transform.any_op"
    conv = "%conv1d" if decompose else "%conv"
    return (
        "  transform.apply_patterns to %forall {\n"
        "    transform.apply_patterns.canonicalization\n"
        # min(tile, size - iv) of a retiled partial tile: the tile, from the loop's bounds.
        "    transform.apply_patterns.scf.for_loop_canonicalization\n"
        f"  }} : {any_op}\n"
        f'  %tiles = transform.structured.match ops{{["{op_name}"]}} in %forall'
        f" : ({any_op}) -> {any_op}\n"
        f"  transform.foreach %tiles : {any_op} {{\n"
        f"  ^bb0(%t: {any_op}):\n"
        f"    transform.sequence %t : {any_op} failures(suppress) {{\n"
        f"    ^bb0(%conv: {any_op}):\n"
        + (
            f"      %conv1d = transform.structured.decompose %conv : ({any_op}) -> {any_op}\n"
            if decompose
            else ""
        )
        + f"      transform.structured.vectorize {conv} : {any_op}\n"
        "    }\n"
        "  }\n" + _lower_contractions_and_hoist("%forall") + "  transform.yield\n"
        "}\n"
    )


def _channel_tiles(loops: int) -> str:
    """%tile's input channels (its last loop) in steps of CONV_CHANNEL_TILE: %ktile, %kloop.

    Outside the register tiles, so that a (filter taps x channel tile x oc)
    slice of the filter stays in L1 across the thread tile's columns.
    """
    any_op = "!transform.any_op"
    sizes = [0] * (loops - 1) + [CONV_CHANNEL_TILE]
    return (
        f"  %ktile, %kloop = transform.structured.tile_using_for %tile"
        f" tile_sizes {sizes_text(sizes)} : ({any_op}) -> ({any_op}, {any_op})\n"
    )


def _vectorize_conv_2d(
    action: str, op_name: str, reductions: int, thread_rows: int, register_tile: tuple[int, int]
) -> str:
    """2-D NHWC convolutions with an (ow x oc) accumulator tile in registers.

    Tiles of one output row, ``register_tile`` = (ow, oc), and one step of
    each of the ``reductions`` loops (filter rows and columns, and input
    channels unless depthwise) are 1-D convolutions (decompose). They
    vectorize to one outer product (ow input values, broadcast, times oc
    filter values) or, depthwise, to ow FMAs of oc lanes. Full tiles are
    peeled from partial ones; partial tiles (dynamic shapes, which the
    convolution vectorizer does not mask) stay scalar loops.
    """
    any_op = "!transform.any_op"
    ow, oc = register_tile
    loops = 4 + reductions
    steps = ", ".join(["1"] * reductions)
    # The input channels (not a depthwise one's) outside the register tiles, as 1-D.
    has_channels = reductions == 3
    return (
        f"transform.named_sequence @{action}(%op: {any_op} {{transform.consumed}}) {{\n"
        f"  %tile, %forall = transform.structured.tile_using_forall %op"
        f" tile_sizes [1, {thread_rows}] : ({any_op}) -> ({any_op}, {any_op})\n"
        f'  transform.annotate %forall "{CONTRACTION_TILES}" : {any_op}\n'
        + (_channel_tiles(loops) if has_channels else "")
        # n, oh, ow, oc, then the reductions kh, kw (and ic).
        + f"  %reg, %loops:{loops} = transform.structured.tile_using_for"
        f" {'%ktile' if has_channels else '%tile'}"
        f" tile_sizes [1, 1, {ow}, {oc}, {steps}]"
        f" : ({any_op}) -> ({', '.join([any_op] * (loops + 1))})\n"
        + _peel("%loops#3", PARTIAL_CHANNELS)
        + _peel("%loops#2")
        + _retile_partial_tiles(
            op_name, PARTIAL_CHANNELS, [0, 0, 0, PARTIAL_CHANNEL_TILE] + [0] * reductions
        )
        # Static tile sizes in the peeled loops (canonicalized): the vectorizer needs them.
        + _vectorize_conv_tiles(op_name, decompose=True)
    )


def _vectorize_conv_1d(
    action: str, op_name: str, thread_columns: int, register_tile: tuple[int, int]
) -> str:
    """1-D NWC convolutions, as _vectorize_conv_2d does each row of a 2-D one.

    Thread tiles of ``thread_columns`` output columns; register tiles of
    ``register_tile`` = (ow, oc) and one filter tap and input channel, which
    vectorize to one outer product. Partial tiles stay scalar loops.
    """
    any_op = "!transform.any_op"
    ow, oc = register_tile
    return (
        f"transform.named_sequence @{action}(%op: {any_op} {{transform.consumed}}) {{\n"
        f"  %tile, %forall = transform.structured.tile_using_forall %op"
        f" tile_sizes [1, {thread_columns}] : ({any_op}) -> ({any_op}, {any_op})\n"
        f'  transform.annotate %forall "{CONTRACTION_TILES}" : {any_op}\n'
        + _channel_tiles(5)
        # n, ow, oc, then the reductions kw and ic.
        + f"  %reg, %loops:5 = transform.structured.tile_using_for %ktile"
        f" tile_sizes [1, {ow}, {oc}, 1, 1] : ({any_op}) -> ({', '.join([any_op] * 6)})\n"
        + _peel("%loops#2", PARTIAL_CHANNELS)
        + _peel("%loops#1", PARTIAL_COLUMNS)
        + _retile_partial_tiles(op_name, PARTIAL_CHANNELS, [0, 0, PARTIAL_CHANNEL_TILE, 0, 0])
        + _retile_partial_tiles(op_name, PARTIAL_COLUMNS, [0, 1, 0, 0, 0])
        + _vectorize_conv_tiles(op_name, decompose=False)
    )


# Output columns per thread tile of a 1-D convolution.
CONV_1D_THREAD_COLUMNS = 64
# Input channels per step of a convolution's loop around its register tiles,
# so that the filter's slice for a register tile's channels stays in L1: a
# whole [3, 512, 32] slice (196 KB) from L2 for every tile took a [6399, 512]
# stride-2 1-D convolution (wav2vec2's) to 109 GFLOP/s, XLA 278. Channel
# tiles of 8/16/32/64/128/256: 214/261/256/237/206/171 GFLOP/s.
CONV_CHANNEL_TILE = 32

# Output rows per thread tile of a convolution. Two rows leave an even number
# of tiles for 2 threads at 56 and 28 rows; with four, the 7 tiles of a
# 28-row output split 4:3 and resnet (bench) took 9.26 ms instead of 8.77.
CONV_THREAD_ROWS = 2

# f32 1-D and 2-D convolutions (NWC, NHWC): 8 output columns x 32 output
# channels per tile; 8 x 8 with fewer than 32 output channels. On AVX2, 6 x 16
# (as MATMUL_REGISTER_TILE): 8 x 32 spilled, and the bench's conv2d took
# 3.3 ms instead of 1.85, its ResNet 26.8 instead of 12.5-13.4 (Zen 3).
CONV_REGISTER_TILE = (8, 32) if AVX512 else (6, 16)
FEW_CHANNELS_REGISTER_TILE = (8, PARTIAL_CHANNEL_TILE)

# Per linalg op: its loops, which of them walks the output channels, and its
# action for a register tile.
_CONVOLUTIONS: tuple[tuple[str, int, int, Callable[[str, tuple[int, int]], str]], ...] = (
    (
        "conv_1d_nwc_wcf",
        5,
        2,
        lambda action, tile: _vectorize_conv_1d(
            action, "linalg.conv_1d_nwc_wcf", CONV_1D_THREAD_COLUMNS, tile
        ),
    ),
    (
        "conv_2d_nhwc_hwcf",
        7,
        3,
        lambda action, tile: _vectorize_conv_2d(
            action, "linalg.conv_2d_nhwc_hwcf", 3, CONV_THREAD_ROWS, tile
        ),
    ),
    (
        "depthwise_conv_2d_nhwc_hwc",
        6,
        3,
        lambda action, tile: _vectorize_conv_2d(
            action, "linalg.depthwise_conv_2d_nhwc_hwc", 2, CONV_THREAD_ROWS, tile
        ),
    ),
)


# f64 (and i64) convolutions: half the lanes, as their matmuls.
CONV_REGISTER_TILE_64 = (8, 16)
FEW_CHANNELS_REGISTER_TILE_64 = (8, PARTIAL_CHANNEL_TILE)


def _conv_definitions(threads: int, shapes: Sequence[ContractionShape]) -> str:
    """The convolutions' matchers and actions, and ``@vectorize_convs``, which applies them.

    Only those of the convolutions and element widths in ``shapes``, as for matmuls.
    """
    widths = [
        (32, CONV_REGISTER_TILE, FEW_CHANNELS_REGISTER_TILE, ""),
        (64, CONV_REGISTER_TILE_64, FEW_CHANNELS_REGISTER_TILE_64, "_64"),
    ]
    definitions, pairs = [], []
    for bits, register_tile, few_channels_tile, width in widths:
        for name, loops, channels, vectorize in _CONVOLUTIONS:
            if not _has_op(shapes, name, bits):
                continue
            few_channels = [(channels, register_tile[1] - 1)]
            for suffix, tile, limits in (
                ("_few_channels", few_channels_tile, few_channels),
                ("", register_tile, []),
            ):
                matcher = f"match_{name}_{bits}{suffix}"
                action = f"vectorize_{name}{suffix}{width}"
                definitions.append(
                    _match_bits(matcher, f"linalg.{name}", loops, limits=limits, bits=bits)
                    + vectorize(action, tile)
                )
                pairs.append(f"@{matcher} -> @{action}")
    return "".join(definitions) + _apply_first_match("vectorize_convs", pairs)


def _functions_holding(op_names: Sequence[str]) -> str:
    """``%funcs``: the functions that hold an op named one of ``op_names``.

    The roots of ``_apply_first_match``, whose matchers take only such ops:
    foreach_match tries every matcher on every op it walks. Walking every
    function took 10 of the training step's 44 ms in the interpreter; its
    contractions are in small functions of their own
    (shlo-outline-contractions), so the walk is now short.
    """
    names = ", ".join(f'"{name}"' for name in op_names)
    return (
        f"%held = transform.structured.match ops{{[{names}]}} in %root"
        " : (!transform.any_op) -> !transform.any_op\n"
        '    %funcs = transform.get_parent_op %held {deduplicate, op_name = "func.func"}'
        " : (!transform.any_op) -> !transform.any_op\n"
    )


def _apply_first_match(name: str, pairs: Sequence[str]) -> str:
    """A sequence ``@name`` that applies to each op in ``%funcs`` the action of the first
    of the ``pairs`` (``@matcher -> @action``) that matches it; with no pairs, nothing."""
    any_op = "!transform.any_op"
    apply = (
        f"  %matched = transform.foreach_match in %funcs {', '.join(pairs)}"
        f" : ({any_op}) -> {any_op}\n"
        if pairs
        else ""
    )
    return (
        f"transform.named_sequence @{name}(%funcs: {any_op} {{transform.consumed}}) {{\n"
        f"{apply}  transform.yield\n}}\n"
    )


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        # Cache-sized output tiles for matrix products: 32x32 (and one batch at a time).
        Recipe(
            "tile-matmul-32",
            "contraction",
            "%tiled, %loops:2 = transform.structured.tile_using_for %ops tile_sizes [32, 32]"
            " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)",
        ),
        # Threads over output tiles, registers holding 8x32 accumulator tiles,
        # FMAs: see _vectorize_contraction. Only (batch) matmuls of 32-bit types.
        Recipe(
            "vectorize-matmul",
            "contraction",
            _functions_holding(tuple(f"linalg.{name}" for name in _MATMULS))
            + f"    %dots = transform.structured.match attributes {{{DOT_ROWS}}} in %root"
            " : (!transform.any_op) -> !transform.any_op\n"
            "    transform.foreach %dots : !transform.any_op {\n"
            "    ^bb0(%dot: !transform.any_op):\n"
            "      transform.include @vectorize_dot_rows failures(propagate) (%dot)"
            " : (!transform.any_op) -> ()\n"
            "    }\n"
            "    transform.include @vectorize_matmuls failures(propagate) (%funcs)"
            " : (!transform.any_op) -> ()",
            _matmul_definitions,
            ("matmul", "batch_matmul", "dot_rows"),
        ),
        # Convolutions as register-tiled outer products: see _vectorize_conv_2d.
        Recipe(
            "vectorize-conv",
            "convolution",
            _functions_holding(tuple(f"linalg.{name}" for name, _, _, _ in _CONVOLUTIONS))
            + "    transform.include @vectorize_convs failures(propagate) (%funcs)"
            " : (!transform.any_op) -> ()",
            _conv_definitions,
            tuple(name for name, _, _, _ in _CONVOLUTIONS),
        ),
    )
}

SEQUENCE_NAME = "__transform_main"


def main_sequence(body: str) -> str:
    """The named sequence transform-interpreter runs, around ``body`` (possibly empty)."""
    return (
        f"transform.named_sequence @{SEQUENCE_NAME}"
        "(%root: !transform.any_op {transform.readonly}) {\n"
        f"{body}    transform.yield\n}}"
    )


def suppressed_sequence(lines: Sequence[str]) -> str:
    """``lines`` in a nested sequence on ``%r``: where one fails, the ops are left as they are."""
    body = "".join(f"      {line}\n" for line in lines)
    return (
        "    transform.sequence %root : !transform.any_op failures(suppress) {\n"
        "    ^bb0(%r: !transform.any_op):\n"
        f"{body}"
        "    }\n"
    )


def canonicalize_functions(functions: str, result: str) -> str:
    """``result = `` the functions ``functions`` canonicalized as ``apply_patterns`` would.

    The registered pass, with apply_patterns' settings (bottom-up, aggressive
    region simplification): apply_patterns sets up the canonicalization
    patterns again for each function it is applied to, 0.2 ms each (25
    trivial functions: 5.0 ms), the pass once.
    """
    return (
        f'    {result} = transform.apply_registered_pass "canonicalize"\n'
        '      with options = {"top-down" = false, "region-simplify" = "aggressive"}'
        f" to {functions}\n"
        "      : (!transform.any_op) -> !transform.any_op\n"
    )


def transform_module_text(
    recipe_names: tuple[str, ...],
    threads: int = 1,
    contraction_shapes: Sequence[ContractionShape] = (),
) -> str:
    """The named sequence that applies ``recipe_names`` in order, for ``threads``.

    ``contraction_shapes``: the (batch) matmuls, convolutions and dot-rows
    generics to transform, whose thread tiles and register tiles depend on
    their shapes and element widths. Ops not among them keep their loops.
    """
    unknown = [name for name in recipe_names if name not in RECIPES]
    if unknown:
        raise ValueError(
            f"unknown codegen recipe {unknown[0]!r}; known: {', '.join(sorted(RECIPES))}"
        )
    # A recipe with nothing to transform is not parsed (the matmul and
    # convolution recipes are 1,500 ops: 10 ms of a softmax's 100 ms compile).
    recipes = [
        RECIPES[name] for name in recipe_names if RECIPES[name].applies_to(contraction_shapes)
    ]
    bodies = "".join(recipe.sequence_body(i) for i, recipe in enumerate(recipes))
    definitions = "".join(
        dict.fromkeys(recipe.definitions(threads, contraction_shapes) for recipe in recipes)
    )
    return definitions + main_sequence(bodies)
