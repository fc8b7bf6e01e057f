"""Comparing two traces: the merged call tree (tree diff) and its tables."""
