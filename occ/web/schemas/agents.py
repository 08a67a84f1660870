"""Agent, AgentRevision and deployment-status representations and request bodies.

Representations dump the controller's ``ObservedAgent`` (an Agent with its runtime status),
``occ.state.revisions.Revision`` values and the controller's deployment projection. Request bodies
are closed and check each field's type and catalogue; the admission use cases check what they
do not state (names, id forms, the harness version's format, the execution mode of the
harness, references in the Namespace).
"""

from __future__ import annotations

from typing import Any, ClassVar

import marshmallow as ma
from marshmallow import fields, validate

from occ.controller import deployment_status
from occ.foundation import harnesses
from occ.state import agents, runtime_observations
from occ.web.schemas import common

HARNESSES = tuple(harnesses.Harness)
EXECUTION_MODES = tuple(harnesses.ExecutionMode)
DEPLOYMENT_STATES = tuple(deployment_status.DeploymentState)

_VERSION_HELP = "1 to 64 characters of A-Z a-z 0-9 . _ -"


# -- request bodies -----------------------------------------------------------------------------


class _JsonBoolean(fields.Boolean):
    """``true`` or ``false`` only (marshmallow's Boolean also takes 1, "yes", "on" ...)."""

    def _deserialize(self, value: object, attr: object, data: object, **kwargs: object) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class AgentHarnessInput(common.Request):
    id = fields.String(required=True, validate=validate.OneOf(HARNESSES))
    version = fields.String(required=True, metadata={"description": _VERSION_HELP})


class AgentHarnessAuthInput(common.Request):
    """A Secret (``secretId``) or a managed account (``accountId``) of the Namespace."""

    kind = fields.String(
        required=True, validate=validate.OneOf((agents.SECRET_SOURCE, agents.ACCOUNT_SOURCE))
    )
    secret_id = fields.String(data_key="secretId")
    account_id = fields.String(data_key="accountId")

    @ma.validates_schema
    def _source(self, data: dict[str, object], **kwargs: object) -> None:
        wanted = "secret_id" if data.get("kind") == agents.SECRET_SOURCE else "account_id"
        other = "account_id" if wanted == "secret_id" else "secret_id"
        if "kind" in data and wanted not in data:
            raise ma.ValidationError("required for this kind", field_name=_KEYS[wanted])
        if other in data:
            raise ma.ValidationError("not allowed for this kind", field_name=_KEYS[other])


_KEYS = {"secret_id": "secretId", "account_id": "accountId"}


class AgentCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "name": "helper",
        "configurationId": "cfg_0b9d3e2a-7c41-4f6e-8a15-3e2c9d4b7f10",
        "harness": {"id": "openclaw", "version": "1.0.0"},
        "executionMode": "embedded",
        "harnessAuth": {"kind": "secret", "secretId": "sec_9a2e4c1b-5d3f-4e7a-b6c8-1f0e2d3c4b59"},
        "grantRuntimeAccess": True,
    }

    name = fields.String(required=True, metadata={"example": "helper"})
    configuration_id = fields.String(data_key="configurationId", required=True)
    harness = fields.Nested(AgentHarnessInput, required=True)
    execution_mode = fields.String(
        data_key="executionMode",
        required=True,
        validate=validate.OneOf(EXECUTION_MODES),
        metadata={"description": "openclaw runs embedded, codex dedicated"},
    )
    harness_auth = fields.Nested(AgentHarnessAuthInput, data_key="harnessAuth", required=True)
    grant_runtime_access = _JsonBoolean(
        data_key="grantRuntimeAccess",
        allow_none=False,  # left out (no default: the caller's permission decides), never null
        metadata={
            "description": "bind the built-in agent-runtime Role to the service principal on "
            "the Configuration and the Secret: true needs installation:administer (else 403), "
            "false grants nothing; left out, it grants when the caller holds "
            "installation:administer and creates the Agent without a grant when not"
        },
    )


class AgentUpdate(common.Request):
    """A draft edit: any of the creation fields, at least one."""

    EXAMPLE: ClassVar[dict[str, Any]] = {
        "configurationId": "cfg_0b9d3e2a-7c41-4f6e-8a15-3e2c9d4b7f10"
    }

    name = fields.String()
    configuration_id = fields.String(data_key="configurationId")
    harness = fields.Nested(AgentHarnessInput)
    execution_mode = fields.String(
        data_key="executionMode", validate=validate.OneOf(EXECUTION_MODES)
    )
    harness_auth = fields.Nested(AgentHarnessAuthInput, data_key="harnessAuth")
    grant_runtime_access = _JsonBoolean(
        data_key="grantRuntimeAccess",
        allow_none=False,
        metadata={
            "description": "as at creation, for a new configurationId or harnessAuth Secret: "
            "true needs installation:administer (else 403), false grants nothing; left out, "
            "it grants when the caller holds installation:administer. Ignored when neither "
            "changes"
        },
    )


class AgentActionBody(common.Request):
    """No body (an empty JSON object is accepted too)."""

    EXAMPLE: ClassVar[dict[str, Any]] = {}


# -- representations ----------------------------------------------------------------------------


class AgentHarness(ma.Schema):
    id = fields.String(required=True)
    version = fields.String(required=True)


class AgentHarnessAuth(ma.Schema):
    kind = fields.String(required=True)
    secret_id = fields.String(data_key="secretId")
    account_id = fields.String(data_key="accountId")

    @ma.post_dump
    def _one_source(self, data: dict[str, object], **kwargs: object) -> dict[str, object]:
        return {key: value for key, value in data.items() if value is not None}


class Agent(common.Updated):
    namespace_id = fields.String(data_key="namespaceId", required=True)
    name = fields.String(required=True)
    configuration_id = fields.String(data_key="configurationId", required=True)
    harness = fields.Nested(AgentHarness, required=True)
    execution_mode = fields.String(data_key="executionMode", required=True)
    harness_auth = fields.Nested(AgentHarnessAuth, data_key="harnessAuth", allow_none=True)
    compute_driver = fields.String(data_key="computeDriver", required=True)
    service_principal_id = fields.String(data_key="servicePrincipalId", required=True)
    status = fields.String(required=True, metadata={"enum": list(agents.AgentStatus)})
    desired_runtime_state = fields.String(
        data_key="desiredRuntimeState",
        required=True,
        metadata={"enum": list(agents.DesiredRuntimeState)},
    )
    active_revision_id = fields.String(data_key="activeRevisionId", allow_none=True)
    endpoint = fields.String(allow_none=True)
    runtime_status = fields.String(
        data_key="runtimeStatus",
        required=True,
        metadata={
            "enum": list(runtime_observations.RuntimeStatus),
            "description": "what the workers last observed of the active revision; unknown "
            "without an active revision or before its first observation",
        },
    )
    runtime_observed_at = fields.DateTime(
        data_key="runtimeObservedAt", required=True, allow_none=True
    )
    runtime_reason_code = fields.String(
        data_key="runtimeReasonCode", required=True, allow_none=True
    )


class AgentRevisionHarness(ma.Schema):
    id = fields.String(required=True)
    version = fields.String(required=True)
    mode = fields.String(required=True)


class AgentRevision(common.Stored):
    namespace_id = fields.String(data_key="namespaceId", required=True)
    agent_id = fields.String(data_key="agentId", required=True)
    revision_number = fields.Integer(data_key="revisionNumber", required=True)
    configuration_id = fields.String(data_key="configurationId", required=True)
    configuration_generation = fields.Integer(data_key="configurationGeneration", required=True)
    configuration_document = fields.Dict(
        data_key="configurationDocument",
        required=True,
        metadata={"description": "the pinned native document; secrets appear only by id"},
    )
    harness = fields.Nested(AgentRevisionHarness, required=True)
    harness_auth = fields.Nested(
        AgentHarnessAuth,
        data_key="harnessAuth",
        attribute="pinned_harness_auth",
        required=True,
    )
    compute_driver = fields.String(data_key="computeDriver", required=True)
    service_principal_id = fields.String(data_key="servicePrincipalId", required=True)
    actor_id = fields.String(data_key="actorId", required=True)


class DeployAccepted(ma.Schema):
    deployment_id = fields.String(data_key="deploymentId", required=True)
    revision = fields.Nested(AgentRevision, required=True)


class RuntimeAccess(ma.Schema):
    agent_id = fields.String(data_key="agentId", required=True)
    service_principal_id = fields.String(data_key="servicePrincipalId", required=True)
    role_id = fields.String(
        data_key="roleId", required=True, metadata={"description": "the agent-runtime Role"}
    )
    binding_ids = fields.List(
        fields.String(),
        data_key="bindingIds",
        required=True,
        metadata={"description": "the bindings this grant made; empty when all were held"},
    )


class DeploymentError(ma.Schema):
    code = fields.String(required=True)
    message = fields.String(required=True)
    data = fields.Dict(allow_none=True)


class DeploymentWarning(ma.Schema):
    code = fields.String(required=True)
    detail = fields.String(required=True)


class DeploymentProgress(ma.Schema):
    code = fields.String(allow_none=True)
    at = fields.DateTime(allow_none=True)
    next_attempt_at = fields.DateTime(data_key="nextAttemptAt", allow_none=True)


class Deployment(ma.Schema):
    deployment_id = fields.String(data_key="deploymentId", required=True)
    revision_id = fields.String(data_key="revisionId", required=True)
    namespace_id = fields.String(data_key="namespaceId", required=True)
    agent_id = fields.String(data_key="agentId", required=True)
    state = fields.String(required=True, metadata={"enum": list(DEPLOYMENT_STATES)})
    reason_code = fields.String(data_key="reasonCode", allow_none=True)
    error = fields.Nested(DeploymentError, allow_none=True)
    warnings = fields.List(fields.Nested(DeploymentWarning), required=True)
    progress = fields.Nested(DeploymentProgress, allow_none=True)
