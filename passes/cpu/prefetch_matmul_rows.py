"""shlo-prefetch-matmul-rows: matmul kernels prefetch the weights they read next.

Ours because upstream has no such transform, and the hardware prefetchers
do not follow these reads. In a model the weights are cold: GPT-2's 340 MB
of them stream from memory at every call, and each thread's first register
tile of a block waits on them one load at a time.

- A register tile's k loop (vector accumulators, ``vector.fma``) reads one
  row of the rhs per step, two cache lines 4 N bytes after the last: a new
  page every step. It now prefetches the same columns ``PREFETCH_ROWS``
  rows further down.
- A transposed weight (x @ w.T, every PyTorch Linear and GPT-2's Conv1D) is
  copied into a block of [k, n] a 16 x 16 tile at a time, walking 128 rows
  one line each before it moves to their next line: more streams than the
  L2 streamer tracks. Each tile now prefetches its rows' lines
  ``PREFETCH_CHUNKS`` steps of the outer loop ahead.

Only reads of a buffer the function was given are prefetched (not a block a
recipe transposed into its own buffer), into L2, with row and column clamped
to the buffer's last. GPT-2 (12 layers, interleaved medians): 124.5 -> 112.5
ms, 1.19 -> 1.08x XLA's time. [128, 768] x [768, 3072] with 16 weights in
turn (cold): 3.97 -> 3.15 ms; with one weight (warm) 3.05 -> 2.92 ms.

  %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %init) -> (vector<8x32xf32>) {
    %row = memref.subview %rhs[%k, %j] [1, 32] [1, 1] : ...
    ...
  }
  ==>
  %acc = scf.for %k = ... {
    %next = arith.minui (%k + 16), %c767 : index
    memref.prefetch %rhs[%next, %j], read, locality<2>, data : ...
    memref.prefetch %rhs[%next, %j + 16], read, locality<2>, data : ...
    %row = memref.subview %rhs[%k, %j] [1, 32] [1, 1] : ...
    ...
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, memref
from shlo.ir_utils import defining_op, index_constant, ops_named, subview_offsets
from shlo.pass_framework import Pass

# How far ahead a register tile's k loop prefetches, in k steps: 16 steps of
# an 8 x 32 tile are about 130 cycles of FMAs. Measured on [128, 768] x
# [768, 3072] with cold weights: 32 steps 3.32 ms, 16 steps 3.07, none 3.83.
PREFETCH_ROWS = 16
# How far ahead a transpose's tile loop prefetches, in steps of its outer
# loop over k (a line of 16 floats each). GPT-2: 1 step 112.5 ms, 2 steps
# 114.2, 4 steps 115.3, none 122-124.
PREFETCH_CHUNKS = 1
# Into L2 (prefetcht1): into L1 measured slower (3.29 against 3.07 ms).
L2_LOCALITY = 2
CACHE_LINE_BYTES = 64


def _value(value: ir.Value | int) -> ir.Value:
    return value if isinstance(value, ir.Value) else index_constant(value)


def _add(a: ir.Value | int, b: ir.Value | int) -> ir.Value | int:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    return arith.AddIOp(_value(a), _value(b)).result


def _offsets(subview: ir.Operation) -> list[ir.Value | int] | None:
    """A 2-D memref.subview's offsets (constants as ints), or None if it strides or drops a
    dimension."""
    strides = ir.DenseI64ArrayAttr(subview.attributes["static_strides"])
    if subview.results[0].type.rank != 2 or list(strides) != [1, 1]:
        return None
    return subview_offsets(subview)


@dataclass
class _Read:
    """A vector read of a view of a 2-D float buffer that the function was given."""

    view: ir.Operation  # the memref.subview read
    root: ir.Value  # the function's argument
    # The offsets of each subview from the root's down to ``view``, in its own source.
    chain_offsets: list[list[ir.Value | int]]

    @property
    def offsets(self) -> list[ir.Value | int]:
        """The view's offsets in its own source."""
        return self.chain_offsets[-1]


def _argument_read(read: ir.Operation) -> _Read | None:
    view = defining_op(read.operands[0])
    if view is None or view.name != "memref.subview":
        return None
    chain = [view]
    root = view.operands[0]
    while (producer := defining_op(root)) is not None and producer.name == "memref.subview":
        chain.insert(0, producer)
        root = producer.operands[0]
    type_ = root.type
    if (
        producer is not None  # a buffer of the function's own: e.g. a transposed block
        or not isinstance(type_, ir.MemRefType)
        or type_.rank != 2
        or not type_.has_static_shape
        or not isinstance(type_.element_type, ir.FloatType)
    ):
        return None
    chain_offsets = [_offsets(op) for op in chain]
    if any(offsets is None for offsets in chain_offsets):
        return None
    return _Read(view, root, chain_offsets)  # type: ignore[arg-type]


def _prefetch(read: _Read, rows: list[ir.Value | int], column: ir.Value | int, lines: int) -> None:
    """Prefetch ``lines`` cache lines from ``column`` on in each of ``rows`` of the root,
    both clamped to the root's bounds (offsets in ``read.view``'s source)."""
    height, width = read.root.type.shape
    lanes = CACHE_LINE_BYTES * 8 // ir.FloatType(read.root.type.element_type).width
    # Where the view's source starts in the root: the outer views' offsets summed.
    source_row, source_column = 0, 0
    for row_offset, column_offset in read.chain_offsets[:-1]:
        source_row = _add(source_row, row_offset)
        source_column = _add(source_column, column_offset)
    first = _add(column, source_column)
    columns: list[ir.Value] = []  # the clamped column of each line, made for the first row
    for row in rows:
        row = arith.MinUIOp(_value(_add(row, source_row)), index_constant(height - 1)).result
        for line in range(lines):
            if len(columns) == line:
                clamped = arith.MinUIOp(
                    _value(_add(first, line * lanes)), index_constant(width - 1)
                )
                columns.append(clamped.result)
            memref.PrefetchOp(read.root, [row, columns[line]], False, L2_LOCALITY, True)


def _inside(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether ``value`` is defined in ``loop``'s body (its index included)."""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    while op is not None:
        op = op.operation
        if op == loop:
            return True
        op = op.parent
    return False


def _lines(read: _Read) -> int:
    """Cache lines per row of the read's view, or 0 if its rows are not whole lines."""
    width = read.view.results[0].type.shape[1]
    row_bits = width * ir.FloatType(read.root.type.element_type).width
    return 0 if row_bits % (CACHE_LINE_BYTES * 8) else row_bits // (CACHE_LINE_BYTES * 8)


def _step(loop: ir.Operation) -> ir.Value:
    return loop.operands[2]


def _register_tile_loop(loop: ir.Operation) -> bool:
    """Whether an scf.for carries vector accumulators and multiply-adds into them."""
    if not len(loop.results) or not all(isinstance(r.type, ir.VectorType) for r in loop.results):
        return False
    return any(op.operation.name == "vector.fma" for op in loop.regions[0].blocks[0].operations)


def _plan(loop: ir.Operation, read: _Read) -> tuple[list[ir.Value | int], ir.Value | int] | None:
    """How ``read`` in ``loop`` is prefetched: rows and first column ahead (as builders run
    at the top of the loop's body), or None."""
    index = loop.regions[0].blocks[0].arguments[0]
    row, column = read.offsets
    height = read.view.results[0].type.shape[0]
    # The offsets of the views above the read, and its column, are computed
    # before the prefetches at the top of the body.
    used = [v for offsets in read.chain_offsets[:-1] for v in offsets if isinstance(v, ir.Value)]
    if isinstance(column, ir.Value):
        used.append(column)
    if row != index or any(_inside(value, loop) for value in used):
        return None
    if not all(isinstance(value.type, ir.IndexType) for value in (index, *used)):
        return None  # a loop over integers of another type
    if height == 1 and _register_tile_loop(loop):
        # The rhs row the k loop reads PREFETCH_ROWS steps later.
        ahead = arith.MulIOp(_step(loop), index_constant(PREFETCH_ROWS)).result
        return [arith.AddIOp(index, ahead).result], column
    outer = loop.parent
    if height > 1 and outer is not None and outer.name == "scf.for":
        outer_index = outer.regions[0].blocks[0].arguments[0]
        if column != outer_index:
            return None
        # A block of rows the outer loop walks along, a line at a time (a
        # transpose): the same rows, PREFETCH_CHUNKS steps of it later.
        ahead = arith.MulIOp(_step(outer), index_constant(PREFETCH_CHUNKS)).result
        rows = [_add(index, offset) for offset in range(height)]
        return rows, arith.AddIOp(column, ahead).result
    return None


@dataclass(frozen=True)
class PrefetchMatmulRowsPass(Pass):
    """Prefetch the weights that matmul register tiles and transposes read, ahead of use."""

    argument: ClassVar[str] = "shlo-prefetch-matmul-rows"

    def run(self, module: ir.Operation) -> None:
        for loop in ops_named(module, "scf.for"):
            body = loop.regions[0].blocks[0]
            reads = [
                (read, lines)
                for op in body.operations
                if op.operation.name == "vector.transfer_read"
                and (read := _argument_read(op.operation)) is not None
                and (lines := _lines(read))
            ]
            for read, lines in reads:
                with ir.InsertionPoint.at_block_begin(body), loop.location:
                    plan = _plan(loop, read)
                    if plan is not None:
                        _prefetch(read, plan[0], plan[1], lines)
