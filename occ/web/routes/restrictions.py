"""``/v1/restrictions``: deny rules that beat every grant."""

from __future__ import annotations

from occ.controller import restrictions
from occ.web.routes import blueprints, collections
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/restrictions",
    description="Deny rules for one permission, optionally narrowed to a principal, a "
    "Namespace or one resource.",
    requires="installation:administer",
)

collections.declare(
    blueprint,
    item=schemas.Restriction,
    id_parameter="restriction_id",
    create=collections.Create(
        "create_restriction",
        restrictions.create_restriction,
        body=schemas.RestrictionCreate,
        fields=("permission", "principal_id", "namespace_id", "resource_id"),
        doc="Deny ``permission``; each optional field narrows the rule (unset: everything).",
    ),
    list=collections.Operation(
        "list_restrictions", restrictions.list_restrictions, "Every restriction."
    ),
    get=collections.Operation("get_restriction", restrictions.get_restriction),
    delete=collections.Operation(
        "delete_restriction",
        restrictions.delete_restriction,
        "Remove a restriction; the response is what it was.",
    ),
)
