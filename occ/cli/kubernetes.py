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
    "--api-service-account",
    default=f"{rbac.DEFAULT_SUBJECT_NAMESPACE}/{rbac.DEFAULT_API_SUBJECT_NAME}",
    show_default=True,
    help="The API's ServiceAccount, as namespace/name; it may read gateway logs "
    "(occ agents logs). Empty: print no Role for it.",
)
@click.option(
    "--secret-values",
    is_flag=True,
    help="Also let the API's ServiceAccount keep Secret values in each namespace "
    "(OCC_SECRET_DRIVER=kubernetes).",
)
@click.option(
    "--with-namespace",
    is_flag=True,
    help="Also print each Namespace, at the restricted Pod Security level.",
)
def kubernetes_rbac(
    namespaces: tuple[str, ...],
    service_account: str,
    api_service_account: str,
    secret_values: bool,
    with_namespace: bool,
) -> None:
    """Print the Roles and RoleBindings occ needs in each namespace (kubectl apply -f -)."""
    subject_namespace, subject_name = _account(service_account, "--service-account")
    api_subject = (
        _account(api_service_account, "--api-service-account") if api_service_account else None
    )
    if secret_values and api_subject is None:
        raise click.UsageError("--secret-values grants the API's ServiceAccount: name one")
    manifests = rbac.provisioning(
        namespaces,
        subject_namespace=subject_namespace,
        subject_name=subject_name,
        api_subject=api_subject,
        secret_values=secret_values,
        with_namespace=with_namespace,
    )
    click.echo(yaml.safe_dump_all(manifests, sort_keys=False), nl=False)


def _account(given: str, option: str) -> tuple[str, str]:
    """``namespace/name`` of a ServiceAccount option, split."""
    namespace, slash, name = given.partition("/")
    if not slash or not namespace or not name:
        raise click.BadParameter("give it as namespace/name", param_hint=option)
    return namespace, name


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
