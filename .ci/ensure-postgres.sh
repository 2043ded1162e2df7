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

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "ensure-postgres: $POSTGRES is missing and we are not root (no sudo); install postgresql" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "ensure-postgres: installing postgresql (apt)..." >&2
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
if command -v pg_ctlcluster >/dev/null 2>&1; then
  $SUDO pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
fi

if [ ! -x "$POSTGRES" ]; then
  echo "ensure-postgres: apt installed postgresql but $POSTGRES is still missing" >&2
  exit 1
fi
echo "ensure-postgres: $("$POSTGRES" --version)" >&2
