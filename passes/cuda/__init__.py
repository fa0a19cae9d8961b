"""CUDA code generation: how loop nests map to blocks and threads."""
