#!/usr/bin/env bash
# Make sure headless Chromium is available for the dashboard rendering tests.
# Idempotent: does nothing when /usr/bin/chromium already exists. Needs root (or sudo) and
# access to the Debian apt mirrors; installs quietly.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  exit 0
fi
bash "$(dirname "$0")/apt-install.sh" ensure-chromium "$CHROMIUM" chromium
echo "ensure-chromium: $("$CHROMIUM" --version 2>/dev/null || echo chromium installed)" >&2
