"""Benchmarks (run as scripts from the repository root, e.g. `python bench/matching.py`)."""
