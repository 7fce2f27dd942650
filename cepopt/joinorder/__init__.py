"""joinorder family."""
