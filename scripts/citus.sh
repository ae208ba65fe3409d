# shellcheck shell=bash
# Citus, the distributed PostgreSQL (issue 54), as scripts/setup.sh starts it:
# a coordinator and GHBENCH_CITUS_WORKERS workers (2 by default), each a
# PostgreSQL cluster of this checkout's own in $GHBENCH_HOME/citus/<node>,
# with a port of its own (GHBENCH_CITUS_PORT, 54330, for the coordinator; the
# workers take the ports after it), its own memory-limit file and restart.
# Citus is the first optional engine: used when its extension is installed in
# the PostgreSQL setup runs (a user's package), else built from the source
# archive GHBENCH_CITUS_SOURCE names (../shared/vendor's here, what .ci/run
# names); without either, or with GHBENCH_CITUS=off, skipped in one line.
# Sourced by setup.sh after its own functions (log, die, as_root, apt_install,
# pg_bindir, setup_pg_cluster, pg_tuning, pg_size_bytes).

CITUS=${GHBENCH_CITUS:-auto}
case $CITUS in auto|off) ;; *) echo "[setup] error: GHBENCH_CITUS=$CITUS: write auto (Citus when it is installed or GHBENCH_CITUS_SOURCE names its source) or off" >&2; exit 2 ;; esac
CITUS_SOURCE=${GHBENCH_CITUS_SOURCE:-}
CITUS_WORKERS=${GHBENCH_CITUS_WORKERS:-2}
[[ $CITUS_WORKERS =~ ^[1-9]$ ]] \
    || { echo "[setup] error: GHBENCH_CITUS_WORKERS=$CITUS_WORKERS: write a number of workers from 1 to 9" >&2; exit 2; }
# A memory limit (GHBENCH_MEMORY, `bench --memory`) is each node's
# (`each`, the default) or the cluster's in total (`total`: each node a
# (workers+1)th of it, its settings that share of the single server's), as
# setup ran with unless GHBENCH_CITUS_MEMORY says otherwise for a restart.
CITUS_MEMORY=${GHBENCH_CITUS_MEMORY-${GHBENCH_SETUP_CITUS_MEMORY:-each}}
case $CITUS_MEMORY in each|total) ;; *) echo "[setup] error: GHBENCH_CITUS_MEMORY=$CITUS_MEMORY: write each (a memory limit is every node's) or total (the cluster's, shared among its nodes)" >&2; exit 2 ;; esac
CITUS_PORT=${GHBENCH_CITUS_PORT:-54330}
[[ $CITUS_PORT =~ ^[1-9][0-9]*$ ]] && [ "$CITUS_PORT" -le $(( 65535 - CITUS_WORKERS )) ] \
    || { echo "[setup] error: GHBENCH_CITUS_PORT=$CITUS_PORT is not a port the coordinator and its $CITUS_WORKERS workers (the ports after it) can take" >&2; exit 2; }

# The cluster's nodes, the coordinator first, and a node's port.
citus_nodes() { local w; echo coordinator; for w in $(seq 1 "$CITUS_WORKERS"); do echo "worker$w"; done; }
citus_port() { if [ "$1" = coordinator ]; then echo "$CITUS_PORT"; else echo $(( CITUS_PORT + ${1#worker} )); fi; }

# Whether Citus is installed in the PostgreSQL of bin folder $1: its library
# and its extension's control file.
citus_installed() {
    [ -f "$("$1/pg_config" --pkglibdir)/citus.so" ] && [ -f "$("$1/pg_config" --sharedir)/extension/citus.control" ]
}

# Builds Citus from archive $2 and installs it into the PostgreSQL of bin
# folder $1, with the server's own headers: postgresql-server-dev pinned to
# the installed server's version, as apt would otherwise take a newer one and
# upgrade the running server's packages with it. Fails, having said why in
# one line, when that version is gone or apt's plan would still upgrade the
# server.
build_citus() {
    local bin=$1 archive=$2 major version plan dir=$GHBENCH_HOME/citus/build
    [ -f "$archive" ] || { log "Citus skipped: GHBENCH_CITUS_SOURCE=$archive is no file"; return 1; }
    major=$("$bin/pg_config" --version | sed -nE 's/^PostgreSQL ([0-9]+).*/\1/p')
    version=$(dpkg-query -W -f='${Version}' "postgresql-$major" 2>/dev/null) \
        || { log "Citus skipped: building it needs Debian's postgresql-$major (this PostgreSQL is not from a Debian package): install Citus's own package instead"; return 1; }
    [ "$(id -u)" = 0 ] || command -v sudo >/dev/null \
        || { log "Citus skipped: building it needs root (apt, make install): run setup as root, or install Citus's package"; return 1; }
    local packages=("postgresql-server-dev-$major=$version" libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev make gcc)
    if [ -z "$apt_updated" ]; then
        as_root apt-get update -qq || { log "Citus skipped: apt-get update failed (said above)"; return 1; }
        apt_updated=1
    fi
    plan=$(as_root apt-get -s install "${packages[@]}" 2>&1) \
        || { log "Citus skipped: apt cannot install postgresql-server-dev-$major=$version, the running server's version, which building Citus needs ($(tail -n 1 <<<"$plan"))"; return 1; }
    if grep -qE "^Inst (postgresql-$major|postgresql-client-$major) \[" <<<"$plan"; then
        log "Citus skipped: installing what it needs would upgrade the running PostgreSQL's packages ($(grep -E "^Inst postgresql-(client-)?$major " <<<"$plan" | head -n 1))"
        return 1
    fi
    log "building Citus from $archive against PostgreSQL $version (a few minutes; log: $dir.log)"
    apt_install "${packages[@]}" || { log "Citus skipped: apt could not install what building it needs (said above)"; return 1; }
    rm -rf "$dir" && mkdir -p "$dir" || { log "Citus skipped: cannot make $dir"; return 1; }
    tar -xzf "$archive" -C "$dir" --strip-components=1 \
        || { log "Citus skipped: $archive is not a source archive tar can read"; return 1; }
    # with_llvm=no: no JIT bitcode of Citus's own code, half the build's time
    # (PostgreSQL's JIT then does not inline Citus's functions, which the
    # queries' expressions do not call).
    ( cd "$dir" && ./configure PG_CONFIG="$bin/pg_config" && make -j"$(nproc)" with_llvm=no && as_root make install with_llvm=no ) >"$dir.log" 2>&1 \
        || { tail -n 20 "$dir.log" >&2; log "Citus skipped: its build failed (log: $dir.log)"; return 1; }
    rm -rf "$dir"
}

# Setting $1's value $2 as each node's share: the single server's settings
# divided among the nodes so the cluster fits where that server did, unless
# each node has a memory limit of its own (GHBENCH_MEMORY, GHBENCH_CITUS_MEMORY
# each: the settings are already scaled to it). In kB; a bare number is in the
# setting's own unit (8kB pages for shared_buffers and effective_cache_size,
# kB for the others).
citus_share() {
    [ -z "$MEMORY_BYTES" ] || [ "$CITUS_MEMORY" = total ] || { echo "$2"; return 0; }
    local bytes value=$2
    case $1 in work_mem|maintenance_work_mem) [[ ! $value =~ ^[0-9]+$ ]] || value=${value}kB ;; esac
    bytes=$(pg_size_bytes "$value") || die "$1 = $2 is not a PostgreSQL size (e.g. 128MB, 2GB)"
    echo "$(( bytes / (CITUS_WORKERS + 1) >> 10 ))kB"
}

# The Citus cluster, when Citus is available (else one line, and citus_ready
# stays empty): every node started as setup_pg_cluster starts PostgreSQL,
# with the citus extension in its ghbench database, the workers added to the
# coordinator; then citus_ready=1.
citus_ready=
# The cluster's shape (coordinator port, workers) is its nodes' data: a
# cluster made with another is refused, not half reshaped (workers left
# registered, or added again under another port). Checked before any server
# is touched: refused, setup fails (the cluster it made before runs on, still
# listed), never goes on as if there were no cluster.
citus_shape() { echo "port $CITUS_PORT, workers $CITUS_WORKERS"; }
check_citus_shape() {
    local shape_file=$GHBENCH_HOME/citus/shape
    [ "$CITUS" != off ] || return 0
    if [ -f "$shape_file" ] && [ "$(cat "$shape_file")" != "$(citus_shape)" ]; then
        die "Citus: the cluster in $GHBENCH_HOME/citus was made with $(cat "$shape_file"), not $(citus_shape): set GHBENCH_CITUS_PORT and GHBENCH_CITUS_WORKERS as it was made, or remove it (\`scripts/down.sh citus\`, then rm -rf $GHBENCH_HOME/citus: its data goes with it)"
    fi
}
setup_citus() {
    local bin node port psql_at settings
    if [ "$CITUS" = off ]; then log "Citus skipped: GHBENCH_CITUS=off"; return 0; fi
    bin=$(pg_bindir) || die "PostgreSQL not found (setup starts it before Citus)"
    if ! citus_installed "$bin"; then
        if [ -z "$CITUS_SOURCE" ]; then
            log "Citus skipped: not installed in $("$bin/pg_config" --pkglibdir), and GHBENCH_CITUS_SOURCE names no source archive to build it from"
            return 0
        fi
        build_citus "$bin" "$CITUS_SOURCE" || return 0
    fi
    check_citus_shape
    mkdir -p "$GHBENCH_HOME/citus" && echo "$(citus_shape)" >"$GHBENCH_HOME/citus/shape"
    # The cluster's memory in total: each node's cgroup (made from
    # MEMORY_BYTES) takes its share, here only.
    local MEMORY_BYTES=$MEMORY_BYTES
    if [ -n "$MEMORY_BYTES" ] && [ "$CITUS_MEMORY" = total ]; then
        MEMORY_BYTES=$(( MEMORY_BYTES / (CITUS_WORKERS + 1) / 4096 * 4096 ))
        [ "$MEMORY_BYTES" -ge $((64 << 20)) ] \
            || die "GHBENCH_MEMORY=$MEMORY shared among the cluster's $((CITUS_WORKERS + 1)) nodes (GHBENCH_CITUS_MEMORY=total) leaves each less than the 64MiB a server needs"
    fi
    # Every node: the single server's settings shared among them; Citus
    # loaded at start; nodes talk without TLS (loopback on one machine: a
    # cluster over a network keeps Citus's default, sslmode=require); no
    # statistics sent home (no internet here).
    # (Each share assigned on its own: a size refused must stop setup, which
    # it cannot from inside another command's substitution.)
    local buffers work cache maintenance
    buffers=$(citus_share shared_buffers "$PG_SHARED_BUFFERS")
    work=$(citus_share work_mem "$PG_WORK_MEM")
    cache=$(citus_share effective_cache_size "$PG_EFFECTIVE_CACHE_SIZE")
    maintenance=$(citus_share maintenance_work_mem "$PG_MAINTENANCE_WORK_MEM")
    settings="$(pg_tuning "$buffers" "$work" "$cache" "$maintenance")
shared_preload_libraries = 'citus'
citus.node_conninfo = 'sslmode=disable'
citus.max_shared_pool_size = 80
citus.enable_statistics_collection = off"
    for node in $(citus_nodes); do
        port=$(citus_port "$node")
        setup_pg_cluster "Citus $node" "citus-$node" "$GHBENCH_HOME/citus/$node" "$port" GHBENCH_CITUS_PORT \
            "$(printf '%s' "$GHBENCH_HOME" | md5sum | cut -c1-12)-citus-$node" "$settings"
        # (Its notice that the extension exists said nothing setup needs to say.)
        PGOPTIONS='-c client_min_messages=warning' "$bin/psql" -h 127.0.0.1 -p "$port" -U ghbench -d ghbench -v ON_ERROR_STOP=1 -qAtc "CREATE EXTENSION IF NOT EXISTS citus" >/dev/null \
            || die "could not create the citus extension on Citus $node (log: $GHBENCH_HOME/citus/$node/server.log)"
    done
    psql_at=("$bin/psql" -h 127.0.0.1 -p "$CITUS_PORT" -U ghbench -d ghbench -v ON_ERROR_STOP=1 -qAt)
    "${psql_at[@]}" -c "SELECT citus_set_coordinator_host('127.0.0.1', $CITUS_PORT)" >/dev/null \
        || die "could not name the Citus coordinator's address"
    for node in $(citus_nodes); do
        [ "$node" != coordinator ] || continue
        port=$(citus_port "$node")
        "${psql_at[@]}" -c "SELECT citus_add_node('127.0.0.1', $port) WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE nodename = '127.0.0.1' AND nodeport = $port)" >/dev/null \
            || die "could not add Citus $node (127.0.0.1:$port) to the coordinator"
    done
    # Citus's columnar access method (the citus-tuned setup's table) is an
    # extension of its own; created on the coordinator once the workers are
    # in, Citus creates it on each of them. A build without it skips it.
    if [ "$("${psql_at[@]}" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'citus_columnar'")" = 1 ]; then
        PGOPTIONS='-c client_min_messages=warning' "${psql_at[@]}" -c "CREATE EXTENSION IF NOT EXISTS citus_columnar" >/dev/null \
            || die "could not create the citus_columnar extension on the Citus coordinator (log: $GHBENCH_HOME/citus/coordinator/server.log)"
    else
        log "Citus: this build has no citus_columnar extension: the citus-tuned setup (columnar) cannot load"
    fi
    log "Citus $("${psql_at[@]}" -c "SELECT split_part(citus_version(), ' ', 2)") ready: coordinator 127.0.0.1:$CITUS_PORT, $CITUS_WORKERS workers"
    citus_ready=1
}
