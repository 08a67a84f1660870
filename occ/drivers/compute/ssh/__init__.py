"""The ``ssh`` Compute Driver (work in progress)."""
