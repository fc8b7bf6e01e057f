"""Stage 2: op categories, perf models (FLOPs and bytes per op), platforms and the roofline."""
