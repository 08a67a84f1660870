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
        command=lambda body: restrictions.CreateRestriction(
            permission=body["permission"],
            principal_id=body["principal_id"],
            namespace_id=body["namespace_id"],
            resource_id=body["resource_id"],
        ),
        doc="Deny ``permission``; each optional field narrows the rule (unset: everything).",
    ),
    list=collections.Listing(
        "list_restrictions", restrictions.list_restrictions, "Every restriction."
    ),
    get=collections.Reading("get_restriction", restrictions.get_restriction),
    delete=collections.Delete(
        "delete_restriction",
        restrictions.delete_restriction,
        command=lambda restriction_id: restrictions.DeleteRestriction(
            restriction_id=restriction_id
        ),
        doc="Remove a restriction; the response is what it was.",
    ),
)
