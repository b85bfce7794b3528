"""The result file: its schema (every figure, metric and family record, the typed result set) and reading
one file."""
