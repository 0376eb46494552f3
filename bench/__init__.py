"""Benchmarks, each a module run from the repository root: `.venv/bin/python -m bench.matching`,
`bench.receive`, `bench.lifo`, `bench.backlog` (`--help` lists the options, `--smoke` runs
the smallest sizes). They share one harness, `bench.harness`; figures in docs/benchmarks.md."""
