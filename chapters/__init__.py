"""The chapters: notebooks, their regeneration script and their pytest settings."""
