"""The gate's tests: one package per area (`pytest -m "not slow"` is the fast tier; see README)."""
