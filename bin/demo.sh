#!/bin/bash
# The all-in-one demo: installs the project into a virtualenv (only the
# first time, and after setup.cfg or the requirements changed) and runs
# worker and scheduler in one process on SQLite with the in-process
# transport (no broker, no database server).
#
#   bin/demo.sh --console   then serves the operator console over the
#                           demo's database on http://127.0.0.1:9312/console/
#                           (no login, this host only) until Ctrl-C
#
# Environment:
#   BARBICAN_RETRY_VENV=DIR   virtualenv to use/create (default .venv in
#                             the checkout; a relative DIR is in it too)
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
# shellcheck source=bin/lib/install.sh
. "$ROOT/bin/lib/install.sh"
VENV=${BARBICAN_RETRY_VENV:-.venv}
case $VENV in
    /*) ;;
    *) VENV=$ROOT/$VENV ;;
esac
(cd "$ROOT" && install_project "$VENV" demo)
# From the caller's directory: a relative --state-dir is relative to it.
exec "$VENV/bin/barbican-retry-demo" "$@"
