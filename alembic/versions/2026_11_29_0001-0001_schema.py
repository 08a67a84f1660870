"""The occ schema: tables, shape checks, queue indexes, roles and definer functions."""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0001"
down_revision = None

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def _id(prefix: str, column: str = "id") -> str:
    return f"{column} ~ '^{prefix}_{UUID4}$'"


PERMISSIONS = [
    "installation:read",
    "installation:administer",
    "namespace:create",
    "namespace:read",
    "namespace:delete",
    *(
        f"{kind}:{action}"
        for kind in ("configuration",)
        for action in ("create", "read", "update", "delete")
    ),
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
RESOURCE_KINDS = ["installation", "namespace", "configuration", "secret", "agent", "agent_revision"]


def _list(values: list[str]) -> str:
    return ", ".join(f"'{value}'" for value in values)


FUNCTIONS = rf"""
CREATE FUNCTION occ.name_is_valid(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT char_length(value) BETWEEN 1 AND 200
     AND value !~ '^\s' AND value !~ '\s$' AND value !~ '[[:cntrl:]]'
$$;

CREATE FUNCTION occ.permissions_are_valid(value text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT cardinality(value) >= 1 AND value <@ ARRAY[{_list(PERMISSIONS)}]::text[]
$$;

CREATE FUNCTION occ.work_result_is_valid(state text, reason_code text, result jsonb)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN result IS NULL THEN true
    WHEN jsonb_typeof(result) <> 'object' THEN false
    WHEN state = 'succeeded' AND reason_code IN ('REVISION_ACTIVATED', 'REVISION_ALREADY_ACTIVE') THEN
      (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(result) k) = ARRAY['warnings']
      AND jsonb_typeof(result -> 'warnings') = 'array'
      AND jsonb_array_length(result -> 'warnings') <= 64
      AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(result -> 'warnings') w
         WHERE jsonb_typeof(w) <> 'object'
            OR (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(w) k)
               IS DISTINCT FROM ARRAY['code', 'detail']
            OR jsonb_typeof(w -> 'code') <> 'string'
            OR (w ->> 'code') !~ '^[A-Z][A-Z0-9_]{{0,63}}$'
            OR jsonb_typeof(w -> 'detail') <> 'string'
            OR (w ->> 'detail') !~ '^[A-Za-z0-9._~:@/ -]{{1,200}}$')
    WHEN state = 'failed_permanent' AND reason_code = 'CONVERGENCE_DEADLINE_EXCEEDED' THEN
      (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(result) k) = ARRAY['timeoutMs']
      AND jsonb_typeof(result -> 'timeoutMs') = 'number'
      AND (result ->> 'timeoutMs') ~ '^[1-9][0-9]{{0,15}}$'
      AND (result ->> 'timeoutMs')::bigint <= 9007199254740991
    ELSE false
  END
$$;

CREATE FUNCTION occ.reject_row_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are immutable', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$;
"""

TABLES = rf"""
CREATE TABLE occ.installation (
  id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  singleton boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT installation_pkey PRIMARY KEY (id),
  CONSTRAINT installation_singleton UNIQUE (singleton),
  CONSTRAINT installation_singleton_true CHECK (singleton),
  CONSTRAINT installation_id_format CHECK ({_id("ins")}),
  CONSTRAINT installation_name_valid CHECK (occ.name_is_valid(name))
);

CREATE TABLE occ.namespaces (
  id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  existing_namespace text,
  status text NOT NULL DEFAULT 'provisioning',
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  deleted_at timestamptz,
  CONSTRAINT namespaces_pkey PRIMARY KEY (id),
  CONSTRAINT namespaces_name_key UNIQUE (name),
  CONSTRAINT namespaces_id_format CHECK ({_id("ns")}),
  CONSTRAINT namespaces_name_valid CHECK (occ.name_is_valid(name)),
  CONSTRAINT namespaces_existing_namespace_format
    CHECK (existing_namespace ~ '^[a-z0-9]([-a-z0-9]{{0,61}}[a-z0-9])?$'),
  CONSTRAINT namespaces_status_valid
    CHECK (status IN ('provisioning', 'ready', 'failed', 'deleting')),
  CONSTRAINT namespaces_tombstone
    CHECK (deleted_at IS NULL OR (status = 'deleting' AND deleted_at >= created_at))
);
CREATE UNIQUE INDEX namespaces_existing_namespace_live ON occ.namespaces (existing_namespace)
  WHERE existing_namespace IS NOT NULL AND deleted_at IS NULL;

CREATE TABLE occ.principals (
  id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  kind text NOT NULL,
  namespace_id text,
  agent_id text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  disabled_at timestamptz,
  CONSTRAINT principals_pkey PRIMARY KEY (id),
  CONSTRAINT principals_agent_id_key UNIQUE (agent_id),
  CONSTRAINT principals_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT principals_id_format CHECK ({_id("prn")}),
  CONSTRAINT principals_name_valid CHECK (occ.name_is_valid(name)),
  CONSTRAINT principals_kind_valid CHECK (kind IN ('human', 'service')),
  CONSTRAINT principals_agent_owned_shape
    CHECK (agent_id IS NULL OR (kind = 'service' AND namespace_id IS NOT NULL))
);

CREATE TABLE occ.api_keys (
  id text NOT NULL,
  principal_id text NOT NULL,
  secret_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  revoked_at timestamptz,
  last_used_at timestamptz,
  CONSTRAINT api_keys_pkey PRIMARY KEY (id),
  CONSTRAINT api_keys_principal_id_fkey FOREIGN KEY (principal_id) REFERENCES occ.principals (id),
  CONSTRAINT api_keys_id_format CHECK ({_id("key")}),
  CONSTRAINT api_keys_secret_hash_format CHECK (secret_hash ~ '^[0-9a-f]{{64}}$')
);
CREATE INDEX api_keys_principal ON occ.api_keys (principal_id);

CREATE TABLE occ.roles (
  id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  namespace_id text,
  permissions text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  deleted_at timestamptz,
  CONSTRAINT roles_pkey PRIMARY KEY (id),
  CONSTRAINT roles_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT roles_id_format CHECK ({_id("rol")}),
  CONSTRAINT roles_name_valid CHECK (occ.name_is_valid(name)),
  CONSTRAINT roles_permissions_valid CHECK (occ.permissions_are_valid(permissions))
);
CREATE UNIQUE INDEX roles_installation_name ON occ.roles (name)
  WHERE namespace_id IS NULL AND deleted_at IS NULL;
CREATE UNIQUE INDEX roles_namespace_name ON occ.roles (namespace_id, name)
  WHERE namespace_id IS NOT NULL AND deleted_at IS NULL;

CREATE TABLE occ.access_bindings (
  id text NOT NULL,
  role_id text NOT NULL,
  principal_id text NOT NULL,
  namespace_id text,
  resource_kind text,
  resource_id text,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  revoked_at timestamptz,
  CONSTRAINT access_bindings_pkey PRIMARY KEY (id),
  CONSTRAINT access_bindings_role_id_fkey FOREIGN KEY (role_id) REFERENCES occ.roles (id),
  CONSTRAINT access_bindings_principal_id_fkey
    FOREIGN KEY (principal_id) REFERENCES occ.principals (id),
  CONSTRAINT access_bindings_namespace_id_fkey
    FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT access_bindings_id_format CHECK ({_id("bnd")}),
  CONSTRAINT access_bindings_resource_pair CHECK ((resource_kind IS NULL) = (resource_id IS NULL)),
  CONSTRAINT access_bindings_resource_kind_valid
    CHECK (resource_kind IN ({_list(RESOURCE_KINDS)})),
  CONSTRAINT access_bindings_resource_in_namespace
    CHECK (resource_kind IS NULL OR resource_kind = 'installation' OR namespace_id IS NOT NULL)
);
CREATE INDEX access_bindings_principal ON occ.access_bindings (principal_id);
CREATE INDEX access_bindings_resource ON occ.access_bindings (resource_id);

CREATE TABLE occ.restrictions (
  id text NOT NULL,
  permission text NOT NULL,
  principal_id text,
  namespace_id text,
  resource_id text,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT restrictions_pkey PRIMARY KEY (id),
  CONSTRAINT restrictions_principal_id_fkey
    FOREIGN KEY (principal_id) REFERENCES occ.principals (id),
  CONSTRAINT restrictions_namespace_id_fkey
    FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT restrictions_id_format CHECK ({_id("rst")}),
  CONSTRAINT restrictions_permission_valid CHECK (occ.permissions_are_valid(ARRAY[permission]))
);

CREATE TABLE occ.configurations (
  id text NOT NULL,
  namespace_id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  document jsonb NOT NULL,
  generation bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT configurations_pkey PRIMARY KEY (id),
  CONSTRAINT configurations_namespace_id_name_key UNIQUE (namespace_id, name),
  CONSTRAINT configurations_namespace_id_id_key UNIQUE (namespace_id, id),
  CONSTRAINT configurations_namespace_id_fkey
    FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT configurations_id_format CHECK ({_id("cfg")}),
  CONSTRAINT configurations_name_valid CHECK (occ.name_is_valid(name)),
  CONSTRAINT configurations_document_object CHECK (jsonb_typeof(document) = 'object'),
  CONSTRAINT configurations_generation_range
    CHECK (generation BETWEEN 1 AND 9007199254740991)
);

CREATE TABLE occ.secrets (
  id text NOT NULL,
  namespace_id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  value_ciphertext bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT secrets_pkey PRIMARY KEY (id),
  CONSTRAINT secrets_namespace_id_name_key UNIQUE (namespace_id, name),
  CONSTRAINT secrets_namespace_id_id_key UNIQUE (namespace_id, id),
  CONSTRAINT secrets_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT secrets_id_format CHECK ({_id("sec")}),
  CONSTRAINT secrets_name_valid CHECK (occ.name_is_valid(name))
);

CREATE TABLE occ.agents (
  id text NOT NULL,
  namespace_id text NOT NULL,
  name text COLLATE "C" NOT NULL,
  configuration_id text NOT NULL,
  harness_id text NOT NULL,
  harness_version text NOT NULL,
  execution_mode text NOT NULL,
  harness_auth_secret_id text,
  compute_driver text NOT NULL,
  service_principal_id text NOT NULL,
  status text NOT NULL DEFAULT 'active',
  desired_runtime_state text NOT NULL DEFAULT 'stopped',
  active_revision_id text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  endpoint text,
  CONSTRAINT agents_pkey PRIMARY KEY (id),
  CONSTRAINT agents_namespace_id_name_key UNIQUE (namespace_id, name),
  CONSTRAINT agents_namespace_id_id_key UNIQUE (namespace_id, id),
  CONSTRAINT agents_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT agents_configuration_fkey FOREIGN KEY (namespace_id, configuration_id)
    REFERENCES occ.configurations (namespace_id, id),
  CONSTRAINT agents_harness_auth_secret_fkey FOREIGN KEY (namespace_id, harness_auth_secret_id)
    REFERENCES occ.secrets (namespace_id, id),
  CONSTRAINT agents_service_principal_id_fkey FOREIGN KEY (service_principal_id)
    REFERENCES occ.principals (id) DEFERRABLE INITIALLY DEFERRED,
  CONSTRAINT agents_id_format CHECK ({_id("agt")}),
  CONSTRAINT agents_name_valid CHECK (occ.name_is_valid(name)),
  CONSTRAINT agents_harness_valid CHECK (
    (harness_id = 'openclaw' AND execution_mode = 'embedded')
    OR (harness_id = 'codex' AND execution_mode = 'dedicated')),
  CONSTRAINT agents_harness_version_format CHECK (harness_version ~ '^[A-Za-z0-9._-]{{1,64}}$'),
  CONSTRAINT agents_compute_driver_format CHECK (compute_driver ~ '^[a-z][a-z0-9_-]{{0,63}}$'),
  CONSTRAINT agents_status_valid CHECK (status IN ('active', 'deleting')),
  CONSTRAINT agents_desired_runtime_state_valid
    CHECK (desired_runtime_state IN ('running', 'stopped')),
  CONSTRAINT agents_deleting_is_stopped
    CHECK (status = 'active' OR desired_runtime_state = 'stopped'),
  CONSTRAINT agents_endpoint_requires_active_revision
    CHECK (endpoint IS NULL OR active_revision_id IS NOT NULL)
);

ALTER TABLE occ.principals ADD CONSTRAINT principals_agent_id_fkey FOREIGN KEY (agent_id)
  REFERENCES occ.agents (id) DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE occ.agent_revisions (
  id text NOT NULL,
  namespace_id text NOT NULL,
  agent_id text NOT NULL,
  revision_number bigint NOT NULL,
  actor_id text NOT NULL,
  configuration_id text NOT NULL,
  configuration_generation bigint NOT NULL,
  configuration_document jsonb NOT NULL,
  harness_id text NOT NULL,
  harness_version text NOT NULL,
  harness_mode text NOT NULL,
  compute_driver text NOT NULL,
  harness_auth jsonb NOT NULL,
  service_principal_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT agent_revisions_pkey PRIMARY KEY (id),
  CONSTRAINT agent_revisions_agent_id_revision_number_key UNIQUE (agent_id, revision_number),
  CONSTRAINT agent_revisions_agent_id_id_key UNIQUE (agent_id, id),
  CONSTRAINT agent_revisions_agent_fkey FOREIGN KEY (namespace_id, agent_id)
    REFERENCES occ.agents (namespace_id, id),
  CONSTRAINT agent_revisions_id_format CHECK ({_id("rev")}),
  CONSTRAINT agent_revisions_revision_number_positive CHECK (revision_number > 0),
  CONSTRAINT agent_revisions_generation_range
    CHECK (configuration_generation BETWEEN 1 AND 9007199254740991),
  CONSTRAINT agent_revisions_document_object CHECK (jsonb_typeof(configuration_document) = 'object'),
  CONSTRAINT agent_revisions_harness_valid CHECK (
    (harness_id = 'openclaw' AND harness_mode = 'embedded')
    OR (harness_id = 'codex' AND harness_mode = 'dedicated')),
  CONSTRAINT agent_revisions_harness_version_format
    CHECK (harness_version ~ '^[A-Za-z0-9._-]{{1,64}}$'),
  CONSTRAINT agent_revisions_harness_auth_shape CHECK (
    jsonb_typeof(harness_auth) = 'object'
    AND harness_auth ->> 'kind' = 'secret'
    AND (harness_auth ->> 'secretId') ~ '^sec_{UUID4}$'
    AND harness_auth - 'kind' - 'secretId' = '{{}}'::jsonb)
);
CREATE TRIGGER agent_revisions_immutable BEFORE UPDATE ON occ.agent_revisions
  FOR EACH ROW EXECUTE FUNCTION occ.reject_row_mutation();

ALTER TABLE occ.agents ADD CONSTRAINT agents_active_revision_fkey
  FOREIGN KEY (id, active_revision_id) REFERENCES occ.agent_revisions (agent_id, id)
  DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE occ.controller_work (
  id text NOT NULL,
  namespace_id text NOT NULL,
  agent_id text,
  revision_id text,
  actor_id text NOT NULL,
  namespace_target text,
  agent_target text,
  lane text GENERATED ALWAYS AS (COALESCE(agent_id, namespace_id)) STORED NOT NULL,
  state text NOT NULL DEFAULT 'queued',
  attempt_count integer NOT NULL DEFAULT 0,
  available_at timestamptz NOT NULL,
  claim_token uuid,
  claimed_at timestamptz,
  started_at timestamptz,
  lease_expires_at timestamptz,
  completed_at timestamptz,
  reason_code text,
  result_data jsonb,
  last_progress_code text,
  last_progress_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT controller_work_pkey PRIMARY KEY (id),
  CONSTRAINT controller_work_namespace_id_fkey
    FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT controller_work_agent_fkey FOREIGN KEY (namespace_id, agent_id)
    REFERENCES occ.agents (namespace_id, id) DEFERRABLE INITIALLY DEFERRED,
  CONSTRAINT controller_work_revision_fkey FOREIGN KEY (agent_id, revision_id)
    REFERENCES occ.agent_revisions (agent_id, id) DEFERRABLE INITIALLY DEFERRED,
  CONSTRAINT controller_work_id_length CHECK (char_length(id) BETWEEN 1 AND 512),
  CONSTRAINT controller_work_shape CHECK (
    (agent_id IS NULL AND revision_id IS NULL AND agent_target IS NULL
      AND namespace_target IN ('ready', 'deleted')
      AND id = 'namespace:' || namespace_id || ':reconcile:' || namespace_target)
    OR (agent_id IS NOT NULL AND revision_id IS NULL AND namespace_target IS NULL
      AND ((agent_target = 'deleted' AND id = 'agent:' || agent_id || ':reconcile:deleted')
        OR (agent_target = 'stopped'
            AND id ~ ('^agent:' || agent_id || ':reconcile:stopped:{UUID4}$'))))
    OR (agent_id IS NOT NULL AND revision_id IS NOT NULL
      AND namespace_target IS NULL AND agent_target IS NULL
      AND (id = 'agent_revision:' || revision_id || ':reconcile'
        OR id ~ ('^agent_revision:' || revision_id || ':maintenance:[0-9]{{1,15}}$')))),
  CONSTRAINT controller_work_owner_format CHECK (
    {_id("ns", "namespace_id")}
    AND (agent_id IS NULL OR {_id("agt", "agent_id")})
    AND (revision_id IS NULL OR {_id("rev", "revision_id")})
    AND {_id("prn", "actor_id")}),
  CONSTRAINT controller_work_state_valid
    CHECK (state IN ('queued', 'claimed', 'succeeded', 'failed_permanent')),
  CONSTRAINT controller_work_attempt_count_valid CHECK (attempt_count >= 0),
  CONSTRAINT controller_work_claim_state CHECK (
    CASE WHEN state = 'claimed'
      THEN claim_token IS NOT NULL AND claimed_at IS NOT NULL AND lease_expires_at IS NOT NULL
      ELSE claim_token IS NULL AND claimed_at IS NULL AND started_at IS NULL
           AND lease_expires_at IS NULL
    END),
  CONSTRAINT controller_work_completion_state CHECK (
    CASE WHEN state IN ('succeeded', 'failed_permanent')
      THEN completed_at IS NOT NULL AND reason_code IS NOT NULL
      ELSE completed_at IS NULL AND reason_code IS NULL AND result_data IS NULL
    END),
  CONSTRAINT controller_work_reason_code_format CHECK (reason_code ~ '^[A-Z][A-Z0-9_]{{0,63}}$'),
  CONSTRAINT controller_work_progress_pair CHECK (
    (last_progress_code IS NULL) = (last_progress_at IS NULL)
    AND last_progress_code ~ '^[A-Z][A-Z0-9_]{{0,63}}$'),
  CONSTRAINT controller_work_result_data_state
    CHECK (result_data IS NULL OR occ.work_result_is_valid(state, reason_code, result_data))
);
CREATE INDEX controller_work_ready ON occ.controller_work (available_at, created_at, id)
  WHERE state = 'queued';
CREATE INDEX controller_work_expired ON occ.controller_work (lease_expires_at, id)
  WHERE state = 'claimed';
CREATE UNIQUE INDEX controller_work_one_claim_per_lane ON occ.controller_work (lane)
  WHERE state = 'claimed';
-- one index serves both foreign keys (agents and agent_revisions): every update of a work row
-- is non-HOT, so each index costs an insert per transition
CREATE INDEX controller_work_agent ON occ.controller_work (agent_id, revision_id);
CREATE INDEX controller_work_namespace ON occ.controller_work (namespace_id);

CREATE TABLE occ.audit_events (
  id text NOT NULL,
  sequence bigint GENERATED ALWAYS AS IDENTITY,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind text NOT NULL,
  action text NOT NULL,
  actor_id text NOT NULL,
  namespace_id text,
  resource_kind text,
  resource_id text,
  work_id text,
  outcome text NOT NULL,
  details jsonb NOT NULL DEFAULT '{{}}'::jsonb,
  CONSTRAINT audit_events_pkey PRIMARY KEY (id),
  CONSTRAINT audit_events_sequence_key UNIQUE (sequence),
  CONSTRAINT audit_events_id_format CHECK ({_id("aud")}),
  CONSTRAINT audit_events_kind_valid
    CHECK (kind IN ('bootstrap', 'mutation', 'access', 'authorization_denial')),
  CONSTRAINT audit_events_action_format CHECK (action ~ '^[a-z][a-z0-9_.:-]{{0,127}}$'),
  CONSTRAINT audit_events_outcome_valid CHECK (outcome IN ('success', 'denied', 'failure')),
  CONSTRAINT audit_events_details_object CHECK (jsonb_typeof(details) = 'object')
);
CREATE INDEX audit_events_namespace ON occ.audit_events (namespace_id, sequence);
CREATE INDEX audit_events_resource ON occ.audit_events (resource_id, sequence);
CREATE INDEX audit_events_work ON occ.audit_events (work_id, sequence);
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON occ.audit_events
  FOR EACH ROW EXECUTE FUNCTION occ.reject_row_mutation();
"""

DEFINER_FUNCTIONS = r"""
CREATE FUNCTION occ.finalize_agent_deletion(p_work_id text, p_claim_token uuid)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work occ.controller_work%ROWTYPE;
  agent occ.agents%ROWTYPE;
  revision_ids text[];
BEGIN
  SELECT * INTO work FROM occ.controller_work
   WHERE id = p_work_id AND state = 'claimed' AND claim_token = p_claim_token
     AND started_at IS NOT NULL AND lease_expires_at > clock_timestamp()
     AND agent_target = 'deleted'
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM occ.namespaces WHERE id = work.namespace_id FOR UPDATE;
  SELECT * INTO agent FROM occ.agents
   WHERE id = work.agent_id AND namespace_id = work.namespace_id FOR UPDATE;
  IF NOT FOUND OR agent.status <> 'deleting' THEN
    RETURN false;
  END IF;
  -- the locks above may have waited: the lease must still be live now
  IF NOT EXISTS (SELECT 1 FROM occ.controller_work
                  WHERE id = p_work_id AND claim_token = p_claim_token
                    AND lease_expires_at > clock_timestamp()) THEN
    RETURN false;
  END IF;
  INSERT INTO occ.audit_events
    (id, kind, action, actor_id, namespace_id, resource_kind, resource_id, work_id, outcome, details)
  VALUES ('aud_' || gen_random_uuid(), 'mutation', 'agents.lifecycle.delete', work.actor_id,
          work.namespace_id, 'agent', agent.id, work.id, 'success',
          jsonb_build_object('reasonCode', 'AGENT_DELETED', 'attemptCount', work.attempt_count,
                             'workId', work.id));
  SELECT coalesce(array_agg(id), '{}') INTO revision_ids
    FROM occ.agent_revisions WHERE agent_id = agent.id;
  UPDATE occ.agents SET active_revision_id = NULL, endpoint = NULL WHERE id = agent.id;
  DELETE FROM occ.access_bindings
   WHERE principal_id = agent.service_principal_id
      OR (resource_kind = 'agent' AND resource_id = agent.id)
      OR (resource_kind = 'agent_revision' AND resource_id = ANY (revision_ids));
  DELETE FROM occ.restrictions
   WHERE principal_id = agent.service_principal_id
      OR resource_id = agent.id OR resource_id = ANY (revision_ids);
  DELETE FROM occ.api_keys WHERE principal_id = agent.service_principal_id;
  DELETE FROM occ.controller_work WHERE agent_id = agent.id;
  DELETE FROM occ.agent_revisions WHERE agent_id = agent.id;
  DELETE FROM occ.agents WHERE id = agent.id;
  DELETE FROM occ.principals WHERE id = agent.service_principal_id;
  RETURN true;
END
$$;

CREATE FUNCTION occ.retry_failed_deletion(p_work_id text, p_actor_id text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work occ.controller_work%ROWTYPE;
BEGIN
  SELECT * INTO work FROM occ.controller_work
   WHERE id = p_work_id AND state = 'failed_permanent'
     AND (namespace_target = 'deleted' OR agent_target = 'deleted')
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF work.agent_id IS NULL THEN
    PERFORM 1 FROM occ.namespaces
     WHERE id = work.namespace_id AND status = 'deleting' AND deleted_at IS NULL FOR UPDATE;
  ELSE
    PERFORM 1 FROM occ.agents WHERE id = work.agent_id AND status = 'deleting' FOR UPDATE;
  END IF;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE occ.controller_work
     SET state = 'queued', attempt_count = 0, actor_id = p_actor_id,
         available_at = clock_timestamp(), completed_at = NULL, reason_code = NULL,
         result_data = NULL, updated_at = clock_timestamp(),
         -- a retry is a new admission: its convergence deadline starts now
         created_at = clock_timestamp()
   WHERE id = p_work_id;
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION occ.finalize_agent_deletion(text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION occ.retry_failed_deletion(text, text) FROM PUBLIC;
"""

ROLE = r"""
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'occ_app') THEN
    IF (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
      CREATE ROLE occ_app LOGIN;
    ELSE
      RAISE NOTICE 'role occ_app is missing and % may not create it: running with a single role '
        '(see docs/operations.md)', current_user;
    END IF;
  END IF;
END
$$;
"""

GRANTS = r"""
GRANT USAGE ON SCHEMA occ TO occ_app;
GRANT SELECT, INSERT ON occ.installation, occ.agent_revisions, occ.audit_events TO occ_app;
GRANT SELECT, INSERT ON occ.namespaces, occ.principals, occ.api_keys, occ.roles,
  occ.access_bindings, occ.agents, occ.controller_work TO occ_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON occ.restrictions, occ.configurations, occ.secrets
  TO occ_app;
GRANT UPDATE (status, updated_at, deleted_at) ON occ.namespaces TO occ_app;
GRANT UPDATE (name, disabled_at) ON occ.principals TO occ_app;
GRANT UPDATE (revoked_at, last_used_at) ON occ.api_keys TO occ_app;
GRANT UPDATE (name, permissions, deleted_at) ON occ.roles TO occ_app;
GRANT UPDATE (revoked_at) ON occ.access_bindings TO occ_app;
GRANT UPDATE (name, configuration_id, harness_id, harness_version, execution_mode,
  harness_auth_secret_id, status, desired_runtime_state, active_revision_id, endpoint,
  updated_at) ON occ.agents TO occ_app;
GRANT UPDATE (state, attempt_count, available_at, claim_token, claimed_at, started_at,
  lease_expires_at, completed_at, reason_code, result_data, last_progress_code,
  last_progress_at, updated_at) ON occ.controller_work TO occ_app;
GRANT EXECUTE ON FUNCTION occ.finalize_agent_deletion(text, uuid),
  occ.retry_failed_deletion(text, text) TO occ_app;
"""


def upgrade() -> None:
    steps.execute("CREATE SCHEMA IF NOT EXISTS occ")
    steps.execute(FUNCTIONS)
    steps.execute(TABLES)
    steps.execute(DEFINER_FUNCTIONS)
    steps.execute(ROLE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.grant_to_app_role(
        "REVOKE ALL ON ALL TABLES IN SCHEMA occ FROM occ_app; "
        "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA occ FROM occ_app; "
        "REVOKE ALL ON SCHEMA occ FROM occ_app;"
    )
    # the schema itself stays: it holds Alembic's version table
    steps.execute(
        "DROP TABLE occ.audit_events, occ.controller_work, occ.agent_revisions, occ.agents, "
        "occ.secrets, occ.configurations, occ.restrictions, occ.access_bindings, occ.roles, "
        "occ.api_keys, occ.principals, occ.namespaces, occ.installation CASCADE"
    )
    steps.execute(
        "DROP FUNCTION occ.finalize_agent_deletion(text, uuid), "
        "occ.retry_failed_deletion(text, text), occ.reject_row_mutation(), "
        "occ.work_result_is_valid(text, text, jsonb), occ.permissions_are_valid(text[]), "
        "occ.name_is_valid(text)"
    )
