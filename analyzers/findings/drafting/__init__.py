"""Each category's findings drafted as cards, and a model's submission."""
