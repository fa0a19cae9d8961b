"""CPU code generation: per-op-kind transform recipes, vectorization, kernel
outlining and the math and float conversions LLVM's x86 backend needs.
"""
