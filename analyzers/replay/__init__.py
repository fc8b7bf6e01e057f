"""What-if: the dependency graph of a trace, its replay, and the step times it predicts."""
