"""RBAC as far as tests need it: verbs a test has denied answer 403 ``Forbidden``.

Models the authorizer's decision (also reported by ``SelfSubjectAccessReview``) for the
fake's single user; everything not denied is allowed. It must not answer HTTP itself.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from tests.support.kube_api import errors

USER = "system:serviceaccount:occ-system:occ-driver"


@dataclass(frozen=True)
class Denial:
    verb: str
    resource: str
    namespace: str | None


class Authorizer:
    """The denied (verb, resource, namespace) triples; ``*`` matches any verb or resource."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._denials: list[Denial] = []

    def deny(self, verb: str, resource: str, namespace: str | None = None) -> None:
        with self._lock:
            self._denials.append(Denial(verb, resource, namespace))

    def clear(self) -> None:
        with self._lock:
            self._denials.clear()

    def allowed(self, verb: str, resource: str, namespace: str | None) -> bool:
        with self._lock:
            return not any(
                denial.verb in ("*", verb)
                and denial.resource in ("*", resource)
                and (denial.namespace is None or denial.namespace == namespace)
                for denial in self._denials
            )

    def check(
        self, verb: str, resource: str, group: str, namespace: str | None, name: str | None
    ) -> None:
        """Raise the apiserver's 403 when ``verb`` on ``resource`` is denied."""
        if self.allowed(verb, resource, namespace):
            return
        subject = f'{resource} "{name}"' if name else resource
        scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        base_resource = resource.split("/", 1)[0]
        raise errors.ApiError(
            403,
            "Forbidden",
            f'{subject} is forbidden: User "{USER}" cannot {verb} resource "{resource}" in API '
            f'group "{group}"{scope}',
            name=name,
            kind=base_resource,
            group=group,
        )
