"""What the settings tests share: a production environment, a refusal, a YAML file."""

from __future__ import annotations

from pathlib import Path

import pytest

from occ.foundation import errors
from occ.settings.config import Settings

PEPPER = "pepper-" + "p" * 40
SECRET_KEY = "secret-key-" + "k" * 40
DB_PASSWORD = "db-pa55word"
BROKER_PASSWORD = "broker-pa55word"


def production(**changes: object) -> dict[str, str]:
    env = {
        "OCC_ENV": "production",
        "OCC_DATABASE_URL": f"postgresql+psycopg://occ_app:{DB_PASSWORD}@db.example:5432/occ",
        "OCC_BROKER_URL": f"rediss://:{BROKER_PASSWORD}@redis.example:6380/0",
        "OCC_API_KEY_PEPPER": PEPPER,
        "OCC_SECRET_KEY": SECRET_KEY,
        "OCC_COMPUTE_DRIVER": "kubernetes",
        "OCC_KUBERNETES_GATEWAY_IMAGE": "registry.example/gateway:1",
    }
    env.update({key: str(value) for key, value in changes.items()})
    return env


def from_env(env: dict[str, str]) -> Settings:
    """``Settings.from_env(env)``, in development unless ``env`` says otherwise."""
    return Settings.from_env({"OCC_ENV": "development", **env})


def refusal(env: dict[str, str]) -> errors.InvalidInput:
    with pytest.raises(errors.InvalidInput) as refused:
        from_env(env)
    return refused.value


def yaml_file(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return {"OCC_CONFIG_PATH": str(path)}
