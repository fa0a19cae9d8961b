"""The CPU pipeline's program-dependent choices (shlo.backends.cpu.pipeline, lowering)."""

from __future__ import annotations

import pytest
from shlo import disk_cache
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import lowering, precompiled, runtime
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


# Pads (shlo-copy-into-slices fills), a reverse, a strided copy, a matmul
# and a convolution: the passes that build linalg ops.
WITHOUT_OPDSL_HOST = r"""
import sys
import numpy as np
from shlo._mlir_compat import use_linalg_without_opdsl
use_linalg_without_opdsl()
import shlo
program = '''
func.func @main(%x: tensor<64x96xf32>, %w: tensor<96x80xf32>, %i: tensor<1x12x12x8xf32>,
                %k: tensor<3x3x8x16xf32>) -> (tensor<70x100xf32>, tensor<64x80xf32>, tensor<1x10x10x16xf32>) {
  %z = stablehlo.constant dense<1.5> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [2, 1], high = [4, 3], interior = [0, 0]
      : (tensor<64x96xf32>, tensor<f32>) -> tensor<70x100xf32>
  %r = stablehlo.reverse %p, dims = [1] : tensor<70x100xf32>
  %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<96x80xf32>) -> tensor<80x96xf32>
  %m = stablehlo.dot_general %x, %t, contracting_dims = [1] x [1]
      : (tensor<64x96xf32>, tensor<80x96xf32>) -> tensor<64x80xf32>
  %c = stablehlo.convolution(%i, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x12x12x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x10x10x16xf32>
  return %r, %m, %c : tensor<70x100xf32>, tensor<64x80xf32>, tensor<1x10x10x16xf32>
}
'''
rng = np.random.default_rng(0)
args = [rng.standard_normal(s).astype(np.float32) for s in [(64, 96), (96, 80), (1, 12, 12, 8), (3, 3, 8, 16)]]
reversed_pad, product, _ = shlo.compile(program, isolate=False)(*args)
expected = np.pad(args[0], ((2, 4), (1, 3)), constant_values=1.5)[:, ::-1]
assert np.array_equal(reversed_pad, expected)
assert np.allclose(product, args[0] @ args[1], rtol=1e-4, atol=1e-4)
print("opdsl imported:", any("linalg.opdsl" in name for name in sys.modules))
# Anything else the real module has is still there, the OpDSL's builders included.
from torch_mlir.dialects import linalg
print("fill from:", linalg.fill.__module__)
"""


def test_compiling_builds_linalg_ops_without_the_opdsl() -> None:
    # The worker installs the dialect module without the OpDSL (70-100 ms of
    # a first compile); nothing in the pipeline may need the real one.
    import subprocess
    import sys

    host = subprocess.run(
        [sys.executable, "-c", WITHOUT_OPDSL_HOST], capture_output=True, text=True, check=False
    )
    assert host.returncode == 0, host.stderr[-3000:]
    assert "opdsl imported: False" in host.stdout
    assert "fill from: torch_mlir.dialects.linalg.opdsl" in host.stdout, host.stdout


def test_kernels_only_by_default_on_hosts_with_their_vectors(monkeypatch):
    # They are written for AVX-512's or AVX2's registers; narrower ones spill
    # (precompiled.enabled).
    monkeypatch.delenv("SHLO_PRECOMPILED_KERNELS", raising=False)
    monkeypatch.setattr(runtime, "linker", lambda: "cc")
    monkeypatch.setattr(disk_cache, "host_has_avx512", lambda: False)
    monkeypatch.setattr(disk_cache, "host_has_avx2_fma", lambda: False)
    assert not precompiled.enabled()
    assert not CpuPipeline().calls_precompiled_kernels
    assert CpuPipeline(precompiled_kernels=True).calls_precompiled_kernels
    monkeypatch.setattr(disk_cache, "host_has_avx2_fma", lambda: True)
    assert precompiled.enabled()
    assert CpuPipeline().calls_precompiled_kernels
    monkeypatch.setattr(disk_cache, "host_has_avx2_fma", lambda: False)
    monkeypatch.setattr(disk_cache, "host_has_avx512", lambda: True)
    assert precompiled.enabled()
