#!/usr/bin/env bash
# soak.sh: mixed load on one veild for a while, sampling the process's
# memory as the kernel and the Go runtime each see it, so that growth in
# resident memory can be attributed (docs/BENCHMARKS.md, "Soak").
#
#   scripts/soak.sh [minutes=20] [out=/tmp/soak]
#
# Writes $out/samples.csv (one row per 30 s) and $out/load.txt. Needs only
# Go; builds bin/veild and bin/veil-load.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-20}
out=${2:-/tmp/soak}
rm -rf "$out" && mkdir -p "$out"
go build -o bin/veild ./cmd/veild
go build -o bin/veil-load ./cmd/veil-load

addr=127.0.0.1:18180
metrics=127.0.0.1:19464
bin/veild serve --data "$out/data" --addr $addr --metrics-addr $metrics --devnet-base-port 28545 \
	--rate-limit 0 --log-level warn >"$out/stdout.txt" 2>"$out/stderr.txt" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 120); do grep -q veil_live_ "$out/stdout.txt" 2>/dev/null && break; sleep 0.5; done
key=$(grep -o 'veil_live_[A-Za-z0-9_-]*' "$out/stdout.txt" | head -1)
[ -n "$key" ] || { echo "veild printed no bootstrap key; see $out/stderr.txt" >&2; exit 1; }

# metric NAME: the value of an unlabelled series on /metrics.
metric() { curl -s "http://$metrics/metrics" | awk -v n="$1" '$1 == n { print $2; exit }'; }
# kib FIELD: a field of /proc/$pid/status in KiB.
kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"; }
mib() { awk -v v="${1:-0}" 'BEGIN { printf "%.1f", v / 1048576 }'; }

echo "min,goroutines,fds,heap_inuse_mib,heap_idle_mib,heap_released_mib,stack_mib,go_sys_mib,rss_anon_mib,rss_file_mib,data_mib" >"$out/samples.csv"
sample() {
	local m=$1
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$m" \
		"$(metric go_goroutines)" "$(metric process_open_fds)" \
		"$(mib "$(metric go_memstats_heap_inuse_bytes)")" "$(mib "$(metric go_memstats_heap_idle_bytes)")" \
		"$(mib "$(metric go_memstats_heap_released_bytes)")" "$(mib "$(metric go_memstats_stack_sys_bytes)")" \
		"$(mib "$(metric go_memstats_sys_bytes)")" \
		"$(awk -v k="$(kib RssAnon)" 'BEGIN { printf "%.1f", k / 1024 }')" \
		"$(awk -v k="$(kib RssFile)" 'BEGIN { printf "%.1f", k / 1024 }')" \
		"$(du -m "$out/data/veil.db" | cut -f1)" >>"$out/samples.csv"
}

echo "creating 1000 agents, then ${minutes} min of load; samples every 30 s in $out/samples.csv" >&2
bin/veil-load -url "http://$addr" -key "$key" -agents 1000 -concurrency 32 -duration "${minutes}m" -chat 0.2 >"$out/load.txt" 2>&1 &
load=$!
start=$(date +%s)
while kill -0 $load 2>/dev/null; do
	sample "$(awk -v s="$(($(date +%s) - start))" 'BEGIN { printf "%.1f", s / 60 }')"
	tail -1 "$out/samples.csv" >&2
	sleep 30
done
wait $load
sleep 30 # idle: what the runtime gives back after the load
sample "idle"
tail -1 "$out/samples.csv" >&2
cat "$out/load.txt"
