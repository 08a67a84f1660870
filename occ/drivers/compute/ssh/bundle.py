"""What occ installs on every SSH host: the host helper and the stand-in gateway's library.

One tar archive, built once per process from occ's own source files: ``bin/occ-host.py``
(``hostside``) with the two modules it imports beside it, and, under ``lib/``, the stand-in
gateway with the two modules it imports. Its digest names the version; a host whose
``<root>/.occ-bundle`` holds another digest gets the archive again, over the stdin of one SSH
command.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import shlex
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import occ
from occ.drivers.compute.ssh import gateway_health, host_supervisor, hostside

HELPER: Final = "bin/occ-host.py"
HELPER_COMPANIONS: Final = (gateway_health, host_supervisor)
"""The modules the helper imports, beside it in ``bin`` (the helper's first import path)."""
MARKER: Final = ".occ-bundle"

_PACKAGE: Final = Path(occ.__file__).resolve().parent
_LIBRARY: Final = (
    "__init__.py",
    "drivers/__init__.py",
    "drivers/gateway.py",
    "drivers/gateway_warnings.py",
    "foundation/__init__.py",
    "foundation/fingerprints.py",
)
_EXTRACT: Final = (
    "import base64, io, os, sys, tarfile\n"
    "root, digest = sys.argv[1], sys.argv[2]\n"
    "os.makedirs(root, mode=0o755, exist_ok=True)\n"
    "archive = tarfile.open(fileobj=io.BytesIO(base64.b64decode(sys.stdin.read())))\n"
    "options = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}\n"
    "archive.extractall(root, **options)\n"
    "open(os.path.join(root, '.occ-bundle'), 'w').write(digest)\n"
)


@dataclass(frozen=True)
class Bundle:
    """The archive (base64, for stdin) and its digest."""

    encoded: str
    digest: str

    def install_command(self, root: str) -> str:
        """The command that unpacks the archive (read from stdin) under ``root``."""
        return f"python3 -c {shlex.quote(_EXTRACT)} {shlex.quote(root)} {self.digest}"

    @staticmethod
    def check_command(root: str) -> str:
        """The command that prints the digest installed under ``root`` (nothing if none)."""
        return f"cat {shlex.quote(f'{root}/{MARKER}')} 2>/dev/null || true"


@functools.cache
def build() -> Bundle:
    """The bundle of this occ (deterministic: same sources, same digest)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _add(archive, HELPER, Path(hostside.__file__).read_bytes())
        for companion in HELPER_COMPANIONS:
            source = Path(str(companion.__file__))
            _add(archive, f"bin/{source.name}", source.read_bytes())
        for name in _LIBRARY:
            _add(archive, f"lib/occ/{name}", (_PACKAGE / name).read_bytes())
    data = buffer.getvalue()
    return Bundle(encoded=base64.b64encode(data).decode(), digest=hashlib.sha256(data).hexdigest())


def _add(archive: tarfile.TarFile, name: str, content: bytes) -> None:
    entry = tarfile.TarInfo(name)
    entry.size, entry.mode, entry.mtime = len(content), 0o644, 0
    archive.addfile(entry, io.BytesIO(content))
