"""Stage 3: the perf-report tables (TraceLens sheet and column names) and their writers."""
