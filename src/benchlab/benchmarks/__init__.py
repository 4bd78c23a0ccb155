"""Benchmark backends: reference (numpy), llama-bench, command."""
