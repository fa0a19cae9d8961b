// MLIR's aborts run in the worker: one error line and an exit code, never a dead shlo-opt.
// RUN: not shlo-opt %s --pass-pipeline='builtin.module(func.func(sparsifier))' 2>&1 | FileCheck %s --check-prefix=BUILD
// RUN: shlo-opt %S/../../docs/examples/add_one_dynamic.mlir --emit-portable-artifact -o %t.vhlo
// RUN: %PYTHON -c "import sys; d = open(sys.argv[1], 'rb').read(); i = d.index(bytes.fromhex('0000803f1309')) + 5; open(sys.argv[2], 'wb').write(d[:i] + bytes([1]) + d[i + 1:])" %t.vhlo %t.bad.vhlo
// RUN: not shlo-opt %t.bad.vhlo 2>&1 | FileCheck %s --check-prefix=READER
// RUN: shlo-opt %s --shlo-simplify | FileCheck %s
// RUN: shlo-opt %s --shlo-simplify --no-isolate | FileCheck %s
// RUN: env SHLO_NO_ISOLATE=1 shlo-opt %s --shlo-simplify | FileCheck %s

// BUILD: shlo-opt: error: the pass pipeline crashed (SIGABRT) while being built: LLVM ERROR: Can't add pass 'SparsificationAndBufferization'
// BUILD-NOT: Traceback
// READER: {{.*}}.bad.vhlo: error: shlo-opt's worker crashed (SIGABRT) while parsing, transforming or printing this input; {{.*}}: LLVM ERROR: unsupported integer type
// READER-NOT: {{.}}

// CHECK-LABEL: func.func @scale
// CHECK: stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
func.func @scale(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<2.0> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
