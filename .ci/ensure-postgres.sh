#!/usr/bin/env bash
# Make sure the PostgreSQL 15 server is available for the CDC tests (tests/support/postgres.py
# starts one with wal_level=logical for Debezium). Idempotent: does nothing when the server
# binary already exists. Needs root (or sudo) and access to the Debian apt mirrors; installs
# quietly. Only the binaries are used: the fixture runs its own cluster in a temp folder, so the
# package's own cluster (`main`, port 5432) is stopped again if the install started it.
set -euo pipefail

POSTGRES=/usr/lib/postgresql/15/bin/postgres

if [ -x "$POSTGRES" ]; then
  exit 0
fi
bash "$(dirname "$0")/apt-install.sh" ensure-postgres "$POSTGRES" postgresql
if command -v pg_ctlcluster >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
fi
echo "ensure-postgres: $("$POSTGRES" --version)" >&2
