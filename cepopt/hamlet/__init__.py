"""hamlet family."""
