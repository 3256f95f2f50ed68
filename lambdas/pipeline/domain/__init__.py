"""The pipeline's rules, pure where they can be: no AWS calls, no environment reads."""
