"""Chapter 1's coding exercises."""

EXERCISES = []
