#!/usr/bin/env bash
# apt-install.sh NAME BINARY PACKAGE: install Debian's PACKAGE (quietly, as root or with sudo)
# unless BINARY is already there; fail in one line when it cannot. Shared by ensure-chromium.sh
# and ensure-postgres.sh; NAME prefixes their messages.
set -euo pipefail
name=$1 binary=$2 package=$3

if [ -x "$binary" ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "$name: $binary is missing and we are not root (no sudo); install $package" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "$name: installing $package (apt)..." >&2
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "$package" >/dev/null

if [ ! -x "$binary" ]; then
  echo "$name: apt installed $package but $binary is still missing" >&2
  exit 1
fi
