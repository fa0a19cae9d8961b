"""shlo.compile on the CPU: sources, input checks, dtypes, specialization and isolation."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.io import module_to_bytecode, module_to_portable_artifact

MLP = """
func.func @main(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %0 = stablehlo.add %x, %bb : tensor<2x3xf32>
  %1 = call @relu(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
  return %1, %2 : tensor<2x3xf32>, tensor<f32>
}
func.func private @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<2x3xf32>
  %0 = stablehlo.maximum %x, %zero : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""

DYNAMIC = """
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.exponential %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
"""

X = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
B = np.array([0.5, 0.5, 4.0], np.float32)


def expected_mlp(x: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    relu = np.maximum(x + b, 0)
    return relu, relu.sum()


@pytest.mark.parametrize("form", ["text", "bytecode", "artifact", "path", "module"])
def test_every_source_form_compiles(form: str, tmp_path) -> None:
    context = shlo.new_context()
    module = shlo.load_module(MLP, context)
    sources = {
        "text": lambda: MLP,
        "bytecode": lambda: module_to_bytecode(module),
        "artifact": lambda: module_to_portable_artifact(module, "1.0.0"),
        "module": lambda: module,
    }
    if form == "path":
        path = tmp_path / "mlp.mlir"
        path.write_text(MLP)
        source = path
    else:
        source = sources[form]()
    relu, total = shlo.compile(source, isolate=False)(X, B)
    want_relu, want_total = expected_mlp(X, B)
    np.testing.assert_allclose(relu, want_relu)
    np.testing.assert_allclose(total, want_total, rtol=1e-6)


def test_chlo_is_legalized() -> None:
    source = """
    func.func @main(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = chlo.broadcast_add %x, %b {broadcast_dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = chlo.erf %0 : tensor<2x3xf32> -> tensor<2x3xf32>
      return %1 : tensor<2x3xf32>
    }
    """
    import math

    want = np.vectorize(math.erf)((X + B).astype(np.float64))
    np.testing.assert_allclose(
        shlo.compile(source, isolate=False)(X, B), want, rtol=1e-6, atol=1e-7
    )


def test_isolated_compile_matches_in_process() -> None:
    isolated = shlo.compile(MLP)(X, B)
    local = shlo.compile(MLP, isolate=False)(X, B)
    for a, b in zip(isolated, local):
        np.testing.assert_array_equal(a, b)


def test_other_entry_and_no_arguments() -> None:
    source = """
    func.func @main() -> tensor<i32> {
      %0 = stablehlo.constant dense<1> : tensor<i32>
      return %0 : tensor<i32>
    }
    func.func @seven() -> tensor<2xi32> {
      %0 = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
      %1 = stablehlo.add %0, %0 : tensor<2xi32>
      return %1 : tensor<2xi32>
    }
    """
    np.testing.assert_array_equal(shlo.compile(source, entry="seven", isolate=False)(), [6, 8])
    assert shlo.compile(source, isolate=False)() == 1


def test_unknown_entry_names_the_functions() -> None:
    with pytest.raises(shlo.ShloError, match=r"no function @nope in the module; it has @main"):
        shlo.compile(DYNAMIC, entry="nope")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((X,), r"@main takes 2 argument\(s\), got 1"),
        (
            (X.astype(np.float64), B),
            r"argument 0 of @main: expected dtype float32 \(f32\), got float64",
        ),
        ((X, B[None]), r"argument 1 of @main: expected shape 3, got 1x3"),
        ((X.T, B), r"argument 0 of @main: expected shape 2x3, got 3x2"),
    ],
)
def test_wrong_inputs_raise_value_error(args: tuple[np.ndarray, ...], message: str) -> None:
    exe = shlo.compile(MLP, isolate=False)
    with pytest.raises(ValueError, match=message):
        exe(*args)


def test_non_contiguous_inputs_are_accepted() -> None:
    wide = np.zeros((2, 6), np.float32)
    wide[:, ::2] = X
    relu, _ = shlo.compile(MLP, isolate=False)(wide[:, ::2], B)
    np.testing.assert_allclose(relu, expected_mlp(X, B)[0])


def test_dynamic_module_is_specialized_per_shape_and_cached() -> None:
    exe = shlo.compile(DYNAMIC, isolate=False)
    assert exe.is_dynamic and exe.compiled_signatures == []
    for rows in (1, 5, 1):
        x = np.linspace(-1, 1, rows * 4, dtype=np.float32).reshape(rows, 4)
        np.testing.assert_allclose(exe(x), np.exp(x), rtol=1e-6)
    # Least recently used first.
    assert exe.compiled_signatures == [(((5, 4), "f32"),), (((1, 4), "f32"),)]
    with pytest.raises(ValueError, match=r"expected shape \?x4, got 5x3"):
        exe(np.zeros((5, 3), np.float32))


def test_results_are_fresh_arrays() -> None:
    exe = shlo.compile(MLP, isolate=False)
    first, _ = exe(X, B)
    second, _ = exe(X, B)
    # Each result is its own writable, contiguous, cache-line-aligned memory.
    assert first.flags.writeable and first.flags.c_contiguous
    assert first.ctypes.data % 64 == 0
    assert not np.shares_memory(first, second)


def test_duplicate_and_argument_results() -> None:
    source = """
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = stablehlo.negate %x : tensor<3xf32>
      return %0, %0, %x : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    }
    """
    x = np.array([1, 2, 3], np.float32)
    a, b, c = shlo.compile(source, isolate=False)(x)
    np.testing.assert_array_equal(a, -x)
    np.testing.assert_array_equal(b, -x)
    np.testing.assert_array_equal(c, x)
    assert not np.shares_memory(a, b) and not np.shares_memory(c, x)


# (MLIR element type, numpy dtype, op, numpy reference)
DTYPES = [
    ("i1", np.bool_, "xor", np.logical_xor),
    ("i2", ml_dtypes.int2, "add", None),
    ("i4", ml_dtypes.int4, "add", None),
    ("i8", np.int8, "add", np.add),
    ("i16", np.int16, "multiply", np.multiply),
    ("i32", np.int32, "subtract", np.subtract),
    ("i64", np.int64, "add", np.add),
    ("ui2", ml_dtypes.uint2, "add", None),
    ("ui4", ml_dtypes.uint4, "add", None),
    ("ui8", np.uint8, "add", np.add),
    ("ui16", np.uint16, "divide", np.floor_divide),
    ("ui32", np.uint32, "maximum", np.maximum),
    ("ui64", np.uint64, "add", np.add),
    ("f16", np.float16, "multiply", np.multiply),
    ("bf16", ml_dtypes.bfloat16, "add", np.add),
    ("f32", np.float32, "divide", np.divide),
    ("f64", np.float64, "subtract", np.subtract),
    ("f8E4M3FN", ml_dtypes.float8_e4m3fn, "add", np.add),
    ("f8E5M2", ml_dtypes.float8_e5m2, "multiply", np.multiply),
    ("f4E2M1FN", ml_dtypes.float4_e2m1fn, "add", np.add),
    ("complex<f32>", np.complex64, "multiply", np.multiply),
    ("complex<f64>", np.complex128, "add", np.add),
]


@pytest.mark.parametrize(
    ("element", "dtype", "op", "reference"), DTYPES, ids=[d[0] for d in DTYPES]
)
def test_every_element_type_runs(element: str, dtype, op: str, reference) -> None:
    source = f"""
    func.func @main(%a: tensor<4x{element}>, %b: tensor<4x{element}>) -> tensor<4x{element}> {{
      %0 = stablehlo.{op} %a, %b : tensor<4x{element}>
      return %0 : tensor<4x{element}>
    }}
    """
    if element in ("i1",):
        a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    elif element.startswith(("i", "ui")):
        info = ml_dtypes.iinfo(dtype) if element[-1] in "24" else np.iinfo(dtype)
        a = np.array([int(info.min), 1, int(info.max), 0], dtype=object).astype(dtype)
        b = np.array([1, 1, 1, 1] if op != "divide" else [1, 1, 2, 3]).astype(dtype)
    else:
        a = np.array([1.5, -2, 0.5, 3]).astype(dtype)
        b = np.array([0.5, 1, 1, -1.5]).astype(dtype)
    result = shlo.compile(source, isolate=False)(a, b)
    assert result.dtype == np.dtype(dtype)
    if reference is None:  # wrapping sub-byte arithmetic
        bits = int(element.lstrip("ui"))
        wide = a.astype(np.int64) + b.astype(np.int64)
        low = wide & ((1 << bits) - 1)
        want = np.where(element.startswith("i") & (low >= 1 << (bits - 1)), low - (1 << bits), low)
        np.testing.assert_array_equal(result.astype(np.int64), want)
    elif np.dtype(dtype).itemsize >= 2 or element in ("i8", "ui8", "i1"):
        with np.errstate(over="ignore"):
            want = reference(a, b).astype(dtype)
        np.testing.assert_array_equal(result, want)
    else:  # f8/f4: computed in f32 and rounded once
        want = reference(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
        np.testing.assert_array_equal(result.astype(np.float32), want.astype(np.float32))


def test_pass_abort_is_reported_not_fatal() -> None:
    # The sparsifier aborts (LLVM fatal error) on StableHLO input; the isolated
    # worker dies instead of the test process.
    crashing = CpuPipeline(pre_linalg=("func.func(sparsifier)",))
    with pytest.raises(shlo.ShloError, match=r"crashed"):
        shlo.compile(MLP, pipeline=crashing)
    np.testing.assert_allclose(shlo.compile(MLP)(X, B)[0], expected_mlp(X, B)[0])


def test_unknown_target() -> None:
    with pytest.raises(ValueError, match=r"unknown target 'tpu'"):
        shlo.compile(MLP, target="tpu")


def test_inputs_are_never_written() -> None:
    source = """
    func.func @main(%x: tensor<4xf32>, %u: tensor<1xf32>) -> tensor<4xf32> {
      %i = stablehlo.constant dense<1> : tensor<i32>
      %0 = stablehlo.dynamic_update_slice %x, %u, %i : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    x, u = np.zeros(4, np.float32), np.ones(1, np.float32)
    np.testing.assert_array_equal(shlo.compile(source, isolate=False)(x, u), [0, 1, 0, 0])
    np.testing.assert_array_equal(x, np.zeros(4))


def test_quantized_arguments_pass_their_storage_integers() -> None:
    source = """
    func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<4xf32> {
      %0 = stablehlo.uniform_dequantize %x : (tensor<4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    exe = shlo.compile(source, isolate=False)
    np.testing.assert_array_equal(exe(np.array([-1, 0, 1, 10], np.int8)), [0, 0.5, 1, 5.5])


def test_bf16_arithmetic_keeps_subnormals() -> None:
    # LLVM's native bf16 rounding flushes subnormals on AVX512-BF16 hosts.
    source = """
    func.func @main(%a: tensor<3xbf16>, %b: tensor<3xbf16>) -> (tensor<3xbf16>, tensor<3xbf16>) {
      %0 = stablehlo.multiply %a, %b : tensor<3xbf16>
      %1 = stablehlo.exponential %a : tensor<3xbf16>
      return %0, %1 : tensor<3xbf16>, tensor<3xbf16>
    }
    """
    a = np.array([1e-20, -90, 2], ml_dtypes.bfloat16)
    b = np.array([1e-19, 1, 3], ml_dtypes.bfloat16)
    product, exp = shlo.compile(source, isolate=False)(a, b)
    wide = a.astype(np.float32)
    want_product = (wide * b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(product.view(np.uint16), want_product.view(np.uint16))
    np.testing.assert_array_equal(
        exp.view(np.uint16), np.exp(wide).astype(ml_dtypes.bfloat16).view(np.uint16)
    )


def test_concurrent_calls_from_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    exe = shlo.compile(MLP, isolate=False)
    inputs = [(X * k, B * k) for k in range(16)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda args: exe(*args), inputs * 8))
    for (x, b), (relu, total) in zip(inputs * 8, results):
        want_relu, want_total = expected_mlp(x, b)
        np.testing.assert_allclose(relu, want_relu)
        np.testing.assert_allclose(total, want_total, rtol=1e-5)


def test_expm1_and_log1p_are_accurate_near_zero() -> None:
    source = """
    func.func @main(%x: tensor<4xf64>, %y: tensor<4xf32>) -> (tensor<4xf64>, tensor<4xf32>) {
      %0 = stablehlo.exponential_minus_one %x : tensor<4xf64>
      %1 = stablehlo.log_plus_one %y : tensor<4xf32>
      return %0, %1 : tensor<4xf64>, tensor<4xf32>
    }
    """
    x = np.array([1e-12, -3e-9, 0.47, -30.0])
    y = np.array([1e-9, -2e-7, 0.5, 100.0], np.float32)
    expm1, log1p = shlo.compile(source, isolate=False)(x, y)
    np.testing.assert_allclose(expm1, np.expm1(x), rtol=2e-16)
    np.testing.assert_allclose(log1p, np.log1p(y), rtol=2e-7)


def test_many_arguments_of_every_rank_reach_the_entry() -> None:
    """The entry takes one pointer to its buffers' data pointers (shlo-pack-entry-arguments).

    300 arguments of ranks 0 to 3, each used once, with a zero-size one and
    results of several ranks: every pointer must land in the right buffer.
    """
    shapes = [(), (3,), (2, 3), (2, 1, 3)]
    count = 300
    args = [np.full(shapes[i % 4], i, np.float32) for i in range(count)]
    lines, total = [], None
    for i in range(count):
        value = f"%a{i}"
        if shapes[i % 4] != (2, 3):
            kind = "tensor<" + "".join(f"{d}x" for d in shapes[i % 4]) + "f32>"
            dims = {(): "[]", (3,): "[1]", (2, 1, 3): "[0, 1, 1]"}[shapes[i % 4]]
            if shapes[i % 4] == (2, 1, 3):
                lines.append(f"%r{i} = stablehlo.reshape %a{i} : ({kind}) -> tensor<2x3xf32>")
                value = f"%r{i}"
            else:
                lines.append(
                    f"%r{i} = stablehlo.broadcast_in_dim %a{i}, dims = {dims}"
                    f" : ({kind}) -> tensor<2x3xf32>"
                )
                value = f"%r{i}"
        if total is None:
            total = value
        else:
            lines.append(f"%s{i} = stablehlo.add {total}, {value} : tensor<2x3xf32>")
            total = f"%s{i}"
    params = ", ".join(
        f"%a{i}: tensor<" + "".join(f"{d}x" for d in shapes[i % 4]) + "f32>" for i in range(count)
    )
    body = "\n".join(lines)
    source = f"""
    func.func @main({params}, %empty: tensor<0x5xf32>)
        -> (tensor<2x3xf32>, tensor<f32>, tensor<0x5xf32>, tensor<3xf32>) {{
      {body}
      %neg = stablehlo.negate %empty : tensor<0x5xf32>
      return {total}, %a0, %neg, %a{count - 3} : tensor<2x3xf32>, tensor<f32>, tensor<0x5xf32>, tensor<3xf32>
    }}
    """
    empty = np.zeros((0, 5), np.float32)
    total_value, first, negated, last_vector = shlo.compile(source, isolate=False)(*args, empty)
    np.testing.assert_array_equal(total_value, np.full((2, 3), sum(range(count)), np.float32))
    assert first.shape == () and first == 0
    assert negated.shape == (0, 5)
    np.testing.assert_array_equal(last_vector, np.full(3, count - 3, np.float32))


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux's /proc")
def test_repeated_calls_reuse_their_buffers() -> None:
    # Layers of matmul and tanh: intermediates of 1 MB and row sums of 2 KB,
    # which each call frees into the runtime's cache and the next takes again.
    t, r = "tensor<512x512xf32>", "tensor<512xf32>"
    body, h = [], "%x"
    for i in range(3):
        body += [
            f"%m{i} = stablehlo.dot_general {h}, %w, contracting_dims = [1] x [0]"
            f" : ({t}, {t}) -> {t}",
            f"%s{i} = stablehlo.reduce(%m{i} init: %zero) applies stablehlo.add"
            f" across dimensions = [1] : ({t}, tensor<f32>) -> {r}",
            f"%c{i} = stablehlo.broadcast_in_dim %s{i}, dims = [0] : ({r}) -> {t}",
            f"%d{i} = stablehlo.multiply %c{i}, %eps : {t}",
            f"%t{i} = stablehlo.tanh %m{i} : {t}",
            f"%h{i} = stablehlo.add %t{i}, %d{i} : {t}",
        ]
        h = f"%h{i}"
    source = (
        f"func.func @main(%x: {t}, %w: {t}) -> {t} {{\n"
        "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
        f"  %eps = stablehlo.constant dense<1.0e-3> : {t}\n  "
        + "\n  ".join(body)
        + f"\n  return {h} : {t}\n}}"
    )
    exe = shlo.compile(source)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 512), dtype=np.float32)
    w = rng.standard_normal((512, 512), dtype=np.float32) / 32
    want = exe(x, w)
    for _ in range(20):  # the allocator's and numpy's caches fill up
        exe(x, w)
    before = _resident_bytes()
    for _ in range(300):
        np.testing.assert_array_equal(exe(x, w), want)
    # Blocks kept but never taken again would pile up to the cache's 512 MiB.
    assert _resident_bytes() - before < 64 << 20


def _worker_tasks(monkeypatch) -> list[str]:
    from shlo.isolation import shared_worker

    tasks: list[str] = []
    worker = shared_worker()
    real_call = worker.call

    def recording(task, *args, **kwargs):
        tasks.append(task)
        return real_call(task, *args, **kwargs)

    monkeypatch.setattr(worker, "call", recording)
    return tasks


def test_a_static_program_compiles_in_one_worker_request(monkeypatch):
    tasks = _worker_tasks(monkeypatch)
    exe = shlo.compile(MLP)
    assert tasks == ["inspect_and_lower"]
    for got, want in zip(exe(X, B), expected_mlp(X, B)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_dynamic_program_is_lowered_per_shape(monkeypatch):
    tasks = _worker_tasks(monkeypatch)
    exe = shlo.compile(DYNAMIC)
    assert tasks == ["inspect_and_lower"]
    np.testing.assert_allclose(exe(np.ones((3, 4), np.float32)), np.full((3, 4), np.e), rtol=1e-6)
    assert tasks == ["inspect_and_lower", "lower"]


def test_an_element_type_numpy_cannot_hold_is_named_before_lowering():
    token = "tensor<4x!stablehlo.token>"
    program = f"func.func @main(%a: {token}) -> {token} {{ return %a : {token} }}"
    with pytest.raises(shlo.ShloError, match=r"!stablehlo.token, which numpy arrays cannot hold"):
        shlo.compile(program)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux's /proc")
def test_buffers_of_parallel_tiles_from_several_threads() -> None:
    # A softmax this large is fused row block by row block, and every block
    # allocates and frees its tiles' buffers on the thread that runs it: the
    # allocator's per-thread shards must hand out and take back blocks from
    # OpenMP's threads and from the callers' threads at once, and reuse them.
    from concurrent.futures import ThreadPoolExecutor

    t = "tensor<1024x4096xf32>"
    source = f"""
    func.func @main(%x: {t}) -> {t} {{
      %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %max = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
        : ({t}, tensor<f32>) -> tensor<1024xf32>
      %m = stablehlo.broadcast_in_dim %max, dims = [0] : (tensor<1024xf32>) -> {t}
      %d = stablehlo.subtract %x, %m : {t}
      %e = stablehlo.exponential %d : {t}
      %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
        : ({t}, tensor<f32>) -> tensor<1024xf32>
      %s = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<1024xf32>) -> {t}
      %y = stablehlo.divide %e, %s : {t}
      return %y : {t}
    }}
    """
    exe = shlo.compile(source, isolate=False, threads=2)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1024, 4096), dtype=np.float32) * k for k in (1, 2, 3)]
    wants = []
    for x in inputs:
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        wants.append(e / e.sum(axis=1, keepdims=True))
    with ThreadPoolExecutor(max_workers=3) as pool:
        for _ in range(3):  # the allocator's and numpy's caches fill up
            list(pool.map(exe, inputs))
        before = _resident_bytes()
        for _ in range(6):
            for got, want in zip(pool.map(exe, inputs), wants):
                np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-12)
    # Blocks kept and never taken again would pile up to the cache's 512 MiB;
    # the callers' threads may still each keep a result's 16 MB in their arenas.
    assert _resident_bytes() - before < 128 << 20
