"""The apiserver's URL layout, as far as the fake serves it.

Models ``/api/v1`` and ``/apis/<group>/<version>`` paths: namespaced collections and items,
the Deployment ``scale`` and Pod ``log`` subresources, cluster-wide lists, namespaces,
``/version`` and ``SelfSubjectAccessReview``. A pure function of the path; it must not
answer requests.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from tests.support.kube_api import errors, resources

_SUBRESOURCES = {("deployments", "scale"), ("pods", "log")}


@dataclass(frozen=True)
class Route:
    """What a path names: a resource's collection or item (maybe a subresource), or a special."""

    resource: resources.Resource | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    special: str | None = None


def route(path: str) -> Route:
    """The target of ``path``; an unknown path is the apiserver's 404."""
    parts = [urllib.parse.unquote(part) for part in path.strip("/").split("/")]
    unknown = errors.ApiError(404, "NotFound", "the server could not find the requested resource")
    if parts == ["version"]:
        return Route(special="version")
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise unknown
    if (group, version, rest) == ("authorization.k8s.io", "v1", ["selfsubjectaccessreviews"]):
        return Route(special="selfsubjectaccessreview")
    namespaces = resources.by_plural("namespaces")
    if group == "" and rest[:1] == ["namespaces"] and len(rest) <= 2:
        return Route(namespaces, name=rest[1] if len(rest) == 2 else None)
    if len(rest) >= 3 and rest[0] == "namespaces":
        resource = resources.lookup(group, version, rest[2])
        if resource is None or not resource.namespaced or len(rest) > 5:
            raise unknown
        name = rest[3] if len(rest) >= 4 else None
        subresource = rest[4] if len(rest) == 5 else None
        if subresource is not None and (resource.plural, subresource) not in _SUBRESOURCES:
            raise unknown
        return Route(resource, namespace=rest[1], name=name, subresource=subresource)
    if len(rest) == 1:
        resource = resources.lookup(group, version, rest[0])
        if resource is not None and resource.namespaced:
            return Route(resource)  # a list across all namespaces
    raise unknown
