"""Stage 1: decode a trace into columns, link it, build the host tree, measure the GPU timeline."""
