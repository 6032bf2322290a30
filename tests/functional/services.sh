#!/bin/bash
# Throwaway RabbitMQ, PostgreSQL, MariaDB and Keystone instances for the
# functional tests.
#
#   services.sh install           install the OS packages when missing
#   services.sh keystone-install  install Keystone into its virtualenv
#                                 (start does it too when missing)
#   services.sh start DIR         start all four with every bit of state under DIR
#   services.sh stop DIR          stop all four (DIR is kept)
#
# `start` writes DIR/env (export lines for the test runner) and the helper
# scripts DIR/{rabbitmq,postgresql,mysql,keystone}-{start,stop}.sh, which stop/start
# the same instance (same data, same port) for the chaos tests. Those helpers
# call back into this script: SERVICE-start DIR / SERVICE-stop DIR.
#
# Ports are random in 20000-32767, i.e. never a default port and below the
# kernel's ephemeral range, so an outgoing connection cannot grab a port
# while its server is stopped by a chaos test.
#
# Sourcing this file (`. services.sh`, as cluster.sh does) only defines its
# variables and functions: the command dispatch at the end runs only when it
# is executed.
set -euo pipefail

# mariadbd is in /usr/sbin, which an ordinary user's PATH lacks on Debian
# (root's has it): without this only root could start the servers.
export PATH=$PATH:/usr/sbin:/sbin

# BASH_SOURCE, not $0: this file, also when sourced by another script.
SELF=$(readlink -f "${BASH_SOURCE[0]}")
# prometheus: promtool, for the alert rules' tests. galera-4, rsync: the
# Galera provider and the tool of its state transfers (SST), for cluster.sh;
# haproxy, the load balancer cluster.sh puts in front of Galera.
# nftables, iproute2 (ip netns, tc): the network faults of cluster.sh
# --network. chromium, chromium-driver: the headless browser and its
# WebDriver of the console's tests (tests/functional/browser.py), from the
# distribution, so that nothing downloads a browser at run time.
PACKAGES=(rabbitmq-server mariadb-server postgresql prometheus openssl galera-4 rsync haproxy nftables iproute2 chromium chromium-driver)
RABBIT_BIN=/usr/lib/rabbitmq/bin   # not /usr/sbin: that wrapper su's to rabbitmq and resets HOME
READY_TIMEOUT=90                   # seconds to wait for a server to come up
STOP_TIMEOUT=60                    # seconds to wait for a server to go away

die() { echo "services.sh: $*" >&2; exit 1; }
log() { echo "services.sh: $*" >&2; }

# ---------------------------------------------------------------- install

run_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' \
            || missing+=("$p")
    done
    # bin/run-tests.sh needs `python3 -m venv`, which Debian ships separately.
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
    [ ${#missing[@]} -eq 0 ] && return 0

    log "installing ${missing[*]}"
    # Keep the packages' postinst from starting system-wide daemons on their
    # default ports: we only want the binaries.
    local policy_added=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        run_root sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
        policy_added=1
    fi
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}")
    local rc=0
    # Only refresh the package lists when the install fails without it.
    run_root "${apt[@]}" || { run_root apt-get update && run_root "${apt[@]}"; } || rc=$?
    [ $policy_added = 1 ] && run_root rm -f /usr/sbin/policy-rc.d
    return $rc
}

# ---------------------------------------------------------------- helpers

# Run a command as USER (the servers refuse to run as root; the CLI tools
# don't care). When we are not root, everything runs as ourselves.
as_user() {
    local user=$1; shift
    if [ "$user" = "$(id -un)" ]; then "$@"; else runuser -u "$user" -- "$@"; fi
}

# port_open PORT [HOST]: something listens on HOST (127.0.0.1) PORT.
port_open() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }

wait_port_closed() {
    local port=$1 i
    for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
        port_open "$port" "${2:-127.0.0.1}" || return 0
        sleep 0.2
    done
    die "port $port still open after ${STOP_TIMEOUT}s"
}

# N distinct random ports in 20000-32767 that nobody listens on right now.
pick_ports() {
    python3 - "$1" <<'EOF'
import random, socket, sys
ports = []
while len(ports) < int(sys.argv[1]):
    p = random.randint(20000, 32767)
    if p in ports:
        continue
    try:
        for addr in ("0.0.0.0", "127.0.0.1"):
            with socket.socket() as s:
                s.bind((addr, p))
    except OSError:
        continue
    ports.append(p)
print(*ports)
EOF
}

# pid_alive PID NAME: PID runs and its command is NAME (guards against a
# stale pid file pointing at a recycled pid).
pid_alive() {
    [ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}

# wait_pid_gone PID NAME [SECONDS]: 0 once PID has exited, 1 on timeout.
wait_pid_gone() {
    local i
    for ((i = 0; i < ${3:-$STOP_TIMEOUT} * 5; i++)); do
        pid_alive "$1" "$2" || return 0
        sleep 0.2
    done
    return 1
}

# stop_pid PIDFILE NAME [SIGNAL]: send SIGNAL (default TERM, a clean shutdown
# for the broker and mariadbd), SIGKILL after STOP_TIMEOUT.
stop_pid() {
    local pid
    pid=$(head -n1 "$1" 2>/dev/null || true)
    pid_alive "$pid" "$2" || return 0
    kill -"${3:-TERM}" "$pid" 2>/dev/null || true
    wait_pid_gone "$pid" "$2" && return 0
    log "$2 (pid $pid) ignored SIG${3:-TERM}, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    wait_pid_gone "$pid" "$2" 5 || true
}

# fail LOG... MESSAGE: print the end of the logs and give up.
fail() {
    local msg=${*: -1} f
    for f in "${@:1:$#-1}"; do
        [ -s "$f" ] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 40 "$f" >&2
    done
    die "$msg"
}

# ---------------------------------------------------------------- per-DIR config

# DIR/services.conf holds what was chosen at the first start (ports, users),
# so later starts of the same DIR reuse the same instance.
load_conf() {
    DIR=$(readlink -f "$1")
    [ -f "$DIR/services.conf" ] || die "$DIR/services.conf missing: run 'services.sh start $DIR' first"
    # shellcheck source=/dev/null
    . "$DIR/services.conf"
    # A DIR first started before Keystone was part of the suite gets its
    # port now, kept for the later starts.
    if [ -z "${KEYSTONE_PORT:-}" ] && keystone_enabled; then
        KEYSTONE_PORT=$(pick_ports 1)
        echo "KEYSTONE_PORT=$KEYSTONE_PORT" >>"$DIR/services.conf"
    fi
}

write_conf() {
    local ports
    read -r -a ports <<<"$(pick_ports 7)"
    # The servers must not run as root; when we are root use the package's
    # system users (they exist once the packages are installed).
    local pg_user mysql_user
    if [ "$(id -u)" = 0 ]; then pg_user=postgres mysql_user=mysql; else pg_user=$(id -un) mysql_user=$(id -un); fi
    cat >"$DIR/services.conf" <<EOF
AMQP_PORT=${ports[0]}
DIST_PORT=${ports[1]}
EPMD_PORT=${ports[2]}
PG_PORT=${ports[3]}
MYSQL_PORT=${ports[4]}
AMQPS_PORT=${ports[5]}
KEYSTONE_PORT=${ports[6]}
RABBIT_NODENAME=brtest-$$@localhost
PG_USER=$pg_user
MYSQL_USER=$mysql_user
EOF
}

# ---------------------------------------------------------------- RabbitMQ

# Environment of this instance's broker and of rabbitmqctl talking to it.
# Everything points into DIR/rabbitmq so /etc/rabbitmq and /var/lib/rabbitmq
# are never read or written. It runs as the invoking user (root is fine for
# Erlang), with its own epmd on its own port, which stop kills.
rabbitmq_env() {
    local r=$DIR/rabbitmq
    cat <<EOF
export RABBITMQ_NODENAME=$RABBIT_NODENAME
export RABBITMQ_USE_LONGNAME=false
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$AMQP_PORT
export RABBITMQ_DIST_PORT=$DIST_PORT
export ERL_EPMD_PORT=$EPMD_PORT
export ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_CONF_ENV_FILE=$r/rabbitmq-env.conf
export RABBITMQ_CONFIG_FILE=$r/rabbitmq.conf
export RABBITMQ_ADVANCED_CONFIG_FILE=$r/advanced.config
export RABBITMQ_ENABLED_PLUGINS_FILE=$r/enabled_plugins
export RABBITMQ_MNESIA_BASE=$r/mnesia
export RABBITMQ_LOG_BASE=$r/log
export RABBITMQ_LOGS=$DIR/rabbitmq.log
export RABBITMQ_PID_FILE=$r/rabbitmq.pid
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
EOF
    # The last line keeps Erlang distribution on loopback too.
}

# The Erlang cookie lives in $HOME/.erlang.cookie for both the broker and
# rabbitmqctl, so HOME is DIR/rabbitmq inside the helpers (it is not put in
# DIR/env, which the test runner sources).
rabbitmq_shell_env() {
    eval "$(rabbitmq_env)"
    export HOME=$DIR/rabbitmq
}

rabbitmq_init() {
    local r=$DIR/rabbitmq
    [ -f "$r/.erlang.cookie" ] && return 0
    mkdir -p "$r/mnesia" "$r/log"
    : >"$r/rabbitmq-env.conf"   # ignore /etc/rabbitmq/rabbitmq-env.conf
    echo '[].' >"$r/enabled_plugins"   # no plugins at all
    echo '[].' >"$r/advanced.config"
    cat >"$r/rabbitmq.conf" <<'EOF'
# guest/guest only works over loopback, which is all we use.
loopback_users.guest = true
log.console = false
log.file.level = info
EOF
    # A second listener that speaks TLS only, with a CA and a server
    # certificate (127.0.0.1, localhost) made here, for the TLS tests.
    if [ -n "${AMQPS_PORT:-}" ]; then
        rabbitmq_certificates "$r/tls"
        cat >>"$r/rabbitmq.conf" <<EOF
listeners.ssl.default = 127.0.0.1:$AMQPS_PORT
ssl_options.cacertfile = $r/tls/ca.pem
ssl_options.certfile = $r/tls/server.pem
ssl_options.keyfile = $r/tls/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
    fi
    # Erlang wants the cookie private; a random one per instance.
    (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16).upper(), end="")' >"$r/.erlang.cookie")
    chmod 400 "$r/.erlang.cookie"
}

# rabbitmq_certificates DIR: a throwaway CA and a server certificate for
# 127.0.0.1 and localhost signed by it (2 days).
rabbitmq_certificates() {
    local t=$1
    mkdir -p "$t"
    (
        cd "$t"
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=barbican-retry test CA" \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout server.key -out server.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
            -days 2 -extfile server.ext -out server.pem 2>/dev/null
        chmod 600 ca.key server.key
    ) || die "could not make the test certificates in $t"
}

# Start the broker in the background, without waiting (lets `start` boot
# the databases meanwhile).
rabbitmq_launch() {
    (
        rabbitmq_shell_env
        if port_open "$AMQP_PORT"; then
            log "rabbitmq: port $AMQP_PORT already open"
            exit 0
        fi
        cd "$DIR/rabbitmq"
        # setsid: its own session, so Ctrl-C or a killed process group in the
        # test runner does not take the broker down with it.
        setsid "$RABBIT_BIN/rabbitmq-server" >>"$DIR/rabbitmq-console.log" 2>&1 </dev/null &
        echo $! >"$DIR/rabbitmq/wrapper.pid"
    )
}

rabbitmq_wait() {
    (
        rabbitmq_shell_env
        local wrapper deadline=$((SECONDS + READY_TIMEOUT))
        wrapper=$(cat "$DIR/rabbitmq/wrapper.pid" 2>/dev/null || true)
        # Cheap poll on the AMQP port first (the listener opens at the end of
        # the boot), then one rabbitmqctl call to confirm the boot finished.
        until port_open "$AMQP_PORT"; do
            if [ -n "$wrapper" ] && ! kill -0 "$wrapper" 2>/dev/null; then
                fail "$DIR/rabbitmq-console.log" "$DIR/rabbitmq.log" "rabbitmq exited during startup"
            fi
            [ $SECONDS -lt $deadline ] ||
                fail "$DIR/rabbitmq-console.log" "$DIR/rabbitmq.log" "rabbitmq not listening on $AMQP_PORT after ${READY_TIMEOUT}s"
            sleep 0.3
        done
        "$RABBIT_BIN/rabbitmqctl" -q -n "$RABBIT_NODENAME" await_startup --timeout $((deadline - SECONDS + 1)) >/dev/null 2>>"$DIR/rabbitmq-console.log" ||
            fail "$DIR/rabbitmq-console.log" "$DIR/rabbitmq.log" "rabbitmqctl await_startup failed"
    )
}

rabbitmq_start() { rabbitmq_launch && rabbitmq_wait; }

rabbitmq_stop() {
    (
        rabbitmq_shell_env
        local wrapper i
        wrapper=$(cat "$DIR/rabbitmq/wrapper.pid" 2>/dev/null || true)
        # The node writes its own (beam) pid; SIGTERM makes it shut down cleanly.
        stop_pid "$DIR/rabbitmq/rabbitmq.pid" beam.smp
        # A node still booting may not have written it yet: the wrapper shell
        # passes SIGTERM on to it and exits once it is gone.
        if pid_alive "$wrapper" rabbitmq-server && ! wait_pid_gone "$wrapper" rabbitmq-server 2; then
            kill -TERM "$wrapper" 2>/dev/null || true
            wait_pid_gone "$wrapper" rabbitmq-server || log "rabbitmq wrapper (pid $wrapper) still running"
            stop_pid "$DIR/rabbitmq/rabbitmq.pid" beam.smp
        fi
        wait_port_closed "$AMQP_PORT"
        # Our epmd daemonized and would outlive the broker forever. It refuses
        # to die while a node is still registered, hence the retries.
        for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
            port_open "$EPMD_PORT" || exit 0
            epmd -port "$EPMD_PORT" -kill >/dev/null 2>&1 || true
            sleep 0.2
        done
        die "epmd on port $EPMD_PORT would not stop"
    )
}

# ---------------------------------------------------------------- PostgreSQL

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}

postgresql_init() {
    [ -f "$DIR/pg/PG_VERSION" ] && return 0
    [ -x "$PG_BIN/initdb" ] || die "initdb not found (PG_BIN=$PG_BIN)"
    mkdir -p "$DIR/pg" "$DIR/pgsock"
    touch "$DIR/postgresql.log"
    chown "$PG_USER" "$DIR/pg" "$DIR/pgsock" "$DIR/postgresql.log"
    chmod 700 "$DIR/pg"
    # Superuser "postgres" without password, reachable only on the private
    # unix socket; TCP needs a password.
    as_user "$PG_USER" "$PG_BIN/initdb" -D "$DIR/pg" -U postgres -E UTF8 --no-locale --no-sync \
        --auth-local=trust --auth-host=scram-sha-256 >>"$DIR/postgresql.log" 2>&1 ||
        fail "$DIR/postgresql.log" "initdb failed"
    # Settings go into the config file (not pg_ctl -o) so any pg_ctl restart
    # gets the same port and socket.
    cat >>"$DIR/pg/postgresql.conf" <<EOF

# barbican-retry functional tests: throwaway, speed over durability
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR/pgsock'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
}

# Role and database, once, right after the first start.
postgresql_setup() {
    [ -f "$DIR/.postgresql-setup-done" ] && return 0
    # CREATEDB: the tests create databases of their own.
    psql -X -q -v ON_ERROR_STOP=1 -h "$DIR/pgsock" -p "$PG_PORT" -U postgres -d postgres \
        -c "CREATE ROLE barbican LOGIN CREATEDB PASSWORD 'barbican'" \
        -c "CREATE DATABASE barbican_retry OWNER barbican" >>"$DIR/postgresql.log" 2>&1 ||
        fail "$DIR/postgresql.log" "creating the barbican role/database failed"
    touch "$DIR/.postgresql-setup-done"
}

postgresql_start() {
    if port_open "$PG_PORT"; then
        log "postgresql: port $PG_PORT already open"
        return 0
    fi
    # pg_ctl -w returns once the server accepts connections.
    as_user "$PG_USER" "$PG_BIN/pg_ctl" -D "$DIR/pg" -l "$DIR/postgresql.log" -w -t "$READY_TIMEOUT" start >/dev/null ||
        fail "$DIR/postgresql.log" "postgresql did not start"
}

postgresql_stop() {
    local pid
    pid=$(head -n1 "$DIR/pg/postmaster.pid" 2>/dev/null || true)
    if pid_alive "$pid" postgres; then
        # -m fast: disconnect clients instead of waiting for them.
        as_user "$PG_USER" "$PG_BIN/pg_ctl" -D "$DIR/pg" -m fast -w -t "$STOP_TIMEOUT" stop >/dev/null 2>&1 || true
        # pg_ctl returns when the pid file is gone, a moment before the
        # postmaster exits; SIGINT is the same fast shutdown, if pg_ctl failed.
        wait_pid_gone "$pid" postgres 5 || stop_pid "$DIR/pg/postmaster.pid" postgres INT
    fi
    wait_port_closed "$PG_PORT"
}

# ---------------------------------------------------------------- MariaDB

mysql_admin() { mariadb-admin --no-defaults -uroot --socket="$DIR/mysqlsock/mysqld.sock" "$@"; }

mysql_init() {
    [ -d "$DIR/mysql/mysql" ] && return 0
    mkdir -p "$DIR/mysql" "$DIR/mysqlsock" "$DIR/mysqltmp"
    touch "$DIR/mysql.log"
    chown "$MYSQL_USER" "$DIR/mysql" "$DIR/mysqlsock" "$DIR/mysqltmp" "$DIR/mysql.log"
    local user_opt=()
    [ "$(id -u)" = 0 ] && user_opt=(--user="$MYSQL_USER")
    # root@localhost without password (normal auth, not unix_socket) so the
    # socket works whoever we are; it is reachable on the private socket only
    # (TCP logins go through 'barbican'@'127.0.0.1'). Temporary tables in
    # DIR, not the /tmp that other servers share: an install beside
    # another server's once failed on a temporary table gone from /tmp.
    mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$DIR/mysql" \
        --tmpdir="$DIR/mysqltmp" \
        --auth-root-authentication-method=normal --skip-test-db >>"$DIR/mysql.log" 2>&1 ||
        fail "$DIR/mysql.log" "mariadb-install-db failed"
}

# Users and database, once, right after the first start.
mysql_setup() {
    [ -f "$DIR/.mysql-setup-done" ] && return 0
    # ALL on *.*: the tests create and drop their own databases.
    local sql="
        CREATE USER 'barbican'@'127.0.0.1' IDENTIFIED BY 'barbican';
        CREATE USER 'barbican'@'localhost' IDENTIFIED BY 'barbican';
        GRANT ALL PRIVILEGES ON *.* TO 'barbican'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON *.* TO 'barbican'@'localhost';
        CREATE DATABASE barbican_retry CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;"
    mariadb --no-defaults -uroot --socket="$DIR/mysqlsock/mysqld.sock" -e "$sql" >>"$DIR/mysql.log" 2>&1 ||
        fail "$DIR/mysql.log" "creating the barbican user/database failed"
    touch "$DIR/.mysql-setup-done"
}

mysql_start() {
    if port_open "$MYSQL_PORT"; then
        log "mysql: port $MYSQL_PORT already open"
        return 0
    fi
    local user_opt=()
    # mariadbd refuses root unless told which user to switch to.
    [ "$(id -u)" = 0 ] && user_opt=(--user="$MYSQL_USER")
    # A DIR made before mysql_init made it.
    mkdir -p "$DIR/mysqltmp" && chown "$MYSQL_USER" "$DIR/mysqltmp"
    # --no-defaults: ignore /etc/mysql entirely. Durability settings off.
    setsid mariadbd --no-defaults "${user_opt[@]}" \
        --datadir="$DIR/mysql" --socket="$DIR/mysqlsock/mysqld.sock" \
        --pid-file="$DIR/mysqlsock/mysqld.pid" --log-error="$DIR/mysql.log" \
        --tmpdir="$DIR/mysqltmp" --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
        --max-connections=300 --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
        >>"$DIR/mysql.log" 2>&1 </dev/null &
    local pid=$! deadline=$((SECONDS + READY_TIMEOUT))
    until mysql_admin --connect-timeout=2 ping >/dev/null 2>&1 && port_open "$MYSQL_PORT"; do
        kill -0 "$pid" 2>/dev/null || fail "$DIR/mysql.log" "mariadbd exited during startup"
        [ $SECONDS -lt $deadline ] || fail "$DIR/mysql.log" "mariadbd not ready after ${READY_TIMEOUT}s"
        sleep 0.3
    done
}

mysql_stop() {
    # SIGTERM is mariadbd's clean shutdown.
    stop_pid "$DIR/mysqlsock/mysqld.pid" mariadbd
    wait_port_closed "$MYSQL_PORT"
}

# ---------------------------------------------------------------- Keystone

# A real Keystone (the API's tokens, the listener's notifications), from
# PyPI into a virtualenv of its own: its pins never reach the project's.
# It keeps its rows in a `keystone` database of the MariaDB above, its
# fernet and credential keys under DIR/keystone, and sends its
# notifications (messagingv2, basic format) to the broker above; gunicorn
# serves it on 127.0.0.1. BARBICAN_RETRY_TEST_NO_KEYSTONE=1 leaves it out.
REPO=$(dirname "$(dirname "$(dirname "$SELF")")")
KEYSTONE_REQUIREMENTS=$REPO/tests/functional/keystone-requirements.txt
KEYSTONE_VENV=${BARBICAN_RETRY_KEYSTONE_VENV:-$REPO/.venv/keystone}
# Throwaway, like the databases' passwords: reachable on loopback only.
KEYSTONE_ADMIN_PASSWORD=keystone-admin
# Two workers: one token validation never waits for a slow project delete.
KEYSTONE_WORKERS=2

keystone_enabled() { [ "${BARBICAN_RETRY_TEST_NO_KEYSTONE:-0}" != 1 ]; }

# keystone_install: (re)create KEYSTONE_VENV unless its stamp holds the
# digest of the requirements. A lock lets a start wait for an install that
# bin/run-tests.sh began in the background; a changed pin starts from an
# empty virtualenv, so nothing of the old release stays behind.
keystone_install() {
    local stamp=$KEYSTONE_VENV/.keystone.stamp digest
    digest=$(sha256sum <"$KEYSTONE_REQUIREMENTS" | cut -d' ' -f1)
    # Installed: no lock needed (nor write access, for another user).
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
        return 0
    fi
    mkdir -p "$(dirname "$KEYSTONE_VENV")"
    (
        flock 9
        if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
            exit 0
        fi
        log "installing keystone into $KEYSTONE_VENV (first run, or $KEYSTONE_REQUIREMENTS changed)"
        local t0=$SECONDS install_log=$KEYSTONE_VENV.install.log
        rm -rf "$KEYSTONE_VENV"
        python3 -m venv "$KEYSTONE_VENV"
        # pip's output in a log of its own, shown if it fails: it would
        # interleave with the linters' while bin/run-tests.sh runs them.
        PIP_DISABLE_PIP_VERSION_CHECK=1 "$KEYSTONE_VENV/bin/python" -m pip install -q \
            -r "$KEYSTONE_REQUIREMENTS" >"$install_log" 2>&1 ||
            fail "$install_log" "installing keystone failed"
        printf '%s\n' "$digest" >"$stamp"
        log "keystone installed in $((SECONDS - t0))s"
    ) 9>"$KEYSTONE_VENV.lock"
}

keystone_manage() {
    "$KEYSTONE_VENV/bin/keystone-manage" --config-file "$DIR/keystone/keystone.conf" "$@" \
        >>"$DIR/keystone-manage.log" 2>&1 || fail "$DIR/keystone-manage.log" "keystone-manage $1 failed"
}

keystone_config() {
    local k=$DIR/keystone
    cat <<EOF
# barbican-retry functional tests: a throwaway Keystone.
[DEFAULT]
log_file = $DIR/keystone.log
# basic: identity.project.deleted carries {"resource_info": PROJECT_ID}.
notification_format = basic

[database]
connection = mysql+pymysql://barbican:barbican@127.0.0.1:$MYSQL_PORT/keystone?charset=utf8mb4

[identity]
# bcrypt's least work: the tests make users and tokens, nobody attacks them.
password_hash_rounds = 4

[token]
provider = fernet

[fernet_tokens]
key_repository = $k/fernet-keys

[fernet_receipts]
key_repository = $k/fernet-keys

[credential]
key_repository = $k/credential-keys

[oslo_messaging_notifications]
driver = messagingv2
transport_url = rabbit://guest:guest@127.0.0.1:$AMQP_PORT/
topics = notifications

[cache]
enabled = false
EOF
}

# The config and the fernet and credential keys, once per DIR: files only,
# made while the databases start (each keystone-manage is seconds of
# imports).
keystone_keys() {
    [ -f "$DIR/.keystone-keys-done" ] && return 0
    local owner=(--keystone-user "$(id -un)" --keystone-group "$(id -gn)") fernet
    keystone_manage fernet_setup "${owner[@]}" &
    fernet=$!
    keystone_manage credential_setup "${owner[@]}"
    wait "$fernet" || die "keystone-manage fernet_setup failed"
    touch "$DIR/.keystone-keys-done"
}

# Its database, schema and bootstrap (the admin, its project, the roles,
# the region and the identity endpoint), once per DIR, once MariaDB is up
# (before the broker: keystone-manage sends no notification).
keystone_database() {
    [ -f "$DIR/.keystone-setup-done" ] && return 0
    local url=http://127.0.0.1:$KEYSTONE_PORT/v3
    mariadb --no-defaults -uroot --socket="$DIR/mysqlsock/mysqld.sock" \
        -e "CREATE DATABASE IF NOT EXISTS keystone CHARACTER SET utf8mb4" >>"$DIR/mysql.log" 2>&1 ||
        fail "$DIR/mysql.log" "creating the keystone database failed"
    keystone_manage db_sync
    keystone_manage bootstrap --bootstrap-password "$KEYSTONE_ADMIN_PASSWORD" \
        --bootstrap-username admin --bootstrap-project-name admin \
        --bootstrap-role-name admin --bootstrap-region-id RegionOne \
        --bootstrap-admin-url "$url" --bootstrap-internal-url "$url" --bootstrap-public-url "$url"
    touch "$DIR/.keystone-setup-done"
}

keystone_launch() {
    if port_open "$KEYSTONE_PORT"; then
        log "keystone: port $KEYSTONE_PORT already open"
        return 0
    fi
    # gunicorn's settings go in the config file it reads from its working
    # directory, not on its command line: keystone parses sys.argv as its
    # own options and refuses gunicorn's.
    cat >"$DIR/keystone/gunicorn.conf.py" <<EOF
wsgi_app = 'keystone.wsgi.api:application'
bind = '127.0.0.1:$KEYSTONE_PORT'
workers = $KEYSTONE_WORKERS
pidfile = '$DIR/keystone/gunicorn.pid'
errorlog = '$DIR/keystone-gunicorn.log'
timeout = 120
EOF
    # setsid, as the other servers: a killed process group of the test
    # runner leaves it running.
    (
        cd "$DIR/keystone"
        OS_KEYSTONE_CONFIG_DIR=$DIR/keystone setsid "$KEYSTONE_VENV/bin/gunicorn" \
            >>"$DIR/keystone-gunicorn.log" 2>&1 </dev/null &
        echo $! >"$DIR/keystone/launcher.pid"
    )
}

# Ready once /v3 answers 200 (the workers have imported keystone).
keystone_wait() {
    local launcher deadline=$((SECONDS + READY_TIMEOUT))
    launcher=$(cat "$DIR/keystone/launcher.pid" 2>/dev/null || true)
    until python3 -c 'import sys, urllib.request
sys.exit(urllib.request.urlopen(sys.argv[1], timeout=5).status != 200)' \
        "http://127.0.0.1:$KEYSTONE_PORT/v3" 2>/dev/null; do
        if [ -n "$launcher" ] && ! kill -0 "$launcher" 2>/dev/null; then
            fail "$DIR/keystone-gunicorn.log" "$DIR/keystone.log" "keystone exited during startup"
        fi
        [ $SECONDS -lt $deadline ] ||
            fail "$DIR/keystone-gunicorn.log" "$DIR/keystone.log" "keystone not answering on $KEYSTONE_PORT after ${READY_TIMEOUT}s"
        sleep 0.3
    done
}

keystone_start() { keystone_launch && keystone_wait; }

keystone_stop() {
    [ -n "${KEYSTONE_PORT:-}" ] || return 0
    # SIGTERM: gunicorn's graceful shutdown of its workers.
    stop_pid "$DIR/keystone/gunicorn.pid" gunicorn
    wait_port_closed "$KEYSTONE_PORT"
}

# ---------------------------------------------------------------- start / stop

write_helpers() {
    local svc action
    for svc in rabbitmq postgresql mysql keystone; do
        for action in start stop; do
            printf '#!/bin/sh\n# %s the %s instance of %s (same data, same port).\nexec %q %s %q\n' \
                "$action" "$svc" "$DIR" "$SELF" "$svc-$action" "$DIR" >"$DIR/$svc-$action.sh"
            chmod 755 "$DIR/$svc-$action.sh"
        done
    done
}

write_env() {
    local tmp=$DIR/env.tmp
    {
        echo "# Generated by $SELF; source it."
        echo "export BARBICAN_RETRY_TEST_SERVICES_DIR=$DIR"
        echo "export BARBICAN_RETRY_TEST_TRANSPORT_URL=rabbit://guest:guest@127.0.0.1:$AMQP_PORT/"
        echo "export BARBICAN_RETRY_TEST_POSTGRESQL_URL=postgresql+psycopg2://barbican:barbican@127.0.0.1:$PG_PORT/barbican_retry"
        echo "export BARBICAN_RETRY_TEST_MYSQL_URL='mysql+pymysql://barbican:barbican@127.0.0.1:$MYSQL_PORT/barbican_retry?charset=utf8mb4'"
        echo "export BARBICAN_RETRY_TEST_RABBITMQ_PORT=$AMQP_PORT"
        if [ -n "${AMQPS_PORT:-}" ]; then
            # The broker's TLS-only listener and the CA of its certificate.
            echo "export BARBICAN_RETRY_TEST_TLS_TRANSPORT_URL=rabbit://guest:guest@127.0.0.1:$AMQPS_PORT/"
            echo "export BARBICAN_RETRY_TEST_TLS_CA_FILE=$DIR/rabbitmq/tls/ca.pem"
        fi
        echo "export BARBICAN_RETRY_TEST_POSTGRESQL_PORT=$PG_PORT"
        echo "export BARBICAN_RETRY_TEST_MYSQL_PORT=$MYSQL_PORT"
        # Pid files (first line is the server's pid) for kill -9 style tests.
        echo "export BARBICAN_RETRY_TEST_RABBITMQ_PID_FILE=$DIR/rabbitmq/rabbitmq.pid"
        echo "export BARBICAN_RETRY_TEST_POSTGRESQL_PID_FILE=$DIR/pg/postmaster.pid"
        echo "export BARBICAN_RETRY_TEST_MYSQL_PID_FILE=$DIR/mysqlsock/mysqld.pid"
        local svc action name
        for svc in rabbitmq postgresql mysql; do
            for action in start stop; do
                name=BARBICAN_RETRY_TEST_${svc^^}_${action^^}
                echo "export $name=$DIR/$svc-$action.sh"
            done
        done
        if keystone_enabled; then
            # Keystone: its v3 URL, the admin of its bootstrap, the config
            # file (its fernet keys, its notifications' transport and topic).
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_URL=http://127.0.0.1:$KEYSTONE_PORT/v3"
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_ADMIN_USERNAME=admin"
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_ADMIN_PASSWORD=$KEYSTONE_ADMIN_PASSWORD"
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_ADMIN_PROJECT=admin"
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_CONFIG=$DIR/keystone/keystone.conf"
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_NOTIFICATIONS_TOPIC=notifications"
            echo "export BARBICAN_RETRY_TEST_KEYSTONE_PID_FILE=$DIR/keystone/gunicorn.pid"
            for action in start stop; do
                echo "export BARBICAN_RETRY_TEST_KEYSTONE_${action^^}=$DIR/keystone-$action.sh"
            done
        fi
        echo "# rabbitmqctl against this broker also needs HOME=$DIR/rabbitmq (Erlang cookie)."
        rabbitmq_env
    } >"$tmp"
    mv "$tmp" "$DIR/env"
}

start_all() {
    [ $# -eq 1 ] || die "usage: services.sh start DIR"
    install_packages
    mkdir -p "$1"
    DIR=$(readlink -f "$1")
    # The servers run as other users (postgres, mysql) who must reach DIR.
    chmod 755 "$DIR"
    [ -f "$DIR/services.conf" ] || write_conf
    load_conf "$DIR"
    write_helpers
    if [ "$(id -u)" = 0 ]; then
        local user
        for user in "$PG_USER" "$MYSQL_USER"; do
            runuser -u "$user" -- test -x "$DIR" || die "$user cannot reach $DIR (a parent dir is private? chmod o+x it)"
        done
    fi

    # Stop whatever we started if anything below fails.
    trap 'rc=$?; if [ $rc -ne 0 ]; then log "start failed, stopping what was started"; stop_all "$DIR" || true; fi' EXIT

    local t0=$SECONDS install_pid=
    # Keystone's virtualenv (a no-op once installed) while the servers boot.
    if keystone_enabled; then
        keystone_install &
        install_pid=$!
    fi
    # The broker boots slowest: launch it first, set up the databases while
    # it boots; Keystone's keys and database (MariaDB's) while PostgreSQL
    # starts; then wait for the broker and Keystone.
    rabbitmq_init
    rabbitmq_launch
    mysql_init
    mysql_start
    mysql_setup
    local keystone_note= keys_pid= database_pid= k0=$SECONDS
    if keystone_enabled; then
        wait "$install_pid" || die "installing keystone failed"
        k0=$SECONDS
        mkdir -p "$DIR/keystone"
        keystone_config >"$DIR/keystone/keystone.conf"
        keystone_keys &
        keys_pid=$!
        keystone_database &
        database_pid=$!
    fi
    postgresql_init
    postgresql_start
    postgresql_setup
    if keystone_enabled; then
        wait "$keys_pid" || die "keystone's keys failed"
        wait "$database_pid" || die "keystone's database failed"
        keystone_launch
        keystone_note=", keystone :$KEYSTONE_PORT"
    fi
    rabbitmq_wait
    if keystone_enabled; then
        keystone_wait
        keystone_note="$keystone_note (set up and started in $((SECONDS - k0))s)"
    fi
    write_env
    log "started in $((SECONDS - t0))s: rabbitmq :$AMQP_PORT, postgresql :$PG_PORT, mysql :$MYSQL_PORT$keystone_note (env: $DIR/env)"
}

stop_all() {
    [ $# -eq 1 ] || die "usage: services.sh stop DIR"
    if [ ! -f "$1/services.conf" ]; then
        log "nothing to stop in $1"
        return 0
    fi
    load_conf "$1"
    # All three at once, each in its own subshell: quicker, and one failing
    # does not leave the others running.
    local pids=() pid rc=0
    rabbitmq_stop &
    pids+=($!)
    postgresql_stop &
    pids+=($!)
    mysql_stop &
    pids+=($!)
    keystone_stop &
    pids+=($!)
    for pid in "${pids[@]}"; do
        wait "$pid" || rc=1
    done
    return $rc
}

# Only when executed, not when sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cmd=${1:-}
    [ $# -gt 0 ] && shift
    case $cmd in
    install) install_packages ;;
    keystone-install) keystone_install ;;
    start) start_all "$@" ;;
    stop) stop_all "$@" ;;
    rabbitmq-start | rabbitmq-stop | postgresql-start | postgresql-stop | mysql-start | mysql-stop | \
        keystone-start | keystone-stop)
        [ $# -eq 1 ] || die "usage: services.sh $cmd DIR"
        load_conf "$1"
        "${cmd//-/_}"
        ;;
    *) die "usage: services.sh install | keystone-install | start DIR | stop DIR" ;;
    esac
fi
