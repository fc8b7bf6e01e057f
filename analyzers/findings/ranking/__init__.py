"""Every finding on one impact scale: candidates, savings, the ranking."""
