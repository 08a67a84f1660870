"""Where a process runs: its database, its broker, its hosting platform and its environment;
and how a URL's password is told apart (masked in dumps, missed in ``occ doctor``)."""

from __future__ import annotations

from typing import Annotated

import pydantic

from occ.foundation import errors
from occ.settings.sources import Variable
from occ.settings.topic import Topic

_PASSWORD_SCHEMES = ("postgresql", "postgres", "redis", "rediss")


class Platform(Topic):
    """The database, the broker, the platform and the environment."""

    database_url: Annotated[
        str, Variable("OCC_DATABASE_URL", file=True, fallback="DATABASE_URL")
    ] = "postgresql+psycopg://occ_app@127.0.0.1:5432/occ"
    """Database of the API and workers (role ``occ_app``). A ``postgres://`` or
    ``postgresql://`` URL means ``postgresql+psycopg://``."""

    migration_database_url: Annotated[
        str | None, Variable("OCC_MIGRATION_DATABASE_URL", file=True)
    ] = None
    """Owner connection for migrations and ``occ bootstrap --recover-admin`` (unset: the
    database of the API and workers)."""

    broker_url: Annotated[str, Variable("OCC_BROKER_URL", file=True, fallback="REDIS_URL")] = (
        "redis://127.0.0.1:6379/0"
    )
    """Celery broker."""

    platform: Annotated[str | None, Variable("OCC_PLATFORM", fallback="DYNO")] = None
    """The hosting platform this process runs on, any name (unset: none; Heroku's ``DYNO``, set
    on every dyno, counts): on one the development pepper and secret key are refused whatever
    ``OCC_ENV`` says."""

    environment: Annotated[str, Variable("OCC_ENV", required=True)] = "development"
    """``development`` or ``production``, always said: every process but ``occ dev`` (which
    sets ``development``) refuses to start without it. The refusal is ``ENVIRONMENT_NOT_SET``;
    production refuses the development pepper and secret key, keys shorter than 32 bytes, and
    the ``local`` driver."""

    @pydantic.field_validator("database_url", "migration_database_url")
    @classmethod
    def _use_psycopg(cls, url: str | None) -> str | None:
        # postgres:// (Heroku) and postgresql:// name no driver: occ's is psycopg 3
        if url is None:
            return None
        scheme, separator, rest = url.partition("://")
        if separator and scheme.lower() in ("postgres", "postgresql"):
            return f"postgresql+psycopg://{rest}"
        return url

    @pydantic.model_validator(mode="after")
    def _platform_holds(self) -> Platform:
        if self.environment not in ("development", "production"):
            raise errors.InvalidSettings.at(("environment",), "must be development or production")
        if not self.database_url.startswith(("postgresql", "postgres")):
            raise errors.InvalidSettings.at(("database_url",), "must be a PostgreSQL URL")
        for name in ("database_url", "migration_database_url", "broker_url"):
            url = getattr(self, name)
            if url and not _user_part_is_escaped(url):
                # never the URL: its clients would split it inside the password and echo a piece
                raise errors.InvalidSettings.at(
                    (name,), "its password must be percent-encoded (it holds / ? # or @)"
                )
        return self

    @property
    def owner_database_url(self) -> str:
        """The URL migrations run with."""
        return self.migration_database_url or self.database_url

    def unprotected_urls(self) -> tuple[str, ...]:
        """The URL settings whose scheme normally authenticates with a password but that carry
        none (which works with trust, peer or an unprotected Redis)."""
        return tuple(
            name
            for name in ("database_url", "migration_database_url", "broker_url")
            if (url := getattr(self, name)) and _expects_password(url) and not _has_password(url)
        )


def mask_url_password(url: str) -> str:
    """``url`` with the password of its user part replaced by ``***`` (other text unchanged)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    # the last '@' ends the user part: a password may itself hold an '@'
    user_part, at, host_part = rest.rpartition("@")
    if not at:
        return url
    user, colon, _password = user_part.partition(":")
    if not colon:
        return url
    return f"{scheme}://{user}:***@{host_part}"


def _scheme(url: str) -> str:
    return url.partition("://")[0].split("+", 1)[0].lower()


def _expects_password(url: str) -> bool:
    if _scheme(url) not in _PASSWORD_SCHEMES:
        return False
    # PostgreSQL over a unix socket (no host, or ``host=/path``) authenticates by peer
    rest = url.partition("://")[2]
    host_part = rest.rpartition("@")[2]
    return not (host_part.startswith("/") or "host=/" in url or host_part.split("?")[0] == "")


def _has_password(url: str) -> bool:
    user_part, at, _ = url.partition("://")[2].rpartition("@")
    return bool(at) and ":" in user_part and user_part.partition(":")[2] != ""


def _user_part_is_escaped(url: str) -> bool:
    """Whether the URL's user part, if any, holds no reserved character: the authority (up to
    the first ``/``, ``?`` or ``#``) has at most one ``@``, and nothing after it has one unless
    the authority does (``redis://:pa/ss@host`` parses as host ``:pa``)."""
    rest = url.partition("://")[2]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, after = rest[:cut], rest[cut:]
    return authority.count("@") <= 1 and ("@" in authority or "@" not in after)
