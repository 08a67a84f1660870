#!/usr/bin/env bash
# Build the stand-in gateway image (default occ-standin-gateway:dev) without any registry.
#
# The image is a small root filesystem made from this machine's Python (the interpreter, the
# shared libraries it links, and only the standard-library modules the stand-in gateway
# imports, found by running it once) plus the occ sources it runs from (GATEWAY_SOURCES below),
# loaded with `docker import` (no network, a few seconds). It runs as the
# non-root user occ (uid 10001) and has no shell.
#
# Idempotent: the image carries a label with the digest of its inputs; when the tagged image
# already has that digest nothing is built. Honours DOCKER_HOST (through the docker CLI).
#
# Usage: scripts/build-standin-image.sh [IMAGE]   (else OCC_DOCKER_GATEWAY_IMAGE, else the default)
# PYTHON selects the interpreter (default python3), DOCKER the CLI (default docker).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE=${1:-${OCC_DOCKER_GATEWAY_IMAGE:-occ-standin-gateway:dev}}
PYTHON=${PYTHON:-python3}
DOCKER=${DOCKER:-docker}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# the occ sources the gateway runs from (standard library only besides these)
export GATEWAY_SOURCES="occ/__init__.py occ/foundation/__init__.py occ/foundation/fingerprints.py
  occ/drivers/__init__.py occ/drivers/gateway.py occ/drivers/gateway_warnings.py"

# 1. the list of files and the digest of the inputs
"$PYTHON" -S -B - "$ROOT" "$WORK/files.txt" "${BASH_SOURCE[0]}" <<'PY'
"""Run the stand-in gateway once and write every file it needed (one path a line)."""
import hashlib, http.client, os, re, socket, subprocess, sys, threading

root, out = sys.argv[1], sys.argv[2]
GATEWAY_SOURCES = os.environ["GATEWAY_SOURCES"].split()
sys.path.insert(0, root)
import occ.drivers.gateway  # noqa: E402  (the import under test)

# serve one request, as a health probe does, so lazily imported modules are loaded too
server = occ.drivers.gateway.GatewayServer(
    ("127.0.0.1", 0), health={"revisionId": "probe"}, healthy=True, configuration=b"{}"
)
threading.Thread(target=server.serve_forever, daemon=True).start()
connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
connection.request("GET", "/healthz")
assert connection.getresponse().status == 200
server.shutdown()
import encodings, json, selectors  # noqa: E401,F401  (used by the gateway's start-up paths)

stdlib = os.path.dirname(os.path.realpath(os.__file__))
files, packages = set(), {os.path.dirname(encodings.__file__)}
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None)
    state = getattr(getattr(module, "__spec__", None), "loader_state", None)
    path = path or getattr(state, "filename", None)  # frozen modules keep their source path
    if path and not os.path.realpath(path).startswith(os.path.realpath(root) + os.sep):
        files.add(os.path.realpath(path))
        directory = os.path.dirname(os.path.realpath(path))
        while directory.startswith(stdlib + os.sep) and not directory.endswith("lib-dynload"):
            packages.add(directory)  # the module is part of a package: keep its siblings
            directory = os.path.dirname(directory)
# whole packages (one level): their modules import siblings lazily, and the frozen ones by name
for package in packages:
    for name in os.listdir(package):
        if name.endswith((".py", ".so")):
            files.add(os.path.join(package, name))
for path in list(files):
    if path.endswith(".py"):
        import importlib.util

        cached = importlib.util.cache_from_source(path)
        if os.path.exists(cached):
            files.add(cached)
executable = os.path.realpath(sys.executable)
files.add(executable)
files.add(os.path.join(stdlib, "os.py"))  # the landmark the interpreter finds its prefix by
linked = set()
for binary in [executable] + [f for f in files if f.endswith(".so")]:
    result = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
    for line in result.stdout.splitlines():
        match = re.search(r"(/\S+)", line.split("=>")[-1])
        if match and os.path.exists(match.group(1)):
            linked.add(match.group(1))
files |= linked
digest = hashlib.sha256()
for path in sorted(files):
    digest.update(path.encode())
    stat = os.stat(path)
    digest.update(f"{stat.st_size}:{int(stat.st_mtime)}".encode())
for name in GATEWAY_SOURCES:
    with open(os.path.join(root, name), "rb") as handle:
        digest.update(name.encode() + handle.read())
with open(sys.argv[3], "rb") as handle:  # this script: how the image is laid out
    digest.update(handle.read())
with open(out, "w") as handle:
    handle.write(executable + "\n" + digest.hexdigest()[:16] + "\n")
    handle.write("".join(path + "\n" for path in sorted(files)))
PY

EXECUTABLE=$(sed -n 1p "$WORK/files.txt")
DIGEST=$(sed -n 2p "$WORK/files.txt")
CURRENT=$("$DOCKER" image inspect --format '{{ index .Config.Labels "occ.standin.digest" }}' \
  "$IMAGE" 2>/dev/null || true)
if [ "$CURRENT" = "$DIGEST" ]; then
  echo "build-standin-image: $IMAGE is up to date ($DIGEST)" >&2
  exit 0
fi

# 2. the root filesystem as a tar stream, straight into `docker import`
"$PYTHON" -S -B - "$ROOT" "$WORK/files.txt" "$WORK/rootfs.tar" <<'PY'
"""Write the root filesystem tar: the listed files at their own paths, occ under /app."""
import io, os, sys, tarfile

root, listing, out = sys.argv[1], sys.argv[2], sys.argv[3]
GATEWAY_SOURCES = os.environ["GATEWAY_SOURCES"].split()
lines = open(listing).read().splitlines()
executable, files = lines[0], lines[2:]
directories = set()


def add_directory(archive, path, mode=0o755, uid=0):
    parts = path.strip("/").split("/")
    for index in range(1, len(parts) + 1):
        name = "/".join(parts[:index])
        if name and name not in directories:
            directories.add(name)
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, (mode if index == len(parts) else 0o755)
            info.uid = info.gid = uid if index == len(parts) else 0
            archive.addfile(info)


def add_bytes(archive, name, data, mode=0o644, mtime=0):
    add_directory(archive, os.path.dirname(name))
    info = tarfile.TarInfo(name.lstrip("/"))
    info.size, info.mode, info.mtime = len(data), mode, mtime
    archive.addfile(info, io.BytesIO(data))


with tarfile.open(out, "w") as archive:
    for path in files:
        with open(path, "rb") as handle:  # links are followed: every file is a plain file
            data = handle.read()
        stat = os.stat(path)
        add_bytes(archive, path, data, mode=stat.st_mode & 0o755, mtime=int(stat.st_mtime))
    add_directory(archive, "usr/bin")
    link = tarfile.TarInfo("usr/bin/python3")
    link.type, link.linkname = tarfile.SYMTYPE, executable
    archive.addfile(link)
    for name in GATEWAY_SOURCES:
        with open(os.path.join(root, name), "rb") as handle:
            add_bytes(archive, f"app/{name}", handle.read())
    add_bytes(
        archive,
        "etc/passwd",
        b"root:x:0:0:root:/root:/nonexistent\nocc:x:10001:10001:occ:/nonexistent:/nonexistent\n",
    )
    add_bytes(archive, "etc/group", b"root:x:0:\nocc:x:10001:\n")
    add_bytes(archive, "etc/occ/configuration.json", b"{}\n")  # for runs without a snapshot
    add_directory(archive, "config")
    add_directory(archive, "run/occ", mode=0o700, uid=10001)
    add_directory(archive, "tmp", mode=0o1777)
PY

"$DOCKER" import \
  --change "ENTRYPOINT [\"/usr/bin/python3\", \"-B\", \"-S\", \"-E\", \"-m\", \"occ.drivers.gateway\"]" \
  --change "WORKDIR /app" \
  --change "USER 10001:10001" \
  --change "ENV LANG=C.UTF-8 PYTHONUNBUFFERED=1" \
  --change "EXPOSE 8080/tcp" \
  --change "LABEL occ.standin.digest=$DIGEST" \
  "$WORK/rootfs.tar" "$IMAGE" >/dev/null
echo "build-standin-image: built $IMAGE ($DIGEST, $(du -h "$WORK/rootfs.tar" | cut -f1))" >&2
