// RUN: not shlo-opt %s --pass-pipeline='builtin.module(stablehlo-refine-shapes)' 2>&1 | FileCheck %s

// stablehlo-refine-shapes fails on a module whose only function is nested
// in an inner module, without a diagnostic: shlo-opt says so, at the module.
// CHECK: shlo_opt_silent_failure.mlir:[[@LINE+1]]:1: error: the pass pipeline failed without saying why (an upstream pass gave no diagnostic); pipeline: stablehlo-refine-shapes
module {
  module {
    func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {
      return %a : tensor<?xf32>
    }
  }
}
