#!/usr/bin/env bash
# scale-bench.sh: the scaling table of issue 38 in one command
# (docs/BENCHMARKS.md, "Scale with cores"). For each core count P it starts a
# fresh single-node veild (bbolt, embedded devnets, --rate-limit 0) pinned to
# the first P cores, creates the agents once, then runs
# each workload with veil-load pinned to the remaining cores, and prints one
# table row per (P, procs, store, workload, clients) with the store's metrics of
# that run read from veild's /metrics before and after it: the committer's
# (commits/s, write batches per commit, mean commit time: with the
# write-ahead log, one append and fdatasync) and, with the log, its
# applier's (bbolt transactions/s, logged groups per transaction, mean
# transaction time), and veild's own CPU (from process_cpu_seconds_total):
# the cores it kept busy and its CPU time per request, which tell a run
# held back by a serial stage (cores below P) from one out of CPU.
# STORES chooses the store paths compared at each P, in the same minutes:
# the write-ahead log synced by Linux AIO (log, the default), the log
# synced by fdatasync (log-fd) and the pre-log path (nolog). The procs
# column is veild's GOMAXPROCS (go_sched_gomaxprocs_threads): one more
# than its cores where its commits' fdatasync holds a P (log-fd, nolog)
# unless GOMAXPROCS is set (PROCS below).
#
#   scripts/scale-bench.sh build DIR   # static binaries (CGO_ENABLED=0,
#                                      # -trimpath -ldflags "-s -w") into DIR
#   scripts/scale-bench.sh [out]       # the sweep; writes $out/table.txt
#
# It runs from prebuilt static binaries on a machine with no Go toolchain
# and no network: copy this script and the two binaries, and set
# VEILD=/path/veild LOAD=/path/veil-load. With no binaries given it builds
# them from this tree (that needs Go).
#
# Environment (defaults):
#   CORES="2 4 8"            core counts P (each ≤ nproc - 1: veil-load needs a core)
#   AGENTS=500               agents created once per P, on ethereum (devnet)
#   DURATION=20s             each run
#   WORKLOADS="mixed:128 chat:64 chat:128 chat:512 get:256"
#                            workload:clients; mixed = 80% GET /agent/:id + 20% chat,
#                            chat = chat only, get = GET only
#   MESSAGE=hello            the chat message (the builtin planner answers it)
#   STORES=log               the store paths, a list, each on a fresh veild at each P:
#                            log = the write-ahead log synced by Linux AIO (the default);
#                            log-fd = the log synced by fdatasync (--store-log-aio=false);
#                            nolog = groups committed to bbolt itself (--store-log=false)
#   BASELINE=""              1: STORES="log nolog" (when STORES is unset)
#   VEILD_ARGS=""            more flags for every veild serve (split on spaces), e.g.
#                            "--store-apply-delay=0" to compare the log applier with no delay
#   PROCS=auto               how veild's GOMAXPROCS is chosen, a list: auto = veild's
#                            own choice (pinned to P cores: P, or P+1 for log-fd and nolog); P = GOMAXPROCS=P,
#                            the setting of the tables before veild chose (issue 38's);
#                            "auto P" runs both, same minutes
#   VEILD, LOAD              the binaries (built into $out/bin when unset)
#   PROFILE=""               workload:clients (e.g. "chat:64") run again at each P on a
#                            fresh veild --pprof, taking its CPU (5 s), block, mutex and
#                            goroutine profiles into $out/pP-STORE-PROCS-KIND-CLIENTS-pprof.*.pb.gz
#                            (block0/mutex0: before; read with go tool pprof -top
#                            [-diff_base …0.pb.gz]: they carry their symbols; -tagfocus
#                            stage=commit or stage=apply: the store's serial stages). Profiling
#                            slows veild: those rows are marked with *.
# Needs bash and taskset (util-linux); curl if present (else bash's /dev/tcp).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

build() { # build DIR: the two static binaries
	local dir=$1
	mkdir -p "$dir"
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/veild" ./cmd/veild &&
		CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/veil-load" ./cmd/veil-load)
	echo "built $dir/veild and $dir/veil-load (static)"
}
if [ "${1:-}" = build ]; then
	build "${2:?usage: scripts/scale-bench.sh build DIR}"
	exit 0
fi

out=${1:-/tmp/scale-bench}
CORES=${CORES:-2 4 8}
AGENTS=${AGENTS:-500}
DURATION=${DURATION:-20s}
WORKLOADS=${WORKLOADS:-mixed:128 chat:64 chat:128 chat:512 get:256}
MESSAGE=${MESSAGE:-hello}
PROFILE=${PROFILE:-}
BASELINE=${BASELINE:-}
VEILD_ARGS=${VEILD_ARGS:-}
PROCS=${PROCS:-auto}
for m in $PROCS; do [ "$m" = auto ] || [ "$m" = P ] || { echo "PROCS: $m is neither auto nor P" >&2; exit 2; }; done
stores=${STORES:-log}
[ -n "${STORES:-}" ] || [ "$BASELINE" != 1 ] || stores="log nolog"
for s in $stores; do case $s in log | log-fd | nolog) ;; *) echo "STORES: $s is not log, log-fd or nolog" >&2; exit 2 ;; esac; done
rm -rf "$out" && mkdir -p "$out"
if [ -z "${VEILD:-}" ] || [ -z "${LOAD:-}" ]; then
	command -v go >/dev/null || { echo "no Go toolchain: set VEILD and LOAD to prebuilt binaries (scripts/scale-bench.sh build DIR on a machine with Go)" >&2; exit 2; }
	build "$out/bin"
	VEILD=${VEILD:-$out/bin/veild} LOAD=${LOAD:-$out/bin/veil-load}
fi
for b in "$VEILD" "$LOAD"; do [ -x "$b" ] || { echo "$b is not an executable" >&2; exit 2; }; done
ncpu=$(nproc)
pin=1
command -v taskset >/dev/null || { echo "taskset not found: running unpinned (PROCS=auto then counts every core)" >&2; pin=0; }

httpget() { # httpget HOST:PORT PATH [SECONDS]: the body, within SECONDS (default 5) with curl
	if command -v curl >/dev/null; then
		curl -sf --max-time "${3:-5}" "http://$1$2"
	else
		local h=${1%:*} p=${1##*:}
		exec 3<>"/dev/tcp/$h/$p"
		printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$2" "$1" >&3
		sed '1,/^\r$/d' <&3
		exec 3<&-
	fi
}
# metric NAME FILE: the value of an unlabelled sample in a /metrics dump (0 when absent).
metric() { awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }' "$2"; }

# rates SECONDS SIZE RUN SECS NONE: between RUN's two scrapes (RUN.m0 and
# RUN.m1, SECS apart), the events of histogram SECONDS per second, the mean
# of histogram SIZE per event and the milliseconds per event; NONE when
# there was no event. The commit and the applier's columns.
rates() {
	awk -v t="$4" -v none="$5" \
		-v c0="$(metric "$1_count" "$3.m0")" -v c1="$(metric "$1_count" "$3.m1")" \
		-v s0="$(metric "$1_sum" "$3.m0")" -v s1="$(metric "$1_sum" "$3.m1")" \
		-v b0="$(metric "$2_sum" "$3.m0")" -v b1="$(metric "$2_sum" "$3.m1")" 'BEGIN {
		n = c1 - c0; if (n <= 0) { print none; exit }
		printf "%.0f %.2f %.2f\n", n / t, (b1 - b0) / n, 1000 * (s1 - s0) / n }'
}

# cpu RUN SECS RATE: veild's CPU between RUN's two scrapes: the cores it
# kept busy, and microseconds of CPU per request at RATE req/s.
cpu() {
	awk -v c0="$(metric process_cpu_seconds_total "$1.m0")" -v c1="$(metric process_cpu_seconds_total "$1.m1")" \
		-v t="$2" -v r="$3" 'BEGIN {
		d = c1 - c0; if (t <= 0 || r <= 0 || d <= 0) { print "- -"; exit }
		printf "%.2f %.0f\n", d / t, 1e6 * d / (r * t) }'
}

pid=""
stop() { [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; }; }
trap stop EXIT

# start P STORE PROCS [PROFILED]: a fresh veild on cores 0..P-1 (STORE log,
# log-fd or nolog; PROCS auto: its own GOMAXPROCS, P: GOMAXPROCS=P); sets addr,
# maddr, key. A port can be taken between choosing and binding it: a start
# that fails on its port is tried again with other ports.
start() {
	local p=$1 store=$2 procs=$3 profiled=${4:-} data=$out/p$1-$2-$3${4:+-pprof} try
	for try in 1 2 3 4 5; do
		rm -rf "$data" && mkdir -p "$data"
		addr=127.0.0.1:$((20000 + RANDOM % 20000)) maddr=127.0.0.1:$((40000 + RANDOM % 20000))
		local gmp=(-u GOMAXPROCS)
		[ "$procs" = auto ] || gmp=(GOMAXPROCS="$p")
		local cmd=(env "${gmp[@]}" "$VEILD" serve --data "$data" --addr "$addr" --metrics-addr "$maddr"
			--devnet-base-port 0 --rate-limit 0 --log-level warn)
		[ -z "$profiled" ] || cmd+=(--pprof)
		case $store in
		log-fd) cmd+=(--store-log-aio=false) ;;
		nolog) cmd+=(--store-log=false) ;;
		esac
		# shellcheck disable=SC2206 # VEILD_ARGS is split on spaces on purpose
		[ -z "$VEILD_ARGS" ] || cmd+=($VEILD_ARGS)
		[ "$pin" = 0 ] || cmd=(taskset -c "0-$((p - 1))" "${cmd[@]}")
		"${cmd[@]}" >"$data.out" 2>"$data.err" &
		pid=$!
		local i
		for i in $(seq 600); do
			httpget "$addr" /health >/dev/null 2>&1 && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		if kill -0 "$pid" 2>/dev/null && httpget "$addr" /health >/dev/null 2>&1; then
			key=$(grep -o 'veil_live_[A-Za-z0-9_-]*' "$data.out" | head -1)
			[ -n "$key" ] || { echo "veild printed no bootstrap key; see $data.out" >&2; exit 1; }
			return 0
		fi
		stop
		grep -qi 'address already in use' "$data.err" || { echo "veild did not start; see $data.err" >&2; exit 1; }
	done
	echo "veild found no free port in 5 tries; see $data.err" >&2
	exit 1
}

load() { # load P ARGS…: veil-load on the cores veild does not use
	local p=$1
	shift
	if [ "$pin" = 1 ] && [ "$p" -lt "$ncpu" ]; then
		GOMAXPROCS=$((ncpu - p)) taskset -c "$p-$((ncpu - 1))" "$LOAD" -url "http://$addr" -key "$key" "$@"
	else
		"$LOAD" -url "http://$addr" -key "$key" "$@"
	fi
}

table=$out/table.txt
# One row of the table, header and rows alike.
rowfmt='| %-5s | %-5s | %-6s | %-8s | %-7s | %-10s | %-9s | %-9s | %-6s | %-9s | %-13s | %-10s | %-9s | %-12s | %-9s | %-11s | %-10s |\n'
{
	echo "# scale-bench $(date -u +%FT%TZ) on $(uname -m), $ncpu cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# veild: bbolt (store log: the write-ahead log synced by AIO, the default; log-fd: the log synced by fdatasync, --store-log-aio=false; nolog: --store-log=false), embedded devnets, --rate-limit 0${VEILD_ARGS:+ $VEILD_ARGS}; $AGENTS agents; $DURATION per run; veild on cores 0..P-1; procs: its GOMAXPROCS (PROCS=$PROCS)"
	echo "# commit: the committer's groups (with the log: append + fdatasync); apply: the log applier's bbolt transactions"
	# shellcheck disable=SC2059 # the format is $rowfmt, on purpose
	printf "$rowfmt" P procs store workload clients "req/s" p50 p99 errors commits/s batches/commit commit-ms applies/s groups/apply apply-ms veild-cores cpu-us/req
	printf '|%s|\n' "-------|-------|--------|----------|---------|------------|-----------|-----------|--------|-----------|---------------|------------|-----------|--------------|-----------|-------------|------------"
} | tee "$table"

for p in $CORES; do
	if [ "$p" -ge "$ncpu" ]; then
		echo "skipping P=$p: this machine has $ncpu cores and veil-load needs one" | tee -a "$table" >&2
		continue
	fi
	# For each store, the sweep on a plain veild, then the profiled
	# workloads (PROFILE) on a fresh one with --pprof: profiling slows what
	# it watches.
	for store in $stores; do
		for procs in $PROCS; do
			for pass in plain profiled; do
				if [ $pass = plain ]; then list=$WORKLOADS prof=""; else list=$PROFILE prof=1; fi
				[ -n "$list" ] || continue
				start "$p" "$store" "$procs" "$prof"
				load "$p" -agents "$AGENTS" -create "$AGENTS" -duration 0 -concurrency 32 >"$out/p$p-$store-$procs-create.txt" 2>&1 ||
					{ echo "creating agents failed; see $out/p$p-$store-$procs-create.txt" >&2; exit 1; }
				for w in $list; do
					kind=${w%%:*} clients=${w##*:}
					case $kind in
					mixed) ratio=0.2 line=total ;;
					chat) ratio=1 line=chat ;;
					get) ratio=0 line=read ;;
					*) echo "unknown workload $kind (mixed, chat or get)" >&2; exit 2 ;;
					esac
					run=$out/p$p-$store-$procs-$kind-$clients${prof:+-pprof}
					httpget "$maddr" /metrics >"$run.m0"
					if [ -n "$prof" ]; then
						# The profiles are taken in the middle of the run: block and
						# mutex are cumulative, so the run's share is after minus before.
						(sleep 2
							httpget "$maddr" /debug/pprof/block >"$run.block0.pb.gz" 2>/dev/null
							httpget "$maddr" /debug/pprof/mutex >"$run.mutex0.pb.gz" 2>/dev/null
							httpget "$maddr" "/debug/pprof/profile?seconds=5" 20 >"$run.cpu.pb.gz" 2>/dev/null
							httpget "$maddr" /debug/pprof/block >"$run.block.pb.gz" 2>/dev/null
							httpget "$maddr" /debug/pprof/mutex >"$run.mutex.pb.gz" 2>/dev/null
							httpget "$maddr" /debug/pprof/goroutine >"$run.goroutine.pb.gz" 2>/dev/null) &
						profpid=$!
					fi
					load "$p" -agents "$AGENTS" -create 0 -concurrency "$clients" -duration "$DURATION" -chat "$ratio" -message "$MESSAGE" >"$run.txt" 2>&1 || true
					[ -z "$prof" ] || wait "$profpid" # not a bare wait: veild is a child too
					httpget "$maddr" /metrics >"$run.m1"
					row=$(grep -E "^$line " "$run.txt" | tail -1)
					[ -n "$row" ] || { echo "veil-load printed no '$line' line; see $run.txt" >&2; exit 1; }
					secs=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "in") { sub("s", "", $(i + 1)); print $(i + 1) } }' <<<"$row")
					rate=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "req/s") print $(i - 1) }' <<<"$row")
					p50=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "p50") print $(i + 1) }' <<<"$row")
					p99=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "p99") print $(i + 1) }' <<<"$row")
					errs=$(awk '{ print $NF }' <<<"$row")
					read -r cps bpc cms < <(rates veil_store_commit_seconds veil_store_commit_batches "$run" "$secs" "0 - -")
					read -r aps gpa ams < <(rates veil_store_apply_seconds veil_store_apply_groups "$run" "$secs" "- - -")
					read -r cores cpr < <(cpu "$run" "$secs" "$rate")
					gmp=$(metric go_sched_gomaxprocs_threads "$run.m1")
					# shellcheck disable=SC2059
					printf "$rowfmt" "$p" "$gmp" "$store" "$kind${prof:+*}" "$clients" "$rate" "$p50" "$p99" "$errs" "$cps" "$bpc" "$cms" "$aps" "$gpa" "$ams" "$cores" "$cpr" | tee -a "$table"
				done
				stop
			done
		done
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); table in $table, runs in $out" | tee -a "$table"
