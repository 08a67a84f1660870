"""Manifests checked against Kubernetes' published JSON schemas (``kubernetes_validate``),
each schema file read once per test process.

``kubernetes_validate.validate`` reads the kind's schema and the large definitions file from
disk on every call; the files never change while the tests run, so their contents are kept.
"""

from __future__ import annotations

import functools
from typing import Any

import kubernetes_validate
from kubernetes_validate import utils

ValidationError = kubernetes_validate.ValidationError

utils.schema_contents = functools.cache(utils.schema_contents)


def validate(manifest: dict[str, Any], version: str) -> None:
    """Raise ``ValidationError`` unless ``manifest`` is valid for Kubernetes ``version``
    (strict: no field the schema does not know)."""
    kubernetes_validate.validate(manifest, version, strict=True)
