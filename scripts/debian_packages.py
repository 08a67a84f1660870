"""Debian packages a test service needs, installed with apt-get when this is root (the
package index updated first, nothing asked)."""

from __future__ import annotations

import os
import shutil
import subprocess


class PackagesUnavailable(RuntimeError):
    """apt-get could not install the packages (its message says why)."""


def install(*arguments: str, timeout_s: float) -> None:
    """``apt-get update`` then ``apt-get install -y -qq <arguments>``, each within
    ``timeout_s``.

    Raises:
        PackagesUnavailable: there is no apt-get, this is not root, or a step failed.
    """
    apt_get = shutil.which("apt-get")
    if apt_get is None or os.geteuid() != 0:
        raise PackagesUnavailable("apt-get is unavailable or this is not root")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["update", "-qq"], ["install", "-y", "-qq", *arguments]):
        result = subprocess.run(  # noqa: S603 - apt-get with the caller's fixed arguments
            [apt_get, *step],
            capture_output=True,
            text=True,
            env=environment,
            timeout=timeout_s,
            check=False,
        )
        if result.returncode != 0:
            raise PackagesUnavailable(f"apt-get {step[0]} failed: {result.stderr.strip()[-300:]}")
