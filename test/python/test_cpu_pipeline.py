"""The CPU pipeline's program-dependent choices (shlo.backends.cpu.pipeline, lowering)."""

from __future__ import annotations

import pytest
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import lowering
from shlo.backends.cpu.pipeline import NARROW_FLOAT_PASSES, CpuPipeline, uses_narrow_floats
from shlo.frontend import default_max_bytes, prepare_static
from shlo.pipeline import run_pipeline


@pytest.mark.parametrize("element", ["f16", "bf16", "f8E4M3FN", "f4E2M1FN", "f6E3M2FN"])
def test_narrow_floats_are_seen(element):
    text = f"""
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {{
  %c = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8x{element}>
  %r = stablehlo.convert %c : (tensor<8x{element}>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}}
"""
    assert uses_narrow_floats(ir.Module.parse(text, new_context()))


F32_PROGRAM = """
func.func @main(%x: tensor<64xf32>, %y: tensor<64xf64>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = stablehlo.exponential %x : tensor<64xf32>
  %t = stablehlo.convert %y : (tensor<64xf64>) -> tensor<64xf32>
  %s = stablehlo.sine %t : tensor<64xf32>
  return %e, %s : tensor<64xf32>, tensor<64xf32>
}
"""


def _elements_run(program: str, monkeypatch) -> tuple[ir.Module, set[str]]:
    ran: set[str] = set()

    def recording(module, elements, *args, **kwargs):
        ran.update(elements)
        return run_pipeline(module, elements, *args, **kwargs)

    monkeypatch.setattr(lowering, "run_pipeline", recording)
    module, _, _, rest = lowering._lower(program, "main", None, CpuPipeline(threads=1), "<p>", None)
    # What lower_to_llvm runs after it: the loops' and the LLVM dialect's stages.
    recording(module, rest, "<p>", verify_each=False)
    return module, ran


def test_programs_without_narrow_floats_skip_their_passes_and_lose_nothing(monkeypatch):
    assert not uses_narrow_floats(ir.Module.parse(F32_PROGRAM, new_context()))
    pipeline = CpuPipeline(threads=1)
    assert NARROW_FLOAT_PASSES <= set(pipeline.elements())
    everything, _, _ = prepare_static(F32_PROGRAM, "main", None, "<p>", default_max_bytes())
    run_pipeline(everything, pipeline.elements(), verify_each=False)
    skipped, ran = _elements_run(F32_PROGRAM, monkeypatch)
    assert not NARROW_FLOAT_PASSES & ran
    assert str(skipped) == str(everything)


def test_programs_with_narrow_floats_run_their_passes(monkeypatch):
    program = F32_PROGRAM.replace("tensor<64xf64>", "tensor<64xbf16>")
    _, ran = _elements_run(program, monkeypatch)
    assert NARROW_FLOAT_PASSES <= ran
