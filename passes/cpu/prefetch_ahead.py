"""shlo-prefetch-ahead: loops that compute much per vector they read prefetch what comes next.

Ours because upstream has no such transform. Memory idles while a loop
computes: a chain of exp and tanh over 4M floats, a softmax's exp pass. The
hardware prefetchers alone leave such loops waiting on memory after the
machine idled (the bench's method), though not back to back. Two cases:

- A stream: a loop nest that is the only one to read its buffers (an
  elementwise chain) prefetches, at each vector it reads or writes, the
  lines ``PREFETCH_BYTES`` further on in the same row, for reading or
  writing. The bench's chain of 8 ops on 4M floats (80 vector ops per
  read): 2.14 -> 1.72 ms after idle against a same-bytes copy's 1.25 (59% ->
  73%), back to back 1.52 -> 1.56 against 0.59. In hand-edited loops, reads
  alone gained about half as much, and 1, 2, 4 and 8 KB ahead were within 5%.
- Blocks of rows: a row softmax or layernorm splits its rows into blocks,
  one per step of an ``scf.forall``, and walks each block several times:
  the first pass (max, mean) reads it from memory, the later ones (exp and
  sum, variance, normalization) from cache, and the prefetchers follow the
  pass, which walks the block again, not the next one. A later pass
  prefetches the next block, one prefetch per cache line it reads: the
  lines of every input block of that shape for reading, of every output
  block for writing (the output's lines are then owned before the last pass
  stores to them).

Only a loop that computes enough per vector it reads hosts prefetches: they
take load slots, which a loop that mostly loads has none of, and such a loop
keeps memory busy itself (``x * 1.5 + 0.25`` already runs at a copy's speed).
A stream must compute more than a block's later pass, whose reads hit the
cache. Measured with the bench's peers' method (medians, 0.25 s idle before
a call, a same-bytes copy interleaved; back to back in parentheses; with
the blocks of rows shlo-fuse-rows made then, sized for L2):

- softmax [512, 4096], blocks of 2 rows, its exp pass (88 vector ops per
  read): 1.08 -> 0.77 ms against the copy's 0.61 (0.53 -> 0.48 against 0.30);
  read prefetches alone 0.97 ms, write prefetches alone 0.88 ms; into L1 no
  faster than L2, non-temporal (locality 0) reads twice as slow;
- layernorm [1024, 1024], blocks of 16 rows, its normalization (9 ops per
  read): 0.43-0.48 -> 0.33-0.35 ms against a copy's 0.29-0.32 (65-68% ->
  84-92% of it), back to back 0.192-0.196 -> 0.203-0.207 against 0.15 (77%
  -> 73%). Write prefetches alone kept back to back (0.195) but gained less
  and less surely after idle (68-87%). The same kernel in C, one row per
  step, went from 65% to 85% of the copy after idle (68% -> 78% back to back)
  when it prefetched the next row for reading and writing. Its variance pass
  (3 ops per read) lost back to back (0.20 -> 0.24 ms) and is not taken.

  scf.forall (%i) in (256) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %block = memref.subview %x[%row, 0] [2, 4096] [1, 1]
    scf.for ... { ... first pass reads %block ... }
    scf.for %r ... { scf.for %c ... {
      %v = memref.subview %block[%r, %c] [1, 64] [1, 1]
      %a = vector.transfer_read %v[%c0, %c0] ... : vector<64xf32>
  ==>
    %next_row = arith.minui (%row + 2), %c510
    %next = memref.subview %x[%next_row, 0] [2, 4096] [1, 1]
    scf.for %r ... { scf.for %c ... {
      %nv = memref.subview %next[%r, %c] [1, 64] [1, 1]
      memref.prefetch %nv[%c0, %c0], read, locality<2>, data   (and at columns 16, 32, 48)
      %v = memref.subview %block[%r, %c] [1, 64] [1, 1]
      ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, memref
from shlo.ir_utils import (
    block_of_rows,
    defining_op,
    functions,
    index_constant,
    is_function_argument,
    ops_named,
    subview_offsets,
    view_chain,
)
from shlo.pass_framework import Pass
from shlo.passes.cpu.prefetch_matmul_rows import CACHE_LINE_BYTES, L2_LOCALITY

# Vector arithmetic ops per vector read for a loop to host prefetches: a
# softmax's exp has 88, a layernorm's variance 3 and normalization 9 (see
# above), the bench's chain, a stream, 80.
MIN_BLOCK_ARITHMETIC_PER_READ = 8
MIN_STREAM_ARITHMETIC_PER_READ = 16
# How far ahead a stream prefetches.
PREFETCH_BYTES = 4096


def _reads_in(nest: ir.Operation, blocks: list[ir.Value]) -> list[tuple[ir.Operation, list]]:
    """The vector reads under ``nest`` of views of ``blocks``, with their view chains."""
    found = []
    for read in ops_named(nest, "vector.transfer_read"):
        chain = view_chain(read.operands[0], lambda value: any(value == b for b in blocks))
        if chain is not None:
            found.append((read, chain))
    return found


def _is_written(block: ir.Value) -> bool:
    """Whether a store or vector write goes into ``block`` or a view of it."""
    for use in block.uses:
        user = use.owner
        if user.name == "memref.subview" and _is_written(user.results[0]):
            return True
        if user.name in ("vector.transfer_write", "memref.store") and use.operand_number == 1:
            return True
    return False


def _lines(read: ir.Operation) -> int:
    """The cache lines a 1-D, minor-identity vector read covers, or 0 for other reads."""
    return _lines_of(read.results[0].type, read.operands[0].type, read)


def _next_block(block: ir.Operation) -> ir.Value:
    """The same subview one block of rows further on, clamped to the buffer's last block."""
    rows = block.results[0].type.shape[0]
    height = block.operands[0].type.shape[0]
    ahead = arith.AddIOp(block.operands[1], index_constant(rows)).result
    offset = arith.MinUIOp(ahead, index_constant(height - rows)).result
    clone = block.clone()
    clone.operands[1] = offset
    return clone.results[0]


def _prefetch(read: ir.Operation, chain: list[ir.Operation], root: ir.Value, write: bool) -> None:
    """Prefetch what ``read`` reads through ``chain``, in the same view of ``root``."""
    view = root
    for subview in chain:
        clone = subview.clone()
        clone.operands[0] = view
        view = clone.results[0]
    indices = list(read.operands[1 : 1 + read.operands[0].type.rank])
    width = ir.FloatType(read.operands[0].type.element_type).width
    lanes = CACHE_LINE_BYTES * 8 // width
    for line in range(_lines(read)):
        column = (
            indices[-1]
            if line == 0
            else arith.AddIOp(indices[-1], index_constant(line * lanes)).result
        )
        memref.PrefetchOp(view, [*indices[:-1], column], write, L2_LOCALITY, True)


def _arithmetic_per_read(nest: ir.Operation, reads: int) -> float:
    """Vector arithmetic ops under ``nest`` per vector it reads from a block."""
    vector_ops = [
        op
        for op in ops_named(nest)
        if op.name.split(".")[0] in ("arith", "math")
        and len(op.results) == 1
        and isinstance(op.results[0].type, ir.VectorType)
    ]
    return len(vector_ops) / reads


def _prefetch_next_block(forall: ir.Operation) -> None:
    body = forall.regions[0].blocks[0]
    top = [op.operation for op in body.operations]
    blocks = [op for op in top if block_of_rows(op)]
    values = [op.results[0] for op in blocks]
    passes = [
        (op, reads) for op in top if op.name == "scf.for" and (reads := _reads_in(op, values))
    ]
    # The first pass reads the block from memory; a later one that computes
    # enough per vector it reads hosts the prefetches.
    later = [
        (_arithmetic_per_read(nest, len(reads)), index, nest, reads)
        for index, (nest, reads) in enumerate(passes[1:])
    ]
    later = [entry for entry in later if entry[0] >= MIN_BLOCK_ARITHMETIC_PER_READ]
    if not later:
        return
    _, _, host, reads = max(later, key=lambda entry: (entry[0], -entry[1]))
    reads = [(read, chain) for read, chain in reads if _lines(read)]
    if not reads:
        return
    read, chain = reads[0]
    shape = (chain[0].operands[0] if chain else read.operands[0]).type.shape
    position = {op: index for index, op in enumerate(top)}
    for block in blocks:
        offset = defining_op(block.operands[1])
        if block.results[0].type.shape != shape:
            continue
        if offset is not None and not (offset in position and position[offset] < position[host]):
            continue  # its offset is computed after the host pass
        with ir.InsertionPoint(host), host.location:
            next_block = _next_block(block)
        with ir.InsertionPoint(read), read.location:
            _prefetch(read, chain, next_block, _is_written(block.results[0]))


def _function_view_chain(value: ir.Value) -> list[ir.Operation]:
    """The subviews that make ``value`` from a function's buffer, outermost first; empty if
    ``value`` is not such a view."""
    return view_chain(value, is_function_argument) or []


def _stream_access(access: ir.Operation, index: ir.Value) -> tuple[ir.Operation, int] | None:
    """For a 1-D vector read or write at a view whose last offset is ``index``: that view
    and how many lines the access covers; else None."""
    is_write = access.name == "vector.transfer_write"
    memref_value = access.operands[1 if is_write else 0]
    chain = _function_view_chain(memref_value)
    if not chain:
        return None
    view = chain[-1]
    strides = list(ir.DenseI64ArrayAttr(view.attributes["static_strides"]))
    offsets = subview_offsets(view)
    if strides[-1] != 1 or not isinstance(offsets[-1], ir.Value) or offsets[-1] != index:
        return None
    if not view.operands[0].type.has_static_shape:
        return None
    vector = (access.operands[0] if is_write else access.results[0]).type
    lines = _lines_of(vector, memref_value.type, access)
    return (view, lines) if lines else None


def _lines_of(vector: ir.Type, memref_type: ir.Type, access: ir.Operation) -> int:
    """The cache lines a 1-D, minor-identity vector access covers, or 0 for other accesses."""
    if vector.rank != 1 or not isinstance(memref_type.element_type, ir.FloatType):
        return 0
    minor = ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(memref_type.rank, 1))
    if str(access.attributes["permutation_map"]) != str(minor):
        return 0
    bits = vector.shape[0] * ir.FloatType(memref_type.element_type).width
    return max(1, bits // (CACHE_LINE_BYTES * 8))


def _prefetch_stream(view: ir.Operation, lines: int, write: bool) -> None:
    """Prefetch ``lines`` lines ``PREFETCH_BYTES`` on from where ``view`` starts, in its
    source, clamped to the source's row."""
    source = view.operands[0]
    width = ir.FloatType(source.type.element_type).width
    lanes = CACHE_LINE_BYTES * 8 // width
    last = source.type.shape[-1] - 1
    offsets = [o if isinstance(o, ir.Value) else index_constant(o) for o in subview_offsets(view)]
    ahead = PREFETCH_BYTES * 8 // width
    for line in range(lines):
        column = arith.AddIOp(offsets[-1], index_constant(ahead + line * lanes)).result
        clamped = arith.MinUIOp(column, index_constant(last)).result
        memref.PrefetchOp(source, [*offsets[:-1], clamped], write, L2_LOCALITY, True)


_TRANSFERS = ("vector.transfer_read", "vector.transfer_write")


def _roots(op: ir.Operation) -> set[int]:
    """The function arguments that vector reads and writes under ``op`` reach, by number."""
    roots: set[int] = set()
    if len(op.regions) == 0 and op.name not in _TRANSFERS:
        return roots  # the many constants beside a loop nest: no walk for each
    for access in ops_named(op, *_TRANSFERS):
        memref_value = access.operands[1 if access.name == "vector.transfer_write" else 0]
        chain = _function_view_chain(memref_value)
        if chain:
            roots.add(ir.BlockArgument(chain[0].operands[0]).arg_number)
    return roots


def _prefetch_streams(function: ir.Operation) -> None:
    for loop in ops_named(function, "scf.for"):
        body = loop.regions[0].blocks[0]
        index = body.arguments[0]
        accesses = [
            (op, found)
            for op in (op.operation for op in body.operations)
            if op.name in ("vector.transfer_read", "vector.transfer_write")
            and (found := _stream_access(op, index)) is not None
        ]
        reads = [op for op, _ in accesses if op.name == "vector.transfer_read"]
        if not reads:
            continue  # first: most loops stop here, before the walks below
        if ops_named(loop, "scf.for")[1:] or ops_named(loop, "memref.prefetch"):
            continue  # not innermost, or it prefetches the next block already
        if _arithmetic_per_read(loop, len(reads)) < MIN_STREAM_ARITHMETIC_PER_READ:
            continue
        # The top-level op holding the loop; it must be the only one to touch
        # the buffers it reads (else a later pass reads them from cache).
        nest = loop
        while nest.parent.operation.name not in ("scf.forall", "func.func"):
            nest = nest.parent
        region_ops = [op.operation for op in nest.parent.regions[0].blocks[0].operations]
        mine = _roots(nest)
        if any(_roots(op) & mine for op in region_ops if op != nest):
            continue
        with ir.InsertionPoint.at_block_begin(body), loop.location:
            for access, (view, lines) in accesses:
                _prefetch_stream(view, lines, access.name == "vector.transfer_write")


@dataclass(frozen=True)
class PrefetchAheadPass(Pass):
    """Prefetch ahead in loops that compute much per vector they read: streams and blocks."""

    argument: ClassVar[str] = "shlo-prefetch-ahead"

    def run(self, module: ir.Operation) -> None:
        for forall in ops_named(module, "scf.forall"):
            _prefetch_next_block(forall)
        for function in functions(module):
            _prefetch_streams(function)
