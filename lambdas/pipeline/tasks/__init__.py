"""The lanes' work: plain functions, one per catalogue task name."""
