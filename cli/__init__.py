"""The command line: `rooflens analyze`, `report`, `compare`, `job`, `inspect`, `validate`,
`demo` and `serve` (which starts the MCP server of `server/`)."""
