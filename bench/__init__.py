"""Benchmarks that print figures; see docs/performance.md."""
