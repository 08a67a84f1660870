"""Managed accounts: the accounts an account Backend issued to a Namespace, and ``account:read``.

* ``occ.accounts``: one row per issued account, named in its Namespace, with the Backend
  binding the Backend driver verified at issue (``backend_id``, ``driver``, ``workspace``) and
  the moment occ learnt that the Backend withdrew it. No token value or token reference lives
  here: the Backend keeps the credential and answers its current reference.
* ``account:read`` joins the permission table (``occ.permissions_are_valid``) and ``account``
  the resource kinds a binding may name; the Installation administrator Role that bootstrap
  created is granted it, as a new bootstrap grants it.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0021"
down_revision = "0020"

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
OLD_PERMISSIONS = [
    "installation:read",
    "installation:administer",
    "namespace:create",
    "namespace:read",
    "namespace:delete",
    *(f"configuration:{action}" for action in ("create", "read", "update", "delete")),
    *(f"secret:{action}" for action in ("create", "read", "update", "delete", "operate")),
    *(
        f"agent:{action}"
        for action in (
            "create",
            "read",
            "update",
            "delete",
            "deploy",
            "operate",
            "administer",
            "read_logs",
            "use",
        )
    ),
    "agent_revision:read",
]
NEW_PERMISSIONS = [*OLD_PERMISSIONS, "account:read"]
OLD_KINDS = ["installation", "namespace", "configuration", "secret", "agent", "agent_revision"]
NEW_KINDS = [*OLD_KINDS, "account"]
ADMINISTRATOR_ROLE = "Installation administrator"


def _list(values: list[str]) -> str:
    return ", ".join(f"'{value}'" for value in values)


def _permissions(values: list[str]) -> str:
    return f"""
CREATE OR REPLACE FUNCTION occ.permissions_are_valid(value text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT cardinality(value) >= 1 AND value <@ ARRAY[{_list(values)}]::text[]
$$;
"""


def _binding_kinds(values: list[str]) -> str:
    return f"""
ALTER TABLE occ.access_bindings DROP CONSTRAINT access_bindings_resource_kind_valid,
  ADD CONSTRAINT access_bindings_resource_kind_valid
    CHECK (resource_kind IN ({_list(values)}));
"""


UPGRADE = rf"""
CREATE TABLE occ.accounts (
  id text NOT NULL,
  namespace_id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  backend_id text NOT NULL,
  driver text NOT NULL,
  workspace text NOT NULL,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  withdrawn_at timestamptz,
  CONSTRAINT accounts_pkey PRIMARY KEY (id),
  CONSTRAINT accounts_namespace_id_name_key UNIQUE (namespace_id, name),
  CONSTRAINT accounts_namespace_id_id_key UNIQUE (namespace_id, id),
  CONSTRAINT accounts_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT accounts_id_format CHECK (id ~ '^acc_{UUID4}$'),
  CONSTRAINT accounts_name_valid CHECK (occ.name_is_valid(name)),
  CONSTRAINT accounts_binding_valid CHECK (
    backend_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{{0,127}}$'
    AND driver ~ '^[a-z][a-z0-9-]{{0,31}}$'
    AND workspace ~ '^[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}$'),
  CONSTRAINT accounts_withdrawn_after_creation
    CHECK (withdrawn_at IS NULL OR withdrawn_at >= created_at)
);
CREATE INDEX accounts_namespace_created ON occ.accounts (namespace_id, created_at, id);
{_permissions(NEW_PERMISSIONS)}
{_binding_kinds(NEW_KINDS)}
UPDATE occ.roles SET permissions = array_append(permissions, 'account:read')
 WHERE name = '{ADMINISTRATOR_ROLE}' AND namespace_id IS NULL AND deleted_at IS NULL
   AND NOT ('account:read' = ANY (permissions));
"""

GRANTS = r"""
GRANT SELECT, INSERT ON occ.accounts TO occ_app;
GRANT UPDATE (withdrawn_at, updated_at) ON occ.accounts TO occ_app;
"""

DOWNGRADE = rf"""
DELETE FROM occ.access_bindings WHERE resource_kind = 'account';
DELETE FROM occ.restrictions WHERE permission = 'account:read';
UPDATE occ.roles SET permissions = array_remove(permissions, 'account:read')
 WHERE 'account:read' = ANY (permissions);
{_binding_kinds(OLD_KINDS)}
{_permissions(OLD_PERMISSIONS)}
DROP TABLE occ.accounts;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute(DOWNGRADE)
