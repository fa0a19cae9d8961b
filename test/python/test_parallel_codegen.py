"""LLVM code generation, and the lowering to the LLVM dialect, in shards (parallel_codegen)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from shlo import _mlir_compat
from shlo._mlir_compat import ir, new_context, write_object_file
from shlo.backends.cpu import CpuBackend, parallel_codegen, precompiled, runtime
from shlo.backends.cpu.lowering import (
    LAST_WHOLE_MODULE_PASS,
    joined_llvm_bytecode,
    lower_to_llvm,
    lower_to_object,
)
from shlo.backends.cpu.pipeline import SCALAR_LOOPS, CpuPipeline

# Several distinct kernels: a reduction, elementwise math, a matmul, and a
# constant (a global in the LLVM module).
PROGRAM = """
func.func @main(%x: tensor<64x96xf32>, %w: tensor<96x32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>) {
  %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0]> : tensor<32xf32>
  %t = stablehlo.tanh %x : tensor<64x96xf32>
  %m = stablehlo.dot_general %t, %w, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %cb = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<32xf32>) -> tensor<64x32xf32>
  %e = stablehlo.exponential %m : tensor<64x32xf32>
  %r = stablehlo.multiply %e, %cb : tensor<64x32xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<64x96xf32>, tensor<f32>) -> tensor<64xf32>
  return %r, %s : tensor<64x32xf32>, tensor<64xf32>
}
"""


def expected(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    scale = np.arange(1, 33, dtype=np.float32)
    return [np.exp(np.tanh(x) @ w) * scale, x.sum(axis=1)]


@pytest.fixture
def lowered():
    return lower_to_llvm(PROGRAM, "main", None, CpuPipeline(threads=1))


@pytest.fixture
def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((64, 96)).astype(np.float32),
        (0.05 * rng.standard_normal((96, 32))).astype(np.float32),
    ]


def _module(lowered) -> ir.Module:
    return ir.Module.parse(lowered.llvm_bytecode, new_context())


def _assert_computes_expected(code: bytes, lowered, inputs: list[np.ndarray]) -> None:
    """``code`` (object code, or LLVM-dialect bytecode) with ``lowered``'s types
    computes what numpy does."""
    function = runtime.LoadedFunction(code, lowered.input_types, lowered.result_types)
    for got, want in zip(function(inputs), expected(*inputs)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)


def test_plan_puts_main_first_and_every_function_once(lowered, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    module = _module(lowered)
    plan = parallel_codegen.plan_shards(module, 2, "main")
    assert plan is not None and len(plan) == 2 and plan[0][0] == "main"
    defined = {parallel_codegen._name(f) for f in parallel_codegen._defined_functions(module)}
    names = [name for shard in plan for name in shard]
    assert sorted(names) == sorted(defined) and len(defined) >= 3


def test_modules_with_mutable_globals_are_not_split(lowered, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    module = _module(lowered)
    assert parallel_codegen.plan_shards(module, 2, "main") is not None
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown(module.context):
        ir.Operation.create(
            "llvm.mlir.global",
            attributes={
                "sym_name": ir.StringAttr.get("counter"),
                "global_type": ir.TypeAttr.get(ir.IntegerType.get_signless(32)),
                "linkage": ir.Attribute.parse("#llvm.linkage<internal>"),
            },
            regions=1,
        )
    assert parallel_codegen.plan_shards(module, 2, "main") is None


def test_split_only_when_it_shortens_the_longest_shard_enough(lowered, monkeypatch):
    module = _module(lowered)
    weights = {
        parallel_codegen._name(f): parallel_codegen._weight(f)
        for f in parallel_codegen._defined_functions(module)
    }
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    plan = parallel_codegen.plan_shards(module, 2, "main")
    # The ops off the critical path: all of them but the heaviest shard's.
    saved = sum(weights.values()) - max(sum(weights[n] for n in shard) for shard in plan)
    assert saved > 0
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", saved)
    assert parallel_codegen.plan_shards(module, 2, "main") == plan
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", saved + 1)
    assert parallel_codegen.plan_shards(module, 2, "main") is None


def test_sharded_object_computes_what_the_serial_one_does(lowered, inputs, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    monkeypatch.setenv("SHLO_THREADS", "2")
    split = []
    original = parallel_codegen.compile_in_parallel

    def recording(*args):
        split.append(original(*args))
        return split[-1]

    monkeypatch.setattr(parallel_codegen, "compile_in_parallel", recording)
    sharded = runtime.compile_object(lowered.llvm_bytecode)
    assert split == [sharded]  # the object is the joined shards
    _assert_computes_expected(sharded, lowered, inputs)


def test_a_failing_shard_falls_back_to_one_thread(lowered, inputs, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    monkeypatch.setenv("SHLO_THREADS", "2")
    original = runtime._object_code

    def failing_elsewhere(module, opt_level, symbol, elsewhere=(), exported=()):
        if symbol != "main" and elsewhere:  # a shard without main, on its thread
            raise RuntimeError("the child's code generator failed")
        return original(module, opt_level, symbol, elsewhere, exported)

    monkeypatch.setattr(runtime, "_object_code", failing_elsewhere)
    split = []
    original_split = parallel_codegen.compile_in_parallel
    monkeypatch.setattr(
        parallel_codegen,
        "compile_in_parallel",
        lambda *args: split.append(original_split(*args)) or split[-1],
    )
    code = runtime.compile_object(lowered.llvm_bytecode)
    assert split == [None]
    _assert_computes_expected(code, lowered, inputs)


def test_shards_are_compiled_at_the_same_time(lowered, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    both_started = threading.Barrier(2, timeout=30)

    def compile_one(shard, symbol, elsewhere, exported):
        both_started.wait()  # broken (an error, so no object) if the shards ran in turn
        return runtime.object_code(shard, symbol, elsewhere, exported)

    assert parallel_codegen.compile_in_parallel(_module(lowered), compile_one, 2)


def test_a_shard_whose_thread_cannot_start_leaves_the_module_whole(lowered, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    start = threading.Thread.start
    started = []

    def start_one(thread):
        if thread.name == "shlo-codegen":
            if started:
                raise RuntimeError("can't start new thread")
            started.append(thread)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_one)
    compile_one = runtime.object_code
    assert parallel_codegen.compile_in_parallel(_module(lowered), compile_one, 2) is None
    assert len(started) == 1 and not started[0].is_alive()


def test_an_object_file_needs_its_symbol_defined(lowered, tmp_path):
    with pytest.raises(RuntimeError, match="no symbol shlo_missing"):
        write_object_file(_module(lowered).operation, str(tmp_path / "code.o"), "shlo_missing", 2)


def test_a_deferred_engine_lives_until_the_finished_ones_are_destroyed(lowered, monkeypatch):
    monkeypatch.setattr(_mlir_compat, "_teardown_deferred", True)
    monkeypatch.setattr(_mlir_compat, "_engines_to_destroy", [])
    monkeypatch.setenv("SHLO_THREADS", "1")  # one engine: no shards
    code = runtime.compile_object(lowered.llvm_bytecode)
    assert len(_mlir_compat._engines_to_destroy) == 1
    _mlir_compat.destroy_finished_engines()
    assert _mlir_compat._engines_to_destroy == []
    assert code.startswith(b"\x7fELF")


def test_not_split_on_one_thread(lowered, monkeypatch):
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_OPS", 0)
    assert parallel_codegen.compile_in_parallel(_module(lowered), None, 1) is None


@pytest.fixture
def split_lowering(monkeypatch):
    """Lowerings split into shards whatever their size, as in the worker on 2 cores."""
    monkeypatch.setattr(parallel_codegen, "MIN_SAVED_FUNCTION_OPS", 0)
    monkeypatch.setattr(parallel_codegen, "fork_allowed", True)
    monkeypatch.setenv("SHLO_THREADS", "2")


def test_functions_lowered_in_shards_compute_what_one_module_does(split_lowering, inputs):
    sharded = lower_to_object(PROGRAM, "main", None, CpuPipeline(threads=2))
    assert len(sharded.llvm_shards) == 2 and not sharded.llvm_bytecode
    _assert_computes_expected(sharded.object_code, sharded, inputs)
    # The shards make one LLVM module again for shlo-compile --emit=llvm-mlir:
    # every function defined once, none left a declaration.
    joined = ir.Module.parse(joined_llvm_bytecode(sharded.llvm_shards), new_context())
    functions = [op.operation for op in joined.body.operations if op.operation.name == "llvm.func"]
    names = [parallel_codegen._name(f) for f in functions]
    assert len(names) == len(set(names))
    defined = {parallel_codegen._name(f) for f in parallel_codegen._defined_functions(joined)}
    kernels = {name for name in names if name.startswith("shlo_kernel")}
    assert "main" in defined and kernels and kernels <= defined
    # Declared only: the runtime's allocation functions and the precompiled matmul.
    assert {n for n in set(names) - defined if not n.startswith("_mlir_")} <= set(
        precompiled.SYMBOLS
    )


def test_the_shards_objects_are_emitted_as_one_object(split_lowering, inputs):
    # The host links the shards' archive whole; shlo-compile writes one ELF object.
    sharded = lower_to_object(PROGRAM, "main", None, CpuPipeline(threads=2))
    assert sharded.object_code.startswith(b"!<arch>\n")
    emitted = CpuBackend().emit("object", sharded)
    assert emitted.startswith(b"\x7fELF")
    _assert_computes_expected(emitted, sharded, inputs)


def test_shards_whose_calls_disagree_with_their_callees_are_not_joined(
    split_lowering, inputs, monkeypatch
):
    # A declaration that lost the callee's llvm.bareptr lowers to another
    # signature: the children's lists of signatures differ, and the module
    # is lowered in one piece instead.
    declare = parallel_codegen._declare_other_functions

    def losing_bare_pointers(module, keep):
        declare(module, keep)
        for op in module.body.operations:
            function = op.operation
            if function.name != "func.func" or len(function.regions[0].blocks):
                continue
            if "llvm.bareptr" in function.attributes:
                del function.attributes["llvm.bareptr"]

    monkeypatch.setattr(parallel_codegen, "_declare_other_functions", losing_bare_pointers)
    lowered = lower_to_object(PROGRAM, "main", None, CpuPipeline(threads=2))
    assert not lowered.llvm_shards and lowered.llvm_bytecode
    _assert_computes_expected(lowered.object_code, lowered, inputs)


def test_shards_calling_a_function_kept_internal_are_not_joined(
    split_lowering, inputs, monkeypatch
):
    # Had no function been named from another shard, each shard would keep
    # its kernels internal, and main's calls of the other's would not link:
    # the children's lists of calls show it, and the module is lowered whole.
    monkeypatch.setattr(parallel_codegen, "_exported", lambda plan, referenced: [set()] * len(plan))
    # The whole module's LLVM is not split either: its shards would get the same
    # empty lists.
    monkeypatch.setattr(parallel_codegen, "compile_in_parallel", lambda *arguments: None)
    lowered = lower_to_object(PROGRAM, "main", None, CpuPipeline(threads=2))
    assert not lowered.llvm_shards and lowered.llvm_bytecode
    _assert_computes_expected(lowered.object_code, lowered, inputs)


def test_only_the_entry_is_external_in_a_module_compiled_whole(lowered, inputs, monkeypatch):
    # The JIT wraps every external function (_mlir_<name>); LLVM then
    # compiled a wrapper for each kernel that nothing calls.
    monkeypatch.setenv("SHLO_THREADS", "1")
    code = runtime.compile_object(lowered.llvm_bytecode)
    assert code.startswith(b"\x7fELF")  # one object, not shards
    assert b"_mlir_main" in code and b"_mlir_shlo_kernel" not in code
    _assert_computes_expected(code, lowered, inputs)


def test_a_pipeline_without_kernel_outlining_is_lowered_whole(split_lowering, inputs, monkeypatch):
    # Only after shlo-outline-kernels is each function known to lower on its
    # own; the scalar strategy has no such point, so its module is not split
    # before LLVM.
    pipeline = CpuPipeline(strategy=SCALAR_LOOPS, threads=2)
    assert LAST_WHOLE_MODULE_PASS not in pipeline.elements()
    splits = []
    original = parallel_codegen.lower_in_parallel
    monkeypatch.setattr(
        parallel_codegen,
        "lower_in_parallel",
        lambda *args: splits.append(args) or original(*args),
    )
    lowered = lower_to_object(PROGRAM, "main", None, pipeline)
    assert not splits
    assert not lowered.llvm_shards and lowered.llvm_bytecode
    _assert_computes_expected(lowered.object_code, lowered, inputs)
