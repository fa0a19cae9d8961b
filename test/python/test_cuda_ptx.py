"""The CUDA backend's device code: kernels -> LLVM IR -> PTX that ptxas accepts, and the host module.

No GPU is needed: ptxas checks the PTX for each architecture. Skipped without
llvmlite; the tests that run ptxas are skipped without it.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("llvmlite.binding")

from shlo._mlir_compat import ir, new_context
from shlo.backends.cuda.pipeline import (
    BUFFERIZE_STAGE,
    KERNEL_MODULE,
    TENSOR_STAGE,
    CudaLowered,
    check_kernels_read_device_memory,
    kernel_stage,
    lower_to_cuda,
)
from shlo.backends.cuda.ptx import (
    find_ptxas,
    libdevice_path,
    llvm_ir_to_ptx,
    ptx_to_cubin,
)
from shlo.diagnostics import ShloError
from shlo.io import parse_module
from shlo.ir_utils import ops_named
from shlo.llvmlite_ir import to_llvmlite_syntax
from shlo.pipeline import run_pipeline

ARCHS = ("sm_80", "sm_90")
needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not installed")
needs_libdevice = pytest.mark.skipif(libdevice_path() is None, reason="libdevice is not installed")


def linalg_module(text: str) -> tuple[ir.Context, ir.Module]:
    """``text`` (StableHLO) as the CUDA pipeline takes it: static linalg on tensors.

    The one place that knows how the frontend and the shared linalg stage are called.
    """
    from shlo.frontend import prepare_static
    from shlo.to_linalg import to_linalg_stage

    context = new_context()
    with context:
        module, _, _ = prepare_static(text, "main", None, "test.mlir", 1 << 30)
        run_pipeline(module, to_linalg_stage("cpu"), "test.mlir")
    return context, module


def lower(text: str, arch: str = "sm_80") -> tuple[CudaLowered, ir.Context, ir.Module]:
    context, module = linalg_module(text)
    with context:
        lowered = lower_to_cuda(module, arch, "test.mlir")
    return lowered, context, module


ELEMENTWISE = """
func.func @main(%a: tensor<1000xf32>, %b: tensor<1000xf32>) -> tensor<1000xf32> {
  %0 = stablehlo.exponential %a : tensor<1000xf32>
  %1 = stablehlo.tanh %0 : tensor<1000xf32>
  %2 = chlo.erf %1 : tensor<1000xf32> -> tensor<1000xf32>
  %3 = stablehlo.log_plus_one %2 : tensor<1000xf32>
  %4 = stablehlo.add %3, %b : tensor<1000xf32>
  return %4 : tensor<1000xf32>
}
"""

REDUCTION = """
func.func @main(%a: tensor<64x300xf32>) -> tensor<64xf32> {
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r = stablehlo.reduce(%a init: %init) applies stablehlo.maximum across dimensions = [1]
    : (tensor<64x300xf32>, tensor<f32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}
"""

MATMUL = """
func.func @main(%a: tensor<128x64xf32>, %b: tensor<64x96xf32>) -> tensor<128x96xf32> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
    : (tensor<128x64xf32>, tensor<64x96xf32>) -> tensor<128x96xf32>
  return %r : tensor<128x96xf32>
}
"""

# A host loop around a kernel: the counter lives in managed memory.
WHILE_LOOP = """
func.func @main(%n: tensor<i64>, %step: tensor<3xf32>) -> (tensor<i64>, tensor<3xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %acc = stablehlo.constant dense<0.0> : tensor<3xf32>
  %r:2 = stablehlo.while(%i = %zero, %a = %acc) : tensor<i64>, tensor<3xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i64>
    %sum = stablehlo.add %a, %step : tensor<3xf32>
    stablehlo.return %next, %sum : tensor<i64>, tensor<3xf32>
  }
  return %r#0, %r#1 : tensor<i64>, tensor<3xf32>
}
"""

# Scalars only: everything runs on the host, there is no kernel.
SCALAR_LOOP = """
func.func @main(%n: tensor<i32>) -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %a0 = stablehlo.constant dense<0> : tensor<i64>
  %b0 = stablehlo.constant dense<1> : tensor<i64>
  %r:3 = stablehlo.while(%i = %zero, %a = %a0, %b = %b0) : tensor<i32>, tensor<i64>, tensor<i64>
  cond {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %next = stablehlo.add %i, %one : tensor<i32>
    %sum = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %next, %b, %sum : tensor<i32>, tensor<i64>, tensor<i64>
  }
  return %r#1 : tensor<i64>
}
"""

F64_MATH = """
func.func @main(%a: tensor<8x16xf64>) -> tensor<16x8xf64> {
  %0 = stablehlo.log %a : tensor<8x16xf64>
  %1 = stablehlo.sine %0 : tensor<8x16xf64>
  %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<8x16xf64>) -> tensor<16x8xf64>
  return %2 : tensor<16x8xf64>
}
"""

SMALL_FLOATS = """
func.func @main(%a: tensor<300xbf16>, %b: tensor<300xf16>) -> (tensor<300xbf16>, tensor<300xf16>) {
  %c = stablehlo.constant dense<-1.5> : tensor<300xbf16>
  %inf = stablehlo.constant dense<0x7C00> : tensor<300xf16>
  %0 = stablehlo.multiply %a, %c : tensor<300xbf16>
  %1 = stablehlo.exponential %0 : tensor<300xbf16>
  %2 = stablehlo.minimum %b, %inf : tensor<300xf16>
  %3 = stablehlo.sine %2 : tensor<300xf16>
  return %1, %3 : tensor<300xbf16>, tensor<300xf16>
}
"""

COMPLEX = """
func.func @main(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = stablehlo.exponential %a : tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}
"""

# A non-splat constant that a kernel reads, and a NaN literal in the kernel.
CONSTANTS = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %nan = stablehlo.constant dense<0x7FC00000> : tensor<4xf32>
  %0 = stablehlo.add %a, %c : tensor<4xf32>
  %1 = stablehlo.maximum %0, %nan : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""

# Complex constants (the bindings cannot cast their attributes) and the bit
# counts that libdevice lacks (ctpop, ctlz: NVPTX instructions).
COMPLEX_CONSTANT = """
func.func @main(%a: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  %c = stablehlo.constant dense<[(1.5, 2.5), (3.5, 4.5)]> : tensor<2xcomplex<f32>>
  %0 = stablehlo.multiply %a, %c : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}
"""

BIT_COUNTS = """
func.func @main(%a: tensor<8xi64>, %b: tensor<8xi8>) -> (tensor<8xi64>, tensor<8xi8>) {
  %0 = stablehlo.popcnt %a : tensor<8xi64>
  %1 = stablehlo.count_leading_zeros %b : tensor<8xi8>
  return %0, %1 : tensor<8xi64>, tensor<8xi8>
}
"""

F8_CONVERT = """
func.func @main(%a: tensor<16xf8E4M3FN>) -> tensor<16xf32> {
  %0 = stablehlo.convert %a : (tensor<16xf8E4M3FN>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
"""

PROGRAMS = {
    "elementwise": ELEMENTWISE,
    "reduction": REDUCTION,
    "matmul": MATMUL,
    "while_loop": WHILE_LOOP,
    "f64_math": F64_MATH,
    "small_floats": SMALL_FLOATS,
    "complex": COMPLEX,
    "constants": CONSTANTS,
    "complex_constant": COMPLEX_CONSTANT,
    "bit_counts": BIT_COUNTS,
}


def entry_names(ptx: str) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)\s*\(", ptx)


def launched_kernels(module: ir.Module) -> set[str]:
    """The kernels the host module launches, as @module::@kernel pairs."""
    launches = ops_named(module.operation, "gpu.launch_func")
    return {str(ir.SymbolRefAttr(op.attributes["kernel"])) for op in launches}


@needs_ptxas
@needs_libdevice
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_reaches_ptx_that_ptxas_accepts(name: str, arch: str) -> None:
    lowered, context, module = lower(PROGRAMS[name], arch)
    assert f".target {arch}" in lowered.ptx
    assert lowered.cubin is not None and lowered.cubin.startswith(b"\x7fELF")
    names = [kernel.name for kernel in lowered.kernels]
    assert names and sorted(entry_names(lowered.ptx)) == sorted(names)
    with context:
        assert launched_kernels(module) == {f"@{KERNEL_MODULE}::@{n}" for n in names}
    # Every libdevice function was linked in and inlined: the PTX stands alone.
    assert ".extern" not in lowered.ptx and "__nv_" not in lowered.ptx


@needs_ptxas
@needs_libdevice
def test_kernel_parameters_are_memref_descriptors() -> None:
    lowered, _, _ = lower(ELEMENTWISE)
    (kernel,) = lowered.kernels
    # Two inputs and one result, each (allocated, aligned, offset, size, stride).
    assert kernel.parameter_types == ("!llvm.ptr", "!llvm.ptr", "i64", "i64", "i64") * 3
    assert lowered.input_types == ("tensor<1000xf32>", "tensor<1000xf32>")
    assert lowered.result_types == ("tensor<1000xf32>",)


def test_scalar_program_has_no_kernel() -> None:
    lowered, context, module = lower(SCALAR_LOOP)
    assert (lowered.ptx, lowered.cubin, lowered.kernels) == ("", None, ())
    with context:
        assert not ops_named(module.operation, "gpu.binary")
        assert launched_kernels(module) == set()
    assert lowered.input_types == ("tensor<i32>",)


@needs_ptxas
@needs_libdevice
def test_host_module_is_llvm_with_the_ptx_in_a_binary() -> None:
    lowered, _, _ = lower(WHILE_LOOP)
    context = new_context()
    with context:
        host = parse_module(lowered.host_llvm_bytecode, context, "host")
        dialects = {name.split(".")[0] for name in _op_names(host)}
        assert dialects <= {"builtin", "llvm", "gpu"}, dialects
        (binary,) = ops_named(host.operation, "gpu.binary")
        assert binary.attributes["sym_name"] == ir.StringAttr.get(KERNEL_MODULE)
        # The PTX is carried as text, for the driver to JIT for the device at hand.
        assert "assembly = " in str(binary.attributes["objects"])
        assert "sm_80" in str(binary.attributes["objects"])
        (main,) = [op for op in ops_named(host.operation, "llvm.func") if _name(op) == "main"]
        # One pointer to the buffers' data pointers, as the CPU runtime's ABI.
        assert [str(arg.type) for arg in main.regions[0].blocks[0].arguments] == ["!llvm.ptr"]
        callees = {
            ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            for op in ops_named(host.operation, "llvm.call")
            if "callee" in op.attributes
        }
        assert "_mlir_memref_to_llvm_alloc" in callees
        assert "_mlir_memref_to_llvm_free" in callees


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _op_names(module: ir.Module) -> set[str]:
    names: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.add(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def test_kernels_never_read_host_globals() -> None:
    # Without the copy of constants into buffers, the kernel would get the
    # address of a host global; the check must catch it.
    context, module = linalg_module(CONSTANTS)
    with context:
        for stage in (TENSOR_STAGE, BUFFERIZE_STAGE, kernel_stage()):
            run_pipeline(module, list(stage), "test.mlir", verify_each=False)
        with pytest.raises(ShloError, match="would read host memory"):
            check_kernels_read_device_memory(module)


def test_unsupported_op_in_a_kernel_is_named_with_its_location() -> None:
    with pytest.raises(ShloError) as raised:
        lower(F8_CONVERT)
    (error,) = raised.value.diagnostics
    assert "'arith.extf' (f8E4M3FN) -> (f32)" in error.message
    assert "not supported by the CUDA backend" in error.message
    assert (error.file, error.line) == ("test.mlir", 3)


# A kernel calling a function that nobody defines.
UNRESOLVED_CALL = """
declare float @__nv_no_such_function(float)
declare float @cosh_from_libm(float)

define ptx_kernel void @k(ptr %p) {
  %x = load float, ptr %p, align 4
  %y = call float @__nv_no_such_function(float %x)
  %z = call float @cosh_from_libm(float %y)
  store float %z, ptr %p, align 4
  ret void
}
"""


@needs_libdevice
def test_an_unresolved_function_is_an_error() -> None:
    with pytest.raises(ShloError, match="__nv_no_such_function, cosh_from_libm"):
        llvm_ir_to_ptx(UNRESOLVED_CALL, "sm_80")


def test_unknown_arch_is_an_error() -> None:
    with pytest.raises(ShloError, match="unsupported CUDA architecture 'sm_35'"):
        llvm_ir_to_ptx("", "sm_35")


# Literals as LLVM 23+ prints them, and as llvmlite's parser wants them.
@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("fadd float %a, f0xB86EC2D2", "fadd float %a, 0xBF0DD85A40000000"),
        # The float with bits 0xBB41A1F6, widened to double.
        ("fadd float %a, -2.954600e-03", "fadd float %a, 0xBF68343EC0000000"),
        ("fadd float %a, 1.500000e+00", "fadd float %a, 0x3FF8000000000000"),
        ("fmul double %a, 1.000000e-01", "fmul double %a, 1.000000e-01"),
        ("fmul double %a, f0x3FB999999999999A", "fmul double %a, 0x3FB999999999999A"),
        (
            "call float @f(float +inf, float -inf)",
            "call float @f(float 0x7FF0000000000000, float 0xFFF0000000000000)",
        ),
        ("select i1 %c, float +qnan, float %b", "select i1 %c, float 0x7FF8000000000000, float %b"),
        ("fadd double %a, -nan(0x1)", "fadd double %a, 0xFFF8000000000001"),
        ("fadd float %a, +snan(0x1)", "fadd float %a, 0x7FF0000020000000"),
        ("fadd half %a, f0x3C00", "fadd half %a, 0xH3C00"),
        ("fadd half %a, -1.500000e+00", "fadd half %a, 0xHBE00"),
        ("fadd bfloat %a, f0x3F80", "fadd bfloat %a, 0xR3F80"),
        ("fadd bfloat %a, +inf", "fadd bfloat %a, 0xR7F80"),
        (
            "store <2 x float> <float 1.0, float f0x3F800000>, ptr %p",
            "store <2 x float> <float 0x3FF0000000000000, float 0x3FF0000000000000>, ptr %p",
        ),
        ("fmul double %a, 0x1.8p3", "fmul double %a, 0x4028000000000000"),
        ("%x = add i64 %y, 1", "%x = add i64 %y, 1"),
    ],
)
def test_float_literals_are_rewritten_for_llvmlite(new: str, old: str) -> None:
    assert to_llvmlite_syntax(new).strip() == old


@pytest.mark.parametrize(
    ("type_name", "literal"),
    [
        ("float", "f0x3F800000"),
        ("float", "-2.954600e-03"),
        ("double", "-inf"),
        ("float", "+qnan"),
        ("double", "-nan(0x1)"),
        ("half", "f0x3C00"),
        ("bfloat", "f0x3F80"),
    ],
)
def test_llvmlite_needs_the_rewrite(type_name: str, literal: str) -> None:
    import llvmlite.binding as llvm

    function = (
        f"define {type_name} @f({type_name} %a) {{\n"
        f"  %b = fadd {type_name} %a, {literal}\n  ret {type_name} %b\n}}\n"
    )
    with pytest.raises(RuntimeError, match="LLVM IR parsing error"):
        llvm.parse_assembly(function)
    llvm.parse_assembly(to_llvmlite_syntax(function)).verify()


# Every literal form in a kernel that llvmlite must parse and ptxas accept.
LITERALS_KERNEL = """
define ptx_kernel void @k(ptr %p, ptr %q) {
  %x = load float, ptr %p, align 4
  %a = fadd float %x, f0xB86EC2D2
  %b = fmul float %a, -2.954600e-03
  %c = call float @llvm.maxnum.f32(float %b, float -inf)
  %d = select i1 true, float %c, float +qnan
  store float %d, ptr %p, align 4
  %h = load half, ptr %q, align 2
  %i = fadd half %h, f0x3C00
  store half %i, ptr %q, align 2
  ret void
}

declare float @llvm.maxnum.f32(float, float)
"""


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_rewritten_literals_reach_ptxas(arch: str) -> None:
    ptx = llvm_ir_to_ptx(LITERALS_KERNEL, arch)
    assert entry_names(ptx) == ["k"]
    assert ptx_to_cubin(ptx, arch).startswith(b"\x7fELF")


@needs_ptxas
def test_ptxas_errors_are_shlo_errors() -> None:
    with pytest.raises(ShloError, match="ptxas rejected the PTX for sm_90"):
        ptx_to_cubin(".version 8.0\n.target sm_90\n.address_size 64\nnot ptx\n", "sm_90")


def test_missing_ptxas_names_the_cuda_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from shlo.backends.cuda import ptx

    monkeypatch.setattr(ptx, "find_ptxas", lambda: None)
    with pytest.raises(ShloError, match=r"shlo\[cuda\]"):
        ptx.ptx_to_cubin("", "sm_80")
