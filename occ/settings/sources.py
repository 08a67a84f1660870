"""Where settings come from: the ``OCC_*`` variable each field declares (``Variable``; a
secret's may name a file holding it), the conventional fallbacks (``DATABASE_URL``,
``REDIS_URL``), and the YAML file in ``OCC_CONFIG_PATH``.

Each source is a pydantic-settings source of raw values that also records the key each value
came from (``origins``), so that ``occ.settings.config`` can name that key when a value is refused.
Errors name a variable or a file, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from occ.foundation import errors

_DIGITS = re.compile(r"[0-9]{1,15}")


@dataclass(frozen=True)
class Variable:
    """The environment variable of a setting, declared on its field in ``Settings``:
    ``lease_ms: Annotated[int, Variable("OCC_WORKER_LEASE_DURATION_MS")] = 15_000``."""

    name: str
    file: bool = False
    """A secret: ``<name>_FILE`` may instead name a file holding the value."""
    fallback: str | None = None
    """A conventional variable (a Heroku add-on's) read when the setting is set nowhere else."""
    required: bool = False
    """``Settings.from_env`` refuses the setting unset (its default serves settings built in
    code, such as tests')."""


def variables(settings_cls: type[BaseSettings]) -> dict[str, Variable]:
    """Setting -> its variable, for every setting that has one (the others are YAML only)."""
    found = {}
    for name, field in settings_cls.model_fields.items():
        declared = [item for item in field.metadata if isinstance(item, Variable)]
        if declared:
            found[name] = declared[0]
    return found


class Source(PydanticBaseSettingsSource):
    """Values of some settings, and the key each came from (``origins``: field -> the
    variable or YAML key)."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self.origins: dict[str, str] = {}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ reads every setting at once

    def __call__(self) -> dict[str, Any]:
        raise NotImplementedError


class EnvironmentSource(Source):
    """The ``OCC_*`` variables of one environment, and the ``_FILE`` variants of secrets."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, variable in variables(self.settings_cls).items():
            found = self._raw(variable.name, secret=variable.file)
            if found is None:
                continue
            raw, origin = found
            values[name] = _parse(origin, raw) if _is_integer(self.settings_cls, name) else raw
            self.origins[name] = origin
        return values

    def _raw(self, variable: str, *, secret: bool) -> tuple[str, str] | None:
        """The text of ``variable`` and the variable it came from (``<variable>_FILE``?)."""
        raw = self.environ.get(variable) or None
        named = (self.environ.get(f"{variable}_FILE") or None) if secret else None
        if named is None:
            return None if raw is None else (raw, variable)
        if raw is not None:
            raise errors.InvalidSettings.at(
                (variable,), f"set either {variable} or {variable}_FILE, not both"
            )
        return _read_secret(f"{variable}_FILE", Path(named)), f"{variable}_FILE"


class FallbackSource(Source):
    """``DATABASE_URL`` and ``REDIS_URL``, the weakest source after the defaults."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def __call__(self) -> dict[str, Any]:
        fallbacks = {
            name: variable.fallback
            for name, variable in variables(self.settings_cls).items()
            if variable.fallback is not None
        }
        found = {name: self.environ.get(fallback) for name, fallback in fallbacks.items()}
        self.origins = {name: fallbacks[name] for name, value in found.items() if value}
        return {name: value for name, value in found.items() if value}


class YamlSource(Source):
    """The mapping in the YAML file ``OCC_CONFIG_PATH`` names; unknown keys are refused."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls)
        self.path = path

    def __call__(self) -> dict[str, Any]:
        try:
            document = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeError) as exc:
            raise errors.InvalidSettings.at(
                ("OCC_CONFIG_PATH",), f"cannot read settings file: {exc}"
            ) from None
        except yaml.YAMLError as exc:
            raise errors.InvalidSettings.at(
                ("OCC_CONFIG_PATH",), f"settings file is not YAML: {_where(exc)}"
            ) from None
        if not isinstance(document, dict):
            raise errors.InvalidSettings.at(
                ("OCC_CONFIG_PATH",), "settings file must hold a mapping"
            )
        unknown = sorted(str(key) for key in set(document) - set(self.settings_cls.model_fields))
        if unknown:
            raise errors.InvalidSettings.at((unknown[0],), "unknown setting")
        self.origins = {name: name for name in document}
        return document


def _where(error: yaml.YAMLError) -> str:
    """What is wrong and where, without the line itself: PyYAML's message quotes it, and the
    line may hold a secret (``secret_key: @...`` is not YAML). The problem names one character
    or a token at most."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or "cannot be parsed"
    if mark is None:
        return str(problem)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"


def _is_integer(settings_cls: type[BaseSettings], name: str) -> bool:
    annotation = settings_cls.model_fields[name].annotation
    return int in (annotation, *get_args(annotation))


def _parse(variable: str, raw: str) -> int:
    if not _DIGITS.fullmatch(raw):
        raise errors.InvalidSettings.at((variable,), "must be an integer written as digits")
    return int(raw)


def _read_secret(variable: str, path: Path) -> str:
    """The content of the file ``variable`` names, less its trailing newline (never shown)."""
    try:
        content = path.read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise errors.InvalidSettings.at((variable,), f"cannot read the file: {reason}") from None
    except UnicodeError:
        raise errors.InvalidSettings.at((variable,), "the file is not UTF-8 text") from None
    value = content.removesuffix("\n").removesuffix("\r")
    if not value:
        raise errors.InvalidSettings.at((variable,), "the file is empty")
    return value
