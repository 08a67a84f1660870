"""End-to-end tests: the real ``occ`` command with real processes."""
