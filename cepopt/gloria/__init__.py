"""gloria family."""
