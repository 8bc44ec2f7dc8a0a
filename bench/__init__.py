"""Benchmarks and run comparisons that print ratios against a baseline measured in the same run."""
