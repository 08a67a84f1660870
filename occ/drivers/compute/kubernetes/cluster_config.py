"""The ``kubernetes`` driver's client configuration, built from settings: an explicit
kubeconfig and context; unset, the in-cluster configuration when available, else the default
kubeconfig. A configuration that cannot be used is a ``PermanentDriverError``
(``KUBERNETES_SETTINGS_INVALID``) naming the kind of failure only, never a credential.
"""

from __future__ import annotations

from typing import Any, Final

import urllib3
from kubernetes import client as k8s
from kubernetes import config as _k8s_config

from occ.drivers.compute import base

SETTINGS_INVALID: Final = "KUBERNETES_SETTINGS_INVALID"

k8s_config: Any = _k8s_config
"""The client's config loaders (untyped upstream)."""


def load_configuration(kubeconfig: str | None, context: str | None) -> k8s.Configuration:
    """The client configuration for these settings; ``PermanentDriverError`` when unusable."""
    configuration = k8s.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)
            except k8s_config.ConfigException:
                k8s_config.load_kube_config(
                    context=context, client_configuration=configuration, persist_config=False
                )
    except (k8s_config.ConfigException, OSError, ValueError, TypeError) as exc:
        raise base.PermanentDriverError(
            SETTINGS_INVALID,
            f"the Kubernetes client configuration is unusable ({type(exc).__name__})",
        ) from None
    # One quick reconnect; the work queue owns every higher-level retry and its backoff.
    configuration.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, redirect=0)
    return configuration
