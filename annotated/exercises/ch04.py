"""Chapter 4's coding exercises."""

EXERCISES = []
