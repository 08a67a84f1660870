"""Migration and Installation bootstrap of ``occ dev``, with the administrator's key file.

Like ``occ db upgrade`` then ``occ bootstrap --if-missing``, in-process, before any child starts.
The key goes only to ``<home>/admin.key`` (0600), never to the terminal or a log.
"""

from __future__ import annotations

import datetime as dt
import logging
import urllib.parse
from pathlib import Path

from occ.controller import installation, principals, sign_in
from occ.dev import errors, home, terminal
from occ.settings.config import Settings
from occ.state import api_keys, schema
from occ.state.db import Database

logger = logging.getLogger("occ.dev")


def migrate(settings: Settings) -> None:
    """Apply the migrations as the owner; ``DevError`` with the first line of the failure."""
    logger.info("migrating the database")
    try:
        schema.upgrade(settings.owner_database_url)
    except Exception as exc:
        raise errors.DevError(f"the migration failed: {errors.first_line(exc)}") from exc


def bootstrap(settings: Settings, key_file: Path) -> None:
    """Create the Installation if missing and make sure ``key_file`` holds a live admin key.

    A key is minted (and the file replaced) when the Installation is new, when a bootstrap
    was interrupted before its key, or when the file is missing or holds no live key; the
    last case mints through the administrator's own, audited, ``api_keys.create``.
    """
    database = Database(settings.database_url, pool_size=1, application_name="occ-dev")
    pepper = settings.api_key_pepper
    try:
        result = installation.bootstrap_installation(
            database, name="occ", admin_name="administrator"
        )
        admin = result.admin_principal_id
        if admin is None:
            raise errors.DevError("the installation has no administrator to mint a key for")
        minted = principals.issue_first_key(database, principal_id=admin, pepper=pepper)
        if minted is None:
            if key_file.exists() and _key_works(database, key_file, pepper):
                logger.info("installation exists; reusing %s", key_file)
                return
            terminal.warn(
                f"{key_file} holds no live key of this installation: "
                "minting a new administrator key"
            )
            minted = principals.mint_api_key(
                database, admin, principals.MintApiKey(principal_id=admin), pepper=pepper
            )
        home.write_private(key_file, minted.key + "\n", replace=True)
        logger.info("administrator key %s written to %s", minted.id, key_file)
    except errors.DevError:
        raise
    except Exception as exc:
        raise errors.DevError(f"the bootstrap failed: {errors.first_line(exc)}") from exc
    finally:
        database.dispose()


SIGN_IN_LINK_LIFETIME = dt.timedelta(minutes=15)


def sign_in_link(settings: Settings, link_file: Path) -> None:
    """Write a fresh one-time console sign-in link for the bootstrap administrator to
    ``link_file`` (0600): it signs the browser in once, within 15 minutes (``/auth/one-time``).
    """
    if settings.auth_secret is None or settings.auth_base_url is None:
        return
    database = Database(settings.database_url, pool_size=1, application_name="occ-dev")
    try:
        with database.snapshot() as session:
            admin = installation.bootstrap_principal_id(session)
        if admin is None:
            return
        token = sign_in.issue_one_time_link(
            database,
            principal_id=admin,
            secret_key=settings.auth_secret,
            lifetime=SIGN_IN_LINK_LIFETIME,
        )
        query = urllib.parse.urlencode({"token": token})
        home.write_private(
            link_file, f"{settings.auth_base_url}/auth/one-time?{query}\n", replace=True
        )
        logger.info("one-time console sign-in link written to %s", link_file)
    except Exception as exc:
        raise errors.DevError(f"the sign-in link failed: {errors.first_line(exc)}") from exc
    finally:
        database.dispose()


def _key_works(database: Database, key_file: Path, pepper: str) -> bool:
    presented = key_file.read_text(encoding="utf-8").strip()
    with database.snapshot() as session:
        return api_keys.verify(session, presented=presented, pepper=pepper) is not None
