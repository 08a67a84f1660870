"""What makes a written object ``Invalid`` (422) on the apiserver.

Models name syntax (DNS-1123 subdomain / label, DNS-1035 label for Services), label and
annotation syntax, the Deployment selector rule, immutable fields and (optionally) the
OpenAPI schema in strict mode through ``kubernetes_validate``. Every check returns the list
of causes; it must not raise, store or decide the answer's code.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

import kubernetes_validate

from tests.support.kube_api import resources, selectors

Obj = resources.Obj

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^([0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
_SUFFIX_FACTORS: dict[str | None, Decimal] = {
    None: Decimal(1),
    "m": Decimal("0.001"),
    **{suffix: Decimal(1000) ** power for power, suffix in enumerate("kMGTPE", start=1)},
    **{f"{suffix}i": Decimal(1024) ** power for power, suffix in enumerate("KMGTPE", start=1)},
}


def name_causes(resource: resources.Resource, name: object) -> list[str]:
    """Causes against ``metadata.name``: namespaces are DNS-1123 labels, Services DNS-1035."""
    if not isinstance(name, str) or not name:
        return ["metadata.name: Required value: name or generateName is required"]
    if resource.plural == "namespaces":
        pattern, limit, what = _DNS1123_LABEL, 63, "a lowercase RFC 1123 label"
    elif resource.plural == "services":
        pattern, limit, what = _DNS1035_LABEL, 63, "a DNS-1035 label"
    else:
        pattern, limit, what = _DNS1123_SUBDOMAIN, 253, "a lowercase RFC 1123 subdomain"
    if len(name) > limit or not pattern.match(name):
        return [
            f'metadata.name: Invalid value: "{name}": must be {what} of at most {limit} characters'
        ]
    return []


def _qualified_key_causes(field: str, key: object) -> list[str]:
    if not isinstance(key, str):
        return [f"{field}: Invalid value: {key!r}: must be a string"]
    prefix, _, name = key.rpartition("/")
    causes = []
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        causes.append(f'{field}: Invalid value: "{key}": prefix part must be a DNS-1123 subdomain')
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        causes.append(
            f'{field}: Invalid value: "{key}": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character"
            " (at most 63 characters)"
        )
    return causes


def metadata_causes(metadata: Obj) -> list[str]:
    """Causes against label keys and values and annotation keys."""
    causes: list[str] = []
    for key, value in (metadata.get("labels") or {}).items():
        causes += _qualified_key_causes("metadata.labels", key)
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                f'metadata.labels: Invalid value: "{value}": a valid label must be an empty '
                "string or consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character (at most 63 characters)"
            )
    for key in metadata.get("annotations") or {}:
        causes += _qualified_key_causes("metadata.annotations", key)
    return causes


def deployment_causes(obj: Obj) -> list[str]:
    """A Deployment needs a selector and a template whose labels that selector selects."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return ["spec: Required value"]
    causes = []
    selector = spec.get("selector")
    template = spec.get("template")
    if not isinstance(selector, dict) or not selector:
        causes.append("spec.selector: Required value")
    if not isinstance(template, dict):
        causes.append("spec.template: Required value")
    elif isinstance(selector, dict) and selector:
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selectors.label_selector_matches(selector, labels):
            causes.append(
                f"spec.template.metadata.labels: Invalid value: {labels}: `selector` does not "
                "match template `labels`"
            )
    return causes


def schema_causes(obj: Obj, schema_version: str) -> list[str]:
    """The strict OpenAPI schema check of the whole object (unknown fields are errors)."""
    try:
        kubernetes_validate.validate(obj, schema_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in error.path) or "<root>"
        return [f"{path}: Invalid value: {error.message}"]
    return []


def immutability_causes(resource: resources.Resource, old: Obj, new: Obj) -> list[str]:
    """Causes for changing fields the apiserver keeps fixed after creation."""
    old_spec: Any = old.get("spec") or {}
    new_spec: Any = new.get("spec") or {}
    if resource.plural == "deployments" and old_spec.get("selector") != new_spec.get("selector"):
        return ["spec.selector: Invalid value: field is immutable"]
    if resource.plural in ("configmaps", "secrets") and old.get("immutable") is True:
        changed = [
            field
            for field in ("data", "binaryData", "immutable")
            if old.get(field) != new.get(field)
        ]
        if changed:
            return [
                f"{field}: Forbidden: field is immutable when `immutable` is set"
                for field in changed
            ]
    if resource.plural == "services" and old_spec.get("clusterIP") != new_spec.get("clusterIP"):
        return [f'spec.clusterIP: Invalid value: "{new_spec.get("clusterIP")}": field is immutable']
    if resource.plural == "persistentvolumeclaims":
        return _claim_causes(old_spec, new_spec)
    return []


def _claim_causes(old_spec: Obj, new_spec: Obj) -> list[str]:
    old_size = _storage_request(old_spec)
    new_size = _storage_request(new_spec)
    if _without_storage_request(old_spec) != _without_storage_request(new_spec):
        return ["spec: Forbidden: spec is immutable after creation except resources.requests"]
    old_bytes, new_bytes = quantity(old_size), quantity(new_size)
    if old_bytes is not None and new_bytes is not None and new_bytes < old_bytes:
        return [
            "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
        ]
    return []


def _storage_request(spec: Obj) -> object:
    return ((spec.get("resources") or {}).get("requests") or {}).get("storage")


def _without_storage_request(spec: Obj) -> Obj:
    stripped = {key: value for key, value in spec.items() if key != "resources"}
    resources_field = dict(spec.get("resources") or {})
    requests = {k: v for k, v in (resources_field.get("requests") or {}).items() if k != "storage"}
    resources_field["requests"] = requests
    stripped["resources"] = resources_field
    return stripped


def quantity(value: object) -> Decimal | None:
    """A Kubernetes resource quantity (``1Gi``, ``500M``, ``250m``) as a number, if valid."""
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    found = _QUANTITY.match(value)
    if not found:
        return None
    try:
        return Decimal(found.group(1)) * _SUFFIX_FACTORS[found.group(2)]
    except InvalidOperation:
        return None
