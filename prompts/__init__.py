"""The orchestrator and analyst prompts (Markdown files) and their loader."""
