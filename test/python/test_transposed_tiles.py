"""Elementwise work fused with a transpose: square tiles transposed in registers
(shlo-plan-vector-codegen), against numpy, and the size of their code.

The rotary embedding of RoFormer-style attention multiplies the queries or
keys [batch, seq, heads, dim] by sine and cosine tables [seq, dim] and writes
the keys transposed, [batch, heads, dim, seq], for the next product: four
operands contiguous along dim, one along seq. The plan swaps the two loops so
that only the output goes through a transpose, and leaves the partial tiles
(seq 24 = 16 + 8) scalar.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu.lowering import lower_to_llvm


def rotary_keys(x, y, cos, sin, xp=jnp):
    return xp.transpose(x * cos[None, :, None, :] + y * sin[None, :, None, :], (0, 2, 3, 1))


def rotary_inputs(batch: int, seq: int, heads: int, dim: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seq * 131 + dim)
    keys = [rng.standard_normal((batch, seq, heads, dim)).astype(np.float32) for _ in range(2)]
    return keys + [rng.standard_normal((seq, dim)).astype(np.float32) for _ in range(2)]


def exported_rotary(args: list[np.ndarray]) -> bytes:
    return export.export(jax.jit(rotary_keys))(*args).mlir_module_serialized


# Whole tiles, partial tiles on either loop or both, and a single partial tile.
SHAPES = [(2, 32, 4, 32), (2, 24, 4, 32), (1, 40, 2, 24), (2, 33, 3, 17), (1, 5, 2, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_rotary_keys_transposed_match_numpy(shape, threads) -> None:
    args = rotary_inputs(*shape)
    got = shlo.compile(exported_rotary(args), threads=threads)(*args)
    got = got[0] if isinstance(got, (list, tuple)) else got
    # The same multiplies and add in the same order: the same bits.
    np.testing.assert_array_equal(np.asarray(got), rotary_keys(*args, xp=np))


def llvm_op_counts(blob: bytes) -> dict[str, int]:
    module = ir.Module.parse(lower_to_llvm(blob, "main", None).llvm_bytecode, new_context())
    counts: dict[str, int] = {}

    def count(op: ir.Operation) -> ir.WalkResult:
        counts[op.name] = counts.get(op.name, 0) + 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(count)
    return counts


def test_rotary_keys_transpose_once_per_tile_and_never_element_by_element() -> None:
    """Four operands read through transposes, and the partial tiles' transposes
    lowered element by element, made this kernel 2,600 LLVM ops (0.5 s of code
    generation); one transpose of the output per whole tile is about 100
    shuffles."""
    counts = llvm_op_counts(exported_rotary(rotary_inputs(2, 24, 4, 32)))
    assert counts.get("llvm.extractelement", 0) <= 8, counts
    assert counts.get("llvm.shufflevector", 0) <= 120, counts
    assert sum(counts.values()) < 1200, counts
