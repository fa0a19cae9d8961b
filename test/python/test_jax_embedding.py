"""shlo.jax.jit, shlo.compile(jax.export.Exported) and shlo.refine(ShapeDtypeStruct)."""

from __future__ import annotations

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
import shlo.jax
from jax import export
from shlo import ShloError


def model(params, x, unused):
    hidden = jnp.tanh(x @ params["w"] + params["b"])
    return {"out": hidden.sum(axis=-1), "aux": (hidden, x.shape[0] * jnp.ones((), jnp.int32))}


def model_args():
    rng = np.random.default_rng(0)
    params = {
        "w": rng.standard_normal((8, 4)).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
    }
    return params, rng.standard_normal((3, 8)).astype(np.float32), np.zeros(5, np.float32)


def assert_tree_close(got, want) -> None:
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_compile_an_exported_takes_and_returns_pytrees() -> None:
    args = model_args()
    exported = export.export(jax.jit(model), platforms=["cpu"])(*args)
    # The unused argument is dropped from the module: module_kept_var_idx.
    assert len(exported.module_kept_var_idx) == 3
    function = shlo.compile(exported)
    assert isinstance(function, shlo.jax.ExportedFunction)
    assert_tree_close(function(*args), jax.jit(model)(*args))


def test_compile_serialized_exported_bytes() -> None:
    args = model_args()
    exported = export.export(jax.jit(model), platforms=["cpu"])(*args)
    serialized = exported.serialize()
    assert isinstance(serialized, bytearray)
    for source in (serialized, bytes(serialized)):
        assert_tree_close(shlo.compile(source)(*args), jax.jit(model)(*args))


def test_multi_platform_export_gets_its_platform_index() -> None:
    args = model_args()
    exported = export.export(jax.jit(model), platforms=["cuda", "cpu"])(*args)
    # @main's first argument is the platform index: 1 selects the CPU lowering here.
    assert_tree_close(shlo.compile(exported)(*args), jax.jit(model)(*args))


def test_export_without_the_targets_platform_is_refused() -> None:
    exported = export.export(jax.jit(jnp.sin), platforms=["cuda"])(np.ones(3, np.float32))
    with pytest.raises(
        ShloError, match="lowered for cuda; target 'cpu' needs a lowering for 'cpu'"
    ):
        shlo.compile(exported)


def test_wrong_argument_structure_is_a_clear_error() -> None:
    args = model_args()
    function = shlo.compile(export.export(jax.jit(model), platforms=["cpu"])(*args))
    with pytest.raises(TypeError, match="do not match the export"):
        function(args[0], args[1])


def test_jit_matches_jax_jit_and_caches_per_signature() -> None:
    calls = []

    def f(x, y):
        calls.append(1)  # runs once per trace
        return jnp.exp(x) * y, (x + 1).astype(jnp.int32)

    jitted = shlo.jax.jit(f)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    y = np.float32(2.0)
    want = jax.jit(f)(x, y)
    calls.clear()
    got = jitted(x, y)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(got))
    assert_tree_close(got, want)
    jitted(x + 1, y)
    assert len(calls) == 1  # same signature: no new export
    jitted(np.ones((4, 3), np.float32), y)
    assert len(calls) == 2  # a new shape: a new export
    # jax arrays in, too.
    want = jax.jit(f)(x, np.float32(3))
    assert_tree_close(jitted(jnp.asarray(x), jnp.float32(3)), want)


def test_jit_static_argnums() -> None:
    jitted = shlo.jax.jit(lambda x, n: x * n + n, static_argnums=1)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(jitted(x, 3), x * 3 + 3)
    np.testing.assert_array_equal(jitted(x, 5), x * 5 + 5)
    assert len(jitted._compiled) == 2


def test_jit_polymorphic_shapes_export_once() -> None:
    jitted = shlo.jax.jit(lambda x: jnp.cumsum(x, axis=0), polymorphic_shapes=["(b, 3)"])
    for rows in (2, 5, 7):
        x = np.ones((rows, 3), np.float32)
        np.testing.assert_allclose(jitted(x), np.cumsum(x, axis=0))
    assert len(jitted._compiled) == 1
    assert len(jitted._compiled[next(iter(jitted._compiled))].executable.compiled_signatures) == 3


def test_jit_as_decorator_with_options() -> None:
    @shlo.jax.jit(threads=1)
    def g(x):
        return jnp.sort(x)[::-1]

    x = np.array([3, 1, 2], np.int32)
    np.testing.assert_array_equal(g(x), [3, 2, 1])


def test_refine_takes_shape_dtype_structs() -> None:
    exported = export.export(jax.jit(lambda x: x * 2), platforms=["cpu"])(
        *export.symbolic_args_specs([np.ones((2, 3), np.float32)], ["(a, 3)"])
    )
    refined = shlo.refine(
        exported.mlir_module_serialized, [jax.ShapeDtypeStruct((4, 3), jnp.float32)]
    )
    assert "tensor<4x3xf32>" in str(refined)
    symbolic = export.symbolic_args_specs([np.ones((2, 3), np.float32)], ["(a, 3)"])[0]
    with pytest.raises(TypeError, match="symbolic dimension"):
        shlo.refine(exported.mlir_module_serialized, [symbolic])


def test_results_reach_jax_without_a_copy() -> None:
    executable = shlo.compile(
        """
        func.func @main(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
          %0 = stablehlo.add %a, %a : tensor<3x5xf32>
          return %0 : tensor<3x5xf32>
        }
        """
    )
    result = executable(np.ones((3, 5), np.float32))
    # Results start on a cache line, which jax's DLPack import needs to share memory.
    assert result.ctypes.data % 64 == 0
    assert jnp.from_dlpack(result).unsafe_buffer_pointer() == result.ctypes.data


@pytest.fixture
def from_dlpack_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The calls of jnp.from_dlpack during the test, recorded, not refused:
    shlo.jax._to_jax catches an exception from it and copies instead."""
    calls: list[tuple] = []
    real_from_dlpack = jnp.from_dlpack

    def recording_from_dlpack(*args, **kwargs):
        calls.append(args)
        return real_from_dlpack(*args, **kwargs)

    monkeypatch.setattr(jnp, "from_dlpack", recording_from_dlpack)
    return calls


def test_results_reach_jax_by_the_direct_dlpack_import(from_dlpack_calls: list[tuple]) -> None:
    # jnp.from_dlpack spent ~20 us of Python per result; the pinned jax has the
    # jaxlib call it wraps, and shlo.jax uses that call directly.
    assert shlo.jax._host_dlpack_importer() is not None

    def f(x):
        return x * 2, x > 1, (x * 3).astype(jnp.int8), x.astype(jnp.float16)

    jitted = shlo.jax.jit(f)
    x = np.linspace(0, 2, 12, dtype=np.float32).reshape(3, 4)
    want = jax.jit(f)(x)

    got = jitted(x)
    assert not from_dlpack_calls
    assert all(isinstance(leaf, jax.Array) for leaf in got)
    assert_tree_close(got, want)
    assert [g.dtype for g in got] == [w.dtype for w in want]

    # The jax array shares the result's memory and keeps it alive.
    executable = shlo.compile(jitted.export(x).mlir_module_serialized)
    result = executable(x)[0]
    pointer = result.ctypes.data
    shared = shlo.jax._to_jax(result)
    del result
    gc.collect()
    assert shared.unsafe_buffer_pointer() == pointer
    np.testing.assert_allclose(np.asarray(shared), x * 2)


def test_ml_dtypes_results_become_jax_arrays_without_dlpack(from_dlpack_calls: list[tuple]) -> None:
    # numpy cannot export bfloat16 or float8 through DLPack: trying it first
    # cost 20 us a result, so these results are copied into jax directly.
    def f(x):
        return x.astype(jnp.bfloat16) * 2, x.astype(jnp.float8_e4m3fn)

    jitted = shlo.jax.jit(f)
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    want = jax.jit(f)(x)

    got = jitted(x)
    assert not from_dlpack_calls
    assert all(isinstance(leaf, jax.Array) for leaf in got)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(
            np.asarray(g).astype(np.float32), np.asarray(w).astype(np.float32)
        )
