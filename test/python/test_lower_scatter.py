"""shlo-lower-scatter end to end: stablehlo.scatter on the CPU against a numpy reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
import shlo
from shlo.pipeline import run_pipeline


@dataclass(frozen=True)
class Dims:
    update_window_dims: tuple[int, ...] = ()
    inserted_window_dims: tuple[int, ...] = ()
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()
    scatter_dims_to_operand_dims: tuple[int, ...] = ()
    index_vector_dim: int = 0

    def attribute(self) -> str:
        fields = [
            f"{name} = [{', '.join(map(str, getattr(self, name)))}]"
            for name in (
                "update_window_dims",
                "inserted_window_dims",
                "input_batching_dims",
                "scatter_indices_batching_dims",
                "scatter_dims_to_operand_dims",
            )
            if getattr(self, name)
        ]
        fields.append(f"index_vector_dim = {self.index_vector_dim}")
        return f"#stablehlo.scatter<{', '.join(fields)}>"


def reference(
    inputs: Sequence[np.ndarray],
    indices: np.ndarray,
    updates: Sequence[np.ndarray],
    combine: Callable[..., Sequence[object]],
    dims: Dims,
) -> list[np.ndarray]:
    """The StableHLO spec's scatter, element by element in update-index order."""
    results = [np.array(x, copy=True) for x in inputs]
    shape = results[0].shape
    vector_dim = dims.index_vector_dim
    scatter_dims = [d for d in range(updates[0].ndim) if d not in dims.update_window_dims]
    window_dims = [
        d
        for d in range(len(shape))
        if d not in dims.inserted_window_dims and d not in dims.input_batching_dims
    ]
    for update_index in np.ndindex(*updates[0].shape):
        scatter_index = [update_index[d] for d in scatter_dims]
        full = [0] * len(shape)
        for k, d in enumerate(dims.scatter_dims_to_operand_dims):
            position = list(scatter_index)
            if vector_dim < indices.ndim:
                position.insert(vector_dim, k)
            full[d] += int(indices[tuple(position)])
        for d, s in zip(dims.input_batching_dims, dims.scatter_indices_batching_dims):
            full[d] += scatter_index[s if s < vector_dim else s - 1]
        for d, u in zip(window_dims, dims.update_window_dims):
            full[d] += update_index[u]
        if all(0 <= i < n for i, n in zip(full, shape)):
            at = tuple(full)
            new = combine(*(r[at] for r in results), *(u[update_index] for u in updates))
            for result, value in zip(results, new):
                result[at] = value
    return results


def _type(array: np.ndarray, element: str) -> str:
    return "tensor<" + "".join(f"{n}x" for n in array.shape) + element + ">"


def scatter_program(
    inputs: Sequence[tuple[np.ndarray, str]],
    indices: tuple[np.ndarray, str],
    updates: Sequence[tuple[np.ndarray, str]],
    body: str,
    dims: Dims,
) -> str:
    """A @main taking inputs, indices and updates and returning the scatter's results."""
    count = len(inputs)
    operands = [*inputs, indices, *updates]
    types = [_type(a, e) for a, e in operands]
    result_types = types[:count]
    arguments = [f"%arg{i}: {t}" for i, t in enumerate(types)]
    region_args = [f"%a{i}: tensor<{e}>" for i, (_, e) in enumerate(inputs)] + [
        f"%b{i}: tensor<{e}>" for i, (_, e) in enumerate(updates)
    ]
    names = ", ".join(f"%arg{i}" for i in range(len(operands)))
    results = ", ".join(f"%r#{i}" for i in range(count))
    return f"""
func.func @main({", ".join(arguments)}) -> ({", ".join(result_types)}) {{
  %r:{count} = "stablehlo.scatter"({names}) <{{scatter_dimension_numbers = {dims.attribute()}}}> ({{
  ^bb0({", ".join(region_args)}):
{body}
  }}) : ({", ".join(types)}) -> ({", ".join(result_types)})
  return {results} : {", ".join(result_types)}
}}
"""


def run(program: str, *args: np.ndarray) -> list[np.ndarray]:
    # Copies: the caller's arrays must not be what the native code sees.
    outputs = shlo.compile(program, isolate=False)(*[a.copy() for a in args])
    return list(outputs) if isinstance(outputs, tuple) else [outputs]


ADD_F32 = """
    %s = stablehlo.add %a0, %b0 : tensor<f32>
    stablehlo.return %s : tensor<f32>"""


@pytest.mark.parametrize("seed", [0, 1])
def test_scatter_add_rows_with_duplicates_and_out_of_bounds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    dims = Dims(
        update_window_dims=(1,),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
    )
    x = rng.standard_normal((5, 3)).astype(np.float32)
    indices = rng.integers(-2, 7, (6, 1)).astype(np.int32)
    updates = rng.standard_normal((6, 3)).astype(np.float32)
    program = scatter_program([(x, "f32")], (indices, "i32"), [(updates, "f32")], ADD_F32, dims)
    (got,) = run(program, x, indices, updates)
    (want,) = reference([x], indices, [updates], lambda a, b: [a + b], dims)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_non_commutative_update_applies_in_update_index_order() -> None:
    # Every update hits element 1: the result is ((x * 10 + u0) * 10 + u1) ...
    dims = Dims(inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    x = np.array([5, 7, 9], dtype=np.int64)
    indices = np.array([[1], [1], [1], [3]], dtype=np.int64)
    updates = np.array([1, 2, 3, 4], dtype=np.int64)
    body = """
    %c = stablehlo.constant dense<10> : tensor<i64>
    %m = stablehlo.multiply %a0, %c : tensor<i64>
    %s = stablehlo.add %m, %b0 : tensor<i64>
    stablehlo.return %s : tensor<i64>"""
    program = scatter_program([(x, "i64")], (indices, "i64"), [(updates, "i64")], body, dims)
    (got,) = run(program, x, indices, updates)
    np.testing.assert_array_equal(got, [5, 7123, 9])


def test_partial_window_out_of_bounds_is_skipped_per_element() -> None:
    # As in the StableHLO spec and its interpreter: a window sticking out of the
    # operand still updates the elements that are inside.
    dims = Dims(update_window_dims=(1,), scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    x = np.zeros(5, dtype=np.float32)
    indices = np.array([[3], [-1]], dtype=np.int64)
    updates = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    body = "    stablehlo.return %b0 : tensor<f32>"
    program = scatter_program([(x, "f32")], (indices, "i64"), [(updates, "f32")], body, dims)
    (got,) = run(program, x, indices, updates)
    np.testing.assert_array_equal(got, [5, 6, 0, 1, 2])


def test_huge_indices_do_not_wrap_around() -> None:
    dims = Dims(update_window_dims=(0,), scatter_dims_to_operand_dims=(0,), index_vector_dim=0)
    x = np.zeros(4, dtype=np.float32)
    updates = np.ones(2, dtype=np.float32)
    body = "    stablehlo.return %b0 : tensor<f32>"
    for start in (np.iinfo(np.int64).max, np.iinfo(np.int64).min):
        indices = np.array([start], dtype=np.int64)
        program = scatter_program([(x, "f32")], (indices, "i64"), [(updates, "f32")], body, dims)
        np.testing.assert_array_equal(run(program, x, indices, updates)[0], x)


def test_variadic_unsigned_and_bool_with_unsigned_indices() -> None:
    rng = np.random.default_rng(3)
    dims = Dims(
        update_window_dims=(2,),
        inserted_window_dims=(0, 2),
        scatter_dims_to_operand_dims=(2, 0),
        index_vector_dim=2,
    )
    x = rng.integers(0, 256, (3, 4, 5)).astype(np.uint8)
    flags = rng.integers(0, 2, (3, 4, 5)).astype(np.bool_)
    indices = rng.integers(0, 6, (2, 2, 2)).astype(np.uint32)
    updates = rng.integers(0, 256, (2, 2, 2)).astype(np.uint8)
    toggles = rng.integers(0, 2, (2, 2, 2)).astype(np.bool_)
    body = """
    %c = stablehlo.constant dense<3> : tensor<ui8>
    %m = stablehlo.multiply %b0, %c : tensor<ui8>
    %s = stablehlo.add %a0, %m : tensor<ui8>
    %t = stablehlo.xor %a1, %b1 : tensor<i1>
    stablehlo.return %s, %t : tensor<ui8>, tensor<i1>"""
    program = scatter_program(
        [(x, "ui8"), (flags, "i1")],
        (indices, "ui32"),
        [(updates, "ui8"), (toggles, "i1")],
        body,
        dims,
    )
    got = run(program, x, flags, indices, updates, toggles)

    def combine(a: np.uint8, f: np.bool_, b: np.uint8, t: np.bool_) -> list[object]:
        return [np.uint8((int(a) + 3 * int(b)) % 256), f ^ t]

    want = reference([x, flags], indices, [updates, toggles], combine, dims)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_batching_dims_with_index_vector_dim_in_the_middle() -> None:
    rng = np.random.default_rng(4)
    dims = Dims(
        update_window_dims=(2,),
        inserted_window_dims=(1,),
        input_batching_dims=(0,),
        scatter_indices_batching_dims=(2,),
        scatter_dims_to_operand_dims=(1,),
        index_vector_dim=1,
    )
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    indices = rng.integers(-1, 6, (4, 1, 2)).astype(np.int32)
    updates = rng.standard_normal((4, 2, 3)).astype(np.float32)
    body = """
    %s = stablehlo.maximum %a0, %b0 : tensor<f32>
    stablehlo.return %s : tensor<f32>"""
    program = scatter_program([(x, "f32")], (indices, "i32"), [(updates, "f32")], body, dims)
    (got,) = run(program, x, indices, updates)
    (want,) = reference([x], indices, [updates], lambda a, b: [max(a, b)], dims)
    np.testing.assert_array_equal(got, want)


def test_window_dims_before_scatter_dims_and_implicit_index_vector() -> None:
    rng = np.random.default_rng(5)
    # index_vector_dim == rank(indices): each index is a single scalar.
    dims = Dims(
        update_window_dims=(0,),
        inserted_window_dims=(1,),
        scatter_dims_to_operand_dims=(1,),
        index_vector_dim=1,
    )
    x = rng.integers(-9, 9, (4, 6)).astype(np.int16)
    indices = rng.integers(-1, 7, (3,)).astype(np.int8)
    updates = rng.integers(-9, 9, (4, 3)).astype(np.int16)
    body = """
    %s = stablehlo.subtract %a0, %b0 : tensor<i16>
    stablehlo.return %s : tensor<i16>"""
    program = scatter_program([(x, "i16")], (indices, "i8"), [(updates, "i16")], body, dims)
    (got,) = run(program, x, indices, updates)
    (want,) = reference([x], indices, [updates], lambda a, b: [a - b], dims)
    np.testing.assert_array_equal(got, want)


def test_complex_multiply_and_scalar_update() -> None:
    dims = Dims(inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), index_vector_dim=0)
    x = np.array([1 + 1j, 2 - 1j, 3j], dtype=np.complex64)
    indices = np.array(1, dtype=np.int32)
    updates = np.array(2 + 3j, dtype=np.complex64)
    body = """
    %s = stablehlo.multiply %a0, %b0 : tensor<complex<f32>>
    stablehlo.return %s : tensor<complex<f32>>"""
    program = scatter_program(
        [(x, "complex<f32>")], (indices, "i32"), [(updates, "complex<f32>")], body, dims
    )
    (got,) = run(program, x, indices, updates)
    np.testing.assert_allclose(got, [1 + 1j, (2 - 1j) * (2 + 3j), 3j])


SUBTRACT_I32 = """
    %s = stablehlo.subtract %a0, %b0 : tensor<i32>
    stablehlo.return %s : tensor<i32>"""
MAX_UI16 = """
    %s = stablehlo.maximum %a0, %b0 : tensor<ui16>
    stablehlo.return %s : tensor<ui16>"""
ROWS = Dims(
    update_window_dims=(1,),
    inserted_window_dims=(0, 1),
    scatter_dims_to_operand_dims=(0, 1),
    index_vector_dim=1,
)


@pytest.mark.parametrize(
    ("element", "dtype", "body"),
    [("f32", np.float32, ADD_F32), ("i32", np.int32, SUBTRACT_I32), ("ui16", np.uint16, MAX_UI16)],
)
def test_whole_rows_are_updated_at_once_in_update_index_order(element, dtype, body) -> None:
    # Rows of 8 picked by two indices, some repeated, some out of bounds in
    # either dimension: each row is one slice update (a subtraction shows
    # the order), and skipped rows stay as they were.
    rng = np.random.default_rng(4)
    x = rng.integers(0, 1000, (4, 3, 8)).astype(dtype)
    indices = np.array([[0, 1], [3, 2], [0, 1], [4, 0], [-1, 2], [2, 3], [3, 2]], np.int32)
    updates = rng.integers(0, 1000, (7, 8)).astype(dtype)
    program = scatter_program([(x, element)], (indices, "i32"), [(updates, element)], body, ROWS)
    module = shlo.load_module(program)
    run_pipeline(module, ["shlo-lower-scatter"])
    assert "tensor.insert_slice" in str(module)
    (got,) = run(program, x, indices, updates)
    combine = {"f32": np.add, "i32": np.subtract, "ui16": np.maximum}[element]
    (want,) = reference([x], indices, [updates], lambda a, b: [combine(a, b)], ROWS)
    np.testing.assert_array_equal(got, want)


def test_an_update_computation_with_constants_stays_element_by_element() -> None:
    x = np.zeros((4, 3, 8), np.int64)
    body = """
    %c = stablehlo.constant dense<10> : tensor<i64>
    %m = stablehlo.multiply %a0, %c : tensor<i64>
    %s = stablehlo.add %m, %b0 : tensor<i64>
    stablehlo.return %s : tensor<i64>"""
    indices = np.array([[0, 1], [3, 2]], np.int32)
    updates = np.ones((2, 8), np.int64)
    program = scatter_program([(x, "i64")], (indices, "i32"), [(updates, "i64")], body, ROWS)
    module = shlo.load_module(program)
    run_pipeline(module, ["shlo-lower-scatter"])
    assert "tensor.insert_slice" not in str(module)
    (got,) = run(program, x, indices, updates)
    (want,) = reference([x], indices, [updates], lambda a, b: [a * 10 + b], ROWS)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("column", [5, 98, 99, -1])
def test_one_update_of_a_read_only_operand_frees_like_any_buffer(monkeypatch, column) -> None:
    # wav2vec2's attention mask: one element of a tensor set at a computed index.
    # The tensor cannot be written, so bufferization copies it; in a branch, that
    # copy was yielded and shlo-free-after-last-use handed the whole module to
    # upstream's deallocation (130 ms of wav2vec2's compile).
    from shlo.passes.linalg import free_after_last_use

    def upstream(pipeline: str) -> None:
        raise AssertionError(f"{pipeline} ran")

    parse = type("PassManager", (), {"parse": staticmethod(upstream)})
    monkeypatch.setattr(free_after_last_use, "passmanager", type("M", (), {"PassManager": parse}))
    dims = Dims(
        inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1
    )
    x = np.arange(99, dtype=np.int32).reshape(1, 99)
    indices = np.array([[0, column]], np.int32)
    updates = np.array([-7], np.int32)
    body = "    stablehlo.return %b0 : tensor<i32>"
    program = scatter_program([(x, "i32")], (indices, "i32"), [(updates, "i32")], body, dims)
    (got,) = run(program, x, indices, updates)
    (want,) = reference([x], indices, [updates], lambda a, b: [b], dims)
    np.testing.assert_array_equal(got, want)
