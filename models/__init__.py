"""Base models the project can build offline (no hub downloads at run time)."""
