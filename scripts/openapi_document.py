"""Print occ's OpenAPI document (for the linters: ``make openapi-lint``).

The app is built with placeholder settings and never connects to anything: the document is
what the routes declare.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from occ.settings.config import Settings
from occ.web.app import create_app

PLACEHOLDERS = {
    "OCC_DATABASE_URL": "postgresql://occ_app@127.0.0.1:1/occ",
    "OCC_BROKER_URL": "redis://127.0.0.1:1/0",
    "OCC_API_KEY_PEPPER": "openapi-document-only",
    "OCC_SECRET_KEY": "openapi-document-only-not-a-secret",
    "OCC_ENV": "development",
}


def main() -> int:
    app = create_app(Settings.from_env(PLACEHOLDERS))
    answer = app.test_client().get("/v1/openapi.json")
    sys.stdout.write(json.dumps(answer.json, indent=1) + "\n")
    return 0 if answer.status_code == 200 else 1


if __name__ == "__main__":
    raise SystemExit(main())
