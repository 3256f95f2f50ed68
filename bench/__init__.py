"""Benchmarks and scenario reports: they print figures and assert nothing about time."""
