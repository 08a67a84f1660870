"""``occ kubernetes``: the RBAC an administrator provisions for a tenant-scoped installation,
and the start-up verification of occ's access, run by hand."""

from __future__ import annotations

import click
import yaml

from occ.cli import base
from occ.drivers.compute import base as compute
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, access, rbac
from occ.settings.config import Settings


@click.group()
def kubernetes() -> None:
    """Provision and verify the kubernetes Compute Driver's access."""


@kubernetes.command("rbac")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    required=True,
    help="A managed namespace (repeat for each).",
)
@click.option(
    "--service-account",
    default=f"{rbac.DEFAULT_SUBJECT_NAMESPACE}/{rbac.DEFAULT_SUBJECT_NAME}",
    show_default=True,
    help="The workers' ServiceAccount, as namespace/name.",
)
@click.option(
    "--with-namespace",
    is_flag=True,
    help="Also print each Namespace, at the restricted Pod Security level.",
)
def kubernetes_rbac(
    namespaces: tuple[str, ...], service_account: str, with_namespace: bool
) -> None:
    """Print the Role and RoleBinding occ needs in each namespace (kubectl apply -f -)."""
    subject_namespace, slash, subject_name = service_account.partition("/")
    if not slash or not subject_namespace or not subject_name:
        raise click.BadParameter("give it as namespace/name", param_hint="--service-account")
    manifests = rbac.provisioning(
        namespaces,
        subject_namespace=subject_namespace,
        subject_name=subject_name,
        with_namespace=with_namespace,
    )
    click.echo(yaml.safe_dump_all(manifests, sort_keys=False), nl=False)


@kubernetes.command("verify")
def kubernetes_verify() -> None:
    """Check, as the workers do at start, that occ may do everything it needs (exit 1 if not)."""
    settings = Settings.from_env()
    try:
        driver = KubernetesComputeDriver.from_settings(settings)
        try:
            major, minor = driver.api.server_version()
            verification = access.verify(
                driver.api, driver.policy.installation, driver.policy.managed
            )
        finally:
            driver.close()
    except compute.DriverError as exc:
        base.fail(f"{exc.code}: {exc.reason}", base.EXIT_OCC_ERROR)
    click.echo(
        f"occ kubernetes verify: {verification.installation} installation, "
        f"API server {major}.{minor}, {verification.checked} accesses checked"
    )
    for line in verification.lines(everything=True):
        click.echo(line)
    if not verification.passed:
        base.fail("occ lacks access it needs (see above)", base.EXIT_CHECK_FAILED)
