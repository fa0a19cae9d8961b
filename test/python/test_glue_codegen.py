"""Modules that only call precompiled kernels, compiled by llvmlite's LLVM with a
target machine kept for the process (shlo.backends.cpu.glue_codegen)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import shlo
from jax import export
from shlo._mlir_compat import ir, new_context
from shlo.backends.cpu import glue_codegen, object_loader, precompiled, runtime
from shlo.backends.cpu.lowering import lower_to_llvm
from shlo.diagnostics import ShloError
from shlo.ir_utils import defined_function

pytestmark = [
    pytest.mark.skipif(not precompiled.enabled(), reason="no C compiler"),
    pytest.mark.skipif(not glue_codegen.prepare(), reason="llvmlite is not installed"),
]


def _lowered(fn, *args):
    exported = export.export(jax.jit(fn), platforms=["cpu"])(*args)
    return lower_to_llvm(exported.mlir_module_serialized, "main", None)


def _module(llvm_bytecode: bytes) -> ir.Module:
    return ir.Module.parse(llvm_bytecode, new_context())


def _matmul_and_softmax(x, w):
    return x @ w, jax.nn.softmax(x, axis=-1)


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture
def glue_objects(monkeypatch):
    """The objects glue_codegen made during the test."""
    made: list[bytes] = []
    original = glue_codegen.object_code

    def recording(module, entry):
        code = original(module, entry)
        if code is not None:
            made.append(code)
        return code

    monkeypatch.setattr(glue_codegen, "object_code", recording)
    return made


def test_a_program_of_kernel_calls_is_compiled_by_glue_codegen(glue_objects) -> None:
    x, w = _random(64, 96), _random(96, 32, seed=1)
    lowered = _lowered(_matmul_and_softmax, x, w)
    assert glue_codegen.only_glue(_module(lowered.llvm_bytecode))
    code = runtime.compile_object(lowered.llvm_bytecode)
    assert glue_objects == [code]
    function = runtime.LoadedFunction(code, lowered.input_types, lowered.result_types)
    product, softmax = function([x, w])
    np.testing.assert_allclose(product, x.astype(np.float64) @ w, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(softmax, jax.nn.softmax(x, axis=-1), rtol=1e-5, atol=1e-6)


def test_glue_code_gives_the_bits_of_the_execution_engines(monkeypatch) -> None:
    x, w = _random(64, 96), _random(96, 32, seed=1)
    lowered = _lowered(_matmul_and_softmax, x, w)
    glue = runtime.compile_object(lowered.llvm_bytecode)
    monkeypatch.setattr(glue_codegen, "object_code", lambda module, entry: None)
    engine = runtime.compile_object(lowered.llvm_bytecode)
    assert glue != engine
    results = [
        runtime.LoadedFunction(code, lowered.input_types, lowered.result_types)([x, w])
        for code in (glue, engine)
    ]
    for got, want in zip(*results, strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_loader_takes_glue_objects_without_a_linker() -> None:
    lowered = _lowered(lambda x, w: x @ w, _random(8, 16), _random(16, 4))
    code = runtime.compile_object(lowered.llvm_bytecode)
    symbols = {"shlo_matmul_f32": 1}
    image = object_loader.load(code, symbols.get)
    assert image is not None  # relocations R_X86_64_64 and PC64 only, like the JIT's
    assert "_mlir_main" in image.symbols  # the entry's packed wrapper
    image.release()


def test_glue_objects_link_with_ld_too(glue_objects, monkeypatch) -> None:
    # The path shlo-compile's objects and any loader-declined code take.
    monkeypatch.setattr(runtime, "_LOAD_WITHOUT_LINKER", False)
    x, w = _random(32, 48), _random(48, 16, seed=3)
    lowered = _lowered(_matmul_and_softmax, x, w)
    code = runtime.compile_object(lowered.llvm_bytecode)
    assert glue_objects == [code]
    product, softmax = runtime.LoadedFunction(code, lowered.input_types, lowered.result_types)(
        [x, w]
    )
    np.testing.assert_allclose(product, x.astype(np.float64) @ w, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(softmax, jax.nn.softmax(x, axis=-1), rtol=1e-5, atol=1e-6)


def test_modules_with_generated_kernels_stay_with_the_execution_engine() -> None:
    lowered = _lowered(lambda x: jnp.tanh(x) * 2.0 + 1.0, _random(64, 64))
    module = _module(lowered.llvm_bytecode)
    assert not glue_codegen.only_glue(module)
    assert glue_codegen.object_code(module, "main") is None
    assert defined_function(module.operation, "_mlir_main") is None


def test_a_module_llvmlite_cannot_read_goes_back_unchanged(monkeypatch) -> None:
    x, w = _random(16, 16), _random(16, 8, seed=1)
    lowered = _lowered(lambda x, w: x @ w, x, w)
    module = _module(lowered.llvm_bytecode)
    before = str(module)

    def unreadable(text: str) -> str:
        raise ShloError("llvmlite cannot read x86_fp80 constants")

    monkeypatch.setattr(glue_codegen, "to_llvmlite_syntax", unreadable)
    assert glue_codegen.object_code(module, "main") is None
    assert str(module) == before  # no wrapper left for the JIT to clash with
    code = runtime.compile_object(lowered.llvm_bytecode)
    got = runtime.LoadedFunction(code, lowered.input_types, lowered.result_types)([x, w])
    np.testing.assert_allclose(got[0], x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)


GLOBAL_MODULE = """
llvm.mlir.global private constant @table(dense<1.0> : tensor<{n}xf32>) : !llvm.array<{n} x f32>
llvm.func @main(%arg0: !llvm.ptr) attributes {{passthrough = ["noinline", "optnone"]}} {{
  llvm.return
}}
"""


@pytest.mark.parametrize(("elements", "glue"), [(16, True), (4096, True), (4097, False)])
def test_large_globals_stay_with_the_execution_engine(elements: int, glue: bool) -> None:
    # Their text would be printed and parsed again.
    module = ir.Module.parse(GLOBAL_MODULE.format(n=elements), new_context())
    assert glue_codegen.only_glue(module) is glue


COMPLEX_GLOBAL_MODULE = """
llvm.mlir.global private constant @table(dense<(0.0, 1.0)> : tensor<4xcomplex<f32>>)
    : !llvm.array<4 x struct<(f32, f32)>>
llvm.func @main(%arg0: !llvm.ptr) attributes {passthrough = ["noinline", "optnone"]} {
  llvm.return
}
"""


def test_complex_globals_the_bindings_cannot_read_stay_with_the_execution_engine() -> None:
    # Complex Cholesky factorizations' glue holds one (test_lower_cholesky).
    module = ir.Module.parse(COMPLEX_GLOBAL_MODULE, new_context())
    assert not glue_codegen.only_glue(module)


def test_a_compile_through_the_worker_matches_jax() -> None:
    x, w = _random(128, 64), _random(64, 48, seed=2)
    exported = export.export(jax.jit(_matmul_and_softmax), platforms=["cpu"])(x, w)
    executable = shlo.compile(exported.mlir_module_serialized)
    product, softmax = executable(x, w)
    want = jax.jit(_matmul_and_softmax)(x, w)
    np.testing.assert_allclose(product, want[0], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(softmax, want[1], rtol=1e-5, atol=1e-6)


def test_the_warm_up_glue_compiles() -> None:
    # prepare() compiles it so that LLVM's first-use setup is done before a request
    # needs it; a failure there is swallowed, so it is checked here.
    code = glue_codegen._machine.emit_object(
        glue_codegen._llvm.parse_assembly(glue_codegen._WARM_UP_GLUE)
    )
    assert bytes(code).startswith(b"\x7fELF")
