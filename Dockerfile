# occ: one image for every process (API, workers, beat, Flower, migrations); docs/running.md.
# The API is the default command; docker-compose.yml sets the others.
FROM python:3.11-slim

# PROMETHEUS_MULTIPROC_DIR: one container runs one program, so one directory (writable by occ)
# serves it; the program's first process empties it at start (docs/operations.md)
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PROMETHEUS_MULTIPROC_DIR=/var/lib/occ/metrics

RUN groupadd --system occ \
    && useradd --system --gid occ --create-home --home-dir /home/occ --shell /usr/sbin/nologin occ

WORKDIR /app

# dependencies first, in a layer of their own (rebuilt only when pyproject.toml changes)
COPY pyproject.toml README.md ./
RUN mkdir occ && touch occ/__init__.py && pip install -e . && rm -rf occ

# the source tree: the package and the Alembic migrations (alembic.ini, alembic/) it runs
COPY . .
RUN pip install --no-deps -e . \
    && mkdir -p /run/occ /run/occ-docker /var/lib/occ/local /var/lib/occ/metrics \
    && chown occ:occ /run/occ /run/occ-docker /var/lib/occ /var/lib/occ/local /var/lib/occ/metrics

USER occ

EXPOSE 8000

CMD ["gunicorn", "occ.web.app:create_app()", "--config", "python:occ.web.gunicorn_hooks", \
     "--worker-class", "occ.web.serving.ProblemWorker", \
     "--logger-class", "occ.web.serving.JsonLogger", \
     "--bind", "0.0.0.0:8000", "--workers", "2", "--timeout", "30", "--graceful-timeout", "20"]
