"""Target-independent decompositions: StableHLO ops that upstream's linalg lowering
leaves alone or gets wrong become ops it lowers (loops, gathers, matmuls, ...).

Every backend runs them, in the order of ``shlo.to_linalg.DECOMPOSITIONS``.
"""
