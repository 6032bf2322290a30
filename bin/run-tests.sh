#!/bin/bash
# The project's single test command: the linters first (flake8 with
# hacking, bandit, mypy: a style error is found in seconds), then the tests.
#
#   bin/run-tests.sh                    lint, then all tests
#   bin/run-tests.sh tests/unit -x      extra arguments go to pytest
#
# Environment:
#   BARBICAN_RETRY_VENV=DIR             virtualenv to use/create (default .venv)
#   BARBICAN_RETRY_TEST_NO_SERVICES=1   don't start RabbitMQ/PostgreSQL/MariaDB/
#                                       Keystone
#   BARBICAN_RETRY_TEST_NO_KEYSTONE=1   start the others but not Keystone (the
#                                       tests that need it are then skipped)
#   BARBICAN_RETRY_KEEP_SERVICES=1      leave the services' dir (logs, data) behind
#   BARBICAN_RETRY_SKIP_LINT=1          skip the linters (while iterating on tests)
#   BARBICAN_RETRY_TEST_PROCESSES=N     run the tests in N processes side by
#                                       side (pytest-xdist; default 3; 0: in
#                                       this one); the tests marked
#                                       exclusive run one at a time, beside
#                                       them on servers of their own
#   BARBICAN_RETRY_TEST_EXCLUSIVE_AFTER=1
#                                       run the exclusive tests after the
#                                       others instead, on the same servers
#                                       (always so with NO_SERVICES=1)
#   BARBICAN_RETRY_TEST_GALERA=1        the Galera variant: MariaDB is a 3-node
#                                       Galera cluster and RabbitMQ a 3-node
#                                       cluster (tests/functional/cluster.sh);
#                                       each daemon of a MariaDB test runs on
#                                       its own node of both. E.g.
#                                       BARBICAN_RETRY_TEST_GALERA=1 bin/run-tests.sh tests/functional -k mysql
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
VENV=${BARBICAN_RETRY_VENV:-.venv}
SERVICES=tests/functional/services.sh
export PIP_DISABLE_PIP_VERSION_CHECK=1

# OS packages (servers, python3-venv): a no-op when already installed.
"$SERVICES" install

# Keystone, into a virtualenv of its own inside ours (a no-op once its pins
# are installed), in the background while the project installs and the
# linters run; services.sh start waits for it.
export BARBICAN_RETRY_KEYSTONE_VENV
BARBICAN_RETRY_KEYSTONE_VENV=$(readlink -f "$VENV")/keystone
if [ "${BARBICAN_RETRY_TEST_NO_SERVICES:-0}" != 1 ] &&
        [ "${BARBICAN_RETRY_TEST_NO_KEYSTONE:-0}" != 1 ]; then
    "$SERVICES" keystone-install &
fi

# shellcheck source=bin/lib/install.sh
. bin/lib/install.sh
# Again only when setup.cfg or the requirements changed. The tests use
# every database driver, tracing and the openstack client plugin: the
# extras that install them.
INSTALL_EXTRAS=postgresql,mysql,tracing,client \
    install_project "$VENV" tests test-requirements.txt

# The linters, configured in tox.ini [flake8] and setup.cfg [mypy]; the
# same commands as tox -e pep8 and tox -e mypy. They run while the
# servers start (up to a minute on a loaded machine), and the tests wait
# for them: a lint failure is printed as soon as it is found, and ends
# the run once the servers are up.
lint_pid=
if [ "${BARBICAN_RETRY_SKIP_LINT:-0}" != 1 ]; then
    lint_failed() {
        echo "run-tests.sh: $1 failed (BARBICAN_RETRY_SKIP_LINT=1 skips the" \
             "linters while you iterate)" >&2
        exit 1
    }
    lint() {
        local lint_start=$SECONDS
        echo "run-tests.sh: lint: flake8, bandit, mypy" >&2
        "$VENV/bin/flake8" || lint_failed flake8
        "$VENV/bin/bandit" -q -r worker scheduler || lint_failed bandit
        "$VENV/bin/mypy" || lint_failed mypy
        echo "run-tests.sh: lint passed in $((SECONDS - lint_start))s" >&2
    }
    lint &
    lint_pid=$!
fi

# galera_variant DIR: start the clusters in DIR; MariaDB's and RabbitMQ's
# variables then name node 1 (its URL, pid file, stop and start), and the
# broker URL every node, node 1 first.
galera_variant() {
    local dir=$1 kind action var
    mkdir -p "$dir"
    tests/functional/cluster.sh start "$dir"
    # shellcheck source=/dev/null
    . "$dir/env"
    local galera_urls galera_ports galera_pids rabbitmq_ports rabbitmq_pids
    read -r -a galera_urls <<<"$BARBICAN_RETRY_TEST_GALERA_URLS"
    read -r -a galera_ports <<<"$BARBICAN_RETRY_TEST_GALERA_PORTS"
    read -r -a galera_pids <<<"$BARBICAN_RETRY_TEST_GALERA_PID_FILES"
    read -r -a rabbitmq_ports <<<"$BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_PORTS"
    read -r -a rabbitmq_pids <<<"$BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_PID_FILES"
    export BARBICAN_RETRY_TEST_MYSQL_URL=${galera_urls[0]}
    export BARBICAN_RETRY_TEST_MYSQL_PORT=${galera_ports[0]}
    export BARBICAN_RETRY_TEST_MYSQL_PID_FILE=${galera_pids[0]}
    export BARBICAN_RETRY_TEST_TRANSPORT_URL=$BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_TRANSPORT_URL
    export BARBICAN_RETRY_TEST_RABBITMQ_PORT=${rabbitmq_ports[0]}
    export BARBICAN_RETRY_TEST_RABBITMQ_PID_FILE=${rabbitmq_pids[0]}
    for kind in galera rabbitmq; do
        for action in start stop; do
            printf '#!/bin/sh\nexec %q node-%s %q %s 1\n' "$PWD/tests/functional/cluster.sh" \
                "$action" "$dir" "$kind" >"$dir/$kind-1-$action.sh"
            chmod 755 "$dir/$kind-1-$action.sh"
        done
    done
    for action in start stop; do
        var=BARBICAN_RETRY_TEST_MYSQL_${action^^}
        export "$var=$dir/galera-1-$action.sh"
        var=BARBICAN_RETRY_TEST_RABBITMQ_${action^^}
        export "$var=$dir/rabbitmq-1-$action.sh"
    done
}

# The exclusive round (below) beside the other, on servers of its own in
# EXCLUSIVE_DIR: its pid while it runs.
EXCLUSIVE_DIR=
exclusive_pid=
if [ "${BARBICAN_RETRY_TEST_NO_SERVICES:-0}" != 1 ]; then
    SERVICES_DIR=$(mktemp -d /tmp/barbican-retry-tests.XXXXXX)
    CLUSTER_DIR=$SERVICES_DIR/cluster
    if [ "${BARBICAN_RETRY_TEST_EXCLUSIVE_AFTER:-0}" != 1 ]; then
        EXCLUSIVE_DIR=$SERVICES_DIR/exclusive
    fi
    cleanup() {
        local status=$?
        # The exclusive round still running: SIGINT makes its pytest tear
        # its fixtures down (the clusters it started) and end the round.
        # A Ctrl-C has already reached them (one process group); a second
        # one would cut that teardown short.
        if [ -n "$exclusive_pid" ] && kill -0 "$exclusive_pid" 2>/dev/null; then
            if [ "$status" != 130 ]; then
                kill -INT "$exclusive_pid" 2>/dev/null || true
                pkill -INT -P "$exclusive_pid" || true
            fi
            wait "$exclusive_pid" || true
        fi
        if [ -n "$EXCLUSIVE_DIR" ]; then
            if [ -d "$EXCLUSIVE_DIR/cluster" ]; then
                tests/functional/cluster.sh stop "$EXCLUSIVE_DIR/cluster" || true
            fi
            if [ -d "$EXCLUSIVE_DIR" ]; then "$SERVICES" stop "$EXCLUSIVE_DIR" || true; fi
        fi
        if [ -d "$CLUSTER_DIR" ]; then tests/functional/cluster.sh stop "$CLUSTER_DIR" || true; fi
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
    if [ "${BARBICAN_RETRY_TEST_GALERA:-0}" = 1 ]; then
        galera_variant "$CLUSTER_DIR"
    fi
fi

if [ -n "$lint_pid" ]; then
    wait "$lint_pid" || exit 1
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

# Two rounds: the tests side by side (most wait on timers, not on the
# CPU), and those that restart or kill a server the others share, or run
# clusters of their own (marked exclusive), one at a time. A round that
# selects no test (status 5) is no failure.
pytest_round() {
    local status=0
    "$VENV/bin/python" -m pytest -p no:cacheprovider -q -ra --durations=15 \
        "$@" || status=$?
    if [ "$status" = 5 ]; then status=0; fi
    return "$status"
}

# exclusive_round DIR ARGS...: the exclusive tests on servers (and, for
# the Galera variant, clusters) of their own started in DIR, which no
# other test uses: they may stop and kill them while the other round
# runs. They spend most of their time waiting on their faults: about 400
# CPU-seconds in all, their servers and clusters included, over the 12
# minutes they took alone (a quarter of a 2-CPU machine).
exclusive_round() {
    local dir=$1
    shift
    # Run on once the command under way has ended (cleanup above).
    trap 'exit 130' INT
    # No Keystone: no exclusive test uses it.
    BARBICAN_RETRY_TEST_NO_KEYSTONE=1 "$SERVICES" start "$dir"
    # shellcheck source=/dev/null
    . "$dir/env"
    if [ "${BARBICAN_RETRY_TEST_GALERA:-0}" = 1 ]; then
        galera_variant "$dir/cluster"
    fi
    pytest_round -m exclusive "$@"
}

rc=0
if [ -n "$EXCLUSIVE_DIR" ]; then
    # Its output after the other round's, whole.
    exclusive_round "$EXCLUSIVE_DIR" "${paths[@]}" "$@" \
        >"$SERVICES_DIR/exclusive.log" 2>&1 &
    exclusive_pid=$!
fi
round_start=$SECONDS
pytest_round -n "${BARBICAN_RETRY_TEST_PROCESSES:-3}" -m 'not exclusive' \
    "${paths[@]}" "$@" || rc=$?
echo "run-tests.sh: the tests not marked exclusive ran in" \
     "$((SECONDS - round_start))s" >&2
if [ -n "$exclusive_pid" ]; then
    status=0
    wait "$exclusive_pid" || status=$?
    exclusive_pid=
    echo "run-tests.sh: the exclusive tests, run beside them on servers" \
         "of their own (done after $((SECONDS - round_start))s):" >&2
    cat "$SERVICES_DIR/exclusive.log"
    if [ "$status" != 0 ]; then rc=$status; fi
else
    pytest_round -m exclusive "${paths[@]}" "$@" || rc=$?
fi
exit $rc
