"""The vocabulary every layer shares: the error tree, reason codes, ids, the harness catalogue
and fingerprints. Imports nothing else of occ."""
