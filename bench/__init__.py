"""shlo's benchmarks; ``python -m bench`` runs the issue-10 suite (bench/__main__.py)."""
