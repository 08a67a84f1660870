"""The Kubernetes Secret Driver: each value in a tenant-local Kubernetes Secret.

A Secret's value lives in a Kubernetes Secret (``occ-secret-<hash of its id>``, key
``value``) in the Kubernetes namespace of its occ Namespace, the one the kubernetes Compute
Driver made (found by occ's labels); the row keeps only a reference,
``kubernetes-secret:v1:<name>``. Every object carries occ's labels and the Secret's id, and a
read checks them: an object occ does not own is never taken for a value. A Namespace whose
Kubernetes namespace does not exist yet answers ``DependencyUnavailable`` (503 to the API).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    client,
    cluster_config,
    configured,
    kinds,
    namespaces,
    naming,
)
from occ.foundation import errors
from occ.settings.config import Settings

DRIVER_ID: Final = "kubernetes"
ROLE: Final = "secret-value"
KEY: Final = "value"
SECRET_ID_ANNOTATION: Final = "occ.dev/secret-id"  # noqa: S105 - a label key
_PREFIX: Final = b"kubernetes-secret:v1:"


class KubernetesSecrets:
    """Secret values as Kubernetes Secrets in each Namespace's own Kubernetes namespace."""

    id: Final = DRIVER_ID

    def __init__(self, api: client.KubernetesApi, policy: namespaces.Policy) -> None:
        self.api = api
        self.policy = policy

    @classmethod
    def from_settings(cls, settings: Settings) -> KubernetesSecrets:
        """The cluster of the kubernetes settings (``kubernetes_kubeconfig``, its context and
        request timeout), as the kubernetes Compute Driver reaches it."""
        configuration = cluster_config.load_configuration(
            settings.kubernetes_kubeconfig, settings.kubernetes_context
        )
        return cls(
            client.KubernetesApi(
                configuration, timeout_s=settings.kubernetes_request_timeout_ms / 1000
            ),
            configured.namespace_policy(settings),
        )

    def __repr__(self) -> str:
        return f"KubernetesSecrets({self.api.host})"

    def seal(self, namespace_id: str, secret_id: str, value: str) -> bytes:
        namespace = self._namespace(namespace_id)
        name = object_name(secret_id)
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": naming.metadata(
                name,
                namespace,
                naming.labels(ROLE, namespace_id=namespace_id),
                {SECRET_ID_ANNOTATION: secret_id},
            ),
            "type": "Opaque",
            "data": {KEY: base64.b64encode(value.encode()).decode("ascii")},
        }
        with _translated("write"):
            self.api.apply(kinds.SECRET, namespace, body)
        return _PREFIX + name.encode()

    def unseal(self, namespace_id: str, secret_id: str, stored: bytes) -> str:
        name = object_name(secret_id)
        if bytes(stored) != _PREFIX + name.encode():
            raise errors.SecretUnreadable("the row does not name this Secret's Kubernetes Secret")
        found = self._owned(namespace_id, secret_id)
        if found is None:
            raise errors.SecretUnreadable("the Secret's Kubernetes Secret is gone")
        try:
            return base64.b64decode((found.get("data") or {})[KEY], validate=True).decode()
        except (KeyError, TypeError, ValueError, binascii.Error):
            raise errors.SecretUnreadable("the Secret's Kubernetes Secret is damaged") from None

    def remove(self, namespace_id: str, secret_id: str) -> None:
        found = self._owned(namespace_id, secret_id)
        if found is not None:
            metadata = found["metadata"]
            namespace, name, uid = metadata["namespace"], metadata["name"], metadata["uid"]
            with _translated("delete"):
                self.api.delete(kinds.SECRET, namespace, name, uid)

    def _owned(self, namespace_id: str, secret_id: str) -> Mapping[str, Any] | None:
        namespace = self._namespace(namespace_id)
        with _translated("read"):
            found = self.api.read(kinds.SECRET, namespace, object_name(secret_id))
        if found is None:
            return None
        metadata = found.get("metadata") or {}
        labels = metadata.get("labels") or {}
        owned = all(
            labels.get(key) == value
            for key, value in naming.labels(ROLE, namespace_id=namespace_id).items()
        )
        if not owned or (metadata.get("annotations") or {}).get(SECRET_ID_ANNOTATION) != secret_id:
            raise errors.SecretUnreadable("a Kubernetes Secret with occ's name is not occ's")
        return found

    def _namespace(self, namespace_id: str) -> str:
        with _translated("find the Namespace of"):
            found = namespaces.find(self.api, self.policy, namespace_id)
        if found is None:
            raise errors.DependencyUnavailable(
                "the Namespace's Kubernetes namespace is not ready for Secrets yet"
            )
        return found


def object_name(secret_id: str) -> str:
    """The Kubernetes Secret holding the value of ``secret_id``."""
    return f"occ-secret-{hashlib.sha256(secret_id.encode()).hexdigest()[:20]}"


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """Kubernetes API failures as ``DependencyUnavailable`` (their code, never a value)."""
    try:
        yield
    except base.DriverError as exc:
        raise errors.DependencyUnavailable(
            f"cannot {what} a Secret on Kubernetes: {exc.code}"
        ) from None
