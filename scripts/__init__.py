"""Developer scripts, run from the repository root (``python -m scripts.test_services``,
``python scripts/generate.py``); a package so that mypy and the tests name each one once
(``scripts.docker_engine``)."""
