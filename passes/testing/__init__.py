"""Passes that exist for lit tests: they print analyses."""
