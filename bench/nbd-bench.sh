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
#   BENCH_DIR [$TMPDIR or /tmp]  where the temp dir (and the 1 GiB file) go
#   REPLAGENTD [build/agent/replagentd]  NBDKIT QEMU_NBD QEMU_IMG FIO_BIN
#   REPLAGENT [build/agent/replagent]  (CLI: status/promote, 2r and 3r)
#   PYTHON [python3]   free ports, status parsing, loopback round trip
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
# Replicated columns (replagentd-2r, replagentd-3r): nodes n1..nN, each in
# WORKDIR/replagentd-Nr/nI with its own config, state dir (fresh per start)
# and copy of the prepared file (copied before each start, so all replicas
# start identical; with fresh metadata they count as blank: no initial
# sync), one shared 32-byte key file (0600), replication over 127.0.0.1 on
# free ports.  Once every node reports every peer link "Connected", n1 is
# promoted and benchmarked through its NBD socket.  After the tables, the 4k
# write QD1 latency (1e6 / IOPS) of 1r, 2r and 3r is printed next to one
# loopback TCP round trip measured with python3.
#
# Adding a server: write have_X, start_X and stop_X (start_X sets SERVER_PID,
# SERVER_SOCK and, if it does not serve $IMG itself, SERVER_FILES; stop_X
# stops by PID), add X to ALL_SERVERS and LABEL[X].  Every server whose name
# starts with "replagentd" gets ratio columns: against RATIO_VS[X] if set and
# benchmarked (2r/1r, 3r/1r), else against each of BASELINES.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd -- "$SCRIPT_DIR/.." && pwd)

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

REPLAGENTD=${REPLAGENTD:-$REPO_DIR/build/agent/replagentd}
REPLAGENT=${REPLAGENT:-$REPO_DIR/build/agent/replagent}
PYTHON=${PYTHON:-python3}
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
STARTED_PIDS=()
WORKDIR=
IMG=
SERVER_PID=
SERVER_SOCK=
SERVER_FILES=()          # the backing file(s) of the running server
REPL_PIDS=()             # daemons of the running replicated variant
REPL_DIR=                # its directory (empty: not a replicated variant)
REPL_N=0                 # its number of nodes
REPL_WARN=0              # warning/error lines in its logs so far
REPL_MARK=               # "!" if the last measurement saw link trouble

log() { printf '%s\n' "$*" >&2; }

# ---------------------------------------------------------------- cleanup --

kill_pid() {            # kill_pid PID: SIGTERM, wait up to 10 s, then SIGKILL
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "  pid $pid ignored SIGTERM for 10 s, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
}

forget_pid() {
    local p keep=()
    for p in "${STARTED_PIDS[@]}"; do
        [ "$p" = "$1" ] || keep+=("$p")
    done
    STARTED_PIDS=("${keep[@]}")
}

cleanup() {
    set +e
    local p
    for p in "${STARTED_PIDS[@]}"; do
        kill_pid "$p"
    done
    if [ -n "$WORKDIR" ] && [ -d "$WORKDIR" ]; then
        rm -rf -- "$WORKDIR"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
            forget_pid "$pid"
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

# fresh_dir DIR: per-start directory under WORKDIR (sockets, logs, state);
# servers do not always unlink their socket on exit.
fresh_dir() {
    case $1 in "$WORKDIR"/?*) rm -rf -- "$1" ;; esac
    mkdir -p "$1"
}

# Bring the backing file to the same state for every server: clean in the
# page cache and fully cached.
settle_cache() {
    sync "$IMG"
    cat "$IMG" >/dev/null
}

# ---------------------------------------------------------- server: nbdkit --

have_nbdkit() { have_cmd "$NBDKIT" || { UNAVAIL[nbdkit]="$NBDKIT not found"; return 1; }; }

start_nbdkit() {
    local d=$WORKDIR/nbdkit
    fresh_dir "$d"
    SERVER_SOCK=$d/nbd.sock
    # file plugin, default cache (page cache), default fadvise; --threads
    # 16 is nbdkit's default, spelled out for the record.
    "$NBDKIT" -f -U "$SERVER_SOCK" --threads "$NBDKIT_THREADS" \
        file file="$IMG" 2>"$d/log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

stop_nbdkit() { kill_pid "$SERVER_PID"; }

# -------------------------------------------------------- server: qemu-nbd --

have_qemu_nbd() { have_cmd "$QEMU_NBD" || { UNAVAIL[qemu-nbd]="$QEMU_NBD not found"; return 1; }; }

start_qemu_nbd() {
    local d=$WORKDIR/qemu-nbd
    fresh_dir "$d"
    SERVER_SOCK=$d/nbd.sock
    # buffered I/O like replagentd (FLUSH -> fdatasync); -t: keep serving
    # after a client disconnects; -e: allow N connections (multi-conn).
    "$QEMU_NBD" -k "$SERVER_SOCK" -f raw -x "$EXPORT" --cache=writeback \
        --aio=threads -t -e "$QEMU_NBD_SHARED" "$IMG" 2>"$d/log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

stop_qemu_nbd() { kill_pid "$SERVER_PID"; }

# ------------------------------------------------------ server: replagentd --

have_replagentd() {
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

start_replagentd() {
    local d=$WORKDIR/replagentd
    fresh_dir "$d"
    write_replagentd_conf "$d" "$IMG"
    SERVER_SOCK=$d/nbd.sock
    "$REPLAGENTD" -f -c "$d/replagentd.conf" 2>"$d/log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

stop_replagentd() { kill_pid "$SERVER_PID"; }

# ------------------------ server: replagentd-nostats, replagentd-metrics --

have_replagentd_nostats() {
    [[ -n $REPLAGENTD_NOSTATS && -x $REPLAGENTD_NOSTATS ]] ||
        { UNAVAIL[replagentd-nostats]="REPLAGENTD_NOSTATS not set to a binary"; return 1; }
}

start_replagentd_nostats() {
    local d=$WORKDIR/replagentd-nostats
    fresh_dir "$d"
    write_replagentd_conf "$d" "$IMG"
    SERVER_SOCK=$d/nbd.sock
    "$REPLAGENTD_NOSTATS" -f -c "$d/replagentd.conf" 2>"$d/log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log"
}

stop_replagentd_nostats() { kill_pid "$SERVER_PID"; }

have_replagentd_metrics() {
    have_replagentd || { UNAVAIL[replagentd-metrics]=${UNAVAIL[replagentd]}; return 1; }
    have_cmd curl || { UNAVAIL[replagentd-metrics]="curl not found"; return 1; }
}

SCRAPER_PID=
start_replagentd_metrics() {
    local d=$WORKDIR/replagentd-metrics port url
    fresh_dir "$d"
    write_replagentd_conf "$d" "$IMG"
    port=$(free_ports 1)
    url=http://127.0.0.1:$port/metrics
    sed -i "/^\[global\]/a metrics-listen = 127.0.0.1:$port" "$d/replagentd.conf"
    SERVER_SOCK=$d/nbd.sock
    "$REPLAGENTD" -f -c "$d/replagentd.conf" 2>"$d/log" &
    SERVER_PID=$!
    STARTED_PIDS+=("$SERVER_PID")
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/log" || return 1
    curl -sf -o /dev/null "$url" || { log "  GET $url failed"; return 1; }
    while curl -sf -o /dev/null "$url"; do sleep "$METRICS_SCRAPE_INTERVAL"; done &
    SCRAPER_PID=$!
    STARTED_PIDS+=("$SCRAPER_PID")
}

stop_replagentd_metrics() {
    kill_pid "$SCRAPER_PID"
    SCRAPER_PID=
    kill_pid "$SERVER_PID"
}

# ---------------------------------- server: replagentd-2r, replagentd-3r --

have_repl() {              # have_repl NAME
    [ -x "$REPLAGENTD" ] || { UNAVAIL[$1]="$REPLAGENTD not built"; return 1; }
    [ -x "$REPLAGENT" ] || { UNAVAIL[$1]="$REPLAGENT not built"; return 1; }
    have_cmd "$PYTHON" || { UNAVAIL[$1]="$PYTHON not found"; return 1; }
}
have_replagentd_2r() { have_repl replagentd-2r; }
have_replagentd_3r() { have_repl replagentd-3r; }

# free_ports N: N distinct TCP ports that 127.0.0.1 can bind now, below the
# ephemeral range (so that outgoing connections do not take them meanwhile).
free_ports() {
    "$PYTHON" - "$1" <<'EOF'
import random, socket, sys
want, ports = int(sys.argv[1]), []
for _ in range(500):
    p = random.randint(20000, 32000)
    if p in ports:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    ports.append(p)
    if len(ports) == want:
        break
print(" ".join(map(str, ports)))
EOF
}

# Reads "status --json" on stdin; exit 0 if volume argv[2] has argv[1] - 1
# peers and every link is "Connected".  Prints the links ("n2=Connected").
REPL_LINKS_PY='
import json, sys
want, vol = int(sys.argv[1]) - 1, sys.argv[2]
try:
    v = [x for x in json.load(sys.stdin)["volumes"] if x["name"] == vol][0]
    peers = v.get("peers", [])
except Exception:
    print("no usable status")
    sys.exit(2)
print(" ".join("%s=%s" % (p.get("node"), p.get("link")) for p in peers))
sys.exit(0 if len(peers) == want and
         all(p.get("link") == "Connected" for p in peers) else 1)
'

# repl_wait_connected DIR N TIMEOUT [quiet]: wait up to TIMEOUT s until
# every node n1..nN reports every peer link Connected.
repl_wait_connected() {
    local d=$1 n=$2 quiet=${4:-} i js links ok end=$((SECONDS + $3)) pid
    while :; do
        for pid in "${REPL_PIDS[@]}"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                log "  replagentd pid $pid exited while connecting; log tails:"
                tail -n 5 "$d"/n*/log >&2 || true
                return 1
            fi
        done
        ok=1
        links=
        for ((i = 1; i <= n; i++)); do
            js=$(timeout 10 "$REPLAGENT" -s "$d/n$i/control.sock" status --json \
                 2>/dev/null) || true
            links+=" n$i:[$("$PYTHON" -c "$REPL_LINKS_PY" "$n" "$EXPORT" <<< "$js")]" ||
                ok=0
        done
        [ "$ok" = 1 ] && return 0
        if [ "$SECONDS" -ge "$end" ]; then
            log "  links not all Connected after ${3}s:$links"
            [ -n "$quiet" ] || tail -n 5 "$d"/n*/log >&2 || true
            return 1
        fi
        sleep 0.2
    done
}

# start_repl NAME N: N nodes, n1 promoted; SERVER_* describe n1.
start_repl() {
    local s=$1 n=$2 d=$WORKDIR/$1 i nd ports=() lines=() out
    fresh_dir "$d"
    REPL_PIDS=()
    SERVER_FILES=()
    SERVER_PID=
    SERVER_SOCK=$d/n1/nbd.sock
    read -r -a ports <<< "$(free_ports "$n")"
    [ "${#ports[@]}" = "$n" ] || { log "  no $n free TCP ports"; return 1; }
    (umask 077 && head -c 32 /dev/urandom >"$d/key")
    chmod 0600 "$d/key"
    for ((i = 1; i <= n; i++)); do
        lines+=("replica = n$i 127.0.0.1:${ports[i - 1]}")
    done
    # Every replica starts as a plain copy of the prepared file (dd: no
    # reflink, no shared extents), clean and warm in the page cache.
    for ((i = 1; i <= n; i++)); do
        nd=$d/n$i
        mkdir -p "$nd"
        dd if="$IMG" of="$nd/bench.img" bs=16M status=none || return 1
        SERVER_FILES+=("$nd/bench.img")
        write_replagentd_conf "$nd" "$nd/bench.img" "n$i" "$d/key" "${lines[@]}"
    done
    sync "${SERVER_FILES[@]}"
    cat "${SERVER_FILES[@]}" >/dev/null
    for ((i = 1; i <= n; i++)); do
        nd=$d/n$i
        "$REPLAGENTD" -f -c "$nd/replagentd.conf" 2>"$nd/log" &
        REPL_PIDS+=("$!")
        STARTED_PIDS+=("$!")
    done
    SERVER_PID=${REPL_PIDS[0]}
    repl_wait_connected "$d" "$n" "$REPL_CONNECT_TIMEOUT" || return 1
    if ! out=$(timeout 15 "$REPLAGENT" -s "$d/n1/control.sock" promote "$EXPORT" 2>&1); then
        log "  promote on n1 failed: $out"
        return 1
    fi
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$d/n1/log" || return 1
    REPL_DIR=$d
    REPL_N=$n
    REPL_WARN=$(repl_warnings)
}

# repl_warnings: warning and error lines in the running variant's logs.
repl_warnings() {
    cat "$REPL_DIR"/n*/log 2>/dev/null |
        grep -cE '^[^ ]+ [^ ]+ (warning|err|error|crit|alert|emerg):' || true
}

# repl_check WHAT: after a measurement of a replicated variant, set
# REPL_MARK to "!" if a daemon logged a warning or error meanwhile (e.g. a
# peer dropped and reconnected) or if the links are not all Connected again
# within 5 s; such a number was not measured with N healthy replicas.
repl_check() {
    local now
    REPL_MARK=
    [ -n "$REPL_DIR" ] || return 0
    repl_wait_connected "$REPL_DIR" "$REPL_N" 5 quiet || REPL_MARK='!'
    now=$(repl_warnings)
    if [ "$now" != "$REPL_WARN" ]; then
        REPL_MARK='!'
        log "  replication trouble during $1; first new daemon warnings:"
        cat "$REPL_DIR"/n*/log 2>/dev/null |
            grep -E '^[^ ]+ [^ ]+ (warning|err|error|crit|alert|emerg):' |
            sort | tail -n +$((REPL_WARN + 1)) | head -n 2 | sed 's/^/    /' >&2 || true
    fi
    REPL_WARN=$now
}

# stop_repl NAME: stop every node by PID, drop the replicas' files.
stop_repl() {
    local pid
    for pid in "${REPL_PIDS[@]}"; do
        kill_pid "$pid"
    done
    REPL_PIDS=()
    REPL_DIR=
    rm -f -- "$WORKDIR/$1"/n*/bench.img
}

start_replagentd_2r() { start_repl replagentd-2r 2; }
stop_replagentd_2r() { stop_repl replagentd-2r; }
start_replagentd_3r() { start_repl replagentd-3r 3; }
stop_replagentd_3r() { stop_repl replagentd-3r; }

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
    REPL_DIR=
    log "[rep $rep/$REPS] $s: starting"
    if ! "start_$fn"; then
        log "  $s failed to start"
        for wl in "${WORKLOADS[@]}"; do
            record qemu-img "$s" "$wl" fail
            [ "$FIO" = 1 ] && record fio "$s" "$wl" fail
        done
        "stop_$fn"
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
    "stop_$fn"
    if [ "$KEEP_LOGS" = 1 ]; then
        log "  --- $s log tail ---"
        tail -n 10 "$WORKDIR/$s"/log "$WORKDIR/$s"/n*/log >&2 2>/dev/null || true
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
    fs=$(findmnt -n -o FSTYPE -T "$WORKDIR" 2>/dev/null ||
         stat -f -c %T "$WORKDIR" 2>/dev/null || echo '?')
    dev=$(df -P "$WORKDIR" 2>/dev/null | awk 'NR == 2 { print $1 " on " $6 }')
    echo "== machine"
    echo "nproc:        $(nproc)"
    echo "cpu:          $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)"
    echo "memory:       $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel:       $(uname -sr)"
    echo "temp dir:     $WORKDIR ($fs, $dev)"
    echo "== versions"
    echo "qemu-img:     $(version_of "$QEMU_IMG" --version)"
    echo "qemu-nbd:     $(version_of "$QEMU_NBD" --version)"
    echo "nbdkit:       $(version_of "$NBDKIT" --version)"
    echo "fio:          $(version_of "$FIO_BIN" --version)"
    if [ -x "$REPLAGENTD" ]; then
        echo "replagentd:   $REPLAGENTD (git $(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo '?'), built $(date -r "$REPLAGENTD" '+%F %T'))"
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
    echo "              are Connected; the client talks to n1; fresh metadata: no initial sync"
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
        if "have_${s//-/_}"; then avail+=("$s"); else log "skipping $s: ${UNAVAIL[$s]}"; fi
    done
    [ "${#avail[@]}" -gt 0 ] || { log "no server available"; exit 1; }

    WORKDIR=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/nbd-bench.XXXXXX")
    IMG=$WORKDIR/disk.img
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
