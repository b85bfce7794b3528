"""Statistics and judging: result sets and floats in, verdicts out, no I/O."""
