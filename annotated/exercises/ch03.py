"""Chapter 3's coding exercises."""

EXERCISES = []
