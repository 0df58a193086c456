"""Benchmarks of handoffs-runtime against its peers; run ``python benchmarks/run.py``."""
