"""Settings: every knob of occ, read once from the environment (and an optional YAML file).

The only module that reads ``os.environ``; everything else receives a ``Settings``, a frozen
pydantic-settings model. Every value is type-checked wherever it comes from; a bad one is an
``errors.InvalidSettings`` naming its key (the variable or the YAML key), never its value.

``Settings.from_env`` layers, weakest first: the defaults, the ``DATABASE_URL`` / ``REDIS_URL``
fallbacks, the YAML file in ``OCC_CONFIG_PATH``, and the ``OCC_*`` variables (a secret's may be
given as ``<variable>_FILE``, a file holding it); a required setting (``OCC_ENV``) set in none
of them is refused (``EnvironmentNotSet``). ``Settings(...)`` takes explicit values only.

Each field is declared once, with everything said about it: its type, its default, its variable
(``Annotated[..., Variable(...)]``; a field without one is set in the YAML file only) and its
description (the docstring under it), in the topic module it belongs to (``platform``, ``work``,
``security``, ``compute``, ``hooks``, ``serving``); ``Settings`` is one class made of the topics
and holds the rules between them. ``occ.settings.reference`` writes the documentation from them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pydantic
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from occ.foundation import errors
from occ.settings import security, sign_in
from occ.settings import sources as settings_sources
from occ.settings.compute import Compute
from occ.settings.hooks import Hooks
from occ.settings.platform import Platform, mask_url_password
from occ.settings.security import Security
from occ.settings.serving import Serving
from occ.settings.work import Work


# the topics' fields come in the reverse order of the bases: the platform's first
class Settings(Serving, Hooks, Compute, Security, Work, Platform, BaseSettings):
    """Frozen configuration of one occ process."""

    model_config = SettingsConfigDict(
        frozen=True, strict=True, extra="forbid", use_attribute_docstrings=True
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except pydantic.ValidationError as exc:
            raise _invalid(exc, {}) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # explicit values only: the environment is read by from_env, from the mapping it is given
        return (init_settings,)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, require: bool = True
    ) -> Settings:
        """Build settings from the environment (``os.environ`` unless given), as layered above;
        ``require=False`` (``occ doctor``) lets a required setting fall back to its default."""
        env = os.environ if environ is None else environ
        sources: list[settings_sources.Source] = [settings_sources.FallbackSource(cls, env)]
        if env.get("OCC_CONFIG_PATH"):
            sources.append(settings_sources.YamlSource(cls, Path(env["OCC_CONFIG_PATH"])))
        sources.append(settings_sources.EnvironmentSource(cls, env))
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for source in sources:
            values.update(source())
            origins.update(source.origins)
        for name, variable in settings_sources.variables(cls).items():
            if require and variable.required and name not in values:
                raise errors.EnvironmentNotSet.at(
                    (variable.name,),
                    "must be set to development or production (only occ dev sets it itself)",
                )
        try:
            return cls.model_validate(values)
        except pydantic.ValidationError as exc:
            raise _invalid(exc, origins) from None

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (checked like any settings)."""
        return type(self)(**{**self.model_dump(), **changes})

    @pydantic.model_validator(mode="after")
    def _work_together(self) -> Settings:
        """Reject settings of different topics that cannot work together (each topic checks
        its own first)."""
        sign_in.check(self)
        if self.platform is not None:
            for name in ("api_key_pepper", "secret_key"):
                if getattr(self, name).startswith("development-"):
                    raise errors.InvalidSettings.at(
                        (name,), "must be set on a hosting platform (OCC_PLATFORM or DYNO is set)"
                    )
        if self.environment == "production":
            for name in ("api_key_pepper", "secret_key"):
                if getattr(self, name).startswith("development-"):
                    raise errors.InvalidSettings.at((name,), "must be set in production")
                if len(getattr(self, name).encode()) < security.PRODUCTION_KEY_MIN_BYTES:
                    raise errors.InvalidSettings.at(
                        (name,),
                        f"must be at least {security.PRODUCTION_KEY_MIN_BYTES} bytes in production",
                    )
            if (
                self.fingerprint_key is not None
                and len(self.fingerprint_key.encode()) < security.PRODUCTION_KEY_MIN_BYTES
            ):
                raise errors.InvalidSettings.at(
                    ("fingerprint_key",),
                    f"must be at least {security.PRODUCTION_KEY_MIN_BYTES} bytes in production",
                )
            if self.compute_driver == "local":
                raise errors.InvalidSettings.at(
                    ("compute_driver",),
                    "the local driver runs gateways on this machine and is for development only;"
                    " choose docker or kubernetes in production",
                )
        return self

    def weaknesses(self) -> tuple[errors.FieldError, ...]:
        """What makes this configuration weaker than production needs (``occ doctor``), each at
        its setting, never with its value."""
        found = []
        if "environment" not in self.model_fields_set:
            found.append(
                errors.FieldError(
                    ("environment",), "is unset: every process but occ dev refuses to start"
                )
            )
        elif self.environment != "production":
            found.append(
                errors.FieldError(
                    ("environment",), "is not production: development defaults are accepted"
                )
            )
        for name in ("api_key_pepper", "secret_key"):
            value = getattr(self, name)
            if value.startswith("development-"):
                found.append(errors.FieldError((name,), "is the development default"))
            elif len(value.encode()) < security.PRODUCTION_KEY_MIN_BYTES:
                found.append(
                    errors.FieldError(
                        (name,), f"is shorter than {security.PRODUCTION_KEY_MIN_BYTES} bytes"
                    )
                )
        if self.fingerprint_key is None:
            found.append(
                errors.FieldError(
                    ("fingerprint_key",),
                    "is unset: derived from the secret key, so rotating one rotates both",
                )
            )
        if self.compute_driver == "local":
            found.append(
                errors.FieldError(("compute_driver",), "is local: gateways run on this machine")
            )
        if self.api_not_found_floor_ms == 0:
            found.append(
                errors.FieldError(
                    ("api_not_found_floor_ms",), "is 0: a 404's timing may tell hidden from missing"
                )
            )
        found.extend(
            errors.FieldError((name,), "has no password") for name in self.unprotected_urls()
        )
        return tuple(found)

    @property
    def sign_in_providers(self) -> tuple[str, ...]:
        """The sign-in providers set (``oidc``, ``github``, ``google``), in that order."""
        return sign_in.providers(self)

    def startup_warnings(self) -> tuple[errors.FieldError, ...]:
        """What a production process should warn about once at start-up (never a value).

        A database or broker URL whose scheme normally authenticates with a password but
        carries none works (trust, peer or an unprotected Redis) and is worth a warning.
        """
        if self.environment != "production":
            return ()
        return tuple(
            errors.FieldError((name,), "has no password; is the service protected?")
            for name in self.unprotected_urls()
        )

    def __repr_args__(self) -> Iterator[tuple[str, Any]]:
        # credentials never reach a log or a configuration dump: peppers and keys are hidden,
        # URL passwords masked
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in security.HIDDEN:
                value = "***"
            elif isinstance(value, str):
                value = mask_url_password(value)
            yield name, value

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{name}={value!r}' for name, value in self.__repr_args__())})"

    __str__ = __repr__


def _invalid(exc: pydantic.ValidationError, origins: Mapping[str, str]) -> errors.InvalidSettings:
    """``exc`` as ``InvalidSettings``: each error at the key it came from, without the input."""
    found = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = [str(part) for part in error["loc"]]
        path = (origins.get(where[0], where[0]), *where[1:]) if where else ()
        message = error["msg"][:1].lower() + error["msg"][1:]
        found.append(errors.FieldError(path, message))
    return errors.InvalidSettings("; ".join(f"{e.pointer}: {e.message}" for e in found), found)
