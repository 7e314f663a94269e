#!/usr/bin/env bash
# resync-bench.sh -- how fast a replica that was away catches up, and what
# the catch-up costs the guest.  Two replagentd nodes, a and b, run on this
# machine in static mode and replicate a 1 GiB volume over 127.0.0.1.  a is
# promoted and the guest (fio, ioengine=nbd) talks to a's NBD socket.
#
# Run by hand (not by CI):   bench/resync-bench.sh        (~1-2 min)
#
# Phases (each prints figures; nothing is asserted):
#   1. baseline: 4k random write QD1 on a, b Connected, no resync
#      (BASE_RUNTIME s): mean and p99 completion latency.
#   2. b is stopped (SIGTERM), a writes DIRTY (random 64k writes over the
#      whole volume), b is started again; the guest stays idle.  Time from
#      b's start to a reporting b "Connected" with out_of_sync_bytes 0
#      (a's status polled every POLL_MS ms), bytes resynced, rate.
#   3. the same (a writes DIRTY_LOAD), but the phase-1 job runs on a from
#      b's start until b is in sync (at most LOAD_RUNTIME s): the guest's
#      latency while a is SyncSource (between the polls that saw it start
#      and end), its ratio to phase 1, and the resync time and rate.  What
#      the guest writes before the link is up adds to what is out of sync.
#   4. a fresh pair; b is stopped, a writes DIRTY, b comes back blank (fresh
#      state dir, fresh zero file): a full resync.  All-zero regions go as
#      ranges, not data; resync_sent_bytes counts data only.
#
# Backing files start as identical zero files (written out, not sparse),
# state dirs start fresh: replicas that are blank and identical need no
# initial sync.
#
# Environment knobs (defaults in brackets):
#   BASE_RUNTIME [10]   seconds of the phase-1 job
#   LOAD_RUNTIME [15]   phase 3: longest the guest job runs
#   DIRTY [100M]        what a writes while b is away (fio io_size)
#   DIRTY_LOAD [$DIRTY] the same for phase 3 (more: a longer resync, more
#                       guest requests in the window)
#   DIRTY_BS [64k]  DIRTY_DEPTH [8]   its block size and queue depth
#   POLL_MS [100]       status polling interval
#   SYNC_TIMEOUT [120]  seconds for b to get back in sync
#   REPLAGENTD_IO_THREADS [16]
#   KEEP_LOGS=1         print the daemons' log tails at the end
# The nodes, their configs, daemons and cleanup are tests/functions.sh's
# (cluster_config, start_pair, stop_node, wait_status), like every test.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires fio timeout
requires_replagentd
requires_replagent

BASE_RUNTIME=${BASE_RUNTIME:-10}
LOAD_RUNTIME=${LOAD_RUNTIME:-15}
DIRTY=${DIRTY:-100M}
DIRTY_LOAD=${DIRTY_LOAD:-$DIRTY}
DIRTY_BS=${DIRTY_BS:-64k}
DIRTY_DEPTH=${DIRTY_DEPTH:-8}
POLL_MS=${POLL_MS:-100}
SYNC_TIMEOUT=${SYNC_TIMEOUT:-120}
REPLAGENTD_IO_THREADS=${REPLAGENTD_IO_THREADS:-16}
KEEP_LOGS=${KEEP_LOGS:-0}
FIO_BIN=fio

SIZE_BYTES=$((1024 * 1024 * 1024))
declare -A R=()          # results of the last away_and_back
BASE_MEAN=
BASE_P99=

# ------------------------------------------------------------------ nodes --

# zero_fill NODE: NODE's backing is 1 GiB of zeroes, written out (not
# sparse), clean and in the page cache.
zero_fill() {
	dd if=/dev/zero of="${NODE_BACKING[$1]}" bs=16M count=$((SIZE_BYTES / 16777216)) \
		status=none || hard_error "cannot write ${NODE_BACKING[$1]}"
	sync "${NODE_BACKING[$1]}"
}

# blank NODE: an empty state dir and a fresh zero backing (phase 4: a
# replica that holds data but no metadata takes a full resync).
blank() {
	rm -rf -- "${NODE_DIR[$1]}/state"
	zero_fill "$1"
}

# peer_link NODE PEER: the link NODE shows for PEER (or "none").
peer_link() { status_value "$1" "p.get(\"$2\", {}).get(\"link\", \"none\")" 2>/dev/null || echo none; }

# new_pair: a and b new and identical (their first start creates two blank
# replicas, sparse backings; then the backings are written out as zeroes
# while both are stopped), connected, a promoted and serving NBD.
new_pair() {
	local n
	for n in a b; do
		rm -rf -- "${NODE_DIR[$n]}/state" "${NODE_BACKING[$n]}"
		start_node "$n"
	done
	wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
		fail "a and b did not connect"
	stop_node b
	stop_node a
	zero_fill a
	zero_fill b
	start_pair a b
}

# ------------------------------------------------------------------- guest --

# fio_job_args NAME SECONDS [fio option...]: FIO_ARGS = the phase-1 job
# (4k random write QD1 on a), JSON to TESTDIR/NAME.json.
FIO_ARGS=()
fio_job_args() {
    local name=$1 secs=$2
    shift 2
    FIO_ARGS=(--name="$name" --ioengine=nbd --uri="${NODE_NBD_URI[a]}"
        --rw=randwrite --bs=4k --iodepth=1 --numjobs=1 --time_based
        --runtime="$secs" --output-format=json --output="$TESTDIR/$name.json" "$@")
}
fio_job() {             # fio_job NAME SECONDS [fio option...], in the foreground
    fio_job_args "$@"
    "$FIO_BIN" "${FIO_ARGS[@]}" >"$TESTDIR/$1.out" 2>&1
}

# dirty NAME AMOUNT: a writes AMOUNT as random DIRTY_BS writes over the
# whole volume (no block twice: fio's random map).
dirty() {
    local rc=0
    "$FIO_BIN" --name="$1" --ioengine=nbd --uri="${NODE_NBD_URI[a]}" --rw=randwrite \
        --bs="$DIRTY_BS" --iodepth="$DIRTY_DEPTH" --io_size="$2" \
        --randrepeat=0 --output-format=json --output="$TESTDIR/$1.json" \
        >"$TESTDIR/$1.out" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
        log "  fio $1 failed (rc=$rc): $(tail -n 3 "$TESTDIR/$1.out" | tr '\n' ' ')"
        return 1
    fi
}

# fio JSON (may follow "fio: terminating on signal 15") -> "ios mean_us p99_us iops"
FIO_LAT_PY='
import json, sys
t = open(sys.argv[1]).read()
w = json.loads(t[t.index("{"):])["jobs"][0]["write"]
c = w["clat_ns"]
p99 = c.get("percentile", {}).get("99.000000", 0)
print("%d %.1f %.1f %.0f" % (w["total_ios"], c["mean"] / 1e3, p99 / 1e3, w["iops"]))
'
fio_lat() { "$PYTHON" -c "$FIO_LAT_PY" "$1"; }

# fio clat log (log_unix_epoch: ms since the epoch, clat ns) and a window
# [argv[2], argv[3]] in epoch seconds -> "ios mean_us p99_us" of the
# requests that completed inside it.
WINDOW_LAT_PY='
import sys
lo, hi, lat = float(sys.argv[2]) * 1e3, float(sys.argv[3]) * 1e3, []
for line in open(sys.argv[1]):
    f = line.split(",")
    if len(f) >= 2 and lo <= float(f[0]) <= hi:
        lat.append(int(f[1]))
if not lat:
    print("0 n/a n/a")
    sys.exit(0)
lat.sort()
print("%d %.1f %.1f" % (len(lat), sum(lat) / len(lat) / 1e3,
                        lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1e3))
'

# ------------------------------------------------------------ measurement --

# Polls a's status every POLL_MS ms until peer b is Connected with
# out_of_sync_bytes 0 (after having been seen otherwise), or timeout.
# argv: replagent control-sock volume peer t0(epoch s) timeout(s) poll(ms).
# Prints key=value lines; times are seconds since t0.
POLL_PY='
import json, subprocess, sys, time
rag, sock, vol, peer = sys.argv[1:5]
t0, timeout, poll = float(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7]) / 1e3
res = {"status": "timeout", "t_up": "n/a", "t_sync": "n/a", "t_sync_end": "n/a",
       "t_done": "n/a", "polls": 0, "links": "", "max_rate_bps": 0,
       "rs_total": "n/a", "rs_done": "n/a", "sent": "n/a"}
seen_down, links = False, []
while time.time() - t0 < timeout:
    t = time.time()
    res["polls"] += 1
    try:
        out = subprocess.run([rag, "-s", sock, "status", "--json"], capture_output=True,
                             timeout=5).stdout
        v = [x for x in json.loads(out)["volumes"] if x["name"] == vol][0]
        p = [x for x in v["peers"] if x["node"] == peer][0]
    except Exception:
        time.sleep(poll)
        continue
    link, oos, rs = p["link"], p["out_of_sync_bytes"], p.get("resync", {})
    if not links or links[-1] != link:
        links.append(link)
    res["max_rate_bps"] = max(res["max_rate_bps"], rs.get("rate_bps", 0))
    res["rs_total"], res["rs_done"] = rs.get("total_bytes"), rs.get("done_bytes")
    res["sent"] = p.get("resync_sent_bytes")
    rel = "%.3f" % (t - t0)
    if link not in ("Connected", "SyncSource"):
        seen_down = True
    elif res["t_up"] == "n/a" and seen_down:
        res["t_up"] = rel
    if link == "SyncSource" and res["t_sync"] == "n/a":
        res["t_sync"] = rel
    if link != "SyncSource" and res["t_sync"] != "n/a" and res["t_sync_end"] == "n/a":
        res["t_sync_end"] = rel
    if seen_down and link == "Connected" and oos == 0:
        res["status"], res["t_done"] = "done", rel
        break
    time.sleep(max(0.0, poll - (time.time() - t)))
res["links"] = ">".join(links)
for k, v in res.items():
    print("%s=%s" % (k, v))
'

# log_since NODE LINE: the lines of NODE's log after line number LINE.
log_since() { tail -n +$(($2 + 1)) "$(daemon_log "$1")" 2>/dev/null || true; }
log_lines() { wc -l <"$(daemon_log "$1")" 2>/dev/null || echo 0; }

# sent_bytes: a's resync_sent_bytes for b.
sent_bytes() { status_value a 'p["b"]["resync_sent_bytes"]' 2>/dev/null || echo 0; }

mib() { awk -v b="$1" 'BEGIN { if (b ~ /^[0-9]+$/) printf "%.1f MiB", b / 1048576; else print "n/a" }'; }
rate() {                # rate BYTES SECONDS -> MiB/s
    awk -v b="$1" -v s="$2" 'BEGIN {
        if (b ~ /^[0-9]+$/ && s ~ /^[0-9.]+$/ && s > 0) printf "%.1f MiB/s", b / 1048576 / s
        else print "n/a" }'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2fx", a / b; else print "n/a" }'
}

# away_and_back PHASE AMOUNT [load]: stop b, a writes AMOUNT, start b and
# wait until it is in sync (with "load": the phase-1 job runs on a
# meanwhile, at most LOAD_RUNTIME s).  Fills R[] and prints the figures.
away_and_back() {
    local ph=$1 amount=$2 load=${3:-} mark sent0 sent1 t0 fio_pid='' since l
    stop_node b
    wait_status a 15 'p["b"]["link"] in ("Connecting", "Disconnected", "StandAlone")' ||
        fail "a still sees b connected"
    log "[$ph] b stopped; a writes $amount ($DIRTY_BS random writes)"
    dirty "dirty-$ph" "$amount"
    [ "$ph" = 4 ] && blank b
    sync "${NODE_BACKING[a]}"
    sent0=$(sent_bytes)
    mark=$(log_lines a)
    log "[$ph] starting b${load:+ and the guest job}"
    t0=$(date +%s.%N)
    start_node b
    if [ -n "$load" ]; then
        fio_job_args "load-$ph" "$LOAD_RUNTIME" --write_lat_log="$TESTDIR/load-$ph" \
            --log_unix_epoch=1
        # fio itself in the background (not a subshell): SIGTERM reaches it.
        "$FIO_BIN" "${FIO_ARGS[@]}" >"$TESTDIR/load-$ph.out" 2>&1 &
        fio_pid=$!
        track_pid "$fio_pid"
    fi
    R=([status]=failed [t_up]=n/a [t_sync]=n/a [t_sync_end]=n/a [t_done]=n/a
       [polls]=0 [links]=none [max_rate_bps]=0)
    while IFS='=' read -r k v; do
        R[$k]=$v
    done < <("$PYTHON" -c "$POLL_PY" "$REPLAGENT" "${NODE_CTL[a]}" "$CLUSTER_VOL" b "$t0" \
                 "$SYNC_TIMEOUT" "$POLL_MS")
    if [ -n "$fio_pid" ]; then
        # Stop the guest job as soon as b is in sync; fio reports on SIGTERM.
        _alive "$fio_pid" && R[fio_stopped]=1
        stop_pid "$fio_pid"
        untrack_pid "$fio_pid"
    fi
    sent1=$(sent_bytes)
    since=$(log_since a "$mark")
    l=$(grep -E 'resync to b: [0-9]+ bytes out of sync' <<< "$since" | tail -n 1 || true)
    R[oos_log]=$(sed -nE 's/.*resync to b: ([0-9]+) bytes out of sync \(([a-z]+)\).*/\1 \2/p' <<< "$l")
    l=$(grep -E 'resync of b done: [0-9]+ bytes in' <<< "$since" | tail -n 1 || true)
    R[done_log]=$(sed -nE 's/.*resync of b done: ([0-9]+) bytes in ([0-9.]+) s.*/\1 \2/p' <<< "$l")
    R[sent_delta]=$((sent1 - sent0))

    local oos kind dbytes dsecs
    read -r oos kind <<< "${R[oos_log]:-n/a n/a}"
    read -r dbytes dsecs <<< "${R[done_log]:-n/a n/a}"
    if [ "${R[status]}" != "done" ]; then
        echo "  b NOT in sync after ${SYNC_TIMEOUT}s (links seen: ${R[links]})"
    fi
    printf '  %-40s %s s\n' "b start -> link up (poll):" "${R[t_up]}"
    printf '  %-40s %s s\n' "b start -> Connected, out_of_sync 0:" "${R[t_done]}"
    printf '  %-40s %s (%s)\n' "out of sync at resync start (a's log):" "$(mib "$oos")" "$kind"
    printf '  %-40s %s (%s bytes)\n' "data sent (resync_sent_bytes delta):" \
        "$(mib "${R[sent_delta]}")" "${R[sent_delta]}"
    printf '  %-40s %s in %s s -> %s\n' "resync per a's log (regions done):" \
        "$(mib "$dbytes")" "$dsecs" "$(rate "$dbytes" "$dsecs")"
    printf '  %-40s %s over the resync, %s from b start\n' "data rate:" \
        "$(rate "${R[sent_delta]}" "$dsecs")" "$(rate "${R[sent_delta]}" "${R[t_done]}")"
    printf '  %-40s %s MiB/s (%s polls, links %s)\n' "highest rate_bps seen in status:" \
        "$(awk -v r="${R[max_rate_bps]}" 'BEGIN { printf "%.1f", r / 1048576 }')" \
        "${R[polls]}" "${R[links]}"
    [ -n "$load" ] || return 0

    # Guest latency: the requests that completed between the first poll
    # that saw b's link SyncSource and the first one that saw it no longer
    # (so up to one poll interval of it may follow the resync), then the
    # whole job (b start until in sync).
    local lo hi ios mean p99 iops
    lo=$(awk -v a="$t0" -v b="${R[t_sync]}" 'BEGIN { printf "%.3f", a + b }')
    hi=$(awk -v a="$t0" -v b="${R[t_sync_end]}" 'BEGIN { printf "%.3f", a + b }')
    read -r ios mean p99 < <("$PYTHON" -c "$WINDOW_LAT_PY" \
        "$TESTDIR/load-${ph}_clat.1.log" "$lo" "$hi" 2>/dev/null || echo "0 n/a n/a")
    printf '  %-40s mean %s us, p99 %s us (%s requests, %s s)\n' \
        "guest while a was SyncSource (polls):" "$mean" "$p99" "$ios" \
        "$(awk -v a="${R[t_sync]}" -v b="${R[t_sync_end]}" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/) printf "%.1f", b - a; else print "n/a" }')"
    printf '  %-40s mean %s, p99 %s   (goal of the issue: within 2x)\n' \
        "  ratio to the baseline:" "$(ratio "$mean" "$BASE_MEAN")" "$(ratio "$p99" "$BASE_P99")"
    if read -r ios mean p99 iops < <(fio_lat "$TESTDIR/load-$ph.json" 2>/dev/null); then
        printf '  %-40s mean %s us, p99 %s us (%s requests, %s IOPS)\n' \
            "guest, whole job (b start -> in sync):" "$mean" "$p99" "$ios" "$iops"
        printf '  %-40s mean %s, p99 %s\n' "  ratio to the baseline:" \
            "$(ratio "$mean" "$BASE_MEAN")" "$(ratio "$p99" "$BASE_P99")"
    else
        echo "  guest job failed: $(tail -n 3 "$TESTDIR/load-$ph.out" 2>/dev/null | tr '\n' ' ')"
    fi
    [ -n "${R[fio_stopped]:-}" ] ||
        echo "  (the guest job ended after ${LOAD_RUNTIME}s, before b was in sync)"
    echo "  (what is out of sync includes the regions the guest wrote before the link came up)"
}

# ------------------------------------------------------------------- main --

print_facts() {
    local fs
    fs=$(findmnt -n -o FSTYPE -T "$TESTDIR" 2>/dev/null || echo '?')
    echo "== machine"
    echo "nproc:        $(nproc)"
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min, at start)"
    echo "cpu:          $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)"
    echo "memory:       $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel:       $(uname -sr)"
    echo "temp dir:     $TESTDIR ($fs)"
    echo "fio:          $("$FIO_BIN" --version 2>&1 | head -n 1)"
    echo "replagentd:   $REPLAGENTD (git $(git -C "$TESTS_SRCDIR" describe --always --dirty 2>/dev/null || echo '?'), built $(date -r "$REPLAGENTD" '+%F %T'))"
    echo "== setup"
    echo "nodes a, b:   replagentd, static mode, ${NODE_ADDR[a]} / ${NODE_ADDR[b]}, shared key,"
    echo "              volume 1 GiB, zero backing files, io-threads=$REPLAGENTD_IO_THREADS; a Primary"
    echo "guest:        fio ioengine=nbd on a: 4k randwrite QD1 (clat mean, p99)"
    echo "away writes:  $DIRTY (phase 3: $DIRTY_LOAD) as random $DIRTY_BS writes QD$DIRTY_DEPTH"
    echo "              over the whole volume, no block twice"
    echo "polling:      a's status --json every ${POLL_MS} ms"
    echo "note:         client, daemons and poller share the same $(nproc) CPUs"
}

main() {
    local ios iops n
    cluster_config -v rsbench -s 1G a b
    for n in a b; do
        volume_option "$n" "io-threads = $REPLAGENTD_IO_THREADS"
    done

    print_facts

    log "[1] starting a and b (fresh, identical)"
    new_pair
    fio_job warmup 2 || true
    log "[1] baseline: ${BASE_RUNTIME}s 4k randwrite QD1"
    fio_job base "$BASE_RUNTIME" || fail "baseline fio failed: $(tail -n 3 "$TESTDIR/base.out")"
    read -r ios BASE_MEAN BASE_P99 iops < <(fio_lat "$TESTDIR/base.json")
    echo
    echo "== 1. baseline: guest 4k randwrite QD1 on a, b Connected, no resync (${BASE_RUNTIME}s)"
    printf '  %-40s mean %s us, p99 %s us (%s requests, %s IOPS)\n' "4k randwrite QD1:" \
        "$BASE_MEAN" "$BASE_P99" "$ios" "$iops"
    echo "  b's link after the run: $(peer_link a b)"

    echo
    echo "== 2. b away while a writes $DIRTY, then back; guest idle"
    away_and_back 2 "$DIRTY"

    echo
    echo "== 3. b away while a writes $DIRTY_LOAD, then back, with the guest writing"
    echo "      (4k randwrite QD1 on a from b's start until b is in sync, at most ${LOAD_RUNTIME}s)"
    away_and_back 3 "$DIRTY_LOAD" load

    echo
    echo "== 4. blank b (fresh state dir, fresh zero file) joins after a wrote $DIRTY"
    log "[4] fresh pair"
    stop_node b
    stop_node a
    new_pair
    away_and_back 4 "$DIRTY"

    stop_node b
    stop_node a
    echo
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (at the end)"
    local w
    w=$(cat "$(daemon_log a)" "$(daemon_log b)" 2>/dev/null |
        grep -E ' (warning|err|error|crit|alert|emerg): ' |
        grep -vE 'peer [ab] is gone|peer [ab]: peer shut down|records this replica as Outdated|is missing but backing .* holds data' ||
        true)
    if [ -n "$w" ]; then
        echo "daemon warnings/errors besides the expected ones for a stopped b:"
        head -n 10 <<< "$w" | sed 's/^/  /'
    fi
    if [ "$KEEP_LOGS" = 1 ]; then
        log "--- log tails ---"
        tail -n 20 "$(daemon_log a)" "$(daemon_log b)" >&2 || true
    fi
}

main "$@"
