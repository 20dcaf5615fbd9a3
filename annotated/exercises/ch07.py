"""Chapter 7's coding exercises."""

EXERCISES = []
