"""Stage 4: category data for the analyses: manifest, per-category ops and metadata, system data."""
