#!/bin/bash
# Throwaway 3-node MariaDB Galera and 3-node RabbitMQ clusters on this one
# machine (everything on 127.0.0.1, or with --network in network namespaces
# of their own), for the functional tests of failover.
#
#   cluster.sh start DIR                          start both clusters, state under DIR
#   cluster.sh stop DIR                           stop every node (DIR is kept)
#   cluster.sh node-stop DIR galera|rabbitmq N    clean stop (SIGTERM) of node N (1-3)
#   cluster.sh node-kill DIR galera|rabbitmq N    SIGKILL of node N's server
#   cluster.sh node-start DIR galera|rabbitmq N   start node N again, back in its cluster
#   cluster.sh status DIR                         one line per node (and HAProxy's view)
#
#   cluster.sh start DIR --network                the same, each node (and each
#       host of the project's processes) in a network namespace of its own:
#   cluster.sh partition DIR A B [both|oneway]    drop the packets from A to B
#                                                 (and B to A); A, B: galeraN,
#                                                 rabbitmqN, hostN, galera,
#                                                 rabbitmq, hosts, comma lists
#   cluster.sh heal DIR [A]                       remove the partitions (of A)
#   cluster.sh slow DIR A B DELAY_MS LOSS_PERCENT delay and loss between A and B
#   cluster.sh restore DIR [A]                    remove the delays and losses
#   cluster.sh settle DIR                         wait until both clusters are whole
#   (netns.sh describes the layout; they need root, else exit 77: skipped)
#
# `start` writes DIR/env (export lines for the test runner, see write_env).
# DIR/cluster.conf keeps the ports and names chosen at the first start, so a
# later `start` or `node-start` of the same DIR brings back the same nodes
# (same data, same ports). The node-* commands wait until the node is gone,
# or until it is back in its cluster (a Galera node Synced, a broker running
# in the cluster). Run one command at a time per DIR.
#
# HAProxy (Debian's) listens on a port of its own in front of the Galera
# nodes: node 1 the writer, 2 and 3 backups (see the HAProxy section).
#
# Galera: node 1 bootstraps the cluster (--wsrep-new-cluster) at the first
# start, nodes 2 and 3 join it with a full state transfer (SST, rsync). A
# node started again while others run rejoins with IST (or SST); a node is
# bootstrapped only when no other node of DIR is alive.
#
# RabbitMQ: three nodes brcN-PID@localhost sharing one epmd (its own port)
# and one Erlang cookie; nodes 2 and 3 join node 1 at the first start
# (stop_app, join_cluster, start_app).
#
# The generic helpers (pick_ports, stop_pid, fail, ...) come from
# services.sh, sourced below; its conventions hold here too: the servers
# run as the invoking user, or as `mysql` for mariadbd when we are root;
# ports random in 20000-32767; setsid; pid files.
set -euo pipefail

CLUSTER_SELF=$(readlink -f "${BASH_SOURCE[0]}")
# shellcheck source=tests/functional/services.sh
. "$(dirname "$CLUSTER_SELF")/services.sh"
# shellcheck source=tests/functional/netns.sh
. "$(dirname "$CLUSTER_SELF")/netns.sh"

# After services.sh, whose die/log (used by its helpers) they replace.
die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }

NODES=(1 2 3)
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so
SYNC_TIMEOUT=180   # seconds for a node to be back in its cluster (an SST included)

# ---------------------------------------------------------------- per-DIR config

# DIR/cluster.conf: arrays indexed by node number (1-3), plus the shared bits.
load_cluster_conf() {
    DIR=$(readlink -f "$1")
    [ -f "$DIR/cluster.conf" ] || die "$DIR/cluster.conf missing: run 'cluster.sh start $DIR' first"
    # shellcheck source=/dev/null
    . "$DIR/cluster.conf"
}

write_cluster_conf() {
    local p mysql_user
    # 4 per Galera node (SQL, group communication, IST, SST), 2 per broker
    # (AMQP, Erlang distribution), 1 epmd.
    read -r -a p <<<"$(pick_ports 19)"
    if [ "$(id -u)" = 0 ]; then mysql_user=mysql; else mysql_user=$(id -un); fi
    cat >"$DIR/cluster.conf" <<EOF
GALERA_PORT=([1]=${p[0]} [2]=${p[1]} [3]=${p[2]})
GALERA_GCOMM_PORT=([1]=${p[3]} [2]=${p[4]} [3]=${p[5]})
GALERA_IST_PORT=([1]=${p[6]} [2]=${p[7]} [3]=${p[8]})
GALERA_SST_PORT=([1]=${p[9]} [2]=${p[10]} [3]=${p[11]})
AMQP_PORT=([1]=${p[12]} [2]=${p[13]} [3]=${p[14]})
DIST_PORT=([1]=${p[15]} [2]=${p[16]} [3]=${p[17]})
EPMD_PORT=${p[18]}
RABBIT_NODENAME=([1]=brc1-$$@localhost [2]=brc2-$$@localhost [3]=brc3-$$@localhost)
GALERA_CLUSTER_NAME=barbican-retry-$$
MYSQL_USER=$mysql_user
EOF
}

# wait_exec PID NAME: until the child just forked has exec'd NAME (for a
# moment its command is still ours, then setsid's), so that pid_alive PID
# NAME finds it; returns at once if it exited.
wait_exec() {
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.05
    done
}

check_node() {
    case $1 in galera | rabbitmq) ;; *) die "unknown kind '$1' (galera or rabbitmq)" ;; esac
    case $2 in 1 | 2 | 3) ;; *) die "unknown node '$2' (1, 2 or 3)" ;; esac
}

# ---------------------------------------------------------------- Galera

# Node N: DIR/galeraN/{data,run} (owned by the server's user), log DIR/galeraN.log.
galera_sock() { echo "$DIR/galera$1/run/mysqld.sock"; }
galera_log() { echo "$DIR/galera$1.log"; }
# Written by us at launch (mariadbd's own pid file appears only once an SST
# is done): the first line is mariadbd's pid from its first instant.
galera_pid_file() { echo "$DIR/galera$1/mariadbd.pid"; }

galera_alive() { pid_alive "$(head -n1 "$(galera_pid_file "$1")" 2>/dev/null || true)" mariadbd; }

galera_sql() {
    local n=$1; shift
    mariadb --no-defaults -uroot --socket="$(galera_sock "$n")" --connect-timeout=2 -N -B "$@"
}

# galera_state N: prints "STATE SIZE STATUS" (e.g. "Synced 3 Primary"), or
# fails when the node does not answer.
galera_state() {
    local out
    out=$(galera_sql "$1" -e "SHOW GLOBAL STATUS WHERE Variable_name IN
        ('wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status')" 2>/dev/null) || return 1
    awk '{ v[$1] = $2 } END { if (!("wsrep_cluster_size" in v)) exit 1;
        print v["wsrep_local_state_comment"], v["wsrep_cluster_size"], v["wsrep_cluster_status"] }' <<<"$out"
}

galera_init() {
    local n=$1 d=$DIR/galera$1
    [ -d "$d/data" ] && return 0
    mkdir -p "$d/data" "$d/run"
    touch "$(galera_log "$n")"
    chown "$MYSQL_USER" "$d/data" "$d/run" "$(galera_log "$n")"
    # Only node 1 gets a system database, the others receive theirs with
    # the SST; root@localhost without password, as in services.sh.
    [ "$n" = 1 ] || return 0
    local user_opt=()
    [ "$(id -u)" = 0 ] && user_opt=(--user="$MYSQL_USER")
    mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$d/data" \
        --auth-root-authentication-method=normal --skip-test-db >>"$(galera_log "$n")" 2>&1 ||
        fail "$(galera_log "$n")" "mariadb-install-db failed for galera node $n"
}

# galera_options N: mariadbd's command line (one argument per line).
galera_options() {
    local n=$1 d=$DIR/galera$1 i members=()
    local ip
    ip=$(net_ip galera "$n")
    for i in "${NODES[@]}"; do members+=("$(net_ip galera "$i"):${GALERA_GCOMM_PORT[i]}"); done
    # mariadbd refuses root unless told which user to switch to.
    [ "$(id -u)" = 0 ] && echo "--user=$MYSQL_USER"
    # --no-defaults: ignore /etc/mysql entirely. Durability off as in
    # services.sh (the cluster is the durability: a write is on every node).
    cat <<EOF
--datadir=$d/data
--socket=$d/run/mysqld.sock
--pid-file=$d/run/mysqld.pid
--log-error=$(galera_log "$n")
--port=${GALERA_PORT[n]}
--bind-address=$ip
--skip-name-resolve
--max-connections=300
--innodb-flush-log-at-trx-commit=0
--innodb-doublewrite=0
--innodb-buffer-pool-size=64M
--innodb-log-file-size=32M
--character-set-server=utf8mb4
--collation-server=utf8mb4_unicode_ci
--binlog-format=ROW
--innodb-autoinc-lock-mode=2
--default-storage-engine=InnoDB
--wsrep-on=ON
--wsrep-provider=$GALERA_PROVIDER
--wsrep-cluster-name=$GALERA_CLUSTER_NAME
--wsrep-cluster-address=gcomm://$(IFS=,; echo "${members[*]}")
--wsrep-node-name=galera$n
--wsrep-node-address=$ip:${GALERA_GCOMM_PORT[n]}
--wsrep-node-incoming-address=$ip:${GALERA_PORT[n]}
--wsrep-sst-method=rsync
--wsrep-sst-receive-address=$ip:${GALERA_SST_PORT[n]}
--wsrep-provider-options=base_host=$ip;base_port=${GALERA_GCOMM_PORT[n]};gmcast.listen_addr=tcp://$ip:${GALERA_GCOMM_PORT[n]};ist.recv_addr=$ip:${GALERA_IST_PORT[n]};gcache.size=32M
EOF
}

# galera_position N: sets GALERA_POSITION[N] to "UUID:SEQNO", the last
# transaction node N (down) committed, empty when it has no data yet: from
# grastate.dat after a clean stop; after a crash (seqno -1 there) recovered
# from InnoDB with --wsrep-recover, as the Debian packages' galera_recovery
# does. Done once per run of this script (not in a $(...) subshell, which
# would lose it).
declare -A GALERA_POSITION=()
galera_position() {
    local n=$1 d=$DIR/galera$1 uuid seqno opts
    [ -n "${GALERA_POSITION[$n]+set}" ] && return 0
    uuid=$(sed -n 's/^uuid:[[:space:]]*//p' "$d/data/grastate.dat" 2>/dev/null || true)
    seqno=$(sed -n 's/^seqno:[[:space:]]*//p' "$d/data/grastate.dat" 2>/dev/null || true)
    GALERA_POSITION[$n]=
    if [ -n "$seqno" ] && [ "$seqno" != -1 ]; then
        GALERA_POSITION[$n]=$uuid:$seqno
    elif [ -d "$d/data/mysql" ]; then
        mapfile -t opts < <(galera_options "$n")
        mariadbd --no-defaults "${opts[@]}" --wsrep-recover >/dev/null 2>&1 </dev/null || true
        GALERA_POSITION[$n]=$(sed -n 's/.*WSREP: Recovered position: *\([-0-9a-f]*:-\{0,1\}[0-9][0-9]*\).*/\1/p' \
            "$(galera_log "$n")" | tail -n1)
    fi
}

# Launch node N in the background, bootstrapping a new cluster (a primary
# component of its own) when asked.
galera_launch() {
    local n=$1 bootstrap=${2:-} opts
    # Called for a node that is down: whoever listens there is not it.
    port_open "${GALERA_PORT[n]}" "$(net_ip galera "$n")" && die "galera node $n: port ${GALERA_PORT[n]} is taken by another program"
    mapfile -t opts < <(galera_options "$n")
    # After a crash grastate.dat has no position: without one the node would
    # need a full SST, with it an IST of what it missed is enough.
    if grep -q '^seqno:[[:space:]]*-1' "$DIR/galera$n/data/grastate.dat" 2>/dev/null; then
        galera_position "$n"
        [ -n "${GALERA_POSITION[$n]}" ] && opts+=(--wsrep-start-position="${GALERA_POSITION[$n]}")
    fi
    if [ "$bootstrap" = bootstrap ]; then
        # The cluster is to start from this node's data: tell Galera so, it
        # refuses otherwise after an unclean end of the cluster.
        [ -f "$DIR/galera$n/data/grastate.dat" ] &&
            as_user "$MYSQL_USER" sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$DIR/galera$n/data/grastate.dat"
        opts+=(--wsrep-new-cluster)
    fi
    # setsid: its own session, so Ctrl-C or a killed process group in the
    # test runner does not take the server down with it.
    setsid $(node_prefix galera "$n") mariadbd --no-defaults "${opts[@]}" >>"$(galera_log "$n")" 2>&1 </dev/null &
    echo $! >"$(galera_pid_file "$n")"
    wait_exec $! mariadbd
}

# galera_wait N SIZE: until node N is Synced in a primary component of SIZE nodes.
galera_wait() {
    local n=$1 size=$2 state=() deadline=$((SECONDS + SYNC_TIMEOUT))
    while :; do
        galera_alive "$n" || fail "$(galera_log "$n")" "galera node $n exited during startup"
        read -r -a state <<<"$(galera_state "$n" || true)"
        [ "${state[*]:-}" = "Synced $size Primary" ] && return 0
        [ $SECONDS -lt $deadline ] ||
            fail "$(galera_log "$n")" "galera node $n not Synced in a cluster of $size after ${SYNC_TIMEOUT}s (now: ${state[*]:-no answer})"
        sleep 0.3
    done
}

# Start node N (if down) and wait until it is Synced with every live node.
galera_node_start() {
    local n=$1 i others=() primary=0 st
    galera_init "$n"
    for i in "${NODES[@]}"; do
        [ "$i" != "$n" ] && galera_alive "$i" && others+=("$i")
    done
    if galera_alive "$n"; then
        :
    elif [ ${#others[@]} -eq 0 ]; then
        log "galera node $n: no other node alive, bootstrapping the cluster from it"
        galera_launch "$n" bootstrap
    else
        # The live nodes lost their quorum (e.g. two of three were killed):
        # make the first one a primary component again, or the join hangs.
        for i in "${others[@]}"; do
            st=$(galera_state "$i" || true)
            [ "${st##* }" = Primary ] && primary=1
        done
        if [ $primary = 0 ]; then
            log "galera: no primary component, bootstrapping it on node ${others[0]}"
            galera_sql "${others[0]}" -e "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'" ||
                fail "$(galera_log "${others[0]}")" "pc.bootstrap on galera node ${others[0]} failed"
            galera_wait "${others[0]}" ${#others[@]}
        fi
        galera_launch "$n"
    fi
    galera_wait "$n" $((${#others[@]} + 1))
}

# Users and database, once, right after the first node is up (the other
# nodes get them with their SST or by replication).
galera_setup() {
    [ -f "$DIR/.galera-setup-done" ] && return 0
    local n=$1
    # ALL on *.*: the tests create and drop their own databases.
    galera_sql "$n" -e "
        CREATE USER IF NOT EXISTS 'barbican'@'127.0.0.1' IDENTIFIED BY 'barbican';
        CREATE USER IF NOT EXISTS 'barbican'@'localhost' IDENTIFIED BY 'barbican';
        GRANT ALL PRIVILEGES ON *.* TO 'barbican'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON *.* TO 'barbican'@'localhost';
        $(net_grants)
        CREATE DATABASE IF NOT EXISTS barbican_retry CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;" \
        >>"$(galera_log "$n")" 2>&1 ||
        fail "$(galera_log "$n")" "creating the barbican user/database failed"
    touch "$DIR/.galera-setup-done"
}

# galera_node_stop N [SIGNAL]: TERM is mariadbd's clean shutdown (the node
# leaves the cluster), KILL a crash.
galera_node_stop() {
    local n=$1 sig=${2:-TERM} pid
    pid=$(head -n1 "$(galera_pid_file "$n")" 2>/dev/null || true)
    # The rsync daemon of an SST that the node was receiving goes too.
    if ! pid_alive "$pid" mariadbd; then
        stop_pid "$DIR/galera$n/data/rsync_sst.pid" rsync
        return 0
    fi
    if [ "$sig" = KILL ]; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_pid_gone "$pid" mariadbd || die "galera node $n (pid $pid) still alive after SIGKILL"
    else
        stop_pid "$(galera_pid_file "$n")" mariadbd "$sig"
    fi
    stop_pid "$DIR/galera$n/data/rsync_sst.pid" rsync
    wait_port_closed "${GALERA_PORT[n]}" "$(net_ip galera "$n")"
    wait_port_closed "${GALERA_GCOMM_PORT[n]}" "$(net_ip galera "$n")"
}

# ---------------------------------------------------------------- RabbitMQ

# Environment of broker N and of rabbitmqctl talking to it; as services.sh's
# rabbitmq_env, with the files of node N in DIR/rabbitmqN. The Erlang cookie
# all nodes share is DIR/rabbitmq-home/.erlang.cookie, hence that HOME.
rabbitmq_node_env() {
    local n=$1 r=$DIR/rabbitmq$1
    export RABBITMQ_NODENAME=${RABBIT_NODENAME[n]}
    local ip
    ip=$(net_ip rabbitmq "$n")
    # In a namespace the node is NAME@ADDRESS: a long name, no DNS needed.
    export RABBITMQ_USE_LONGNAME=false
    net_enabled && RABBITMQ_USE_LONGNAME=true
    export RABBITMQ_NODE_IP_ADDRESS=$ip
    export RABBITMQ_NODE_PORT=${AMQP_PORT[n]}
    export RABBITMQ_DIST_PORT=${DIST_PORT[n]}
    export ERL_EPMD_PORT=$EPMD_PORT
    export ERL_EPMD_ADDRESS=$ip
    export RABBITMQ_CONF_ENV_FILE=$r/rabbitmq-env.conf
    export RABBITMQ_CONFIG_FILE=$r/rabbitmq.conf
    export RABBITMQ_ADVANCED_CONFIG_FILE=$r/advanced.config
    export RABBITMQ_ENABLED_PLUGINS_FILE=$r/enabled_plugins
    export RABBITMQ_MNESIA_BASE=$r/mnesia
    export RABBITMQ_LOG_BASE=$r/log
    export RABBITMQ_LOGS=$DIR/rabbitmq$n.log
    export RABBITMQ_PID_FILE=$r/rabbitmq.pid
    # Erlang distribution on the node's address too.
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {${ip//./,}}"
    export HOME=$DIR/rabbitmq-home
}

rabbitmq_ctl() {
    local n=$1; shift
    (rabbitmq_node_env "$n" && $(node_prefix rabbitmq "$n") "$RABBIT_BIN/rabbitmqctl" -q -n "${RABBIT_NODENAME[n]}" "$@")
}

rabbitmq_node_logs() { echo "$DIR/rabbitmq$1-console.log" "$DIR/rabbitmq$1.log"; }

rabbitmq_node_init() {
    local n=$1 r=$DIR/rabbitmq$1
    [ -f "$r/rabbitmq.conf" ] && return 0
    mkdir -p "$r/mnesia" "$r/log" "$DIR/rabbitmq-home"
    # One cookie for all the nodes (Erlang wants it private).
    if [ ! -f "$DIR/rabbitmq-home/.erlang.cookie" ]; then
        (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16).upper(), end="")' >"$DIR/rabbitmq-home/.erlang.cookie")
        chmod 400 "$DIR/rabbitmq-home/.erlang.cookie"
    fi
    : >"$r/rabbitmq-env.conf"   # ignore /etc/rabbitmq/rabbitmq-env.conf
    echo '[].' >"$r/enabled_plugins"   # no plugins at all
    echo '[].' >"$r/advanced.config"
    # autoheal: should a loaded machine ever make the nodes see a network
    # partition, the cluster mends itself instead of staying split.
    cat >"$r/rabbitmq.conf" <<'EOF'
# guest/guest only works over loopback, which is all we use.
loopback_users.guest = true
log.console = false
log.file.level = info
cluster_partition_handling = autoheal
EOF
    # In namespaces the clients come from other addresses than loopback.
    if net_enabled; then echo 'loopback_users = none' >>"$r/rabbitmq.conf"; fi
}

# Start broker N in the background, without waiting.
rabbitmq_node_launch() {
    local n=$1
    (
        rabbitmq_node_env "$n"
        if rabbitmq_alive "$n"; then
            log "rabbitmq node $n: already running"
            exit 0
        fi
        port_open "${AMQP_PORT[n]}" "$RABBITMQ_NODE_IP_ADDRESS" && die "rabbitmq node $n: port ${AMQP_PORT[n]} is taken by another program"
        cd "$DIR/rabbitmq$n"
        # The node's old pid, so that waiting for the new one does not see it.
        rm -f "$RABBITMQ_PID_FILE"
        setsid $(node_prefix rabbitmq "$n") "$RABBIT_BIN/rabbitmq-server" >>"$DIR/rabbitmq$n-console.log" 2>&1 </dev/null &
        echo $! >"$DIR/rabbitmq$n/wrapper.pid"
        wait_exec $! rabbitmq-server
    )
}

# beam's pid: the node writes it at boot; before that, the wrapper's child.
rabbitmq_beam_pid() {
    local pid wrapper
    pid=$(head -n1 "$DIR/rabbitmq$1/rabbitmq.pid" 2>/dev/null || true)
    if ! pid_alive "$pid" beam.smp; then
        wrapper=$(cat "$DIR/rabbitmq$1/wrapper.pid" 2>/dev/null || true)
        pid=
        pid_alive "$wrapper" rabbitmq-server && pid=$(pgrep -P "$wrapper" -x beam.smp | head -n1 || true)
    fi
    echo "$pid"
}

rabbitmq_alive() { pid_alive "$(rabbitmq_beam_pid "$1")" beam.smp; }

# Until broker N has booted (as services.sh's rabbitmq_wait).
rabbitmq_node_wait() {
    local n=$1 wrapper logs deadline=$((SECONDS + READY_TIMEOUT))
    read -r -a logs <<<"$(rabbitmq_node_logs "$n")"
    wrapper=$(cat "$DIR/rabbitmq$n/wrapper.pid" 2>/dev/null || true)
    until port_open "${AMQP_PORT[n]}" "$(net_ip rabbitmq "$n")"; do
        if [ -n "$wrapper" ] && ! kill -0 "$wrapper" 2>/dev/null; then
            fail "${logs[@]}" "rabbitmq node $n exited during startup"
        fi
        [ $SECONDS -lt $deadline ] ||
            fail "${logs[@]}" "rabbitmq node $n not listening on ${AMQP_PORT[n]} after ${READY_TIMEOUT}s"
        sleep 0.3
    done
    rabbitmq_ctl "$n" await_startup --timeout $((deadline - SECONDS + 1)) >/dev/null 2>>"${logs[0]}" ||
        fail "${logs[@]}" "rabbitmqctl await_startup failed on rabbitmq node $n"
}

# rabbitmq_running_nodes N: how many nodes broker N sees running in its cluster.
rabbitmq_running_nodes() {
    rabbitmq_ctl "$1" cluster_status --formatter json 2>/dev/null |
        python3 -c 'import json, sys; print(len(json.load(sys.stdin)["running_nodes"]))' 2>/dev/null
}

# rabbitmq_cluster_wait N COUNT: until broker N sees COUNT running nodes.
rabbitmq_cluster_wait() {
    local n=$1 count=$2 seen logs deadline=$((SECONDS + SYNC_TIMEOUT))
    read -r -a logs <<<"$(rabbitmq_node_logs "$n")"
    while :; do
        seen=$(rabbitmq_running_nodes "$n" || true)
        [ "$seen" = "$count" ] && return 0
        rabbitmq_alive "$n" || fail "${logs[@]}" "rabbitmq node $n exited"
        [ $SECONDS -lt $deadline ] ||
            fail "${logs[@]}" "rabbitmq node $n sees ${seen:-no} running nodes, not $count, after ${SYNC_TIMEOUT}s"
        sleep 0.5
    done
}

# Nodes 2 and 3 join node 1, once (a node remembers its cluster after).
rabbitmq_node_join() {
    local n=$1 logs
    [ -f "$DIR/rabbitmq$n/.joined" ] && return 0
    read -r -a logs <<<"$(rabbitmq_node_logs "$n")"
    if [ "$n" != 1 ]; then
        { rabbitmq_ctl "$n" stop_app &&
            rabbitmq_ctl "$n" join_cluster "${RABBIT_NODENAME[1]}" &&
            rabbitmq_ctl "$n" start_app; } >>"${logs[0]}" 2>&1 ||
            fail "${logs[@]}" "rabbitmq node $n could not join ${RABBIT_NODENAME[1]}"
    fi
    touch "$DIR/rabbitmq$n/.joined"
}

# How many brokers of DIR are alive.
rabbitmq_alive_count() {
    local i count=0
    for i in "${NODES[@]}"; do rabbitmq_alive "$i" && count=$((count + 1)); done
    echo $count
}

rabbitmq_node_start() {
    local n=$1 logs
    read -r -a logs <<<"$(rabbitmq_node_logs "$n")"
    rabbitmq_node_init "$n"
    # The first broker started when all are down would wait minutes for the
    # others (all but the last one to stop do): tell it not to.
    if [ "$(rabbitmq_alive_count)" = 0 ] && [ -f "$DIR/rabbitmq$n/.joined" ]; then
        rabbitmq_ctl "$n" force_boot >>"${logs[0]}" 2>&1 ||
            fail "${logs[@]}" "rabbitmqctl force_boot failed on rabbitmq node $n"
    fi
    rabbitmq_node_launch "$n"
    rabbitmq_node_wait "$n"
    rabbitmq_node_join "$n"
    rabbitmq_cluster_wait "$n" "$(rabbitmq_alive_count)"
}

# rabbitmq_node_stop N [SIGNAL]: TERM is a clean shutdown, KILL a crash.
rabbitmq_node_stop() {
    local n=$1 sig=${2:-TERM} pid wrapper
    pid=$(rabbitmq_beam_pid "$n")
    wrapper=$(cat "$DIR/rabbitmq$n/wrapper.pid" 2>/dev/null || true)
    if pid_alive "$pid" beam.smp; then
        kill -"$sig" "$pid" 2>/dev/null || true
        if ! wait_pid_gone "$pid" beam.smp; then
            log "rabbitmq node $n (pid $pid) ignored SIG$sig, killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_pid_gone "$pid" beam.smp 5 || die "rabbitmq node $n (pid $pid) still alive after SIGKILL"
        fi
    elif pid_alive "$wrapper" rabbitmq-server; then
        # Before beam started: the wrapper passes SIGTERM on.
        kill -TERM "$wrapper" 2>/dev/null || true
    else
        return 0
    fi
    # The wrapper shell exits once beam is gone.
    wait_pid_gone "$wrapper" rabbitmq-server 10 || log "rabbitmq node $n wrapper (pid $wrapper) still running"
    wait_port_closed "${AMQP_PORT[n]}" "$(net_ip rabbitmq "$n")"
    wait_port_closed "${DIST_PORT[n]}" "$(net_ip rabbitmq "$n")"
}

# The epmd all the brokers share daemonized and would outlive them forever.
# It refuses to die while a node is still registered, hence the retries.
# With --network, one epmd per namespace (node N's: epmd_stop N).
epmd_stop() {
    local i n=${1:-1}
    for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
        port_open "$EPMD_PORT" "$(net_ip rabbitmq "$n")" || return 0
        ERL_EPMD_PORT=$EPMD_PORT $(node_prefix rabbitmq "$n") epmd -port "$EPMD_PORT" -kill >/dev/null 2>&1 || true
        sleep 0.2
    done
    die "epmd on port $EPMD_PORT would not stop"
}

# ---------------------------------------------------------------- HAProxy

# HAProxy in front of Galera as OpenStack deploys it: one writer (node 1),
# nodes 2 and 3 `backup`, so that every client writes on the same node and
# Galera has no certification conflicts to settle between nodes. Debian's
# haproxy, on 127.0.0.1 with a port of its own (HAPROXY_PORT, added to
# DIR/cluster.conf by haproxy_conf_port), run as the invoking user.
#
# The health check is an external check running DIR/galera-check.sh, which
# asks the node for wsrep_local_state (4 = Synced) and wsrep_cluster_status
# (Primary), as the clustercheck script of OpenStack-Ansible and kolla does
# behind their `option httpchk`. Debian ships no clustercheck (nor the
# xinetd it runs under); `option mysql-check` only proves that mariadbd
# answers a login, and a node that lost its quorum, or is still catching
# up (IST) after a restart, answers a login but refuses every query.
HAPROXY_CHECK_INTER=1000      # ms between checks of a server
HAPROXY_CHECK_FALL=2          # failed checks before a server is down
HAPROXY_CHECK_RISE=2          # good checks before it is up again

haproxy_pid_file() { echo "$DIR/haproxy.pid"; }
haproxy_alive() { pid_alive "$(head -n1 "$(haproxy_pid_file)" 2>/dev/null || true)" haproxy; }

# A port of its own, chosen once per DIR (the cluster.conf of an older DIR
# has none yet).
haproxy_conf_port() {
    [ -n "${HAPROXY_PORT:-}" ] && return 0
    HAPROXY_PORT=$(pick_ports 1)
    echo "HAPROXY_PORT=$HAPROXY_PORT" >>"$DIR/cluster.conf"
}

# The check user: no password, no privilege but to log in and read the
# status (USAGE), from the address HAProxy connects from only; replicated
# to every node.
haproxy_check_user() {
    [ -f "$DIR/.haproxy-user-done" ] && return 0
    # With --network, HAProxy reaches the nodes from the bridge's address.
    local from=127.0.0.1
    net_enabled && from=$NET_PREFIX.1
    galera_sql "$1" -e "CREATE USER IF NOT EXISTS 'haproxy'@'$from';" \
        >>"$(galera_log "$1")" 2>&1 ||
        fail "$(galera_log "$1")" "creating the haproxy check user failed"
    touch "$DIR/.haproxy-user-done"
}

# HAProxy's external check: its $3 and $4 are the server's address and port.
haproxy_write_check() {
    cat >"$DIR/galera-check.sh" <<'CHECK'
#!/bin/sh
# Up only when the node is Synced (wsrep_local_state 4) in a Primary
# component: written by cluster.sh for HAProxy's external-check.
out=$(mariadb --no-defaults -uhaproxy -h"$3" -P"$4" --connect-timeout=1 -N -B -e \
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state', 'wsrep_cluster_status')" 2>/dev/null) || exit 1
echo "$out" | grep -q '^wsrep_local_state[[:space:]]4$' || exit 1
echo "$out" | grep -q '^wsrep_cluster_status[[:space:]]Primary$'
CHECK
    chmod 755 "$DIR/galera-check.sh"
}

# The configuration, with the values doc/install.md gives (measured
# there): a failed writer is marked down after FALL * INTER and its
# sessions cut at once (on-marked-down shutdown-sessions), so that no
# client waits on a dead node's socket; a writer back up takes the writes
# again and the backup's sessions are cut (on-marked-up
# shutdown-backup-sessions): one writer at a time. timeout client/server
# are above oslo.db's connection_recycle_time (3600 s): HAProxy must never
# cut an idle pooled connection before the pool recycles it.
haproxy_write_conf() {
    local n backup
    cat >"$DIR/haproxy.cfg" <<CONF
global
    pidfile $(haproxy_pid_file)
    stats socket $DIR/haproxy.sock mode 600 level admin
    external-check
    insecure-fork-wanted
    maxconn 4000

defaults
    mode tcp
    timeout connect 2s
    timeout client 3700s
    timeout server 3700s
    timeout check 2s

listen galera
    bind 127.0.0.1:$HAPROXY_PORT
    option external-check
    external-check path /usr/bin:/bin
    external-check command $DIR/galera-check.sh
    default-server inter ${HAPROXY_CHECK_INTER}ms fall $HAPROXY_CHECK_FALL rise $HAPROXY_CHECK_RISE on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions
CONF
    for n in "${NODES[@]}"; do
        backup=
        [ "$n" = 1 ] || backup=' backup'
        echo "    server galera$n $(net_ip galera "$n"):${GALERA_PORT[n]} check$backup" >>"$DIR/haproxy.cfg"
    done
}

# haproxy_start N: start HAProxy (if down) once the nodes are Synced (N is
# one of them, for the check user); waits until it sees the writer up.
haproxy_start() {
    local deadline=$((SECONDS + READY_TIMEOUT))
    haproxy_conf_port
    haproxy_check_user "$1"
    haproxy_write_check
    haproxy_write_conf
    haproxy_alive && return 0
    haproxy -c -q -f "$DIR/haproxy.cfg" >>"$DIR/haproxy.log" 2>&1 || fail "$DIR/haproxy.log" "haproxy.cfg is not valid"
    # -D: haproxy daemonizes and writes its pid file; setsid as the servers.
    setsid haproxy -D -f "$DIR/haproxy.cfg" >>"$DIR/haproxy.log" 2>&1 </dev/null ||
        fail "$DIR/haproxy.log" "haproxy did not start"
    until haproxy_states | grep -q '^galera1 UP$'; do
        [ $SECONDS -lt $deadline ] || fail "$DIR/haproxy.log" "haproxy does not see galera node 1 up after ${READY_TIMEOUT}s"
        sleep 0.3
    done
}

# One line per server, "galeraN UP" (or DOWN, ...), from the stats socket.
haproxy_states() {
    python3 - "$DIR/haproxy.sock" 2>/dev/null <<'STATS'
import csv, socket, sys
with socket.socket(socket.AF_UNIX) as s:
    s.settimeout(2)
    s.connect(sys.argv[1])
    s.sendall(b"show stat\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
for row in csv.DictReader(data.decode().lstrip("# ").splitlines()):
    if row["svname"].startswith("galera"):
        print(row["svname"], row["status"].split()[0])
STATS
}

haproxy_stop() {
    [ -n "${HAPROXY_PORT:-}" ] || return 0
    stop_pid "$(haproxy_pid_file)" haproxy
    wait_port_closed "$HAPROXY_PORT"
}

# ---------------------------------------------------------------- start / stop

write_env() {
    local tmp=$DIR/env.tmp n galera=() amqp=() multi=() gpids=() rpids=()
    for n in "${NODES[@]}"; do
        galera+=("mysql+pymysql://barbican:barbican@$(net_ip galera "$n"):${GALERA_PORT[n]}/barbican_retry?charset=utf8mb4")
        amqp+=("rabbit://guest:guest@$(net_ip rabbitmq "$n"):${AMQP_PORT[n]}/")
        multi+=("guest:guest@$(net_ip rabbitmq "$n"):${AMQP_PORT[n]}")
        gpids+=("$(galera_pid_file "$n")")
        rpids+=("$DIR/rabbitmq$n/rabbitmq.pid")
    done
    {
        echo "# Generated by $CLUSTER_SELF; source it. Lists are space separated, in node order (1 2 3)."
        echo "export BARBICAN_RETRY_TEST_CLUSTER_DIR=$DIR"
        echo "export BARBICAN_RETRY_TEST_CLUSTER_SCRIPT=$CLUSTER_SELF"
        echo "export BARBICAN_RETRY_TEST_GALERA_URLS='${galera[*]}'"
        echo "export BARBICAN_RETRY_TEST_GALERA_PORTS='${GALERA_PORT[*]}'"
        # HAProxy in front of the three nodes (writer node 1, two backups).
        echo "export BARBICAN_RETRY_TEST_GALERA_HAPROXY_URL=mysql+pymysql://barbican:barbican@127.0.0.1:$HAPROXY_PORT/barbican_retry?charset=utf8mb4"
        echo "export BARBICAN_RETRY_TEST_GALERA_HAPROXY_SOCKET=$DIR/haproxy.sock"
        echo "export BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_URLS='${amqp[*]}'"
        echo "export BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_PORTS='${AMQP_PORT[*]}'"
        # One oslo.messaging transport URL naming the three brokers.
        echo "export BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_TRANSPORT_URL=rabbit://$(IFS=,; echo "${multi[*]}")/"
        # Pid files (first line is the server's pid) for kill -9 style tests.
        echo "export BARBICAN_RETRY_TEST_GALERA_PID_FILES='${gpids[*]}'"
        echo "export BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_PID_FILES='${rpids[*]}'"
        # No RABBITMQ_*/ERL_* variables: DIR/env of services.sh sets those for
        # its own broker, and both files may be sourced.
        echo "# rabbitmqctl against broker N: HOME=$DIR/rabbitmq-home ERL_EPMD_PORT=$EPMD_PORT rabbitmqctl -n brcN-...@localhost"
        echo "#   nodes: ${RABBIT_NODENAME[*]}"
        if net_enabled; then net_write_env; fi
    } >"$tmp"
    mv "$tmp" "$DIR/env"
}

start_cluster() {
    local network=0
    if [ "${2:-}" = --network ]; then network=1 && set -- "$1"; fi
    [ $# -eq 1 ] || die "usage: cluster.sh start DIR [--network]"
    [ $network = 0 ] || net_require_root
    install_packages
    [ -f "$GALERA_PROVIDER" ] || die "$GALERA_PROVIDER missing (package galera-4)"
    mkdir -p "$1"
    DIR=$(readlink -f "$1")
    # mariadbd runs as another user (mysql) when we are root: it must reach DIR.
    chmod 755 "$DIR"
    if [ ! -f "$DIR/cluster.conf" ]; then
        write_cluster_conf
        [ $network = 0 ] || net_write_conf
    fi
    load_cluster_conf "$DIR"
    if net_enabled; then net_require_root && net_up; fi
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$MYSQL_USER" -- test -x "$DIR" || die "$MYSQL_USER cannot reach $DIR (a parent dir is private? chmod o+x it)"
    fi

    # Stop whatever we started if anything below fails.
    trap 'rc=$?; if [ $rc -ne 0 ]; then log "start failed, stopping what was started"; stop_cluster "$DIR" || true; fi' EXIT

    local t0=$SECONDS n first=1 best=-2 seqno order=()
    # The brokers boot slowest: launch all three (each boots on its own at
    # the first start, a restarted node finds the others), start Galera
    # meanwhile, then wait for them and join them.
    for n in "${NODES[@]}"; do
        rabbitmq_node_init "$n"
        rabbitmq_node_launch "$n"
    done

    # Galera: first the node to bootstrap from if none is alive: node 1 at
    # the first start, else the one with the latest data.
    for n in "${NODES[@]}"; do galera_init "$n"; done
    for n in "${NODES[@]}"; do
        if galera_alive "$n"; then first=$n best=-2 && break; fi
        if [ -f "$DIR/.galera-setup-done" ]; then
            galera_position "$n"
            seqno=${GALERA_POSITION[$n]##*:}
            if [ "${seqno:--1}" -gt "$best" ]; then first=$n best=${seqno:--1}; fi
        fi
    done
    order=("$first")
    for n in "${NODES[@]}"; do [ "$n" = "$first" ] || order+=("$n"); done
    # One at a time: a joiner waits for its SST, which ties up the donor.
    for n in "${order[@]}"; do
        galera_node_start "$n"
        galera_setup "$n"
    done
    for n in "${NODES[@]}"; do galera_wait "$n" ${#NODES[@]}; done
    haproxy_start "$first"
    local t_galera=$((SECONDS - t0))

    for n in "${NODES[@]}"; do rabbitmq_node_wait "$n"; done
    for n in "${NODES[@]}"; do rabbitmq_node_join "$n"; done
    for n in "${NODES[@]}"; do rabbitmq_cluster_wait "$n" ${#NODES[@]}; done

    write_env
    log "started in $((SECONDS - t0))s (galera synced after ${t_galera}s): galera :${GALERA_PORT[*]} (haproxy :$HAPROXY_PORT), rabbitmq :${AMQP_PORT[*]} (env: $DIR/env)"
}

stop_cluster() {
    [ $# -eq 1 ] || die "usage: cluster.sh stop DIR"
    if [ ! -f "$1/cluster.conf" ]; then
        log "nothing to stop in $1"
        return 0
    fi
    load_cluster_conf "$1"
    # Both clusters at once, each in its own subshell: quicker, and one
    # failing does not leave the other running. The Galera nodes one after
    # the other (3, 2, 1): each leaves cleanly and node 1, the last, can
    # bootstrap the next start.
    local pids=() pid rc=0
    haproxy_stop || rc=1
    (
        for n in 3 2 1; do (galera_node_stop "$n") || rc=1; done
        exit $rc
    ) &
    pids+=($!)
    (
        p=()
        for n in "${NODES[@]}"; do
            rabbitmq_node_stop "$n" &
            p+=($!)
        done
        for pid in "${p[@]}"; do wait "$pid" || rc=1; done
        if net_enabled; then
            for n in "${NODES[@]}"; do epmd_stop "$n" || rc=1; done
        else
            epmd_stop || rc=1
        fi
        exit $rc
    ) &
    pids+=($!)
    for pid in "${pids[@]}"; do
        wait "$pid" || rc=1
    done
    if net_enabled; then net_down || rc=1; fi
    return $rc
}

node_command() {
    [ $# -eq 3 ] || die "usage: cluster.sh $cmd DIR galera|rabbitmq N"
    check_node "$2" "$3"
    load_cluster_conf "$1"
    local kind=$2 n=$3 t0=$SECONDS
    case $cmd:$kind in
    node-stop:galera) galera_node_stop "$n" TERM ;;
    node-kill:galera) galera_node_stop "$n" KILL ;;
    node-start:galera) galera_node_start "$n" ;;
    node-stop:rabbitmq) rabbitmq_node_stop "$n" TERM ;;
    node-kill:rabbitmq) rabbitmq_node_stop "$n" KILL ;;
    node-start:rabbitmq) rabbitmq_node_start "$n" ;;
    esac
    log "$cmd $kind $n done in $((SECONDS - t0))s"
}

status_cluster() {
    [ $# -eq 1 ] || die "usage: cluster.sh status DIR"
    load_cluster_conf "$1"
    local n st=()
    for n in "${NODES[@]}"; do
        if galera_alive "$n"; then
            read -r -a st <<<"$(galera_state "$n" || true)"
            if [ ${#st[@]} -eq 3 ]; then
                printf 'galera   %s  %s:%-5s  up    %s size=%s %s\n' "$n" "$(net_ip galera "$n")" "${GALERA_PORT[n]}" "${st[@]}"
            else
                printf 'galera   %s  %s:%-5s  up    no answer\n' "$n" "$(net_ip galera "$n")" "${GALERA_PORT[n]}"
            fi
        else
            printf 'galera   %s  %s:%-5s  down\n' "$n" "$(net_ip galera "$n")" "${GALERA_PORT[n]}"
        fi
    done
    # rabbitmqctl takes a second: ask the three brokers at once.
    for n in "${NODES[@]}"; do
        { if rabbitmq_alive "$n"; then rabbitmq_running_nodes "$n" || true; fi; } >"$DIR/.status-rabbitmq$n" &
    done
    wait
    for n in "${NODES[@]}"; do
        if rabbitmq_alive "$n"; then
            read -r -a st <"$DIR/.status-rabbitmq$n" || true
            if [ ${#st[@]} -eq 1 ]; then
                printf 'rabbitmq %s  %s:%-5s  up    running_nodes=%s\n' "$n" "$(net_ip rabbitmq "$n")" "${AMQP_PORT[n]}" "${st[0]}"
            else
                printf 'rabbitmq %s  %s:%-5s  up    no answer\n' "$n" "$(net_ip rabbitmq "$n")" "${AMQP_PORT[n]}"
            fi
        else
            printf 'rabbitmq %s  %s:%-5s  down\n' "$n" "$(net_ip rabbitmq "$n")" "${AMQP_PORT[n]}"
        fi
        rm -f "$DIR/.status-rabbitmq$n"
    done
    if haproxy_alive; then
        printf 'haproxy     127.0.0.1:%-5s  up    %s\n' "$HAPROXY_PORT" "$(haproxy_states | tr '\n' ' ')"
    elif [ -n "${HAPROXY_PORT:-}" ]; then
        printf 'haproxy     127.0.0.1:%-5s  down\n' "$HAPROXY_PORT"
    fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
start) start_cluster "$@" ;;
stop) stop_cluster "$@" ;;
status) status_cluster "$@" ;;
node-stop | node-kill | node-start) node_command "$@" ;;
partition | heal | slow | restore | settle) network_command "$@" ;;
*) die "usage: cluster.sh start DIR [--network] | stop DIR | status DIR | node-stop|node-kill|node-start DIR galera|rabbitmq N | partition|heal|slow|restore|settle DIR ..." ;;
esac
