"""The manifests that run occ on a cluster (``deploy/kubernetes/``), checked without a cluster.

Every object validates against the Kubernetes 1.34 schema (strict); the kustomization applies
every file and builds; pods are restricted, probed and sized; commands and replicas are the
process table's, and run the Procfile's options through the real ``occ`` CLI; secrets are
placeholders that occ refuses, reached only by reference; the NetworkPolicies fence the API and
let only the workers and the API reach the API server, each bound to its own role
(``test_kubernetes_rbac.py`` compares the roles with what occ asks of the API server).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import click.testing
import kubernetes_validate
import pytest
import yaml

from occ import cli
from occ.foundation import errors
from occ.process_table import table
from occ.process_table.table import Layout
from occ.settings.config import Settings
from tests.integration.deploy import kubernetes_files

ROOT: Final = kubernetes_files.DIRECTORY.parents[1]
SCHEMA_VERSION: Final = "1.34"
SUPPORTED_VERSIONS: Final = kubernetes_files.SUPPORTED_VERSIONS
PLACEHOLDER: Final = "REPLACE-ME"
SECRET_SETTINGS: Final = (
    "OCC_DATABASE_URL",
    "OCC_MIGRATION_DATABASE_URL",
    "OCC_BROKER_URL",
    "OCC_API_KEY_PEPPER",
    "OCC_SECRET_KEY",
)

Document = dict[str, Any]
TALKS_TO_KUBERNETES: Final = {
    "control": "occ-compute-driver",
    "drivers": "occ-compute-driver",
    "api": "occ-log-reader",
}
"""The components that use the Kubernetes API, and the one ClusterRole each is bound to: the
workers run the driver, the API reads gateway logs."""


# -- schema and kustomization ----------------------------------------------------------------


@pytest.mark.parametrize("path", kubernetes_files.files(), ids=lambda path: path.name)
def test_every_file_parses_and_every_object_validates_strictly(path: Path) -> None:
    documents = kubernetes_files.load(path)
    assert documents, f"{path.name} holds no document"
    if path.name == kubernetes_files.KUSTOMIZATION:
        (document,) = documents
        assert document["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
        assert document["kind"] == "Kustomization"
        assert set(document) <= {"apiVersion", "kind", "resources", "images"}
        return
    for document in documents:
        for version in SUPPORTED_VERSIONS:
            kubernetes_validate.validate(document, version, strict=True)


def test_the_kustomization_applies_every_file_and_nothing_else() -> None:
    resources = kubernetes_files.kustomization()["resources"]
    on_disk = [p.name for p in kubernetes_files.files() if p.name != kubernetes_files.KUSTOMIZATION]
    assert sorted(resources) == sorted(on_disk)
    assert len(set(resources)) == len(resources)
    names = [(m.kind, m.name) for m in kubernetes_files.manifests()]
    assert len(set(names)) == len(names), "two objects share a kind and a name"
    images = {
        container["image"]
        for workload in kubernetes_files.workloads()
        for container in workload.containers()
    }
    assert images == {entry["name"] for entry in kubernetes_files.kustomization()["images"]}


def test_kustomize_builds_the_same_objects_with_the_image_set() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (its kustomize builds the directory)")
    built = subprocess.run(
        [kubectl, "kustomize", str(kubernetes_files.DIRECTORY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    objects = [doc for doc in yaml.safe_load_all(built) if doc]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == sorted(
        (m.kind, m.name) for m in kubernetes_files.manifests()
    )
    (image,) = kubernetes_files.kustomization()["images"]
    expected = f"{image['newName']}:{image['newTag']}"
    for obj in objects:
        if obj["kind"] in kubernetes_files.WORKLOAD_KINDS:
            for container in obj["spec"]["template"]["spec"]["containers"]:
                assert container["image"] == expected


def test_every_namespaced_object_is_in_occ_system() -> None:
    (namespace,) = kubernetes_files.of_kind("Namespace")
    assert namespace.document["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "restricted"
    )
    for manifest in kubernetes_files.manifests():
        metadata = manifest.document["metadata"]
        if manifest.kind in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert "namespace" not in metadata, manifest
        else:
            assert metadata.get("namespace") == namespace.name, manifest


# -- pods ------------------------------------------------------------------------------------


@pytest.mark.parametrize("workload", kubernetes_files.workloads(), ids=lambda w: w.name)
def test_pods_meet_the_restricted_level_with_a_read_only_root(
    workload: kubernetes_files.Workload,
) -> None:
    pod = workload.pod
    pod_context = pod.get("securityContext") or {}
    assert pod_context.get("runAsNonRoot") is True
    assert isinstance(pod_context.get("runAsUser"), int) and pod_context["runAsUser"] > 0
    assert pod_context.get("seccompProfile") == {"type": "RuntimeDefault"}
    for forbidden in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(forbidden), forbidden
    volumes = {volume["name"]: volume for volume in pod.get("volumes") or []}
    assert all("hostPath" not in volume for volume in volumes.values())
    for container in workload.containers():
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["runAsNonRoot"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not context.get("privileged")
        assert context.get("runAsUser", 1) != 0
        mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
        assert "emptyDir" in volumes[mounts["/tmp"]], "/tmp must be an emptyDir"
        for bound in ("requests", "limits"):
            assert set(container["resources"][bound]) >= {"cpu", "memory"}, bound


@pytest.mark.parametrize("workload", kubernetes_files.workloads(), ids=lambda w: w.name)
def test_only_the_workers_and_the_api_mount_a_kubernetes_token(
    workload: kubernetes_files.Workload,
) -> None:
    accounts = {m.name: m.document for m in kubernetes_files.of_kind("ServiceAccount")}
    account = accounts[workload.pod["serviceAccountName"]]
    assert account["automountServiceAccountToken"] is False  # each pod opts in
    component = workload.labels["app.kubernetes.io/component"]
    talks_to_kubernetes = component in TALKS_TO_KUBERNETES
    assert workload.pod["automountServiceAccountToken"] is talks_to_kubernetes
    bound = {
        binding.document["roleRef"]["name"]
        for binding in kubernetes_files.of_kind("ClusterRoleBinding")
        for subject in binding.document["subjects"]
        if subject["name"] == workload.pod["serviceAccountName"]
    }
    assert bound == ({TALKS_TO_KUBERNETES[component]} if talks_to_kubernetes else set())


def test_the_api_is_probed_on_healthz_and_readyz_and_served_internally() -> None:
    (container,) = kubernetes_files.workload("occ-api").pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    (service,) = kubernetes_files.of_kind("Service")
    assert service.document["spec"]["type"] == "ClusterIP"
    assert service.document["spec"]["ports"][0]["targetPort"] == "http"
    assert container["ports"] == [{"name": "http", "containerPort": 8000}]


@pytest.mark.parametrize("name", ["occ-control", "occ-drivers"])
def test_workers_are_probed_on_their_readiness_marker(name: str) -> None:
    (container,) = kubernetes_files.workload(name).pod["containers"]
    marker = kubernetes_files.environment(container)["OCC_WORKER_READINESS_PATH"]["value"]
    assert marker.startswith("/tmp/")  # the only writable place
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["exec"]["command"] == ["test", "-f", marker], probe


def _procfile() -> dict[str, list[str]]:
    lines = (ROOT / "Procfile").read_text(encoding="utf-8").splitlines()
    entries = dict(
        line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#")
    )
    return {name: shlex.split(command) for name, command in entries.items()}


def _options(argv: list[str]) -> set[tuple[str, ...]]:
    """An argv as (option, value) pairs, flags and positionals (order does not matter).

    A ``setting=value`` token is Celery's positional configuration, never an option's value.
    """
    argv = [token for token in argv if not re.fullmatch(r"[A-Z_]+=\S*", token)]  # VAR=value
    found: set[tuple[str, ...]] = set()
    index = 0
    while index < len(argv):
        token = argv[index]
        following = argv[index + 1] if index + 1 < len(argv) else ""
        is_value = bool(following) and not following.startswith("-") and "=" not in following
        if token.startswith("-") and is_value:
            found.add((token, following))
            index += 2
        else:
            found.add((token,))
            index += 1
    return found


def _exec_argv(container: Mapping[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What ``occ`` replaces itself with for this container's command."""
    command = container["command"]
    assert command[0] == "occ"
    executed: list[list[str]] = []
    monkeypatch.setattr(cli.processes, "_exec_python_module", executed.append)
    result = click.testing.CliRunner().invoke(
        cli.cli, command[1:], env=kubernetes_files.container_environment(container)
    )
    assert result.exit_code == 0, result.output
    (argv,) = executed
    return argv


def test_the_workloads_are_the_process_tables_with_its_commands_and_replicas() -> None:
    runs = {run.name: run for _, run in table.runs(Layout.KUBERNETES)}
    specs = {(m.kind, m.name): m.document.get("spec") or {} for m in kubernetes_files.manifests()}
    assert {workload.name for workload in kubernetes_files.workloads()} == set(runs)
    for workload in kubernetes_files.workloads():
        run = runs[workload.name]
        (container,) = workload.pod["containers"]
        assert container["command"] == list(run.argv), workload.name
        # a Job for the release, a Deployment with the table's replicas for every other
        kind = "Job" if run.replicas is None else "Deployment"
        assert workload.kind == kind, workload.name
        assert specs[kind, workload.name].get("replicas") == run.replicas, workload.name


@pytest.mark.parametrize(
    "process",
    [process for process, _ in table.runs(Layout.KUBERNETES) if process is not table.RELEASE],
    ids=lambda process: process.name,
)
def test_commands_run_the_procfile_processes_through_occ(
    process: table.Process, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = process.runs[Layout.KUBERNETES].name
    (container,) = kubernetes_files.workload(name).pod["containers"]
    argv = _exec_argv(container, monkeypatch)
    expected = [token.replace("$PORT", "8000") for token in process.runs[Layout.PROCFILE].argv]
    assert _options(expected) <= _options(argv), (expected, argv)
    # kubelet signals the main process only: the warm shutdown is the right one
    assert "REMAP_SIGTERM" not in kubernetes_files.environment(container)


def test_the_job_migrates_and_bootstraps_with_the_owner_url_alone_in_it() -> None:
    (container,) = kubernetes_files.workload("occ-migrate").pod["containers"]
    # the Procfile's last step keeps release idle under honcho only, which stops all when one exits
    release = " ".join(_procfile()["release"]).split(" && if ", 1)[0]
    assert release == "occ db upgrade && occ bootstrap --if-missing"
    assert container["command"] == ["sh", "-c", release]
    owner = "OCC_MIGRATION_DATABASE_URL"
    assert owner in kubernetes_files.environment(container)
    for workload in kubernetes_files.workloads():
        for other in workload.containers():
            if workload.name != "occ-migrate":
                assert owner not in kubernetes_files.environment(other), workload.name
                refs = [e.get("secretRef", {}).get("name") for e in other.get("envFrom") or []]
                assert "occ-migration-secrets" not in refs, workload.name


# -- settings and secrets --------------------------------------------------------------------


def _secret_values() -> Iterator[tuple[str, str, str]]:
    for secret in kubernetes_files.of_kind("Secret"):
        for field in ("data", "stringData"):
            for key, value in (secret.document.get(field) or {}).items():
                yield secret.name, key, str(value)


def test_secrets_hold_placeholders_only_and_are_reached_by_reference() -> None:
    values = list(_secret_values())
    assert values
    for secret, key, value in values:
        assert PLACEHOLDER in value, f"{secret}/{key} holds something other than a placeholder"
    secret_keys = {(secret, key) for secret, key, _ in values}
    referenced = set()
    for workload in kubernetes_files.workloads():
        for container in workload.containers():
            assert not container.get("envFrom") or all(
                "configMapRef" in source for source in container["envFrom"]
            )
            for name, entry in kubernetes_files.environment(container).items():
                if name in SECRET_SETTINGS:
                    assert "value" not in entry, f"{workload.name}: {name} is a literal"
                reference = (entry.get("valueFrom") or {}).get("secretKeyRef")
                if reference is not None:
                    referenced.add((reference["name"], reference["key"]))
    assert referenced == secret_keys  # every key used, none missing
    for config_map in kubernetes_files.of_kind("ConfigMap"):
        text = yaml.safe_dump(config_map.document)
        assert not set(SECRET_SETTINGS) & set(config_map.document.get("data") or {})
        assert not re.search(r"://[^/\s:@]*:[^@\s]+@", text), "credentials in a URL"


def test_occ_refuses_to_start_with_the_placeholder_secrets() -> None:
    placeholders = {key: value for _, key, value in _secret_values()}
    env = dict(kubernetes_files.config_map_data("occ-settings"))
    env.update(
        OCC_DATABASE_URL=placeholders["database-url"],
        OCC_BROKER_URL=placeholders["broker-url"],
        OCC_API_KEY_PEPPER=placeholders["api-key-pepper"],
        OCC_SECRET_KEY=placeholders["secret-key"],
    )
    with pytest.raises(errors.InvalidInput) as refused:
        Settings.from_env(env)
    assert "production" in str(refused.value.errors)
    for name in ("database-url", "broker-url", "migration-database-url"):
        assert ".invalid:" in placeholders[name]  # a host that never resolves


def test_the_workers_settings_load_and_choose_the_in_cluster_kubernetes_driver(
    tmp_path: Path,
) -> None:
    settings = kubernetes_files.settings_of("occ-drivers", tmp_path)
    assert settings.environment == "production"
    assert settings.compute_driver == "kubernetes"
    assert settings.kubernetes_kubeconfig is None  # the ConfigMap sets none: in-cluster
    assert settings.kubernetes_gateway_image and PLACEHOLDER in settings.kubernetes_gateway_image
    assert settings.kubernetes_resource_quota and settings.kubernetes_limit_range


# -- network policies ------------------------------------------------------------------------


@pytest.mark.parametrize("workload", kubernetes_files.workloads(), ids=lambda w: w.name)
def test_network_policies_fence_every_pod(workload: kubernetes_files.Workload) -> None:
    component = workload.labels["app.kubernetes.io/component"]
    ingress_policies = kubernetes_files.policies_for(workload.labels, "Ingress")
    ingress = [rule for spec in ingress_policies for rule in spec.get("ingress") or []]
    assert any(not spec.get("ingress") for spec in ingress_policies), "no default deny"
    if component in kubernetes_files.LISTENS_ON:
        sources = [source for rule in ingress for source in rule["from"]]
        assert sources and all(
            set(source) <= {"podSelector", "namespaceSelector"}
            and all((sel.get("matchLabels") or {}) for sel in source.values())
            for source in sources
        ), f"{component} admits only labelled pods and namespaces"
        ports = {port["port"] for rule in ingress for port in rule["ports"]}
        assert ports == {kubernetes_files.LISTENS_ON[component]}, component
    else:
        assert ingress == [], f"{component} takes no connections"
    ports = kubernetes_files.egress_ports(workload.labels)
    assert {53, 5432, 6379} <= ports
    reaches_api_server = {443, 6443} <= ports
    assert reaches_api_server is (component in TALKS_TO_KUBERNETES), component
