// Bad input: file:line:col, the message, exit 1 and no traceback.
// RUN: not shlo-opt %s 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not shlo-opt %s --canonicalise 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not shlo-opt %s --pass-pipeline='builtin.module(shlo-simplfy)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN-SHLO
// RUN: not shlo-opt %s --shlo-remove-dynamism='typo=1' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not shlo-opt %s --pass-pipeline='builtin.module(func.func(shlo-simplify))' 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not shlo-opt %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING

// PARSE: shlo_opt_errors.mlir:[[# @LINE + 3]]:8: error: custom op 'not_an_op' is unknown
// PARSE-NOT: Traceback
func.func @f() {
  %0 = not_an_op
}

// UNKNOWN: shlo-opt: error: unknown pass 'canonicalise'; did you mean canonicalize
// UNKNOWN-SHLO: shlo-opt: error: unknown pass 'shlo-simplfy'; did you mean shlo-simplify
// OPTION: shlo-opt: error: 'shlo-remove-dynamism' has no option 'typo' (options: static-program, types)
// NESTED: shlo-opt: error: shlo passes run on builtin.module; move them out of 'func.func(...)'
// MISSING: shlo-opt: error: cannot read {{.*}}does-not-exist.mlir: No such file or directory

// Invalid UTF-8, a directory, an empty file, a bad option value: exit 1 or 2, one line.
// RUN: printf 'module {\n  // caf\xe9\n}\n' > %t.latin1.mlir
// RUN: not shlo-opt %t.latin1.mlir 2>&1 | FileCheck %s --check-prefix=UTF8
// RUN: not shlo-opt %S 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// RUN: not shlo-opt %s --pass-pipeline='builtin.module(canonicalize{max-iterations=abc})' 2>&1 | FileCheck %s --check-prefix=OPTION-VALUE
// UTF8: latin1.mlir:2:9: error: invalid UTF-8 at byte 17 (0xe9); the input is neither UTF-8 text nor MLIR bytecode
// DIRECTORY: shlo-opt: error: cannot read {{.*}}tools: Is a directory
// OPTION-VALUE: shlo-opt: error: for the --max-iterations option: 'abc' value invalid for long argument!
