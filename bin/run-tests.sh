#!/bin/bash
# The project's single test command: the linters first (flake8 with
# hacking, bandit, mypy: a style error is found in seconds), then the tests.
#
#   bin/run-tests.sh                    lint, then all tests
#   bin/run-tests.sh tests/unit -x      extra arguments go to pytest
#
# Environment:
#   BARBICAN_RETRY_VENV=DIR             virtualenv to use/create (default .venv)
#   BARBICAN_RETRY_TEST_NO_SERVICES=1   don't start RabbitMQ/PostgreSQL/MariaDB
#   BARBICAN_RETRY_KEEP_SERVICES=1      leave the services' dir (logs, data) behind
#   BARBICAN_RETRY_SKIP_LINT=1          skip the linters (while iterating on tests)
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
VENV=${BARBICAN_RETRY_VENV:-.venv}
SERVICES=tests/functional/services.sh
export PIP_DISABLE_PIP_VERSION_CHECK=1

# OS packages (servers, python3-venv): a no-op when already installed.
"$SERVICES" install

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
fi
# Every run, so new requirements are picked up; quick when nothing changed.
"$VENV/bin/python" -m pip install -q -e . -r test-requirements.txt

# The linters, configured in tox.ini [flake8] and setup.cfg [mypy]; the
# same commands as tox -e pep8 and tox -e mypy.
if [ "${BARBICAN_RETRY_SKIP_LINT:-0}" != 1 ]; then
    lint_failed() {
        echo "run-tests.sh: $1 failed (BARBICAN_RETRY_SKIP_LINT=1 skips the" \
             "linters while you iterate)" >&2
        exit 1
    }
    lint_start=$SECONDS
    echo "run-tests.sh: lint: flake8, bandit, mypy" >&2
    "$VENV/bin/flake8" || lint_failed flake8
    "$VENV/bin/bandit" -q -r worker scheduler || lint_failed bandit
    "$VENV/bin/mypy" || lint_failed mypy
    echo "run-tests.sh: lint passed in $((SECONDS - lint_start))s" >&2
fi

if [ "${BARBICAN_RETRY_TEST_NO_SERVICES:-0}" != 1 ]; then
    SERVICES_DIR=$(mktemp -d /tmp/barbican-retry-tests.XXXXXX)
    cleanup() {
        "$SERVICES" stop "$SERVICES_DIR" || true
        if [ "${BARBICAN_RETRY_KEEP_SERVICES:-0}" = 1 ]; then
            echo "run-tests.sh: services' data and logs kept in $SERVICES_DIR" >&2
        else
            rm -rf "$SERVICES_DIR"
        fi
    }
    # Set before starting, so a half-done start is cleaned up too; INT/TERM
    # turned into exits so that the EXIT trap runs on them as well.
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    "$SERVICES" start "$SERVICES_DIR"
    # shellcheck source=/dev/null
    . "$SERVICES_DIR/env"
    # The servers are up: tests/functional/conftest.py then fails (instead of
    # skipping) a test whose server is missing.
    export BARBICAN_RETRY_TEST_REQUIRE_SERVICES=1
fi

# Run the whole tests/ tree unless a test path was given
# (bin/run-tests.sh tests/unit -x runs only tests/unit).
paths=(tests)
for arg in "$@"; do
    if [[ $arg != -* && -e ${arg%%::*} ]]; then
        paths=()
        break
    fi
done

rc=0
"$VENV/bin/python" -m pytest -p no:cacheprovider -q -ra --durations=15 "${paths[@]}" "$@" || rc=$?
exit $rc
