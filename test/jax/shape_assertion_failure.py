# Inputs that break a jax export's shape assumptions fail with JAX's own message,
# its {0}, {1} placeholders filled with the actual sizes, and a non-zero exit.
# RUN: %PYTHON %S/../python/jax_exports.py several_symbols > %t.symbols.mlir
# RUN: not shlo-opt %t.symbols.mlir --shlo-remove-dynamism='types=tensor<3x5xf32>,tensor<6x7xf32>' 2>&1 | FileCheck %s --check-prefix=MISMATCH
# RUN: %PYTHON %S/../python/jax_exports.py slicing > %t.slicing.mlir
# RUN: not shlo-opt %t.slicing.mlir --shlo-remove-dynamism='types=tensor<2x0xf32>' 2>&1 | FileCheck %s --check-prefix=EMPTY
# The portable artifact, from stdin.
# RUN: %PYTHON %S/../python/jax_exports.py slicing --serialized \
# RUN:   | not shlo-opt - --shlo-remove-dynamism='types=tensor<2x0xf32>' 2>&1 | FileCheck %s --check-prefix=EMPTY

# x: (b, n) is 3x5 but w: (n, k) is 6x7.
# MISMATCH: error: Input shapes do not match the polymorphic shapes specification. Found inconsistency between dimension size args[1].shape[0] (= 6) and the specification 'n' (= 5). Using the following polymorphic shapes specifications: args[0].shape = (b, n),args[1].shape = (n, k). Obtained dimension variables: 'b' = 3 from specification 'b' for dimension args[0].shape[0] (= 3), 'n' = 5 from specification 'n' for dimension args[0].shape[1] (= 5),
# MISMATCH-NOT: {0}
# MISMATCH-NOT: Traceback

# s = 0, but x[:, 1:] and x[:, 0] need s >= 1.
# EMPTY: error: Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for dimension variable 's'. Using the following polymorphic shapes specifications: args[0].shape = (b, s). Obtained dimension variables: 'b' = 2 from specification 'b' for dimension args[0].shape[0] (= 2), 's' = 0 from specification 's' for dimension args[0].shape[1] (= 0),
# EMPTY-NOT: {0}
# EMPTY-NOT: Traceback
