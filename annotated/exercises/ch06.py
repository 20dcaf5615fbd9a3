"""Chapter 6's coding exercises."""

EXERCISES = []
