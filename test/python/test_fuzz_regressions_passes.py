"""Fuzzer findings: invalid UTF-8 in programs, and what the reference interpreter cannot run.

Each case is input a user can fix, so each must end in one located error line
(exit code 1), never a traceback, an "internal error" or a crashed worker.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.interpreter import interpret

SHLO_RUN = str(Path(sys.executable).parent / "shlo-run")


def shlo_run(program: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SHLO_RUN, str(program), *args], capture_output=True, text=True, timeout=120
    )


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "input.mlir"
    path.write_text(text)
    return path


def assert_located_error(result: subprocess.CompletedProcess[str], where: str, text: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(where), result.stderr
    assert ": error: " in result.stderr, result.stderr
    assert text in result.stderr, result.stderr
    assert "internal error" not in result.stderr
    assert "crashed" not in result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------ invalid UTF-8

SHAPE_ASSERTION_MESSAGE_NOT_UTF8 = r"""
func.func @main(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c = stablehlo.constant dense<5> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "Expected value >= 5 for '\FFb', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %arg0 : tensor<?x4xf32>
}
"""

ATTRIBUTE_NAME_NOT_UTF8 = r"""
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %a, %a {mhlo.frontend_attributes = {"\FFkey" = "value"}} : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""

SHARDING_NOT_UTF8 = r"""
func.func @main(%a: tensor<3xf32> {mhlo.sharding = "{repl\FFicated}"}) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
"""

CUSTOM_CALL_TARGET_NOT_UTF8 = r"""
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.custom_call @"f\FFoo"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


@pytest.mark.parametrize("target", ["cpu", "interpreter"])
def test_shape_assertion_message_not_utf8(tmp_path: Path, target: str) -> None:
    program = write(tmp_path, SHAPE_ASSERTION_MESSAGE_NOT_UTF8)
    result = shlo_run(program, "--input=2x4xf32=0", f"--target={target}")
    assert_located_error(result, f"{program}:6:3", "b', got 2")


@pytest.mark.parametrize("target", ["cpu", "interpreter"])
def test_attribute_name_not_utf8(tmp_path: Path, target: str) -> None:
    program = write(tmp_path, ATTRIBUTE_NAME_NOT_UTF8)
    result = shlo_run(program, "--input=3xf32=0", f"--target={target}")
    assert_located_error(
        result, f"{program}:3:8", "'stablehlo.add' has an attribute that is not valid UTF-8"
    )


def test_attribute_name_not_utf8_in_compile(tmp_path: Path) -> None:
    program = write(tmp_path, ATTRIBUTE_NAME_NOT_UTF8)
    with pytest.raises(shlo.ShloError) as raised:
        shlo.compile(str(program), entry="main")
    assert str(raised.value).startswith(f"{program}:3:8: error: 'stablehlo.add' has an attribute")


@pytest.mark.parametrize("target", ["cpu", "interpreter"])
def test_sharding_not_utf8(tmp_path: Path, target: str) -> None:
    program = write(tmp_path, SHARDING_NOT_UTF8)
    result = shlo_run(program, "--input=3xf32=0", f"--target={target}")
    assert_located_error(result, f"{program}:2:1", "mhlo.sharding")


def test_custom_call_target_not_utf8(tmp_path: Path) -> None:
    program = write(tmp_path, CUSTOM_CALL_TARGET_NOT_UTF8)
    result = shlo_run(program, "--input=3xf32=0", "--target=cpu")
    assert_located_error(result, f"{program}:3:8", "custom call @f\ufffdoo is not supported")


# ------------------------------------------------ what the interpreter cannot run

REDUCTION = """({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  })"""
COLLECTIVES = {
    "all_reduce": f'%0 = "stablehlo.all_reduce"(%x) {REDUCTION} '
    "{replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>",
    "reduce_scatter": f'%0 = "stablehlo.reduce_scatter"(%x) {REDUCTION} '
    "{scatter_dimension = 0 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} "
    ": (tensor<4xf32>) -> tensor<4xf32>",
    "all_gather": '%0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, '
    "replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>",
    "all_to_all": '%0 = "stablehlo.all_to_all"(%x) {split_dimension = 0 : i64, '
    "concat_dimension = 0 : i64, split_count = 1 : i64, "
    "replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>",
    "collective_reduce": f'%0 = "stablehlo.collective_reduce"(%x) {REDUCTION} '
    "{replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>",
    "collective_permute": '%0 = "stablehlo.collective_permute"(%x) '
    "{source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>",
    "collective_broadcast": '%0 = "stablehlo.collective_broadcast"(%x) '
    "{replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>",
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_interpreter_rejects_collectives(tmp_path: Path, name: str) -> None:
    program = write(
        tmp_path,
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        f"  {COLLECTIVES[name]}\n"
        "  return %0 : tensor<4xf32>\n}\n",
    )
    result = shlo_run(program, "--input=4xf32=1", "--target=interpreter")
    assert_located_error(result, f"{program}:2:8", f"'stablehlo.{name}' needs several replicas")


def test_interpreter_rejects_replica_id(tmp_path: Path) -> None:
    program = write(
        tmp_path,
        "func.func @main() -> tensor<ui32> {\n"
        "  %0 = stablehlo.replica_id : tensor<ui32>\n"
        "  return %0 : tensor<ui32>\n}\n",
    )
    result = shlo_run(program, "--target=interpreter")
    assert_located_error(result, f"{program}:2:8", "'stablehlo.replica_id' needs several replicas")


CHANNELS = {
    "send": '%1 = "stablehlo.send"(%x, %t) {channel_handle = '
    "#stablehlo.channel_handle<handle = 1, type = 2>, is_host_transfer = true} "
    ": (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token",
    "infeed": '%1:2 = "stablehlo.infeed"(%t) {infeed_config = ""} '
    ": (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)",
}


@pytest.mark.parametrize("name", sorted(CHANNELS))
def test_interpreter_rejects_host_transfers(tmp_path: Path, name: str) -> None:
    program = write(
        tmp_path,
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %t = stablehlo.after_all : !stablehlo.token\n"
        f"  {CHANNELS[name]}\n"
        "  return %x : tensor<4xf32>\n}\n",
    )
    result = shlo_run(program, "--input=4xf32=1", "--target=interpreter")
    # The op starts after the two-space indent and "= "; columns count from 1.
    column = 2 + CHANNELS[name].index("= ") + 2 + 1
    assert_located_error(result, f"{program}:3:{column}", f"'stablehlo.{name}' needs a host")


def test_interpreter_rejects_custom_calls(tmp_path: Path) -> None:
    program = write(tmp_path, CUSTOM_CALL_TARGET_NOT_UTF8)
    result = shlo_run(program, "--input=3xf32=0", "--target=interpreter")
    assert_located_error(result, f"{program}:3:8", "cannot run custom calls")


@pytest.mark.parametrize(
    ("fft", "length"),
    [("FFT", "4294967296"), ("FFT", "2, 3"), ("IFFT", "-9223372036854775808")],
)
def test_interpreter_rejects_fft_length_not_matching_the_operand(
    tmp_path: Path, fft: str, length: str
) -> None:
    program = write(
        tmp_path,
        "func.func @main(%x: tensor<3x2xcomplex<f64>>) -> tensor<3x2xf64> {\n"
        f"  %0 = stablehlo.fft %x, type = {fft}, length = [{length}] "
        ": (tensor<3x2xcomplex<f64>>) -> tensor<3x2xcomplex<f64>>\n"
        "  %1 = stablehlo.real %0 : (tensor<3x2xcomplex<f64>>) -> tensor<3x2xf64>\n"
        "  return %1 : tensor<3x2xf64>\n}\n",
    )
    result = shlo_run(program, "--input=3x2xcomplex<f64>=1", "--target=interpreter")
    assert_located_error(result, f"{program}:2:8", "fft_length")


def test_interpreter_runs_a_matching_irfft() -> None:
    # IRFFT reads n // 2 + 1 values: the check must not reject the half spectrum.
    program = """
    func.func @main(%re: tensor<3xf64>, %im: tensor<3xf64>) -> tensor<4xf64> {
      %x = stablehlo.complex %re, %im : tensor<3xcomplex<f64>>
      %0 = stablehlo.fft %x, type = IRFFT, length = [4] : (tensor<3xcomplex<f64>>) -> tensor<4xf64>
      return %0 : tensor<4xf64>
    }
    """
    re, im = np.array([1.0, 2.0, -3.0]), np.array([0.0, 0.5, 0.0])
    (result,) = interpret(program, "main", [re, im])
    np.testing.assert_allclose(result, np.fft.irfft(re + 1j * im, 4), atol=1e-12)


def test_interpreter_rejects_token_results(tmp_path: Path) -> None:
    program = write(
        tmp_path,
        "func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, !stablehlo.token) {\n"
        "  %0 = stablehlo.after_all : !stablehlo.token\n"
        "  return %x, %0 : tensor<4xf32>, !stablehlo.token\n}\n",
    )
    result = shlo_run(program, "--input=4xf32=0", "--target=interpreter")
    assert_located_error(result, f"{program}:1:1", "result 1 of @main has type !stablehlo.token")


# ------------------------------------------------- element types numpy buffers lack

SMALL_TYPES = [
    ("bf16", ml_dtypes.bfloat16, [0.0, 1.0, -2.5, 3.0e38]),
    ("f8E4M3FN", ml_dtypes.float8_e4m3fn, [0.0, 1.0, -2.5, 448.0]),
    ("f8E5M2", ml_dtypes.float8_e5m2, [0.0, 1.0, -2.5, 57344.0]),
    ("f8E8M0FNU", ml_dtypes.float8_e8m0fnu, [0.5, 1.0, 2.0**-127, 2.0**127]),
    ("f6E3M2FN", ml_dtypes.float6_e3m2fn, [0.0, 1.0, -2.5, 28.0]),
    ("f4E2M1FN", ml_dtypes.float4_e2m1fn, [0.0, 1.0, -1.5, 6.0]),
    ("i4", ml_dtypes.int4, [-8, -1, 3, 7]),
    ("ui4", ml_dtypes.uint4, [0, 1, 9, 15]),
]


@pytest.mark.parametrize(("element", "dtype", "values"), SMALL_TYPES)
def test_interpreter_passes_small_types_through_exactly(
    element: str, dtype: np.dtype, values: list[float]
) -> None:
    program = f"""
    func.func @main(%a: tensor<4x{element}>) -> (tensor<4x{element}>, tensor<4x{element}>) {{
      %0 = stablehlo.maximum %a, %a : tensor<4x{element}>
      return %0, %a : tensor<4x{element}>, tensor<4x{element}>
    }}
    """
    x = np.array(values).astype(dtype)
    results = interpret(program, "main", [x])
    for result in results:
        assert result.dtype == x.dtype
        np.testing.assert_array_equal(result.view(np.uint8), x.view(np.uint8))


def test_interpreter_computes_in_bf16() -> None:
    program = """
    func.func @log_plus_one(%a: tensor<3xbf16>) -> tensor<3xbf16> {
      %0 = stablehlo.log_plus_one %a : tensor<3xbf16>
      return %0 : tensor<3xbf16>
    }
    """
    x = np.array([0.0, 1.0, -0.5], dtype=ml_dtypes.bfloat16)
    (result,) = interpret(program, "log_plus_one", [x])
    assert result.dtype == x.dtype
    expected = np.log1p(x.astype(np.float32))
    # Rounded once to bf16: within half a bf16 ulp (2^-8 relative).
    np.testing.assert_allclose(result.astype(np.float32), expected, rtol=2.0**-8)


@pytest.mark.parametrize(("padding", "error"), [("[[-3, -3]]", True), ("[[-2, -3]]", False)])
def test_interpreter_rejects_padding_past_the_input(
    tmp_path: Path, padding: str, error: bool
) -> None:
    program = write(
        tmp_path,
        "func.func @main(%x: tensor<5xf32>) -> tensor<0xf32> {\n"
        "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
        f'  %0 = "stablehlo.reduce_window"(%x, %zero) <{{padding = dense<{padding}> '
        f": tensor<1x2xi64>, window_dimensions = array<i64: 5>}}> {REDUCTION} "
        ": (tensor<5xf32>, tensor<f32>) -> tensor<0xf32>\n"
        "  return %0 : tensor<0xf32>\n}\n",
    )
    result = shlo_run(program, "--input=5xf32=1", "--target=interpreter")
    if error:
        assert_located_error(result, f"{program}:3:8", "non-negative padded size, got -1")
    else:
        # Trimming the whole input is allowed: an empty result.
        assert result.returncode == 0, result.stderr
        assert result.stdout == "result[0]: 0xf32=[]\n"


def test_interpreter_rejects_a_padded_operand_past_the_memory_limit(tmp_path: Path) -> None:
    # Found by the fuzzer (seed 7): base dilations of 2^31 on 5 elements made
    # the interpreter allocate 34 GB and abort ("LLVM ERROR: out of memory").
    program = write(
        tmp_path,
        "func.func @main(%x: tensor<5xf32>) -> tensor<4xf32> {\n"
        "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
        '  %0 = "stablehlo.reduce_window"(%x, %zero) <{base_dilations = array<i64: 2143289344>, '
        f"window_dimensions = array<i64: 5>, window_strides = array<i64: 2143289344>}}> {REDUCTION} "
        ": (tensor<5xf32>, tensor<f32>) -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n}\n",
    )
    result = shlo_run(program, "--input=5xf32=1", "--target=interpreter")
    assert_located_error(
        result, f"{program}:3:8", "dilated and padded operand, of shape [8573157377]"
    )


# Ops the reference interpreter aborts on (found by the 10,000-case fuzz run).
NOT_INTERPRETED = {
    "rng": """func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %shape = stablehlo.constant dense<3> : tensor<1xi64>
  %r = stablehlo.rng %lo, %lo, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
""",
    "tensor_empty": """func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  return %e : tensor<3xf32>
}
""",
}


@pytest.mark.parametrize("name", sorted(NOT_INTERPRETED))
def test_interpreter_names_the_op_it_cannot_run(tmp_path: Path, name: str) -> None:
    program = write(tmp_path, NOT_INTERPRETED[name])
    result = shlo_run(program, "--input=3xf32=0", "--target=interpreter")
    line = 4 if name == "rng" else 2
    assert_located_error(result, f"{program}:{line}:", "the reference interpreter cannot run '")
