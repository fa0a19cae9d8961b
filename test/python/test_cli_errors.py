"""Malformed input never kills, hangs or tracebacks shlo-opt and shlo-run: exit 1, one clear line.

Most cases call the tools' ``run(argv)`` in this process, as a fuzzer does:
a crash in MLIR must kill only the isolated worker, never the caller.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo import ShloError, new_context
from shlo import io as shlo_io
from shlo._mlir_compat import current_version, ir
from shlo.io import module_to_portable_artifact, parse_module
from shlo.tools import shlo_opt, shlo_run
from shlo.tools.shlo_run import UsageError, parse_input

BIN = Path(sys.executable).parent
EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "add_one_dynamic.mlir"


def opt(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = shlo_opt.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def artifact() -> bytes:
    module = ir.Module.parse(EXAMPLE.read_text(), new_context())
    return module_to_portable_artifact(module, current_version())


def crashing_artifact(artifact: bytes) -> bytes:
    """The example's artifact with a type code after its f32 constant corrupted.

    The pinned StableHLO's reader then aborts with "LLVM ERROR: unsupported
    integer type" instead of reporting an error.
    """
    code = artifact.index(b"\x00\x00\x80?\x13\t") + 5  # after the bytes of 1.0f
    return artifact[:code] + b"\x01" + artifact[code + 1 :]


def test_reader_abort_is_one_error_and_the_host_survives(capsys, tmp_path, artifact):
    corrupt = tmp_path / "corrupt.vhlo"
    corrupt.write_bytes(crashing_artifact(artifact))
    code, out, err = opt(capsys, str(corrupt))
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        f"{corrupt}: error: shlo-opt's worker crashed (SIGABRT) while parsing, transforming "
        "or printing this input; the input may be malformed, or this is a bug in MLIR or "
        "shlo: LLVM ERROR: unsupported integer type"
    ]
    # The next run starts a fresh worker.
    code, out, _ = opt(capsys, str(EXAMPLE), "--shlo-remove-dynamism=types=tensor<2xf32>")
    assert code == 0 and "tensor<2xf32>" in out


def test_pipeline_that_aborts_while_built_is_a_usage_error(capsys):
    code, _, err = opt(
        capsys, str(EXAMPLE), "--pass-pipeline=builtin.module(func.func(sparsifier))"
    )
    assert code == 2
    assert err.startswith("shlo-opt: error: the pass pipeline crashed (SIGABRT) while being built")
    assert "did you intend to nest?" in err
    assert len(err.splitlines()) == 1


def test_deep_nesting_does_not_overflow_the_stack(capsys, tmp_path):
    nested = tmp_path / "nested.mlir"
    nested.write_text("module {" * 6000 + "}" * 6000 + "\n")
    code, out, err = opt(capsys, str(nested))
    assert code == 0, err
    assert out.count("module {") == 6000


def test_no_isolate_gives_the_same_result(capsys):
    argv = [str(EXAMPLE), "--shlo-remove-dynamism=types=tensor<3xf32>"]
    isolated = opt(capsys, *argv)
    in_process = opt(capsys, *argv, "--no-isolate")
    assert isolated == in_process
    assert isolated[0] == 0


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (
            "99999999999999999999.0.0",
            "invalid StableHLO target version '99999999999999999999.0.0'; expected X.Y.Z",
        ),
        ("1.0", "invalid StableHLO target version '1.0'; expected X.Y.Z"),
        ("-1.0.0", "invalid StableHLO target version '-1.0.0'; expected X.Y.Z"),
        ("0.0.1", "StableHLO target version 0.0.1 is not supported; this StableHLO writes"),
        ("99.0.0", "StableHLO target version 99.0.0 is not supported; this StableHLO writes"),
    ],
)
def test_target_version_is_validated(capsys, version, message):
    code, out, err = opt(
        capsys, str(EXAMPLE), "--emit-portable-artifact", f"--target-version={version}"
    )
    assert code == 1
    assert out == ""
    assert err.startswith(f"shlo-opt: error: --target-version: {message}")
    assert len(err.splitlines()) == 1


def test_artifact_from_a_newer_stablehlo_is_rejected(capsys, tmp_path, artifact):
    newer = tmp_path / "newer.vhlo"
    newer.write_bytes(
        artifact.replace(f"StableHLO_v{current_version()}".encode(), b"StableHLO_v99.0.0")
    )
    code, _, err = opt(capsys, str(newer))
    assert code == 1
    assert err == (
        f"{newer}: error: the portable artifact was written by StableHLO 99.0.0, newer than "
        f"this StableHLO ({current_version()}); re-export it for version {current_version()} "
        "or older\n"
    )
    malformed = tmp_path / "malformed.vhlo"
    malformed.write_bytes(artifact.replace(b"StableHLO_v", b"StableHLO_vx", 1))
    code, _, err = opt(capsys, str(malformed))
    assert code == 1
    assert "malformed producer version 'StableHLO_vx" in err


def test_diagnostics_without_location_name_the_file(tmp_path, artifact):
    truncated = tmp_path / "truncated.vhlo"
    truncated.write_bytes(artifact[:200])
    for tool in ("shlo-opt", "shlo-run"):
        result = subprocess.run(
            [str(BIN / tool), str(truncated)], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 1
        assert "loc(" not in result.stderr
        assert f"{truncated}: error: attempting to parse" in result.stderr
        assert "Traceback" not in result.stderr
    with pytest.raises(ShloError) as error:
        parse_module(artifact[:200], new_context(), "cut.vhlo")
    assert str(error.value).startswith("cut.vhlo: error: attempting to parse")


def test_invalid_utf8_text_is_located(capsys, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(b"module {\n  // caf\xe9\n}\n")
    code, _, err = opt(capsys, str(bad))
    assert code == 1
    assert err == (
        f"{bad}:2:9: error: invalid UTF-8 at byte 17 (0xe9); the input is neither UTF-8 "
        "text nor MLIR bytecode\n"
    )


def test_invalid_utf8_in_a_diagnostic_is_located(capsys, tmp_path):
    # The verifier's message names the symbol, which is not UTF-8: the bindings
    # cannot turn it into a str.
    bad = tmp_path / "symbol.mlir"
    bad.write_text('func.func @main() {\n  call @"\\FE\\FF"() : () -> ()\n  return\n}\n')
    code, _, err = opt(capsys, str(bad))
    assert code == 1
    assert err.startswith(f'{bad}:2:9: error: string literal "\\FE\\FF" is not valid UTF-8')
    assert len(err.splitlines()) == 1


def test_argparse_exits_become_return_codes(capsys):
    assert opt(capsys, "--help")[0] == 0
    assert opt(capsys, "--target-version")[0] == 2
    assert shlo_run.run(["--help"]) == 0
    assert shlo_run.run([]) == 2


def test_directory_as_input(capsys):
    code, _, err = opt(capsys, str(EXAMPLE.parent))
    assert (code, err) == (1, f"shlo-opt: error: cannot read {EXAMPLE.parent}: Is a directory\n")
    assert shlo_run.run([str(EXAMPLE.parent)]) == 1
    assert (
        capsys.readouterr().err
        == f"shlo-run: error: cannot read {EXAMPLE.parent}: is a directory\n"
    )


def test_shlo_run_returns_codes_for_user_errors(capsys):
    # A caller such as a fuzzer gets exit codes from run(), not exceptions.
    assert shlo_run.run([str(EXAMPLE), "--input=3xi8=300"]) == 1
    assert "value 300 is out of range for i8" in capsys.readouterr().err


def test_pipeline_option_error_printed_by_llvm_is_the_message(capsys):
    code, _, err = opt(
        capsys, str(EXAMPLE), "--pass-pipeline=builtin.module(canonicalize{max-iterations=abc})"
    )
    assert code == 2
    assert err == (
        "shlo-opt: error: for the --max-iterations option: 'abc' value invalid for long argument!\n"
    )


def test_unwritable_repro_dir(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = opt(capsys, str(EXAMPLE), "--shlo-verify-static", f"--repro-dir={blocker}/sub")
    assert code == 1
    assert err.splitlines()[-1].startswith(
        f"shlo-opt: error: cannot save a reproducer in {blocker}/sub"
    )


def test_text_only_stdout(monkeypatch):
    # A caller may replace sys.stdout by a stream without a byte buffer.
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert shlo_opt.run([str(EXAMPLE), "--shlo-remove-dynamism=types=tensor<2xf32>"]) == 0
    assert "tensor<2xf32>" in stdout.getvalue()


# --- shlo-run inputs ------------------------------------------------------------------


def test_empty_tensor_input():
    empty = parse_input("0xf32=")
    assert empty.shape == (0,) and empty.dtype == np.float32
    assert parse_input("2x0xi8=").shape == (2, 0)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("3xi8=300", "value 300 is out of range for i8 [-128, 127]"),
        ("2xui8=1,-1", "value -1 is out of range for ui8 [0, 255]"),
        ("2xi4=8", "value 8 is out of range for i4 [-8, 7]"),
        ("2xf16=1e5", "value 1e5 is not representable in f16 (largest finite value 65504)"),
        ("f8E4M3FN=inf", "value inf is not representable in f8E4M3FN"),
        ("f64=1e400", "value 1e400 is not representable in f64"),
        ("100000000000xf32=1", "needs 400000000000 bytes, more than the limit of"),
        ("0xf32=1", "shape 0xf32 needs 0 values, got 1"),
    ],
)
def test_input_values_must_fit(spec, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_input(spec)


def test_in_range_values_are_kept():
    assert parse_input("3xi8=-128,127,0").tolist() == [-128, 127, 0]
    assert parse_input("2xf16=inf,65504").tolist() == [np.inf, 65504]
    assert np.isnan(parse_input("f32=nan"))
    assert parse_input("2xui4=15").tolist() == [15, 15]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"not numpy", "not a .npy file"),
    ],
)
def test_bad_npy_inputs(tmp_path, content, message):
    path = tmp_path / "x.npy"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message):
        parse_input(f"@{path}")


def test_npy_header_claiming_a_huge_shape(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(4, dtype=np.float32))
    path.write_bytes(path.read_bytes().replace(b"(4,), ", b"(99999999999,), "))
    with pytest.raises(UsageError, match="claims shape"):
        parse_input(f"@{path}")


@pytest.mark.parametrize(
    ("argument", "code", "expected"),
    [
        ("--input=0xf32=", 0, "result[0]: 0xf32=[]"),
        (
            "--input=@/dev/null",
            1,
            "shlo-run: error: cannot read input /dev/null: the file is empty",
        ),
        ("--input=100000000000xf32=1", 1, "more than the limit of"),
        ("--input=3xi8=300", 1, "value 300 is out of range for i8"),
    ],
)
def test_shlo_run_inputs_end_to_end(argument, code, expected):
    result = subprocess.run(
        [str(BIN / "shlo-run"), str(EXAMPLE), argument], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == code, result.stderr
    assert expected in result.stdout + result.stderr
    assert "internal error" not in result.stderr


def test_huge_messages_are_cut(capsys, tmp_path):
    # The parser quotes the whole literal in its message.
    nested = tmp_path / "nested.mlir"
    depth = 20_000
    nested.write_text(
        "func.func @f() {\n  %0 = stablehlo.constant dense<"
        + "[" * depth
        + "1"
        + "]" * depth
        + "> : tensor<1xf32>\n  return\n}\n"
    )
    code, _, err = opt(capsys, str(nested))
    assert code == 1
    assert err.startswith(f"{nested}:2:")
    assert len(err) < 2500
    assert "more characters)" in err


def test_function_names_that_are_not_utf8_reach_every_pass(capsys, tmp_path) -> None:
    # A bit-flipped artifact (found by the fuzzer) whose function name is not
    # UTF-8: shlo-verify-static read it with StringAttr.value and raised.
    source = Path(__file__).parent / "fuzz_regressions" / "non_utf8_symbol.mlirbc"
    code, _, err = opt(
        capsys,
        str(source),
        "--shlo-remove-dynamism=types=tensor<2xcomplex<f64>>",
        "-o",
        str(tmp_path / "out.mlir"),
    )
    assert "internal error" not in err
    assert code in (0, 1)


def test_raw_invalid_utf8_in_an_error_is_located() -> None:
    # Found by the fuzzer: a raw byte that is not UTF-8 in an attribute makes
    # MLIR's error message undecodable; the byte itself is pointed at.
    program = Path(__file__).parent / "fuzz_regressions" / "raw_invalid_utf8.mlir"
    result = subprocess.run(
        [
            str(BIN / "shlo-run"),
            str(program),
            "--target=interpreter",
            "--entry=row_sum",
            "--input=2x3xf32=0",
            "--input=2xf32=0",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert re.match(rf"{re.escape(str(program))}:4:\d+: error: ", result.stderr), result.stderr


NEGATIVE_BROADCAST = """func.func @main(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = chlo.broadcast_add %a, %b {broadcast_dimensions = array<i64: 0, -1>} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
"""


def test_negative_chlo_broadcast_dimensions_are_refused_before_mlir_parses(capsys, tmp_path):
    """Upstream's CHLO verification reads out of bounds on them (it crashed the worker)."""
    source = tmp_path / "neg.mlir"
    source.write_text(NEGATIVE_BROADCAST)
    where = (
        f"{source}:2:35: error: broadcast_dimensions of a CHLO broadcast op must be non-negative"
    )
    code, _, err = opt(capsys, str(source))
    assert (code, err.strip()) == (1, where)
    assert shlo_run.run([str(source), "--input=4x3xf32=1", "--input=3xf32=2"]) == 1
    assert capsys.readouterr().err.strip() == where
    with pytest.raises(ShloError, match=r"broadcast_dimensions of a CHLO broadcast op"):
        shlo.compile(NEGATIVE_BROADCAST)
    # Non-negative ones still parse.
    source.write_text(NEGATIVE_BROADCAST.replace("0, -1", "1"))
    assert opt(capsys, str(source))[0] == 0


@pytest.mark.parametrize("entry", ["2147483648", "10000000000"])
def test_out_of_range_convolution_dimensions_are_refused_before_mlir_parses(
    capsys, tmp_path, entry
):
    """StableHLO's parser sizes a vector by the largest entry: 2^31 aborted the worker out
    of memory (found by the fuzzer), 10^10 on SmallVector's limit."""
    program = Path(__file__).parent / "fuzz_regressions" / "huge_convolution_dimension.mlir"
    source = tmp_path / "conv.mlir"
    source.write_text(program.read_text().replace("2147483648", entry))
    where = (
        f"{source}:2:57: error: convolution dimension {entry} is out of range: "
        "its list names 4 dimensions"
    )
    code, _, err = opt(capsys, str(source))
    assert (code, err.strip()) == (1, where)
    with pytest.raises(ShloError) as error:
        shlo.compile(str(source), entry="unchanged")
    assert str(error.value).startswith(where.split(" error: ")[0])
    # Dimensions in range still parse.
    source.write_text(source.read_text().replace(entry, "0"))
    assert opt(capsys, str(source))[0] == 0


def test_out_of_range_dimensions_of_a_generic_convolution_attribute_are_refused() -> None:
    line = b"  dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 7, f]>,"
    with pytest.raises(ShloError) as error:
        shlo_io.refuse_out_of_range_convolution_dimensions(b"module {\n" + line, "f.mlir")
    assert str(error.value).startswith("f.mlir:2:73: error: convolution dimension 7 is out")


def test_oversized_from_elements_is_refused_before_mlir_parses(capsys) -> None:
    """The parser builds one operand type per element of tensor.from_elements' result
    type before it counts the operands: 10^11 aborted the worker on SmallVector's limit
    (found by the fuzzer)."""
    program = Path(__file__).parent / "fuzz_regressions" / "huge_from_elements.mlir"
    where = (
        f"{program}:6:39: error: tensor.from_elements has 2 operands but its result type "
        "has 99999999999 elements"
    )
    code, _, err = opt(capsys, str(program))
    assert (code, err.strip()) == (1, where)
    # A result type that matches its operands, or a small mismatch the verifier
    # reports itself, reaches the parser.
    for ok in (b"tensor<2xi64>", b"tensor<3xi64>"):
        text = program.read_bytes().replace(b"tensor<99999999999xi64>", ok)
        shlo_io.refuse_oversized_from_elements(text, "f.mlir")


def test_invalid_ir_from_the_linalg_legalization_is_an_error() -> None:
    # Found by the fuzzer: upstream's legalization turns a window of -2^63
    # elements into an invalid tensor.empty, and the canonicalize after it
    # crashed the worker (SIGSEGV). The module is verified after it.
    program = Path(__file__).parent / "fuzz_regressions" / "negative_window.mlir"
    with pytest.raises(ShloError) as error:
        shlo.compile(str(program), entry="reduce_window")
    assert str(error.value).startswith(f"{program}:3:9: error: ")
    assert "crashed" not in str(error.value)
