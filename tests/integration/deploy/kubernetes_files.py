"""The manifests under ``deploy/kubernetes/``, loaded as plain documents for the tests.

Reads the YAML files (every document of every file) and offers the views the tests need:
documents by kind, pod templates with their containers, a container's environment and the
settings a workload loads, the RBAC rules bound to a ServiceAccount, the NetworkPolicies
that select a pod, and the objects of an opt-in component under ``components/``. It never
talks to a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from occ.settings.config import Settings

DIRECTORY: Final = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"
COMPONENTS: Final = DIRECTORY / "components"
KUSTOMIZATION: Final = "kustomization.yaml"
SUPPORTED_VERSIONS: Final = ("1.30", "1.31", "1.32", "1.33", "1.34")
"""From the driver's oldest supported API server to the newest the fake speaks."""
WORKLOAD_KINDS: Final = ("Deployment", "Job")

Document = dict[str, Any]

STAND_INS: Final = {
    "database-url": "postgresql+psycopg://occ_app:pw@postgres.test:5432/occ",
    "broker-url": "redis://:pw@redis.test:6379/0",
    "api-key-pepper": "0123456789abcdef" * 4,
    "secret-key": "fedcba9876543210" * 4,
    "migration-database-url": "postgresql+psycopg://occ:pw@postgres.test:5432/occ",
}
"""Values a real operator would put into the Secrets (for checks that need valid ones)."""


@dataclass(frozen=True)
class Manifest:
    """One document and the file it came from."""

    file: str
    document: Document

    @property
    def kind(self) -> str:
        return str(self.document.get("kind"))

    @property
    def name(self) -> str:
        return str((self.document.get("metadata") or {}).get("name"))


def files(directory: Path = DIRECTORY) -> list[Path]:
    """Every YAML file of the directory (its subdirectories left out), the kustomization
    included."""
    return sorted(path for path in directory.iterdir() if path.suffix in (".yaml", ".yml"))


def load(path: Path) -> list[Document]:
    """The documents of one file (empty documents dropped)."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def kustomization() -> Document:
    (document,) = load(DIRECTORY / KUSTOMIZATION)
    return document


def manifests() -> list[Manifest]:
    """Every Kubernetes object the kustomization applies, in file order."""
    return [
        Manifest(path.name, document)
        for path in files()
        if path.name != KUSTOMIZATION
        for document in load(path)
    ]


def component(name: str) -> list[Manifest]:
    """Every document of component ``name``'s files (its patches too), in file order."""
    return [
        Manifest(path.name, document)
        for path in files(COMPONENTS / name)
        if path.name != KUSTOMIZATION
        for document in load(path)
    ]


def of_kind(kind: str) -> list[Manifest]:
    return [manifest for manifest in manifests() if manifest.kind == kind]


def one(kind: str, name: str) -> Document:
    (found,) = [m.document for m in manifests() if m.kind == kind and m.name == name]
    return found


LISTENS_ON: Final = {"api": 8000, "control": 9101, "drivers": 9101}
"""The one port each component takes connections on (the API's HTTP, the workers' metrics)."""


@dataclass(frozen=True)
class Workload:
    """A Deployment or Job: its name and its pod template."""

    kind: str
    name: str
    template: Document

    @property
    def pod(self) -> Document:
        spec: Document = self.template["spec"]
        return spec

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = (self.template.get("metadata") or {}).get("labels") or {}
        return labels

    def containers(self) -> Iterator[Document]:
        yield from self.pod.get("initContainers") or []
        yield from self.pod["containers"]


def workloads() -> list[Workload]:
    return [
        Workload(m.kind, m.name, m.document["spec"]["template"])
        for m in manifests()
        if m.kind in WORKLOAD_KINDS
    ]


def workload(name: str) -> Workload:
    (found,) = [w for w in workloads() if w.name == name]
    return found


def environment(container: Mapping[str, Any]) -> dict[str, Document]:
    """A container's ``env`` entries by name."""
    return {entry["name"]: entry for entry in container.get("env") or []}


def config_map_data(name: str) -> dict[str, str]:
    data: dict[str, str] = one("ConfigMap", name).get("data") or {}
    return data


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        assert expression["operator"] == "In"  # the only operator these policies use
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def policies_for(labels: Mapping[str, str], policy_type: str) -> list[Document]:
    return [
        m.document["spec"]
        for m in of_kind("NetworkPolicy")
        if policy_type in m.document["spec"]["policyTypes"]
        and selects(m.document["spec"]["podSelector"], labels)
    ]


def egress_ports(labels: Mapping[str, str]) -> set[int]:
    return {
        port["port"]
        for spec in policies_for(labels, "Egress")
        for rule in spec.get("egress") or []
        for port in rule.get("ports") or []
    }


def container_environment(
    container: Mapping[str, Any], patched: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a container gets, with stand-ins for the Secrets' values (``patched``:
    what an overlay's patch adds to occ-settings, which the container's own ``env`` overrides
    as ``envFrom`` is)."""
    env = config_map_data("occ-settings") | dict(patched or {})
    for name, entry in environment(container).items():
        if "value" in entry:
            env[name] = entry["value"]
        else:
            env[name] = STAND_INS[entry["valueFrom"]["secretKeyRef"]["key"]]
    env.pop("OCC_CONFIG_PATH", None)  # a path inside the pod
    return env


def settings_of(
    name: str,
    tmp_path: Path,
    kubeconfig: Path | None = None,
    patched: Mapping[str, str] | None = None,
) -> Settings:
    """The settings workload ``name`` loads (the driver policy's file written under
    ``tmp_path`` where it mounts it; with ``kubeconfig``: for the fake cluster; ``patched``:
    what an overlay's patch adds to occ-settings)."""
    (container,) = workload(name).pod["containers"]
    env = container_environment(container, patched)
    if "OCC_CONFIG_PATH" in environment(container):
        policy = tmp_path / "settings.yaml"
        policy.write_text(config_map_data("occ-driver-policy")["settings.yaml"])
        env["OCC_CONFIG_PATH"] = str(policy)
    if kubeconfig is not None:
        env["OCC_KUBERNETES_KUBECONFIG"] = str(kubeconfig)
    return Settings.from_env(env)


def bound_rules(service_account: str, added: Iterable[Manifest] = ()) -> list[Document]:
    """The rules of every ClusterRole bound to ServiceAccount ``service_account`` (among the
    directory's objects and those ``added``, a component's)."""
    objects = [*manifests(), *added]
    bound = {
        binding.document["roleRef"]["name"]
        for binding in objects
        if binding.kind == "ClusterRoleBinding"
        and any(subject["name"] == service_account for subject in binding.document["subjects"])
    }
    return [
        rule
        for role in objects
        if role.kind == "ClusterRole" and role.name in bound
        for rule in role.document["rules"]
    ]
