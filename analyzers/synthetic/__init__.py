"""Generated Kineto traces with planted answers: the sample the demo analyses, the situations of
the truth corpus, the cases of the unit and golden-free tests (docs/trace.md#generated-traces)."""
