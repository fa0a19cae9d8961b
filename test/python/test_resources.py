"""dense_resource constants (torch-mlir's weights) load as dense constants."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.interpreter import interpret


def blob(array: np.ndarray) -> str:
    # MLIR's text form of a blob: a 4-byte little-endian alignment, then the bytes.
    return "0x" + (4).to_bytes(4, "little").hex().upper() + array.tobytes().hex().upper()


def program(weights: np.ndarray, element: str) -> str:
    shape = "x".join(str(d) for d in weights.shape)
    return f"""
func.func @main(%x: tensor<{shape}x{element}>) -> tensor<{shape}x{element}> {{
  %w = stablehlo.constant dense_resource<torch_tensor_{shape}_w> : tensor<{shape}x{element}>
  %0 = stablehlo.{"and" if element == "i1" else "add"} %x, %w : tensor<{shape}x{element}>
  return %0 : tensor<{shape}x{element}>
}}
{{-#
  dialect_resources: {{
    builtin: {{
      torch_tensor_{shape}_w: "{blob(weights)}"
    }}
  }}
#-}}
"""


CASES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
    "bf16": (np.arange(6, dtype=np.float32).reshape(3, 2) / 4).astype(ml_dtypes.bfloat16),
    "i64": np.array([[-(2**40), 7, 3]], dtype=np.int64),
    "i1": np.array([True, False, True, True]),
}


@pytest.mark.parametrize("element", CASES)
def test_resource_weights_are_constants(element):
    weights = CASES[element]
    source = program(weights, element)
    x = np.ones(weights.shape, weights.dtype)
    expected = (x & weights) if element == "i1" else (x + weights)
    np.testing.assert_array_equal(shlo.compile(source, isolate=False)(x), expected)
    np.testing.assert_array_equal(interpret(source, "main", [x])[0], expected)


def test_a_blob_of_the_wrong_size_is_an_error():
    source = program(np.zeros([2, 3], np.float32), "f32").replace(
        blob(np.zeros([2, 3], np.float32)), blob(np.zeros([5], np.float32))
    )
    with pytest.raises(shlo.ShloError, match="holds 20 bytes; expected 6 elements of f32"):
        shlo.compile(source, isolate=False)


def test_shlo_opt_folds_through_resource_weights(tmp_path):
    # shlo-simplify once aborted on them: Cannot cast attribute to DenseElementsAttr.
    path = tmp_path / "weights.mlir"
    path.write_text(program(np.full([2, 2], 3, np.int64), "i64").replace("%x, %w", "%w, %w"))
    result = subprocess.run(
        [sys.executable, "-m", "shlo.tools.shlo_opt", str(path), "--shlo-simplify"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "dense<6> : tensor<2x2xi64>" in result.stdout
    assert "dense_resource" not in result.stdout


TORCH_MLIR_EXPORT = Path(__file__).parents[1] / "artifacts/torch-mlir-20261001/mlp_dynamic_batch"


@pytest.mark.parametrize("batch", [2, 5])
def test_torch_mlir_dynamic_export_runs_as_written(batch):
    # Weights in dense_resource blobs and shape-dialect shapes, as
    # torch_mlir.fx.export_and_import writes them (make_torch_mlir_artifacts.py).
    data = np.load(TORCH_MLIR_EXPORT.with_suffix(".npz"))
    x, want = data[f"x{batch}"], data[f"y{batch}"]
    path = str(TORCH_MLIR_EXPORT.with_suffix(".mlir"))
    np.testing.assert_allclose(shlo.compile(path)(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        interpret(Path(path).read_text(), "main", [x])[0], want, rtol=1e-5, atol=1e-6
    )


def test_complex_constants_beside_resources_are_left_alone():
    # Reading a complex dense attribute terminates the bindings; the walk never does.
    weights = np.array([1.5, -2.0], np.float32)
    source = program(weights, "f32").replace(
        "return %0",
        "%z = stablehlo.constant dense<(0.0, 1.0)> : tensor<complex<f32>>\n  return %0",
    )
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(shlo.compile(source)(x), weights)
