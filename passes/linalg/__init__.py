"""Shared linalg and buffer transforms: fusion, the lowering check, bufferization
helpers and the entry ABI, used by every backend.
"""
