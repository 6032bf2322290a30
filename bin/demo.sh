#!/bin/bash
# The all-in-one demo: installs the project into a virtualenv and runs
# worker and scheduler in one process on SQLite with the in-process
# transport (no broker, no database server).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${BARBICAN_RETRY_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
fi
"$VENV/bin/pip" install --quiet -e .
exec "$VENV/bin/barbican-retry-demo" "$@"
