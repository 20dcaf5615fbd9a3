"""Chapter 5's coding exercises."""

EXERCISES = []
