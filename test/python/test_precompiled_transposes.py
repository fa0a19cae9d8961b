"""f32 transposes as calls of the kernel built once per machine
(shlo_transpose_f32: kernels/transpose_f32.c, shlo-mark-precompiled-transposes)."""

from __future__ import annotations

import ctypes
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import precompiled
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.passes.cpu import mark_precompiled_transposes

pytestmark = [
    pytest.mark.skipif(not precompiled.enabled(), reason="no C compiler"),
]

RANK = mark_precompiled_transposes.RANK


@pytest.fixture(scope="module")
def kernel():
    library = precompiled.library()
    library.shlo_transpose_f32.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 14
    return library.shlo_transpose_f32


def transposed(kernel, base, offset, sizes, strides, threads) -> np.ndarray:
    """The kernel's dense result of ``sizes``, reading ``base`` from ``offset`` through
    ``strides`` (in elements)."""
    out = np.full(sizes, 7.0, np.float32)
    padding = RANK - len(sizes)
    kernel(
        base.ctypes.data, out.ctypes.data, offset, *[1] * padding, *sizes,
        *[0] * padding, *strides, threads,
    )  # fmt: skip
    return out


# Tiles whole and cut on either side, rows copied whole, one value, empty.
SHAPES = [(16, 16), (33, 47), (3, 5), (128, 96), (2, 3, 17, 19), (1, 40, 3, 20), (64, 17, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_every_permutation_is_numpys(kernel, shape, threads):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    elements = [stride // 4 for stride in x.strides]
    for permutation in itertools.permutations(range(len(shape))):
        want = np.ascontiguousarray(x.transpose(permutation))
        strides = [elements[p] for p in permutation]
        got = transposed(kernel, x, 0, want.shape, strides, threads)
        np.testing.assert_array_equal(got, want, err_msg=str(permutation))


@pytest.mark.parametrize("shape", [(1,), (0, 5), (4, 0, 3)], ids=str)
def test_one_value_and_empty_arrays(kernel, shape):
    x = np.arange(max(1, int(np.prod(shape))), dtype=np.float32)
    got = transposed(kernel, x, 0, shape, [1] * len(shape), 2)
    np.testing.assert_array_equal(got, x[: got.size].reshape(shape))


def test_a_view_is_read_from_its_offset(kernel):
    """GPT-2's keys: a slice of the projection, heads split, transposed."""
    qkv = np.random.default_rng(1).standard_normal((1, 128, 2304)).astype(np.float32)
    keys = qkv[:, :, 768:1536].reshape(1, 128, 12, 64)
    elements = [stride // 4 for stride in keys.strides]
    for permutation in [(0, 2, 3, 1), (0, 2, 1, 3), (0, 3, 1, 2)]:
        want = np.ascontiguousarray(keys.transpose(permutation))
        strides = [elements[p] for p in permutation]
        got = transposed(kernel, qkv, 768, want.shape, strides, 2)
        np.testing.assert_array_equal(got, want, err_msg=str(permutation))


def _calls_kernel(function, *args) -> bool:
    exported = export.export(jax.jit(function))(*args)
    lowered = lower_to_llvm(exported.mlir_module_serialized, "main", None)
    return "shlo_transpose_f32" in str(ir.Module.parse(lowered.llvm_bytecode, new_context()))


def _keys(qkv):
    return jnp.transpose(qkv[:, :, 768:1536].reshape(1, 128, 12, 64), (0, 2, 3, 1))


# (function, argument shapes, whether the transpose calls the kernel)
PROGRAMS = {
    "matrix": (lambda x: x.T, [(64, 96)], True),
    "slice of heads": (_keys, [(1, 128, 2304)], True),
    "heads to the front": (
        lambda x: jnp.transpose(x.reshape(2, 100, 4, 40), (0, 2, 1, 3)),
        [(2, 100, 160)],
        True,
    ),
    "strided slice": (lambda x: x[::2, 1:].T, [(64, 65)], True),
    # Fused with the add: one loop, generated.
    "fused": (lambda x, y: x.T + y, [(64, 48), (48, 64)], False),
    # 255 values: a call would cost more than the copy.
    "small": (lambda x: x.T, [(15, 17)], False),
    # The output's rows are 5 values long, in no tile: generated.
    "short rows": (lambda x: jnp.transpose(x, (1, 2, 0)), [(5, 33, 40)], False),
    # Every other column: no dimension is contiguous, no tile: generated.
    "no contiguous dimension": (lambda x: x[:, ::2].T, [(64, 64)], False),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs_give_jaxs_bits(name):
    function, shapes, calls = PROGRAMS[name]
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    exported = export.export(jax.jit(function))(*args)
    got = shlo.compile(exported.mlir_module_serialized)(*args)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(function)(*args)))
    assert _calls_kernel(function, *args) == calls


def test_hosts_without_the_kernels_vectors_keep_generated_transposes(monkeypatch):
    monkeypatch.setattr(mark_precompiled_transposes, "host_suits_kernels", lambda: False)
    assert not _calls_kernel(lambda x: x.T, np.zeros((64, 96), np.float32))
