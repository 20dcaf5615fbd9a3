"""Chapter 9's coding exercises."""

EXERCISES = []
