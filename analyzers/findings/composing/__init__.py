"""The analysis report (`analysis.md`) and the plot, composed from the priorities and the drafts."""
