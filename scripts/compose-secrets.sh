#!/bin/sh
# Write the secret files docker-compose.yml mounts (./secrets/, next to it): random passwords,
# keys and Flower's credentials, and the two database URLs built from those passwords.
# Refuses to overwrite an existing file. Usage: scripts/compose-secrets.sh [DIRECTORY]
set -eu
dir="${1:-$(dirname "$0")/../secrets}"
umask 077
mkdir -p "$dir"
chmod 0700 "$dir"  # the directory guards the files; the files stay readable in the containers

random() { python3 -c "import secrets; print(secrets.token_hex(32))"; }

write() {
  if [ -e "$dir/$1" ]; then
    echo "compose-secrets: $dir/$1 exists; leaving it" >&2
    return
  fi
  printf '%s\n' "$2" > "$dir/$1"
  chmod 0644 "$dir/$1"  # the postgres and occ users of the containers read it
}

owner="$(cat "$dir/postgres_password" 2>/dev/null || random)"
app="$(cat "$dir/occ_app_db_password" 2>/dev/null || random)"
write postgres_password "$owner"
write occ_app_db_password "$app"
write migration_database_url "postgresql+psycopg://occ:$owner@postgres:5432/occ"
write database_url "postgresql+psycopg://occ_app:$app@postgres:5432/occ"
write api_key_pepper "$(random)"
write secret_key "$(random)"
write flower_basic_auth "admin:$(random)"
echo "compose-secrets: secrets in $dir"
