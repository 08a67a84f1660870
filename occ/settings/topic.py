"""What every topic of ``Settings`` shares: a frozen, strict model whose fields carry their
descriptions as docstrings, and the check that integers are positive.

``Settings`` is one class made of the topics (``platform``, ``work``, ``security``, ``compute``,
``hooks``, ``serving``); each declares its fields and the checks that read only them.
"""

from __future__ import annotations

from collections.abc import Iterable

import pydantic

from occ.foundation import errors


class Topic(pydantic.BaseModel):
    """A group of settings: frozen, strict, no unknown keys, described by docstrings."""

    model_config = pydantic.ConfigDict(
        frozen=True, strict=True, extra="forbid", use_attribute_docstrings=True
    )


def require_positive(topic: pydantic.BaseModel, names: Iterable[str]) -> None:
    """Raise ``InvalidSettings`` at the first of ``names`` that is not a positive integer."""
    for name in names:
        if getattr(topic, name) <= 0:
            raise errors.InvalidSettings.at((name,), "must be a positive integer")
