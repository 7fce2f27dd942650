"""sharon family."""
