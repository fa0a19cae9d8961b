"""The backend seam: targets come from a registry, the shared parts depend on no backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shlo
from shlo.backends import get_backend, register_backend, registered_targets
from shlo.backends.cpu import CpuBackend

BIN = Path(sys.executable).parent
PROGRAM = """
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %a, %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def test_unknown_target_lists_the_registered_ones() -> None:
    with pytest.raises(ValueError) as error:
        shlo.compile(PROGRAM, target="tpu")
    message = str(error.value)
    assert "\n" not in message
    assert message == f"unknown target 'tpu'; registered targets: {', '.join(registered_targets())}"
    assert {"cpu", "cuda"} <= set(registered_targets())


def test_shlo_run_unknown_target_is_one_line(tmp_path: Path) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)
    result = subprocess.run(
        [BIN / "shlo-run", source, "--input=3xf32=1", "--target=tpu"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "shlo-run: error: unknown target 'tpu'; registered targets: "
        + ", ".join(registered_targets())
    ]


class DoublingBackend(CpuBackend):
    """A third backend for the test: the CPU's code, with every result doubled."""

    name = "doubling"

    def load(self, lowered):  # type: ignore[no-untyped-def]
        function = super().load(lowered)
        return lambda arrays: [2 * result for result in function(arrays)]


def test_a_registered_backend_compiles_its_target() -> None:
    register_backend("doubling", f"{__name__}:DoublingBackend")
    try:
        executable = shlo.compile(PROGRAM, target="doubling", isolate=False)
        assert executable.target == "doubling"
        np.testing.assert_array_equal(executable(np.ones(3, np.float32)), [4, 4, 4])
        # The CPU target is unchanged.
        np.testing.assert_array_equal(shlo.compile(PROGRAM)(np.ones(3, np.float32)), [2, 2, 2])
    finally:
        from shlo import backends

        del backends._REGISTRY["doubling"]
    with pytest.raises(ValueError, match="unknown target 'doubling'"):
        get_backend("doubling")


def test_register_backend_wants_an_import_path() -> None:
    with pytest.raises(ValueError, match="module:attribute"):
        register_backend("x", "DoublingBackend")


def test_cpu_options_refuse_an_arch() -> None:
    with pytest.raises(ValueError, match="arch='sm_90' is for target='cuda'"):
        shlo.compile(PROGRAM, arch="sm_90")


def test_the_interpreter_and_frontend_load_no_backend() -> None:
    """Interpreting a program runs the frontend's passes and imports no backend."""
    code = f"""
import sys, numpy as np
from shlo.interpreter import interpret
from shlo.frontend import prepare_static
print(interpret({PROGRAM!r}.encode(), "main", [np.ones(3, np.float32)]))
prepare_static({PROGRAM!r}.encode(), "main", None, "<t>", 1 << 20)
print(sorted(m for m in sys.modules if m.startswith(("shlo.backends.", "shlo.passes.cpu"))))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines() == ["[array([2., 2., 2.], dtype=float32)]", "[]"]


def test_pass_registry_names_match_the_classes() -> None:
    from shlo.passes import PASSES

    assert len(PASSES) > 40
    for name in PASSES:
        assert PASSES[name].argument == name


def test_shlo_compile_writes_cpu_object_code(tmp_path: Path) -> None:
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)
    out = tmp_path / "p.o"
    result = subprocess.run(
        [BIN / "shlo-compile", source, "-o", out], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x7fELF")
    result = subprocess.run(
        [BIN / "shlo-compile", source, "--emit=llvm-mlir", "-o", "-"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "llvm.func @main" in result.stdout
    result = subprocess.run(
        [BIN / "shlo-compile", source, "--emit=ptx", "-o", "-"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "shlo-compile: error: --emit=ptx: target cpu emits object, llvm-mlir"
    )
