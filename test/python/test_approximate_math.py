"""shlo-approximate-math: special values, ULP bounds, vector forms and what it leaves alone."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import shlo
from shlo.backends.cpu.pipeline import CpuPipeline
from shlo.backends.cpu.runtime import LoadedFunction
from shlo.frontend import FRONTEND
from shlo.io import module_to_bytecode
from shlo.passes.cpu import approximate_math
from shlo.pipeline import run_pipeline
from shlo.tools.measure_ulp import (
    APPROXIMATE,
    LIBM,
    REFERENCES,
    compile_function,
    function_source,
    ulp_errors,
)

NAN, INF, TINY = np.nan, np.inf, np.float32(2.0**-149)

# (input, expected) pairs that must come out exactly, sign of zero included.
SPECIAL_VALUES = {
    "exp": [
        (NAN, NAN), (INF, INF), (-INF, 0.0), (0.0, 1.0), (-0.0, 1.0), (89.0, INF),
        (88.8, INF), (-104.0, 0.0), (-200.0, 0.0), (3.4e38, INF), (-3.4e38, 0.0),
    ],
    "expm1": [
        (NAN, NAN), (INF, INF), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (89.0, INF),
        (-30.0, -1.0), (-100.0, -1.0), (1e-30, 1e-30), (-TINY, -TINY), (TINY, TINY),
    ],
    "log": [
        (NAN, NAN), (INF, INF), (-INF, NAN), (0.0, -INF), (-0.0, -INF), (-1.0, NAN),
        (-TINY, NAN), (1.0, 0.0), (2.0, np.float32(np.log(2.0))),
    ],
    "log1p": [
        (NAN, NAN), (INF, INF), (-INF, NAN), (0.0, 0.0), (-0.0, -0.0), (-1.0, -INF),
        (-2.0, NAN), (1e-30, 1e-30), (-1e-30, -1e-30), (-TINY, -TINY), (TINY, TINY),
    ],
    "tanh": [
        (NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (9.1, 1.0), (9.010914, 1.0),
        (9.010913, 0.99999994), (8.7, 0.99999994), (-8.7, -0.99999994),
        (-9.1, -1.0), (50.0, 1.0), (1e-30, 1e-30), (-TINY, -TINY),
    ],
    "erf": [
        (NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (4.0, 1.0),
        (-5.0, -1.0), (1e30, 1.0),
    ],
}  # fmt: skip

# Max ULP error allowed on the dense sample (docs/cpu.md has the exhaustive figures).
# tanh trades accuracy for speed: one path, within 2.4 ULP (XLA: 4.6).
ULP_BOUNDS = {"exp": 1.0, "expm1": 0.9, "log": 0.9, "log1p": 0.9, "tanh": 2.5, "erf": 1.1}


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: equal with the same sign, or both NaN."""
    equal = (got == want) & (np.signbit(got) == np.signbit(want))
    return equal | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("name", sorted(SPECIAL_VALUES))
def test_special_values_are_exact(name: str) -> None:
    x, want = (np.array(column, np.float32) for column in zip(*SPECIAL_VALUES[name]))
    got = compile_function(name, x.size)(x)
    wrong = ~same(got, want)
    assert not wrong.any(), f"{name}({x[wrong]}) = {got[wrong]}, expected {want[wrong]}"


def dense_sample() -> np.ndarray:
    """Every 4099th f32 bit pattern, plus dense ranges around each function's thresholds."""
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ranges = [
        np.linspace(88.6, 89.0, 20001),  # exp overflow
        np.linspace(-104.0, -87.0, 20001),  # exp denormal results
        np.linspace(-87.3, -86.7, 20001),  # n = -126 | -125: the vector exp's short path starts
        np.linspace(88.2, 88.6, 20001),  # n = 127 | 128: and ends
        np.linspace(-0.4, 0.4, 20001),  # expm1, log1p, tanh near 0
        np.linspace(0.3, 0.4, 20001),  # exp reduction boundary ln(2)/2
        np.linspace(0.6, 1.5, 20001),  # log around 1
        np.linspace(-1.0, -0.99, 20001),  # log1p near -1
        np.linspace(8.5, 9.5, 20001),  # tanh saturation
        np.linspace(0.9, 1.1, 20001),  # erf switch of method
        np.linspace(3.5, 4.5, 20001),  # erf saturation
        np.float32(2.0**-126) * np.arange(1, 20001),  # denormal inputs of log
    ]
    sample = np.concatenate([bits, *(r.astype(np.float32) for r in ranges)])
    return np.concatenate([sample, -sample[bits.size :]])


@pytest.mark.parametrize("name", sorted(ULP_BOUNDS))
def test_ulp_error_on_a_dense_sample(name: str) -> None:
    x = dense_sample()
    got = compile_function(name, x.size)(x)
    with np.errstate(all="ignore"):
        errors = ulp_errors(got, REFERENCES[name](x.astype(np.float64)))
    worst = int(np.argmax(errors))
    assert errors[worst] <= ULP_BOUNDS[name], (
        f"{name}({x[worst]!r}) = {got[worst]!r}: {errors[worst]} ULP"
    )
    # The C library's answers differ: the approximation did run.
    libm = compile_function(name, x.size, approximate=False)(x)
    assert not same(got, libm).all()


STAGES_TO_LOOPS = ("legalize-to-linalg", "tensor-codegen", "bufferize", "loop-codegen")


@pytest.mark.parametrize("scalef", [True, False], ids=["vscalefps", "two-paths"])
def test_vectorized_exp_agrees_with_the_scalar_code(scalef: bool, monkeypatch) -> None:
    # On AVX-512 hosts exp scales by 2^n with vscalefps; elsewhere vectors whose
    # lanes all reduce to n in [-125, 127] (x in about [-86.9, 88.3]) skip the
    # clamp and the scaling in two factors. Either way the result must be the
    # same bits as the general code's, on either side of both ends.
    if scalef and not approximate_math.host_has_avx512():
        pytest.skip("vscalefps needs an AVX-512 host")
    monkeypatch.setattr(approximate_math, "host_has_avx512", lambda: scalef)
    x = dense_sample()
    vectorized = compile_function("exp", x.size, vectorized=True)
    got = vectorized(x)
    scalar = compile_function("exp", x.size)(x)
    assert same(got, scalar).all()
    module = shlo.load_module(function_source("exp", x.size))
    stages = dict(CpuPipeline().stages())
    run_pipeline(module, [e for name in STAGES_TO_LOOPS for e in stages[name]])
    text = str(module)
    assert ("x86.avx512.mask.scalef" in text) == scalef
    assert ("vector.reduction <and>" in text) == (not scalef)


VECTOR_FUNCTION = """
func.func @main(%x: memref<64xf32>, %out: memref<64xf32>) {{
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c16 {{
    %v = vector.load %x[%i] : memref<64xf32>, vector<16xf32>
    %{vector_form}
    vector.store %r, %out[%i] : memref<64xf32>, vector<16xf32>
  }}
  return
}}
"""
FLAT = "r = math.{name} %v : vector<16xf32>"
SQUARE = """w = vector.shape_cast %v : vector<16xf32> to vector<2x8xf32>
    %y = math.{name} %w : vector<2x8xf32>
    %r = vector.shape_cast %y : vector<2x8xf32> to vector<16xf32>"""


@pytest.mark.parametrize("name", sorted(ULP_BOUNDS))
@pytest.mark.parametrize("form", [FLAT, SQUARE], ids=["vector<16xf32>", "vector<2x8xf32>"])
def test_vector_forms_match_the_scalar_code(name: str, form: str) -> None:
    module = shlo.load_module(VECTOR_FUNCTION.format(vector_form=form.format(name=name)))
    to_llvm = dict(CpuPipeline().stages())["to-llvm"]
    run_pipeline(module, ["shlo-approximate-math", *to_llvm])
    vector = LoadedFunction(module_to_bytecode(module), ["tensor<64xf32>"], ["tensor<64xf32>"])
    specials = [x for x, _ in SPECIAL_VALUES[name]]
    rng = np.random.default_rng(0)
    x = np.concatenate([specials, rng.standard_normal(64 - len(specials)) * 5]).astype(np.float32)
    scalar = compile_function(name, x.size)(x)
    got = vector([x])[0]
    assert same(got, scalar).all(), (x, got, scalar)


STABLEHLO_OPS = {
    "exponential": jnp.exp,
    "exponential_minus_one": jnp.expm1,
    "log": jnp.log,
    "log_plus_one": jnp.log1p,
    "tanh": jnp.tanh,
    "logistic": jax.nn.sigmoid,
}


def unary_program(op: str, dtype: str) -> str:
    return f"""func.func @main(%x: tensor<4096x{dtype}>) -> tensor<4096x{dtype}> {{
  %0 = stablehlo.{op} %x : tensor<4096x{dtype}>
  return %0 : tensor<4096x{dtype}>
}}"""


@pytest.mark.parametrize("op", sorted(STABLEHLO_OPS))
def test_stablehlo_ops_agree_with_jax(op: str) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(4096) * 8).astype(np.float32)
    if op.startswith("log"):
        x = np.abs(x)
    got = shlo.compile(unary_program(op, "f32"), isolate=False, pipeline=APPROXIMATE)(x)
    want = np.asarray(jax.jit(STABLEHLO_OPS[op])(x))
    # jax's own CPU functions are within a few ULP of the exact result, as ours.
    np.testing.assert_array_max_ulp(got, want, maxulp=4)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_small_floats_round_once_from_f32(dtype: str) -> None:
    numpy_dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    x = np.linspace(-12, 12, 4096).astype(numpy_dtype)
    got = shlo.compile(unary_program("tanh", dtype), isolate=False, pipeline=APPROXIMATE)(x)
    want = np.tanh(x.astype(np.float64)).astype(numpy_dtype)
    # Our f32 result is within 1.5 f32 ULP; rounding it to 8 or 11 bits may
    # differ from rounding the exact value only next to a tie: by 1 ULP.
    difference = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert (difference <= np.spacing(np.abs(want)).astype(np.float64)).all()
    assert same(got.astype(np.float32), want.astype(np.float32)).mean() > 0.99


def test_f64_keeps_the_c_library() -> None:
    program = unary_program("exponential", "f64")
    module = shlo.load_module(program)
    run_pipeline(module, FRONTEND + APPROXIMATE.elements(through="loop-codegen"))
    assert "math.exp" in str(module) and "math.fma" not in str(module)
    x = np.linspace(-700, 700, 4096)
    approximate = shlo.compile(program, isolate=False, pipeline=APPROXIMATE)(x)
    default = shlo.compile(program, isolate=False)(x)
    np.testing.assert_array_equal(approximate, default)


def softmax64(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax64(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def gelu_tanh64(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


# (jax function, float64 reference)
MODEL_FUNCTIONS = {
    "gelu-tanh": (lambda x: jax.nn.gelu(x, approximate=True), gelu_tanh64),
    "softmax": (lambda x: jax.nn.softmax(x, axis=-1), softmax64),
    "log-softmax": (lambda x: jax.nn.log_softmax(x, axis=-1), log_softmax64),
    "softplus-tanh": (
        lambda x: jax.nn.softplus(x) * jnp.tanh(x),
        lambda x: np.logaddexp(x, 0) * np.tanh(x),
    ),
}


@pytest.mark.parametrize("name", sorted(MODEL_FUNCTIONS))
def test_jax_exports_are_as_accurate_as_jax(name: str) -> None:
    fn, reference = MODEL_FUNCTIONS[name]
    x = (np.random.default_rng(2).standard_normal((64, 256)) * 4).astype(np.float32)
    exported = jax.export.export(jax.jit(fn))(jax.ShapeDtypeStruct(x.shape, x.dtype))
    got = shlo.compile(exported.mlir_module(), isolate=False, pipeline=APPROXIMATE)(x)
    exact = reference(x.astype(np.float64))
    libm = shlo.compile(exported.mlir_module(), isolate=False, pipeline=LIBM)(x)
    ours, with_libm = np.abs(got - exact).max(), np.abs(libm - exact).max()
    theirs = np.abs(np.asarray(jax.jit(fn)(x)) - exact).max()
    # Sums in another order weigh more than the math functions in softmax.
    assert ours <= 1.25 * max(theirs, with_libm, 1e-7), (ours, with_libm, theirs)
