#!/usr/bin/env bash
# cluster-bench.sh: chat throughput of a Veil cluster of N members on this
# machine (docs/BENCHMARKS.md, "Cluster"). Starts the shared devnets
# (`veild devnet`), a fresh PostgreSQL database, N `veild serve --cluster`
# members on loopback, creates agents through veil-load (spread over the
# members), runs one load per chat ratio in $MIXES on those agents, and
# tears everything down (the database is dropped).
#
#   scripts/cluster-bench.sh MEMBERS [out=/tmp/cluster-bench-MEMBERS]
#
# Environment (defaults): AGENTS=500 CONCURRENCY=64 DURATION=30s
# MIXES="1 0.2" (chat fractions, one run each) MESSAGE=hello
# CLUSTER=1 (0: a plain single `veild serve`, no --cluster)
# STORE=postgres (or bolt, with CLUSTER=0)
# PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres (createdb/dropdb, trust auth)
# VEILD=/tmp/veild LOAD=/tmp/veil-load (built from this tree when missing)
# LOGLEVEL=warn (info logs every request: a cost under load)
#
# FAILOVER=0: with FAILOVER=K (cluster of 2 or more), after the loads,
# K times: SIGKILL one member (rotating, at a random phase of the 1 s
# health polls), then ask a survivor for $PROBE of the agents (GET
# /agent/:id, one after the other, again until each answers 200); a
# sample is the time from the kill until the last of them answered, i.e.
# until every probed agent the victim owned is back on a survivor. The
# victim then restarts at its addresses and rejoins before the next kill.
# PROBE=30 (with 3 members, ~10 of them on the victim).
#
# Writes $out/load-<chat>.txt (veil-load's report), $out/failover.txt
# (one sample in ms a line, then p50/p99/max) and the members' logs.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/cluster-bench.sh MEMBERS [out]}
out=${2:-/tmp/cluster-bench-$n}
AGENTS=${AGENTS:-500}
CONCURRENCY=${CONCURRENCY:-64}
DURATION=${DURATION:-30s}
MIXES=${MIXES:-1 0.2}
MESSAGE=${MESSAGE:-hello}
CLUSTER=${CLUSTER:-1}
STORE=${STORE:-postgres}
LOGLEVEL=${LOGLEVEL:-warn}
FAILOVER=${FAILOVER:-0}
PROBE=${PROBE:-30}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
VEILD=${VEILD:-/tmp/veild}
LOAD=${LOAD:-/tmp/veil-load}
[ -x "$VEILD" ] || go build -o "$VEILD" ./cmd/veild
[ -x "$LOAD" ] || go build -o "$LOAD" ./cmd/veil-load
if [ "$CLUSTER" = 1 ] && [ "$STORE" != postgres ]; then
	echo "cluster mode needs STORE=postgres" >&2
	exit 2
fi
rm -rf "$out" && mkdir -p "$out"

pids=()
db=""
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ -n "$db" ]; then dropdb --if-exists --force "$db" || true; fi
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Shared devnets: every member uses the same chains.
"$VEILD" devnet --data "$out/devnet" --devnet-base-port 0 --out "$out/chains.json" >"$out/devnet.out" 2>"$out/devnet.err" &
pids+=($!)
for _ in $(seq 240); do grep -q "Chains config written" "$out/devnet.out" 2>/dev/null && break; sleep 0.25; done
grep -q "Chains config written" "$out/devnet.out" || { echo "veild devnet did not start; see $out/devnet.err" >&2; exit 1; }

store=()
if [ "$STORE" = postgres ]; then
	db=veil_bench_$(date +%s)_$$
	createdb "$db"
	store=(--store postgres --postgres-dsn "postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable")
fi
VEIL_ENCLAVE_ROOT=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export VEIL_ENCLAVE_ROOT

api=() health=() remote=()
for i in $(seq 0 $((n - 1))); do
	api+=("127.0.0.1:$(freeport)") health+=("127.0.0.1:$(freeport)") remote+=("127.0.0.1:$(freeport)")
done
seeds=$(IFS=,; echo "${health[*]}")

mpid=()
member() { # member I: start veild I in the background (again: logs appended)
	local i=$1 extra=()
	if [ "$CLUSTER" = 1 ]; then
		extra=(--cluster --cluster-seeds "$seeds" --cluster-health-addr "${health[$i]}" --cluster-addr "${remote[$i]}")
	fi
	VEIL_DATA="$out/m$i" "$VEILD" serve --data "$out/m$i" --addr "${api[$i]}" --metrics-addr 127.0.0.1:0 \
		--rate-limit 0 --shutdown-grace 5s --log-level "$LOGLEVEL" --chains-config "$out/chains.json" "${store[@]}" "${extra[@]}" \
		>>"$out/m$i.out" 2>>"$out/m$i.err" &
	pids+=($!)
	mpid[$i]=$!
}
healthy() { # healthy I: wait until member I answers /health
	for _ in $(seq 240); do curl -sf -o /dev/null --max-time 1 "http://${api[$1]}/health" && return 0; sleep 0.25; done
	echo "member $1 did not start; see $out/m$1.err" >&2
	exit 1
}
waitlog() { # waitlog FILE PATTERN WHAT
	for _ in $(seq 240); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.25; done
	echo "$3; see $1" >&2
	exit 1
}

# The first member bootstraps the account and prints its key.
member 0
waitlog "$out/m0.out" veil_live_ "member 0 printed no bootstrap key"
key=$(grep -o 'veil_live_[A-Za-z0-9_-]*' "$out/m0.out" | head -1)
for i in $(seq 1 $((n - 1))); do member "$i"; done
urls=()
for i in $(seq 0 $((n - 1))); do
	healthy "$i"
	urls+=("http://${api[$i]}")
done
if [ "$CLUSTER" = 1 ] && [ "$LOGLEVEL" != info ]; then
	sleep 3 # each member has seen itself; the others follow within a poll or two (1 s)
elif [ "$CLUSTER" = 1 ]; then
	for i in $(seq 0 $((n - 1))); do
		# Every member sees all n before the load starts.
		for _ in $(seq 240); do
			last=$(grep -o 'cluster topology changed.* members=[0-9]*' "$out/m$i.err" | tail -1 | grep -o '[0-9]*$' || true)
			[ "$last" = "$n" ] && break
			sleep 0.25
		done
		[ "$last" = "$n" ] || { echo "member $i sees ${last:-no} members, want $n; see $out/m$i.err" >&2; exit 1; }
	done
fi
url=$(IFS=,; echo "${urls[*]}")
echo "$n member(s) (cluster=$CLUSTER, store=$STORE) at $url; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/setup.txt"

create=$AGENTS
for chat in $MIXES; do
	echo "== chat $chat: $LOAD -url $url -agents $AGENTS -create $create -concurrency $CONCURRENCY -duration $DURATION -chat $chat -message $MESSAGE" | tee "$out/load-$chat.txt"
	"$LOAD" -url "$url" -key "$key" -agents "$AGENTS" -create "$create" -concurrency "$CONCURRENCY" \
		-duration "$DURATION" -chat "$chat" -message "$MESSAGE" 2>&1 | grep -v '^  ' | tee -a "$out/load-$chat.txt" || true
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load-$chat.txt"
	create=0 # the next mix reuses the agents
done

[ "$FAILOVER" -gt 0 ] && [ "$CLUSTER" = 1 ] && [ "$n" -ge 2 ] || exit 0
now() { date +%s%N; }
get() { curl -s -o /dev/null -w '%{http_code}' --max-time 30 -H "Authorization: Bearer $key" "http://$1/agent/$2"; }
mapfile -t ids < <(curl -s -H "Authorization: Bearer $key" "http://${api[0]}/agents" |
	python3 -c 'import json,sys; [print(a["id"]) for a in json.load(sys.stdin)[:int(sys.argv[1])]]' "$PROBE")
[ "${#ids[@]}" -gt 0 ] || { echo "no agents to probe" >&2; exit 1; }
echo "== failover: $FAILOVER kills, probing ${#ids[@]} agents through a survivor" | tee "$out/failover.txt"
: >"$out/failover.ms"
for k in $(seq 0 $((FAILOVER - 1))); do
	v=$((k % n)) via=$(((k + 1) % n))
	for id in "${ids[@]}"; do [ "$(get "${api[$via]}" "$id")" = 200 ] || { echo "agent $id not answering before the kill" >&2; exit 1; }; done
	sleep "0.$((RANDOM % 1000))"
	t0=$(now)
	kill -9 "${mpid[$v]}"
	wait "${mpid[$v]}" 2>/dev/null || true
	pending=("${ids[@]}") retries=0
	while [ "${#pending[@]}" -gt 0 ]; do
		left=()
		for id in "${pending[@]}"; do [ "$(get "${api[$via]}" "$id")" = 200 ] || left+=("$id"); done
		pending=("${left[@]}")
		if [ "${#pending[@]}" -gt 0 ]; then retries=$((retries + 1)); sleep 0.01; fi
		[ $(($(now) - t0)) -lt 120000000000 ] || { echo "agents not back 120 s after the kill" >&2; exit 1; }
	done
	ms=$((($(now) - t0) / 1000000))
	echo "$ms" >>"$out/failover.ms"
	echo "kill $k: member $v, answered through member $via after $ms ms ($retries rounds with failures)" | tee -a "$out/failover.txt"
	member "$v"
	healthy "$v"
	sleep 3 # the others see it back within a poll or two
done
sort -n "$out/failover.ms" | awk '{ a[NR] = $1 } END { i50 = int(NR * 0.5) + 1; i99 = int(NR * 0.99) + 1; if (i99 > NR) i99 = NR;
	printf "failover over %d kills: p50 %d ms, p99 %d ms, max %d ms, min %d ms\n", NR, a[i50], a[i99], a[NR], a[1] }' | tee -a "$out/failover.txt"
