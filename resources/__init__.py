"""MCP resources: URIs that name the artifacts of a run and the static references."""
