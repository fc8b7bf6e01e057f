"""The findings contract: the Markdown a category's findings are written in, and its checks."""
