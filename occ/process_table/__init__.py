"""The processes occ runs and how each layout runs them: ``table`` (the one table), ``procfile``
(the Procfile written from it), ``documentation`` (its tables in the docs), ``shell`` (words)."""
