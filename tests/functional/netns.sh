# Network namespaces for `cluster.sh start DIR --network` (sourced by
# cluster.sh; not a command of its own).
#
# Layout (one /24 drawn at random in 10.200-249.x, checked unused):
#
#   root namespace: bridge NET_NAME, address .1 (the test runner: it
#                   creates the databases, checks them, receives webhooks)
#   NET_NAME-galeraN    (N = 1..3)  address .1N  one Galera node
#   NET_NAME-rabbitmqN              address .2N  one RabbitMQ node (own epmd)
#   NET_NAME-hostN                  address .3N  the project's processes
#                                                placed on node N
#
# Each namespace has one veth, its peer on the bridge, and no route but
# its /24: nothing leaves the namespaces (ip_forward is not touched, no
# default route). A partition is an nft rule in the namespaces of one
# side (table inet NET_TABLE, chains cut_in/cut_out); a slow link is
# `tc netem` delay on the veths of both sides when the kernel has netem,
# and nft's numgen for the loss (chain lossy).
#
# Needs root; without root the commands exit with NET_SKIP_STATUS, which
# the tests turn into a skip.

NET_SKIP_STATUS=77
NET_TABLE=barbican_retry_net
NET_KINDS=(galera rabbitmq host)

net_require_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "cluster.sh: --network needs root (ip netns, nft, tc); skipped" >&2
        exit $NET_SKIP_STATUS
    fi
    command -v nft >/dev/null || die "nft missing (package nftables)"
}

net_enabled() { [ "${NETWORK:-0}" = 1 ]; }

# net_ip KIND N: the address of node N of KIND (127.0.0.1 without --network).
net_ip() {
    if ! net_enabled; then echo 127.0.0.1; return; fi
    case $1 in
    galera) echo "$NET_PREFIX.1$2" ;;
    rabbitmq) echo "$NET_PREFIX.2$2" ;;
    host) echo "$NET_PREFIX.3$2" ;;
    *) die "unknown kind '$1'" ;;
    esac
}

net_ns() { echo "$NET_NAME-$1$2"; }

# node_prefix KIND N: the words that run a command in node N's namespace
# (nothing without --network), for `setsid $(node_prefix ...) server`.
node_prefix() { if net_enabled; then echo ip netns exec "$(net_ns "$1" "$2")"; fi; }

# The SQL granting the processes in the namespaces (their addresses).
net_grants() {
    net_enabled || return 0
    echo "CREATE USER IF NOT EXISTS 'barbican'@'$NET_PREFIX.%' IDENTIFIED BY 'barbican';
        GRANT ALL PRIVILEGES ON *.* TO 'barbican'@'$NET_PREFIX.%';"
}

# The lines of DIR/env that --network adds (part of write_env).
net_write_env() {
    local n hosts=()
    for n in "${NODES[@]}"; do hosts+=("$(net_ns host "$n")"); done
    echo "# --network: the namespaces of the hosts of node 1, 2, 3 (ip netns exec NS COMMAND),"
    echo "# and the runner's address on the bridge (where it listens for webhooks)."
    echo "export BARBICAN_RETRY_TEST_CLUSTER_HOST_NAMESPACES='${hosts[*]}'"
    echo "export BARBICAN_RETRY_TEST_CLUSTER_RUNNER_ADDRESS=$NET_PREFIX.1"
}

# in_node KIND N COMMAND...: run COMMAND in node N's namespace (or here).
in_node() {
    local kind=$1 n=$2; shift 2
    if net_enabled; then ip netns exec "$(net_ns "$kind" "$n")" "$@"; else "$@"; fi
}

# Appended to DIR/cluster.conf by `start --network`, at the first start.
net_write_conf() {
    local prefix i
    for ((i = 0; i < 50; i++)); do
        prefix=10.$((200 + RANDOM % 50)).$((1 + RANDOM % 250))
        ip -4 route show | grep -q "^$prefix\." || break
    done
    cat >>"$DIR/cluster.conf" <<EOF
NETWORK=1
NET_NAME=brn$$
NET_PREFIX=$prefix
RABBIT_NODENAME=([1]=brc1-$$@$prefix.21 [2]=brc2-$$@$prefix.22 [3]=brc3-$$@$prefix.23)
EOF
}

net_veth() { echo "${NET_NAME}${1:0:1}$2"; }   # 15 characters at most

# Create the bridge, the namespaces and their veths (idempotent).
net_up() {
    local kind n ns veth
    if ! ip link show "$NET_NAME" >/dev/null 2>&1; then
        ip link add "$NET_NAME" type bridge
        ip addr add "$NET_PREFIX.1/24" dev "$NET_NAME"
        ip link set "$NET_NAME" up
    fi
    for kind in "${NET_KINDS[@]}"; do
        for n in "${NODES[@]}"; do
            ns=$(net_ns "$kind" "$n") veth=$(net_veth "$kind" "$n")
            ip netns list | grep -qx "$ns\( .*\)\?" && continue
            ip netns add "$ns"
            ip link add "$veth" type veth peer name "${veth}b"
            ip link set "$veth" netns "$ns"
            ip link set "${veth}b" master "$NET_NAME" up
            ip -n "$ns" addr add "$(net_ip "$kind" "$n")/24" dev "$veth"
            ip -n "$ns" link set lo up
            ip -n "$ns" link set "$veth" up
            ip netns exec "$ns" nft -f - <<EOF
table inet $NET_TABLE {
    chain cut_in { type filter hook input priority 0; }
    chain cut_out { type filter hook output priority 0; }
    chain lossy { type filter hook output priority 1; }
}
EOF
        done
    done
}

# Remove everything net_up made. Processes still inside a namespace
# (there should be none after stop_cluster) are SIGKILLed first: a
# namespace with processes in it outlives `ip netns del`.
net_down() {
    local kind n ns pid
    for kind in "${NET_KINDS[@]}"; do
        for n in "${NODES[@]}"; do
            ns=$(net_ns "$kind" "$n")
            ip netns list | grep -qx "$ns\( .*\)\?" || continue
            for pid in $(ip netns pids "$ns" 2>/dev/null); do
                log "killing pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) left in $ns"
                kill -KILL "$pid" 2>/dev/null || true
            done
            ip netns del "$ns"
            ip link del "$(net_veth "$kind" "$n")b" 2>/dev/null || true
        done
    done
    ip link del "$NET_NAME" 2>/dev/null || true
}

# net_members SPEC: the "KIND N" pairs of SPEC, a comma list of galera2,
# rabbitmq1, host3, or a whole kind (galera, rabbitmq, hosts).
net_members() {
    local item n
    for item in ${1//,/ }; do
        case $item in
        galera | rabbitmq) for n in "${NODES[@]}"; do echo "$item $n"; done ;;
        hosts) for n in "${NODES[@]}"; do echo "host $n"; done ;;
        galera[1-3] | rabbitmq[1-3] | host[1-3]) echo "${item%?} ${item: -1}" ;;
        *) die "unknown node '$item' (galeraN, rabbitmqN, hostN, galera, rabbitmq, hosts)" ;;
        esac
    done
}

net_nft() {
    local kind=$1 n=$2; shift 2
    ip netns exec "$(net_ns "$kind" "$n")" nft "$@"
}

# partition DIR A B [both|oneway]: drop A's packets to B; both (the
# default) also drops B's packets to A. Rules in A's namespaces only, so
# that `heal A` undoes them.
net_partition() {
    local a=$1 b=$2 way=${3:-both} ka na kb nb
    case $way in both | oneway) ;; *) die "direction: both or oneway" ;; esac
    while read -r ka na; do
        while read -r kb nb; do
            net_nft "$ka" "$na" add rule inet "$NET_TABLE" cut_out ip daddr "$(net_ip "$kb" "$nb")" drop
            [ "$way" = both ] &&
                net_nft "$ka" "$na" add rule inet "$NET_TABLE" cut_in ip saddr "$(net_ip "$kb" "$nb")" drop
        done < <(net_members "$b")
    done < <(net_members "$a")
}

# heal DIR [A]: remove the partition rules of A (default: everywhere).
net_heal() {
    local k n
    while read -r k n; do
        net_nft "$k" "$n" flush chain inet "$NET_TABLE" cut_in
        net_nft "$k" "$n" flush chain inet "$NET_TABLE" cut_out
    done < <(net_members "${1:-galera,rabbitmq,hosts}")
}

net_has_netem() {
    local ns
    ns=$(net_ns host 1)
    if ip -n "$ns" link add brn-probe type dummy 2>/dev/null; then
        local rc=0
        ip netns exec "$ns" tc qdisc add dev brn-probe root netem delay 1ms 2>/dev/null || rc=1
        ip -n "$ns" link del brn-probe
        return $rc
    fi
    return 1
}

# slow DIR A B DELAY_MS LOSS_PERCENT: DELAY_MS more on every packet each
# way between A and B (tc netem on the veths of both sides, filtered on
# the other side's addresses) and LOSS_PERCENT of them dropped each way
# (nft numgen). Without netem in the kernel a DELAY_MS other than 0 fails
# with NET_SKIP_STATUS.
net_slow() {
    local a=$1 b=$2 delay=$3 loss=$4 per_mille
    per_mille=$(python3 -c "import sys; print(round(float(sys.argv[1]) * 10))" "$loss")
    if [ "$delay" != 0 ] && ! net_has_netem; then
        echo "cluster.sh: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM): no delay possible" >&2
        exit $NET_SKIP_STATUS
    fi
    net_slow_side "$a" "$b" "$delay" "$per_mille"
    net_slow_side "$b" "$a" "$delay" "$per_mille"
}

net_slow_side() {
    local from=$1 to=$2 delay=$3 per_mille=$4 k n kb nb ns dev
    while read -r k n; do
        ns=$(net_ns "$k" "$n") dev=$(net_veth "$k" "$n")
        if [ "$delay" != 0 ]; then
            # prio: band 3 (1:3) gets only what the filters send it.
            ip netns exec "$ns" tc qdisc replace dev "$dev" root handle 1: prio
            ip netns exec "$ns" tc qdisc replace dev "$dev" parent 1:3 handle 30: netem delay "${delay}ms"
        fi
        while read -r kb nb; do
            [ "$delay" != 0 ] && ip netns exec "$ns" tc filter add dev "$dev" parent 1:0 protocol ip \
                u32 match ip dst "$(net_ip "$kb" "$nb")/32" flowid 1:3
            [ "$per_mille" != 0 ] && net_nft "$k" "$n" add rule inet "$NET_TABLE" lossy \
                ip daddr "$(net_ip "$kb" "$nb")" numgen random mod 1000 '<' "$per_mille" drop
        done < <(net_members "$to")
    done < <(net_members "$from")
}

# restore DIR [A]: remove the delay and loss of A (default: everywhere).
net_restore() {
    local k n
    while read -r k n; do
        ip netns exec "$(net_ns "$k" "$n")" tc qdisc del dev "$(net_veth "$k" "$n")" root 2>/dev/null || true
        net_nft "$k" "$n" flush chain inet "$NET_TABLE" lossy
    done < <(net_members "${1:-galera,rabbitmq,hosts}")
}

# settle DIR: until every Galera node is Synced in a primary component of
# all three and every broker sees all three running (after a heal).
net_settle() {
    local n
    for n in "${NODES[@]}"; do galera_wait "$n" ${#NODES[@]}; done
    net_rabbitmq_unstick
    for n in "${NODES[@]}"; do rabbitmq_cluster_wait "$n" ${#NODES[@]}; done
}

# The broker that autoheal restarts after a partition can hang in its boot
# for good (RabbitMQ 3.10 on Erlang 25: "Global hang workaround" in its
# log, then nothing; seen once in three runs of the RabbitMQ fault). If the
# brokers are not whole RABBIT_HEAL_TIMEOUT seconds after the heal, each
# whose application has not started is killed and started again, as an
# operator would.
RABBIT_HEAL_TIMEOUT=60
net_rabbitmq_unstick() {
    local n deadline=$((SECONDS + RABBIT_HEAL_TIMEOUT))
    while [ $SECONDS -lt $deadline ]; do
        net_rabbitmq_whole && return 0
        sleep 1
    done
    for n in "${NODES[@]}"; do
        rabbitmq_ctl "$n" await_startup --timeout 5 >/dev/null 2>&1 && continue
        log "rabbitmq node $n has not started ${RABBIT_HEAL_TIMEOUT}s after the heal: restarting it"
        rabbitmq_node_stop "$n" KILL
        rabbitmq_node_start "$n"
    done
}

# Whether every broker sees every broker running.
net_rabbitmq_whole() {
    local n
    for n in "${NODES[@]}"; do
        [ "$(rabbitmq_running_nodes "$n" || true)" = ${#NODES[@]} ] || return 1
    done
}

network_command() {
    [ $# -ge 1 ] || die "usage: cluster.sh $cmd DIR ..."
    load_cluster_conf "$1"
    shift
    net_enabled || die "$DIR was not started with --network"
    net_require_root
    case $cmd in
    partition) [ $# -ge 2 ] || die "usage: cluster.sh partition DIR A B [both|oneway]"; net_partition "$@" ;;
    heal) net_heal "$@" ;;
    slow) [ $# -eq 4 ] || die "usage: cluster.sh slow DIR A B DELAY_MS LOSS_PERCENT"; net_slow "$@" ;;
    restore) net_restore "$@" ;;
    settle) net_settle ;;
    esac
}
