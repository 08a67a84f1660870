"""Worker-side use cases: one reconciler per work kind, run under a live claim."""
