"""Chapter 8's coding exercises."""

EXERCISES = []
