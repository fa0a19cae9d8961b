// RUN: shlo-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(shlo-fix-elementwise-semantics)' | FileCheck %s

// Boolean addition is logical OR; other additions stay.
// CHECK-LABEL: func @bool_add
func.func @bool_add(%a: tensor<4xi1>, %b: tensor<4xi1>, %c: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi32>) {
  // CHECK: %[[OR:.+]] = stablehlo.or %arg0, %arg1 : tensor<4xi1>
  // CHECK: %[[ADD:.+]] = stablehlo.add %arg2, %arg2 : tensor<4xi32>
  // CHECK: return %[[OR]], %[[ADD]]
  %0 = stablehlo.add %a, %b : tensor<4xi1>
  %1 = stablehlo.add %c, %c : tensor<4xi32>
  return %0, %1 : tensor<4xi1>, tensor<4xi32>
}

// -----

// Region bodies are rewritten too.
// CHECK-LABEL: func @bool_add_in_reduce
func.func @bool_add_in_reduce(%a: tensor<4xi1>) -> tensor<i1> {
  %false = stablehlo.constant dense<false> : tensor<i1>
  // CHECK: stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.or across dimensions = [0]
  // CHECK-NOT: stablehlo.add
  %0 = stablehlo.reduce(%a init: %false) applies stablehlo.add across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  return %0 : tensor<i1>
}

// -----

// Complex maximum: lexicographic, real parts first.
// CHECK-LABEL: func @complex_maximum
func.func @complex_maximum(%a: tensor<2xcomplex<f32>>, %b: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  // CHECK: %[[RA:.+]] = stablehlo.real %arg0
  // CHECK: %[[RB:.+]] = stablehlo.real %arg1
  // CHECK: %[[IA:.+]] = stablehlo.imag %arg0
  // CHECK: %[[IB:.+]] = stablehlo.imag %arg1
  // CHECK: %[[EQ:.+]] = stablehlo.compare EQ, %[[RA]], %[[RB]], FLOAT
  // CHECK: %[[GTI:.+]] = stablehlo.compare GT, %[[IA]], %[[IB]], FLOAT
  // CHECK: %[[GTR:.+]] = stablehlo.compare GT, %[[RA]], %[[RB]], FLOAT
  // CHECK: %[[TAKE:.+]] = stablehlo.select %[[EQ]], %[[GTI]], %[[GTR]]
  // CHECK: %[[R:.+]] = stablehlo.select %[[TAKE]], %arg0, %arg1 : tensor<2xi1>, tensor<2xcomplex<f32>>
  // CHECK: return %[[R]]
  %0 = stablehlo.maximum %a, %b : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}

// -----

// CHECK-LABEL: func @complex_minimum
func.func @complex_minimum(%a: tensor<complex<f64>>, %b: tensor<complex<f64>>, %x: tensor<f64>) -> (tensor<complex<f64>>, tensor<f64>) {
  // CHECK: stablehlo.compare EQ
  // CHECK: stablehlo.compare LT
  // CHECK: stablehlo.compare LT
  // CHECK: %[[R:.+]] = stablehlo.select %{{.+}}, %arg0, %arg1 : tensor<i1>, tensor<complex<f64>>
  // CHECK: %[[M:.+]] = stablehlo.minimum %arg2, %arg2 : tensor<f64>
  // CHECK: return %[[R]], %[[M]]
  %0 = stablehlo.minimum %a, %b : tensor<complex<f64>>
  %1 = stablehlo.minimum %x, %x : tensor<f64>
  return %0, %1 : tensor<complex<f64>>, tensor<f64>
}

// -----

// f32 to e5m10: round the mantissa to nearest even, then clamp the exponent.
// CHECK-LABEL: func @reduce_precision
func.func @reduce_precision(%a: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: %[[BITS:.+]] = stablehlo.bitcast_convert %arg0 : (tensor<3xf32>) -> tensor<3xui32>
  // CHECK: %[[C13:.+]] = stablehlo.constant dense<13> : tensor<3xui32>
  // CHECK: stablehlo.shift_right_logical %[[BITS]], %[[C13]]
  // CHECK: stablehlo.constant dense<4095> : tensor<3xui32>
  // CHECK: stablehlo.constant dense<4294959104> : tensor<3xui32>
  // CHECK: stablehlo.compare GT, %{{.+}}, %{{.+}}, UNSIGNED
  // CHECK: stablehlo.compare LE, %{{.+}}, %{{.+}}, UNSIGNED
  // CHECK: %[[F:.+]] = stablehlo.bitcast_convert %{{.+}} : (tensor<3xui32>) -> tensor<3xf32>
  // CHECK: %[[NAN:.+]] = stablehlo.compare NE, %arg0, %arg0, FLOAT
  // CHECK: %[[R:.+]] = stablehlo.select %[[NAN]], %arg0, %[[F]]
  // CHECK: return %[[R]]
  // CHECK-NOT: reduce_precision
  %0 = stablehlo.reduce_precision %a, format = e5m10 : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// No mantissa bit kept: NaN becomes +infinity, as in the interpreter.
// CHECK-LABEL: func @reduce_precision_no_mantissa
func.func @reduce_precision_no_mantissa(%a: tensor<f64>) -> tensor<f64> {
  // CHECK: %[[INF:.+]] = stablehlo.constant dense<0x7FF0000000000000> : tensor<f64>
  // CHECK: %[[R:.+]] = stablehlo.select %{{.+}}, %[[INF]], %{{.+}} : tensor<i1>, tensor<f64>
  // CHECK: return %[[R]]
  %0 = stablehlo.reduce_precision %a, format = e5m0 : tensor<f64>
  return %0 : tensor<f64>
}

// -----

// A format at least as wide as the type is the identity.
// CHECK-LABEL: func @reduce_precision_identity
func.func @reduce_precision_identity(%a: tensor<2xbf16>) -> tensor<2xbf16> {
  // CHECK-NEXT: return %arg0
  %0 = stablehlo.reduce_precision %a, format = e8m7 : tensor<2xbf16>
  return %0 : tensor<2xbf16>
}

// -----

// log1p(x) = log(u) * x / (u - 1), u = 1 + x, in f32 for bf16.
// CHECK-LABEL: func @log_plus_one
func.func @log_plus_one(%a: tensor<3xbf16>) -> tensor<3xbf16> {
  // CHECK: %[[X:.+]] = stablehlo.convert %arg0 : (tensor<3xbf16>) -> tensor<3xf32>
  // CHECK: %[[U:.+]] = stablehlo.add %[[X]], %{{.+}} : tensor<3xf32>
  // CHECK: %[[UM1:.+]] = stablehlo.subtract %[[U]], %{{.+}} : tensor<3xf32>
  // CHECK: %[[LOG:.+]] = stablehlo.log %[[U]]
  // CHECK: %[[RATIO:.+]] = stablehlo.divide %[[X]], %[[UM1]]
  // CHECK: stablehlo.multiply %[[LOG]], %[[RATIO]]
  // CHECK: %[[R:.+]] = stablehlo.convert %{{.+}} : (tensor<3xf32>) -> tensor<3xbf16>
  // CHECK: return %[[R]]
  // CHECK-NOT: log_plus_one
  %0 = stablehlo.log_plus_one %a : tensor<3xbf16>
  return %0 : tensor<3xbf16>
}

// -----

// f32 and f64 are left to the C library (shlo-precise-libm-calls).
// CHECK-LABEL: func @log_plus_one_f32
func.func @log_plus_one_f32(%a: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: %[[R:.+]] = stablehlo.log_plus_one %arg0 : tensor<3xf32>
  // CHECK: return %[[R]]
  %0 = stablehlo.log_plus_one %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// expm1(x) = (u - 1) * x / log(u), u = exp(x), in f32 for f16.
// CHECK-LABEL: func @exponential_minus_one
func.func @exponential_minus_one(%a: tensor<3xf16>) -> tensor<3xf16> {
  // CHECK: %[[X:.+]] = stablehlo.convert %arg0 : (tensor<3xf16>) -> tensor<3xf32>
  // CHECK: %[[U:.+]] = stablehlo.exponential %[[X]]
  // CHECK: %[[UM1:.+]] = stablehlo.subtract %[[U]], %{{.+}} : tensor<3xf32>
  // CHECK: %[[LOG:.+]] = stablehlo.log %[[U]]
  // CHECK: %[[RATIO:.+]] = stablehlo.divide %[[X]], %[[LOG]]
  // CHECK: stablehlo.multiply %[[UM1]], %[[RATIO]]
  // CHECK: %[[R:.+]] = stablehlo.convert %{{.+}} : (tensor<3xf32>) -> tensor<3xf16>
  // CHECK: return %[[R]]
  %0 = stablehlo.exponential_minus_one %a : tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

// Complex log1p: log1p(x (2 + x) + y^2) / 2 + i atan2(y, 1 + x).
// CHECK-LABEL: func @complex_log_plus_one
func.func @complex_log_plus_one(%a: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  // CHECK: stablehlo.real %arg0
  // CHECK: stablehlo.imag %arg0
  // CHECK: stablehlo.log
  // CHECK: stablehlo.atan2
  // CHECK: %[[R:.+]] = stablehlo.complex %{{.+}}, %{{.+}} : tensor<2xcomplex<f32>>
  // CHECK: return %[[R]]
  %0 = stablehlo.log_plus_one %a : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}
