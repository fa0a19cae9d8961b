"""shlo-prefetch-next-block: a kernel that reads its block of rows more than once prefetches the next block.

Ours because upstream has no such transform. A row softmax or layernorm
splits its rows into blocks, one per step of an ``scf.forall``, and walks
each block several times: the first pass (max, mean) reads it from memory,
the later ones (exp and sum, variance, normalization) from cache. While the
later passes compute, memory idles: the hardware prefetchers follow the
pass, which walks the block again, not the next one. A later pass now
prefetches the next block, one prefetch per cache line it reads: the lines of every input block of that
shape for reading, of every output block for writing (the output's lines
are then owned before the last pass stores to them).

Only a pass that computes enough per vector it reads hosts them: the
prefetches take load slots, which a pass that mostly loads has none of.
Measured with the bench's peers' method (medians, 0.25 s idle before a call,
a same-bytes copy interleaved; back to back in parentheses):

- softmax [512, 4096], blocks of 2 rows, its exp pass (88 vector ops per
  read): 1.08 -> 0.77 ms against the copy's 0.61 (0.53 -> 0.48 against 0.30);
  read prefetches alone 0.97 ms, write prefetches alone 0.88 ms; into L1 no
  faster than L2, non-temporal (locality 0) reads twice as slow;
- layernorm [1024, 1024], its normalization (9 ops per read): 0.44 -> 0.34 ms
  against 0.26, but back to back 0.196 -> 0.210 against 0.148; its variance
  pass (3 ops per read) 0.20 -> 0.24 back to back. Neither is taken.

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
from shlo.ir_utils import defining_op, index_constant, ops_named
from shlo.pass_framework import Pass

L2_LOCALITY = 2
CACHE_LINE_BYTES = 64
# Vector arithmetic ops per vector read from a block for a pass to host the
# prefetches: a softmax's exp has 88, a layernorm's passes 3 and 9 (which
# lost back to back; see above).
MIN_ARITHMETIC_PER_READ = 16


def _is_argument(value: ir.Value) -> bool:
    """Whether ``value`` is an argument of a function (a buffer the caller owns)."""
    if not isinstance(value, ir.BlockArgument):
        return False
    parent = value.owner.owner
    return parent is not None and parent.operation.name == "func.func"


def _block_of_rows(op: ir.Operation) -> bool:
    """Whether ``op`` is a subview of a function's buffer that takes whole rows from one
    dynamic row on: a contiguous block, followed in memory by the next."""
    if op.name != "memref.subview" or not _is_argument(op.operands[0]):
        return False
    source = op.operands[0].type
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    dynamic = ir.ShapedType.get_dynamic_size()
    return (
        source.has_static_shape
        and len(op.operands) == 2  # one dynamic value: the first offset
        and offsets[0] == dynamic
        and all(offset == 0 for offset in offsets[1:])
        and all(stride == 1 for stride in strides)
        and sizes[1:] == list(source.shape[1:])
        and 0 < sizes[0] < source.shape[0]
    )


def _view_chain(value: ir.Value, roots: list[ir.Value]) -> list[ir.Operation] | None:
    """The subviews that make ``value`` from one of ``roots``, outermost first; None if
    ``value`` is not such a view."""
    chain: list[ir.Operation] = []
    while not any(value == root for root in roots):
        producer = defining_op(value)
        if producer is None or producer.name != "memref.subview":
            return None
        chain.insert(0, producer)
        value = producer.operands[0]
    return chain


def _reads_in(nest: ir.Operation, blocks: list[ir.Value]) -> list[tuple[ir.Operation, list]]:
    """The vector reads under ``nest`` of views of ``blocks``, with their view chains."""
    found = []
    for read in ops_named(nest, "vector.transfer_read"):
        chain = _view_chain(read.operands[0], blocks)
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
    vector = read.results[0].type
    memref_type = read.operands[0].type
    if vector.rank != 1 or not isinstance(memref_type.element_type, ir.FloatType):
        return 0
    rank = memref_type.rank
    if str(read.attributes["permutation_map"]) != str(
        ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(rank, 1))
    ):
        return 0
    bits = vector.shape[0] * ir.FloatType(memref_type.element_type).width
    return max(1, bits // (CACHE_LINE_BYTES * 8))


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
    blocks = [op for op in top if _block_of_rows(op)]
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
    later = [entry for entry in later if entry[0] >= MIN_ARITHMETIC_PER_READ]
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


@dataclass(frozen=True)
class PrefetchNextBlockPass(Pass):
    """In a forall over blocks of rows read in several passes, prefetch the next block."""

    argument: ClassVar[str] = "shlo-prefetch-next-block"

    def run(self, module: ir.Operation) -> None:
        for forall in ops_named(module, "scf.forall"):
            _prefetch_next_block(forall)
