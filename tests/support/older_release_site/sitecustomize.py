"""Loaded first by a worker that plays the release before this one (``older_release``): it
reads ``occ.run_work`` payloads up to version 1 only, as a release before payload versions
did."""

from __future__ import annotations

from occ.tasks import names

names.PAYLOAD_VERSION = 1
