#!/usr/bin/env bash
# nbd-bench.sh -- compare replagentd against nbdkit (file plugin) and qemu-nbd
# serving the same 1 GiB raw file over a Unix-socket NBD connection, and
# replagentd alone (1r) against replagentd with 2 or 3 replicas (2r, 3r: 2 or
# 3 daemons on this machine replicating over 127.0.0.1).
#
# Run by hand (not by CI):   bench/nbd-bench.sh          (~12-15 min)
#                            QUICK=1 bench/nbd-bench.sh  (~3-4 min)
#
# Client: QEMU's own NBD client via `qemu-img bench` (primary table) and,
# unless FIO=0, fio's libnbd-based `nbd` ioengine (second table).
#
# Workloads (6): 4k random write/read at QD1 and QD32, 1M sequential
# write/read at QD ${SEQ_DEPTH}.  qemu-img bench has no random mode: "random"
# means a fixed stride of RAND_STRIDE_BLOCKS 4k blocks (an odd number, hence
# coprime with the 2^18 blocks of a 1 GiB export), which visits every block
# once per cycle in a scattered order.  fio uses its real random generator.
#
# Every server sees the same file on the same filesystem; before each server
# run the file is fsync'ed and read through once (page cache fully warm and
# clean), and a short untimed read runs through the server.  Dirty data from
# write workloads is fsync'ed (untimed) before the next workload.  Servers run
# in a rotating order across repetitions; each cell is the median of REPS.
#
# Environment knobs (defaults in brackets):
#   QUICK=1            short run: REPS=1, counts / 2, fio 1 s per workload
#   REPS [3]           repetitions per server (median is reported)
#   SERVERS ["replagentd replagentd-2r replagentd-3r nbdkit qemu-nbd"]
#                      subset / order of columns
#   FIO [1]            0 = skip the fio table
#   FIO_RUNTIME [3]    seconds per fio workload
#   SEQ_DEPTH [8]      queue depth of the 1M sequential workloads
#   N_RAND_QD1 [60000] N_RAND_QD32 [200000] N_SEQ [6000]  qemu-img counts
#   FLUSH_INTERVAL     if set, qemu-img write runs flush every N requests
#   RUN_TIMEOUT [120]  seconds before one measurement is abandoned ("t/o")
#   NBDKIT QEMU_NBD QEMU_IMG FIO_BIN
#   REPL_CONNECT_TIMEOUT [20]  seconds for all replication links to connect
#   NBDKIT_THREADS [16] (= nbdkit's default)   QEMU_NBD_SHARED [8] (-e)
#   REPLAGENTD_IO_THREADS [16]
#   KEEP_LOGS=1        print server logs' tails at the end
#
# The cost of the metrics (metrics-listen, replication/stats.c), in one run:
#   REPLAGENTD_NOSTATS=/path/to/replagentd-built-from-2dd2787 \
#   SERVERS="replagentd-nostats replagentd replagentd-metrics" FIO=0 \
#       bench/nbd-bench.sh
# replagentd-nostats is a binary without the engine's counters (any build of
# a commit before them); replagentd counts (the counters are always on) but
# serves no /metrics; replagentd-metrics also serves /metrics on loopback
# and is scraped every METRICS_SCRAPE_INTERVAL [0.5] s meanwhile (a busy
# Prometheus scrapes every 15 s).  Both get ratio columns against
# replagentd-nostats when it runs.
#
# Replicated columns (replagentd-2r, replagentd-3r): nodes n1..nN made by
# tests/functions.sh's cluster_config (own config and state dir, fresh per
# start, one shared key, replication over 127.0.0.1 on free ports), each
# with a copy of the prepared file (see start_repl: no initial sync).  Once
# every node reports every peer link "Connected", n1 is promoted and
# benchmarked through its NBD socket.  Processes and the temp dir are
# tests/functions.sh's too (tracked, stopped by PID, removed at exit).  After the tables, the 4k
# write QD1 latency (1e6 / IOPS) of 1r, 2r and 3r is printed next to one
# loopback TCP round trip measured with python3.
#
# Adding a server: write srv_have_X, srv_start_X and srv_stop_X (srv_start_X
# sets SERVER_PID, SERVER_SOCK and, if it does not serve $IMG itself,
# SERVER_FILES; srv_stop_X
# stops by PID), add X to ALL_SERVERS and LABEL[X].  Every server whose name
# starts with "replagentd" gets ratio columns: against RATIO_VS[X] if set and
# benchmarked (2r/1r, 3r/1r), else against each of BASELINES.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    REPS=${REPS:-1}
    FIO_RUNTIME=${FIO_RUNTIME:-1}
    scale=2
else
    REPS=${REPS:-3}
    FIO_RUNTIME=${FIO_RUNTIME:-3}
    scale=1
fi
N_RAND_QD1=${N_RAND_QD1:-$((60000 / scale))}
N_RAND_QD32=${N_RAND_QD32:-$((200000 / scale))}
N_SEQ=${N_SEQ:-$((6000 / scale))}
SEQ_DEPTH=${SEQ_DEPTH:-8}
FIO=${FIO:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
FLUSH_INTERVAL=${FLUSH_INTERVAL:-}
RAND_STRIDE_BLOCKS=${RAND_STRIDE_BLOCKS:-104729}
KEEP_LOGS=${KEEP_LOGS:-0}

REPL_CONNECT_TIMEOUT=${REPL_CONNECT_TIMEOUT:-20}
NBDKIT=${NBDKIT:-nbdkit}
QEMU_NBD=${QEMU_NBD:-qemu-nbd}
QEMU_IMG=${QEMU_IMG:-qemu-img}
FIO_BIN=${FIO_BIN:-fio}
NBDKIT_THREADS=${NBDKIT_THREADS:-16}
QEMU_NBD_SHARED=${QEMU_NBD_SHARED:-8}
REPLAGENTD_IO_THREADS=${REPLAGENTD_IO_THREADS:-16}
REPLAGENTD_NOSTATS=${REPLAGENTD_NOSTATS:-}
METRICS_SCRAPE_INTERVAL=${METRICS_SCRAPE_INTERVAL:-0.5}

EXPORT=bench
SIZE_BYTES=$((1024 * 1024 * 1024))

ALL_SERVERS=(replagentd replagentd-2r replagentd-3r nbdkit qemu-nbd)
BASELINES=(nbdkit qemu-nbd)
read -r -a SERVER_LIST <<< "${SERVERS:-${ALL_SERVERS[*]}}"
declare -A LABEL=([replagentd]=replagentd [replagentd-2r]=replagentd-2r
                  [replagentd-3r]=replagentd-3r [nbdkit]=nbdkit [qemu-nbd]=qemu-nbd
                  [replagentd-nostats]=nostats [replagentd-metrics]=metrics)
# Ratio columns of the replicated variants: against 1r, with short headers.
# The metrics variants: against the binary without counters, if it runs.
declare -A RATIO_VS=([replagentd-2r]=replagentd [replagentd-3r]=replagentd
                     [replagentd]=replagentd-nostats [replagentd-metrics]=replagentd-nostats)
declare -A SHORT=([replagentd]=1r [replagentd-2r]=2r [replagentd-3r]=3r
                  [replagentd-nostats]=nostats [replagentd-metrics]=metrics)

# workload id -> "rw kind bufsize depth count unit"
WORKLOADS=(randwrite_qd1 randwrite_qd32 randread_qd1 randread_qd32 seqwrite seqread)
declare -A WL=(
    [randwrite_qd1]="write rand 4096 1 $N_RAND_QD1 IOPS"
    [randwrite_qd32]="write rand 4096 32 $N_RAND_QD32 IOPS"
    [randread_qd1]="read rand 4096 1 $N_RAND_QD1 IOPS"
    [randread_qd32]="read rand 4096 32 $N_RAND_QD32 IOPS"
    [seqwrite]="write seq 1048576 $SEQ_DEPTH $N_SEQ MiB/s"
    [seqread]="read seq 1048576 $SEQ_DEPTH $N_SEQ MiB/s"
)
declare -A WL_NAME=(
    [randwrite_qd1]="4k rand write QD1 (IOPS)"
    [randwrite_qd32]="4k rand write QD32 (IOPS)"
    [randread_qd1]="4k rand read QD1 (IOPS)"
    [randread_qd32]="4k rand read QD32 (IOPS)"
    [seqwrite]="1M seq write QD$SEQ_DEPTH (MiB/s)"
    [seqread]="1M seq read QD$SEQ_DEPTH (MiB/s)"
)

declare -A RES=()        # "client|server|workload" -> space-separated values
declare -A UNAVAIL=()    # server -> reason
IMG=
SERVER_PID=
SERVER_SOCK=
SERVER_FILES=()          # the backing file(s) of the running server
REPL_NODES=()            # nodes of the running replicated variant (none: not one)
REPL_WARN=0              # warning/error lines in its logs so far
REPL_MARK=               # "!" if the last measurement saw link trouble


# ------------------------------------------------------------- processes --

# Everything this script starts is tracked (tests/functions.sh: track_pid)
# and stopped by PID at the end, however it ends, with TESTDIR removed.
# end_pid PID: stop one now (SIGTERM, then SIGKILL after 10 s).
end_pid() {
    [ -n "$1" ] || return 0
    stop_pid "$1" 10
    untrack_pid "$1"
}

# ---------------------------------------------------------------- helpers --

have_cmd() { command -v "$1" >/dev/null 2>&1; }

uri_for() { printf 'nbd+unix:///%s?socket=%s' "$EXPORT" "$1"; }

# wait_ready PID SOCK LOGFILE: wait until the server answers an NBD open.
wait_ready() {
    local pid=$1 sock=$2 logf=$3 i
    for ((i = 0; i < 150; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "  server pid $pid exited during startup; log tail:"
            tail -n 20 "$logf" >&2 || true
            wait "$pid" 2>/dev/null || true
            untrack_pid "$pid"
            return 1
        fi
        if [ -S "$sock" ] &&
           timeout 5 "$QEMU_IMG" info -f raw "$(uri_for "$sock")" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    log "  server pid $pid not ready after 15 s; log tail:"
    tail -n 20 "$logf" >&2 || true
    return 1
}

# fresh_dir DIR: per-start directory under TESTDIR (sockets, logs, state);
# servers do not always unlink their socket on exit.
fresh_dir() {
    case $1 in "$TESTDIR"/?*) rm -rf -- "$1" ;; esac
    mkdir -p "$1"
}

# Bring the backing file to the same state for every server: clean in the
# page cache and fully cached.
settle_cache() {
    sync "$IMG"
    cat "$IMG" >/dev/null
}

# ---------------------------------------------------------- server: nbdkit --

srv_have_nbdkit() { have_cmd "$NBDKIT" || { UNAVAIL[nbdkit]="$NBDKIT not found"; return 1; }; }

srv_start_nbdkit() {
    local d=$TESTDIR/nbdkit
    fresh_dir "$d"
    SERVER_SOCK=$d/nbd.sock
    # file plugin, default cache (page cache), default fadvise; --threads
    # 16 is nbdkit's default, spelled out for the record.
    "$NBDKIT" -f -U "$SERVER_SOCK" --threads "$NBDKIT_THREADS" \
        file file="$IMG" 2>"$d/log" &
    SERVER_PID=$!
    track_pid "$SERVER_PID"
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

srv_stop_nbdkit() { end_pid "$SERVER_PID"; }

# -------------------------------------------------------- server: qemu-nbd --

srv_have_qemu_nbd() { have_cmd "$QEMU_NBD" || { UNAVAIL[qemu-nbd]="$QEMU_NBD not found"; return 1; }; }

srv_start_qemu_nbd() {
    local d=$TESTDIR/qemu-nbd
    fresh_dir "$d"
    SERVER_SOCK=$d/nbd.sock
    # buffered I/O like replagentd (FLUSH -> fdatasync); -t: keep serving
    # after a client disconnects; -e: allow N connections (multi-conn).
    "$QEMU_NBD" -k "$SERVER_SOCK" -f raw -x "$EXPORT" --cache=writeback \
        --aio=threads -t -e "$QEMU_NBD_SHARED" "$IMG" 2>"$d/log" &
    SERVER_PID=$!
    track_pid "$SERVER_PID"
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

srv_stop_qemu_nbd() { end_pid "$SERVER_PID"; }

# ------------------------------------------------------ server: replagentd --

srv_have_replagentd() {
    [ -x "$REPLAGENTD" ] || { UNAVAIL[replagentd]="$REPLAGENTD not built"; return 1; }
}

# write_replagentd_conf DIR BACKING [NODE KEY-FILE REPLICA-LINE...]: config
# DIR/replagentd.conf, sockets and state in DIR.  For the replicated variants
# NODE and KEY-FILE go into [global], the replica lines (e.g. "replica = n2
# 127.0.0.1:7790") into the volume section.
write_replagentd_conf() {
    local d=$1 backing=$2 node=${3:-} key=${4:-} line
    shift $(($# < 4 ? $# : 4))
    mkdir -p "$d/state"
    {
        printf '[global]\n'
        [ -n "$node" ] && printf 'node = %s\n' "$node"
        printf 'nbd-socket = %s\n' "$d/nbd.sock"
        printf 'control-socket = %s\n' "$d/control.sock"
        printf 'state-dir = %s\n' "$d/state"
        printf 'pidfile = %s\n' "$d/pid"
        [ -n "$key" ] && printf 'key-file = %s\n' "$key"
        printf '[volume %s]\n' "$EXPORT"
        printf 'backing = %s\n' "$backing"
        printf 'size = 1G\n'
        printf 'io-threads = %s\n' "$REPLAGENTD_IO_THREADS"
        for line in "$@"; do
            printf '%s\n' "$line"
        done
    } >"$d/replagentd.conf"
}

srv_start_replagentd() {
    local d=$TESTDIR/replagentd
    fresh_dir "$d"
    write_replagentd_conf "$d" "$IMG"
    SERVER_SOCK=$d/nbd.sock
    "$REPLAGENTD" -f -c "$d/replagentd.conf" 2>"$d/log" &
    SERVER_PID=$!
    track_pid "$SERVER_PID"
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

srv_stop_replagentd() { end_pid "$SERVER_PID"; }

# ------------------------ server: replagentd-nostats, replagentd-metrics --

srv_have_replagentd_nostats() {
    [[ -n $REPLAGENTD_NOSTATS && -x $REPLAGENTD_NOSTATS ]] ||
        { UNAVAIL[replagentd-nostats]="REPLAGENTD_NOSTATS not set to a binary"; return 1; }
}

srv_start_replagentd_nostats() {
    local d=$TESTDIR/replagentd-nostats
    fresh_dir "$d"
    write_replagentd_conf "$d" "$IMG"
    SERVER_SOCK=$d/nbd.sock
    "$REPLAGENTD_NOSTATS" -f -c "$d/replagentd.conf" 2>"$d/log" &
    SERVER_PID=$!
    track_pid "$SERVER_PID"
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

srv_stop_replagentd_nostats() { end_pid "$SERVER_PID"; }

srv_have_replagentd_metrics() {
    srv_have_replagentd || { UNAVAIL[replagentd-metrics]=${UNAVAIL[replagentd]}; return 1; }
    have_cmd curl || { UNAVAIL[replagentd-metrics]="curl not found"; return 1; }
}

SCRAPER_PID=
srv_start_replagentd_metrics() {
    local d=$TESTDIR/replagentd-metrics port url
    fresh_dir "$d"
    write_replagentd_conf "$d" "$IMG"
    port=$(free_port)
    url=http://127.0.0.1:$port/metrics
    sed -i "/^\[global\]/a metrics-listen = 127.0.0.1:$port" "$d/replagentd.conf"
    SERVER_SOCK=$d/nbd.sock
    "$REPLAGENTD" -f -c "$d/replagentd.conf" 2>"$d/log" &
    SERVER_PID=$!
    track_pid "$SERVER_PID"
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log" || return 1
    curl -sf -o /dev/null "$url" || { log "  GET $url failed"; return 1; }
    while curl -sf -o /dev/null "$url"; do sleep "$METRICS_SCRAPE_INTERVAL"; done &
    SCRAPER_PID=$!
    track_pid "$SCRAPER_PID"
}

srv_stop_replagentd_metrics() {
    end_pid "$SCRAPER_PID"
    SCRAPER_PID=
    end_pid "$SERVER_PID"
}

# ---------------------------------- server: replagentd-2r, replagentd-3r --

have_repl() {              # have_repl NAME
    [ -x "$REPLAGENTD" ] || { UNAVAIL[$1]="$REPLAGENTD not built"; return 1; }
    [ -x "$REPLAGENT" ] || { UNAVAIL[$1]="$REPLAGENT not built"; return 1; }
    have_cmd "$PYTHON" || { UNAVAIL[$1]="$PYTHON not found"; return 1; }
}
srv_have_replagentd_2r() { have_repl replagentd-2r; }
srv_have_replagentd_3r() { have_repl replagentd-3r; }

# repl_connected TIMEOUT: every node of the running variant shows every
# other one Connected (waits up to TIMEOUT s; 1 if not).
repl_connected() {
    local n
    for n in "${REPL_NODES[@]}"; do
        replagentd_alive "$n" || { log "  replagentd $n exited"; return 1; }
        wait_status "$n" "$1" "len(p) == ${#REPL_NODES[@]} - 1 and all(x[\"link\"] == \"Connected\" for x in p.values())" \
            >/dev/null 2>&1 || { log "  $n: links not all Connected after ${1}s"; return 1; }
    done
}

# start_repl N: nodes n1..nN (tests/functions.sh's cluster_config on
# 127.0.0.1), n1 promoted; SERVER_* describe n1.  Each replica is a plain
# copy of the prepared file (dd: no reflink, no shared extents), clean and
# warm in the page cache, under metadata of its own: the nodes first start
# blank (the daemon creates the backing), connect and stop, then the copy
# replaces the backing, so the copies count as in sync (no initial sync).
start_repl() {
    local n=$1 i nd
    REPL_NODES=()
    for ((i = 1; i <= n; i++)); do REPL_NODES+=("n$i"); done
    cluster_config -v "$EXPORT" -s 1G "${REPL_NODES[@]}"
    SERVER_FILES=()
    for nd in "${REPL_NODES[@]}"; do
        volume_option "$nd" "io-threads = $REPLAGENTD_IO_THREADS"
        rm -rf -- "${NODE_DIR[$nd]}/state" "${NODE_BACKING[$nd]}"
        SERVER_FILES+=("${NODE_BACKING[$nd]}")
    done
    for nd in "${REPL_NODES[@]}"; do start_node "$nd"; done
    repl_connected "$REPL_CONNECT_TIMEOUT" || return 1
    for nd in "${REPL_NODES[@]}"; do stop_node "$nd" >/dev/null; done
    for nd in "${REPL_NODES[@]}"; do
        dd if="$IMG" of="${NODE_BACKING[$nd]}" bs=16M conv=notrunc status=none || return 1
    done
    sync "${SERVER_FILES[@]}"
    cat "${SERVER_FILES[@]}" >/dev/null
    for nd in "${REPL_NODES[@]}"; do start_node "$nd"; done
    repl_connected "$REPL_CONNECT_TIMEOUT" || return 1
    promote n1 >/dev/null
    SERVER_PID=$(replagentd_pid n1)
    SERVER_SOCK=${NODE_NBD_SOCK[n1]}
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$(daemon_log n1)" || return 1
    REPL_WARN=$(repl_warnings)
}

# repl_warnings: warning and error lines in the running variant's logs
# (since their start).
repl_warnings() {
    local nd
    for nd in "${REPL_NODES[@]}"; do cat "$(daemon_log "$nd")"; done 2>/dev/null |
        grep -cE '^[^ ]+ [^ ]+ [^ ]+ [^ ]+ (warning|err|error|crit|alert|emerg):' || true
}

# repl_check WHAT: after a measurement of a replicated variant, set
# REPL_MARK to "!" if a daemon logged a warning or error meanwhile (e.g. a
# peer dropped and reconnected) or if the links are not all Connected again
# within 5 s; such a number was not measured with N healthy replicas.
repl_check() {
    local now nd
    REPL_MARK=
    [ "${#REPL_NODES[@]}" -gt 0 ] || return 0
    repl_connected 5 || REPL_MARK='!'
    now=$(repl_warnings)
    if [ "$now" != "$REPL_WARN" ]; then
        REPL_MARK='!'
        log "  replication trouble during $1; first new daemon warnings:"
        for nd in "${REPL_NODES[@]}"; do cat "$(daemon_log "$nd")"; done 2>/dev/null |
            grep -E '^[^ ]+ [^ ]+ [^ ]+ [^ ]+ (warning|err|error|crit|alert|emerg):' |
            sort | tail -n +$((REPL_WARN + 1)) | head -n 2 | sed 's/^/    /' >&2 || true
    fi
    REPL_WARN=$now
}

# stop_repl: stop every node by PID, drop the replicas' files.
stop_repl() {
    local nd
    for nd in "${REPL_NODES[@]}"; do
        replagentd_alive "$nd" && stop_node "$nd" >/dev/null
        rm -f -- "${NODE_BACKING[$nd]}"
    done
    REPL_NODES=()
}

srv_start_replagentd_2r() { start_repl 2; }
srv_stop_replagentd_2r() { stop_repl; }
srv_start_replagentd_3r() { start_repl 3; }
srv_stop_replagentd_3r() { stop_repl; }

# ---------------------------------------------------------------- clients --

record() { RES["$1|$2|$3"]="${RES["$1|$2|$3"]:-} $4"; }

# qemu_img_run SOCK WORKLOAD -> prints the result value (IOPS or MiB/s),
# or "fail"/"t/o".
qemu_img_run() {
    local sock=$1 wl=$2 rw kind bs depth count unit out secs rc=0
    read -r rw kind bs depth count unit <<< "${WL[$wl]}"
    local args=(bench -f raw -t none -q -s "$bs" -d "$depth" -c "$count")
    [ "$kind" = rand ] && args+=(-S $((4096 * RAND_STRIDE_BLOCKS)))
    if [ "$rw" = write ]; then
        args+=(-w)
        if [ -n "$FLUSH_INTERVAL" ]; then
            args+=(--flush-interval=$((FLUSH_INTERVAL > depth ? FLUSH_INTERVAL : depth)))
        fi
    fi
    # -q suppresses the banner but not the "Run completed" line.
    out=$(timeout -k 5 "$RUN_TIMEOUT" "$QEMU_IMG" "${args[@]}" "$(uri_for "$sock")" 2>&1) || rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "t/o"; return; fi
    secs=$(sed -n 's/^Run completed in \([0-9.]*\) seconds.*/\1/p' <<< "$out")
    if [ "$rc" != 0 ] || [ -z "$secs" ]; then
        log "  qemu-img bench $wl failed (rc=$rc): $(tail -n 2 <<< "$out" | tr '\n' ' ')"
        echo fail
        return
    fi
    if [ "$unit" = IOPS ]; then
        awk -v c="$count" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? c / s : 0) }'
    else
        awk -v c="$count" -v b="$bs" -v s="$secs" \
            'BEGIN { printf "%.0f", (s > 0 ? c * b / 1048576 / s : 0) }'
    fi
}

# fio_run SOCK WORKLOAD: time-based run with fio's nbd (libnbd) engine.
fio_run() {
    local sock=$1 wl=$2 rw kind bs depth count unit mode out line rc=0
    read -r rw kind bs depth count unit <<< "${WL[$wl]}"
    if [ "$kind" = rand ]; then mode=rand$rw; else mode=$rw; fi
    out=$(timeout -k 5 "$RUN_TIMEOUT" "$FIO_BIN" --name="$wl" --ioengine=nbd \
        --uri="$(uri_for "$sock")" --rw="$mode" --bs="$bs" --iodepth="$depth" \
        --numjobs=1 --time_based --runtime="$FIO_RUNTIME" \
        --output-format=terse --terse-version=3 2>&1) || rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "t/o"; return; fi
    line=$(grep '^3;' <<< "$out" | head -n 1 || true)
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        log "  fio $wl failed (rc=$rc): $(tail -n 2 <<< "$out" | tr '\n' ' ')"
        echo fail
        return
    fi
    # terse v3: 7 read bw KiB/s, 8 read IOPS, 48 write bw KiB/s, 49 write IOPS
    awk -F';' -v rw="$rw" -v unit="$unit" '{
        if (unit == "IOPS") v = (rw == "read") ? $8 : $49;
        else                v = ((rw == "read") ? $7 : $48) / 1024;
        printf "%.0f", v }' <<< "$line"
}

bench_server() {            # bench_server NAME REP
    local s=$1 rep=$2 fn=${1//-/_} wl v rw
    settle_cache
    SERVER_FILES=("$IMG")
    REPL_NODES=()
    log "[rep $rep/$REPS] $s: starting"
    if ! "srv_start_$fn"; then
        log "  $s failed to start"
        for wl in "${WORKLOADS[@]}"; do
            record qemu-img "$s" "$wl" fail
            [ "$FIO" = 1 ] && record fio "$s" "$wl" fail
        done
        "srv_stop_$fn"
        return 0
    fi
    # Untimed warm-up through the server (connection/thread pools).
    timeout -k 5 "$RUN_TIMEOUT" "$QEMU_IMG" bench -f raw -t none -q -d 32 \
        -c 4000 -s 4096 "$(uri_for "$SERVER_SOCK")" >/dev/null 2>&1 || true
    for wl in "${WORKLOADS[@]}"; do
        read -r rw _ <<< "${WL[$wl]}"
        v=$(qemu_img_run "$SERVER_SOCK" "$wl")
        repl_check "$wl (qemu-img)"
        [[ $v =~ ^[0-9]+$ ]] && v+=$REPL_MARK
        record qemu-img "$s" "$wl" "$v"
        [ "$rw" = write ] && sync "${SERVER_FILES[@]}"
        if [ "$FIO" = 1 ]; then
            local fv
            fv=$(fio_run "$SERVER_SOCK" "$wl")
            repl_check "$wl (fio)"
            [[ $fv =~ ^[0-9]+$ ]] && fv+=$REPL_MARK
            record fio "$s" "$wl" "$fv"
            [ "$rw" = write ] && sync "${SERVER_FILES[@]}"
            log "  $(printf '%-28s qemu-img %9s   fio %9s' "${WL_NAME[$wl]}" "$v" "$fv")"
        else
            log "  $(printf '%-28s qemu-img %9s' "${WL_NAME[$wl]}" "$v")"
        fi
    done
    "srv_stop_$fn"
    if [ "$KEEP_LOGS" = 1 ]; then
        log "  --- $s log tail ---"
        tail -n 10 "$TESTDIR/$s"/log "$TESTDIR"/n*.log >&2 2>/dev/null || true
    fi
}

# ------------------------------------------------------------------ table --

# Values may carry marks: "*" some repetitions failed, "!" replication
# trouble during at least one repetition.  num_of strips them, marks_of
# keeps only them (in that order, each once).
num_of() { printf '%s' "${1%%[!0-9.]*}"; }
marks_of() {
    local all="$*" m=
    [[ $all == *'*'* ]] && m+='*'
    [[ $all == *'!'* ]] && m+='!'
    printf '%s' "$m"
}

median() {                 # median of numeric words; non-numeric -> passthru
    local w nums=() bad='' bang=''
    for w in "$@"; do
        if [[ $w =~ ^[0-9]+(\.[0-9]+)?(!?)$ ]]; then
            nums+=("${w%!}")
            [ -n "${BASH_REMATCH[2]}" ] && bang='!'
        else
            bad=$w
        fi
    done
    if [ "${#nums[@]}" = 0 ]; then echo "${bad:-n/a}"; return; fi
    printf '%s\n' "${nums[@]}" | sort -g |
        awk -v mark="${bad:+*}$bang" '{ a[NR] = $1 } END {
            m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
            printf "%.0f%s", m, mark }'
}

cell() {                   # cell CLIENT SERVER WL
    if [ -n "${UNAVAIL[$2]:-}" ]; then echo n/a; return; fi
    local raw=${RES["$1|$2|$3"]:-}
    [ -n "$raw" ] || { echo n/a; return; }
    # shellcheck disable=SC2086  # word splitting intended
    median $raw
}

ratio() {                  # ratio A B (marks are kept)
    local a b mark
    a=$(num_of "$1") b=$(num_of "$2") mark=$(marks_of "$1" "$2")
    if [[ $a =~ ^[0-9]+$ ]] && [[ $b =~ ^[0-9]+$ ]] && [ "$b" != 0 ]; then
        awk -v a="$a" -v b="$b" -v m="$mark" 'BEGIN { printf "%.2f%s", a / b, m }'
    else
        echo n/a
    fi
}

in_list() { [[ " ${SERVER_LIST[*]} " == *" $1 "* ]]; }

print_table() {            # print_table CLIENT TITLE
    local client=$1 title=$2 s b i wl hdr=() row
    local cols=("${SERVER_LIST[@]}")
    local pairs=() pair_hdr=()
    for s in "${SERVER_LIST[@]}"; do
        [[ $s == replagentd* ]] || continue
        b=${RATIO_VS[$s]:-}
        if [ -n "$b" ] && in_list "$b"; then
            pairs+=("$s/$b")
            pair_hdr+=("${SHORT[$s]:-$s}/${SHORT[$b]:-$b}")
            continue
        fi
        for b in "${BASELINES[@]}"; do
            if in_list "$b"; then
                pairs+=("$s/$b")
                pair_hdr+=("$s/$b")
            fi
        done
    done
    printf '\n%s\n' "$title"
    for s in "${cols[@]}"; do hdr+=("${LABEL[$s]:-$s}"); done
    hdr+=("${pair_hdr[@]}")
    row=$(printf '%-28s' "workload")
    for s in "${hdr[@]}"; do row+=$(printf ' %*s' "$(colw "$s")" "$s"); done
    printf '%s\n' "$row"
    for wl in "${WORKLOADS[@]}"; do
        row=$(printf '%-28s' "${WL_NAME[$wl]}")
        for s in "${cols[@]}"; do
            row+=$(printf ' %*s' "$(colw "${LABEL[$s]:-$s}")" "$(cell "$client" "$s" "$wl")")
        done
        for i in "${!pairs[@]}"; do
            b=${pairs[$i]}
            row+=$(printf ' %*s' "$(colw "${pair_hdr[$i]}")" \
                "$(ratio "$(cell "$client" "${b%%/*}" "$wl")" "$(cell "$client" "${b#*/}" "$wl")")")
        done
        printf '%s\n' "$row"
    done
}

# ------------------------------------------------- QD1 latency, loopback RTT --

# loopback_rtt_us: median round trip, in microseconds, of 10000 64-byte
# messages echoed between two python3 processes over 127.0.0.1 (TCP_NODELAY,
# after 1000 untimed ones).  Includes python's own per-message overhead, so
# it is an upper bound of what the kernel's loopback costs.
loopback_rtt_us() {
    "$PYTHON" - <<'EOF'
import os, socket, statistics, time
N, SIZE = 10000, 64

def recvn(c, n):
    buf = b""
    while len(buf) < n:
        chunk = c.recv(n - len(buf))
        if not chunk:
            return b""
        buf += chunk
    return buf

ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
pid = os.fork()
if pid == 0:
    try:
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            m = recvn(c, SIZE)
            if not m:
                break
            c.sendall(m)
    finally:
        os._exit(0)
c = socket.create_connection(ls.getsockname())
ls.close()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
msg, t = b"x" * SIZE, []
for i in range(1000 + N):
    t0 = time.perf_counter_ns()
    c.sendall(msg)
    if len(recvn(c, SIZE)) != SIZE:
        raise SystemExit("echo process went away")
    if i >= 1000:
        t.append(time.perf_counter_ns() - t0)
c.close()
os.waitpid(pid, 0)
print("%.1f" % (statistics.median(t) / 1000))
EOF
}

us_of() {                  # us_of IOPS-CELL: 1e6 / IOPS (marks kept), or n/a
    local v mark
    v=$(num_of "$1") mark=$(marks_of "$1")
    if [[ $v =~ ^[0-9]+$ ]] && [ "$v" != 0 ]; then
        awk -v v="$v" -v m="$mark" 'BEGIN { printf "%.1f%s", 1e6 / v, m }'
    else
        echo n/a
    fi
}

us_diff() {                # us_diff A B: A - B (marks kept), or n/a
    local a b mark
    a=$(num_of "$1") b=$(num_of "$2") mark=$(marks_of "$1" "$2")
    if [[ $a =~ ^[0-9.]+$ ]] && [[ $b =~ ^[0-9.]+$ ]]; then
        awk -v a="$a" -v b="$b" -v m="$mark" 'BEGIN { printf "%+.1f%s", a - b, m }'
    else
        echo n/a
    fi
}

# print_latency RTT: 4k write QD1 latency of 1r, 2r, 3r per client.
print_latency() {
    local rtt=$1 client l1 l2 l3 clients=(qemu-img)
    [ "$FIO" = 1 ] && clients+=(fio)
    printf '\n== 4k rand write QD1 latency, us per request (1e6 / median IOPS)\n'
    printf '%-12s %9s %9s %9s %9s %9s\n' client 1r 2r 3r 2r-1r 3r-1r
    for client in "${clients[@]}"; do
        l1=$(us_of "$(cell "$client" replagentd randwrite_qd1)")
        l2=$(us_of "$(cell "$client" replagentd-2r randwrite_qd1)")
        l3=$(us_of "$(cell "$client" replagentd-3r randwrite_qd1)")
        printf '%-12s %9s %9s %9s %9s %9s\n' "$client" "$l1" "$l2" "$l3" \
            "$(us_diff "$l2" "$l1")" "$(us_diff "$l3" "$l1")"
    done
    echo "loopback TCP round trip: ${rtt} us (median of 10000 x 64 B ping-pong between two"
    echo "  python3 processes over 127.0.0.1, TCP_NODELAY; python's overhead included)"
    echo "expect: 2r-1r <= one loopback round trip + the peer's 4k write (page cache)"
}

colw() { local n=${#1}; echo $((n < 10 ? 10 : n)); }

# ------------------------------------------------------------- machine info --

version_of() {             # first line of "$@", or "missing"
    if have_cmd "$1"; then "$@" 2>&1 | head -n 1; else echo missing; fi
}

print_facts() {
    local fs dev
    fs=$(findmnt -n -o FSTYPE -T "$TESTDIR" 2>/dev/null ||
         stat -f -c %T "$TESTDIR" 2>/dev/null || echo '?')
    dev=$(df -P "$TESTDIR" 2>/dev/null | awk 'NR == 2 { print $1 " on " $6 }')
    echo "== machine"
    echo "nproc:        $(nproc)"
    echo "cpu:          $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)"
    echo "memory:       $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel:       $(uname -sr)"
    echo "temp dir:     $TESTDIR ($fs, $dev)"
    echo "== versions"
    echo "qemu-img:     $(version_of "$QEMU_IMG" --version)"
    echo "qemu-nbd:     $(version_of "$QEMU_NBD" --version)"
    echo "nbdkit:       $(version_of "$NBDKIT" --version)"
    echo "fio:          $(version_of "$FIO_BIN" --version)"
    if [ -x "$REPLAGENTD" ]; then
        echo "replagentd:   $REPLAGENTD (git $(git -C "$TESTS_SRCDIR" describe --always --dirty 2>/dev/null || echo '?'), built $(date -r "$REPLAGENTD" '+%F %T'))"
    else
        echo "replagentd:   missing ($REPLAGENTD)"
    fi
    echo "== setup"
    echo "file:         1 GiB raw, random data, written once; same file for all servers"
    echo "              (2r/3r: a plain copy of it per node, made before each start)"
    echo "cache:        per server: fsync + full read (warm, clean); fsync after each write workload (untimed)"
    echo "replagentd:   buffered I/O, FLUSH=fdatasync, io-threads=$REPLAGENTD_IO_THREADS"
    echo "2r, 3r:       2 or 3 replagentd on this machine (own dir, config, state, file),"
    echo "              replication over 127.0.0.1, shared key; n1 promoted after all links"
    echo "              are Connected; the client talks to n1; no initial sync (start_repl)"
    echo "nbdkit:       file plugin, default cache/fadvise, --threads $NBDKIT_THREADS (nbdkit's default)"
    echo "qemu-nbd:     --cache=writeback --aio=threads -e $QEMU_NBD_SHARED -t"
    echo "client:       qemu-img bench -t none (QEMU NBD client, 1 connection); counts: rand QD1 $N_RAND_QD1, rand QD32 $N_RAND_QD32, seq $N_SEQ x 1M"
    echo "              random = stride of $RAND_STRIDE_BLOCKS blocks (4k) mod 1 GiB${FLUSH_INTERVAL:+; flush every $FLUSH_INTERVAL writes}"
    [ "$FIO" = 1 ] && echo "              fio ioengine=nbd (libnbd, 1 job, 1 connection), ${FIO_RUNTIME}s time-based, randrepeat"
    echo "reps:         $REPS (median), server order rotated per rep; QUICK=$QUICK"
    echo "note:         client and servers share the same $(nproc) CPUs"
}

# ------------------------------------------------------------------- main --

main() {
    local s avail=() rep i n
    have_cmd "$QEMU_IMG" || { log "qemu-img not found: it is the benchmark client"; exit 1; }
    if [ "$FIO" = 1 ] && ! have_cmd "$FIO_BIN"; then
        log "fio not found: skipping the fio table"
        FIO=0
    fi
    for s in "${SERVER_LIST[@]}"; do
        if "srv_have_${s//-/_}"; then avail+=("$s"); else log "skipping $s: ${UNAVAIL[$s]}"; fi
    done
    [ "${#avail[@]}" -gt 0 ] || { log "no server available"; exit 1; }

    IMG=$TESTDIR/disk.img
    log "writing 1 GiB of random data to $IMG ..."
    head -c "$SIZE_BYTES" /dev/urandom >"$IMG"
    sync "$IMG"

    print_facts

    n=${#avail[@]}
    for ((rep = 1; rep <= REPS; rep++)); do
        for ((i = 0; i < n; i++)); do
            bench_server "${avail[$(((i + rep - 1) % n))]}" "$rep"
        done
    done

    local tables rtt=
    if in_list replagentd && { in_list replagentd-2r || in_list replagentd-3r; } &&
       have_cmd "$PYTHON"; then
        log "measuring one loopback TCP round trip ..."
        rtt=$(loopback_rtt_us) || rtt=n/a
    fi
    tables=$(print_table qemu-img "== client: qemu-img bench (QEMU NBD client); median of $REPS")
    if [ "$FIO" = 1 ]; then
        tables+=$'\n'$(print_table fio "== client: fio ioengine=nbd (libnbd); median of $REPS")
    fi
    [ -n "$rtt" ] && tables+=$'\n'$(print_latency "$rtt")
    printf '%s\n\n' "$tables"
    echo "ratios A/B > 1.00: A faster (1r = replagentd, 2r/3r = with 2/3 replicas)."
    echo "n/a: server binary missing or every run failed."
    if [[ $tables == *'*'* ]]; then
        echo "*: some repetitions failed or timed out (see log above); median of the others."
    fi
    if [[ $tables == *'!'* ]]; then
        echo "!: replication trouble during at least one repetition (a daemon logged a warning,"
        echo "   e.g. a peer dropped, or the links were not Connected right after the run):"
        echo "   not a measurement of N healthy replicas (see the log above, KEEP_LOGS=1)."
    fi
}

main "$@"
