"""Frontend passes: shape refinement, XLA broadcasting, quantized and elementwise semantics.

They take StableHLO as frameworks export it to static, plain StableHLO that
every backend and the reference interpreter accept.
"""
