#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scale: N connections held at once between an ndkperf server and client
# on loopback, for each N given (default 10000 20000). For each: the time
# to set them all up, the memory per connection of each side (RSS growth
# over the idle process, divided by N), and how long ndkstat takes to
# list them (text and JSON; it reads every process's published table).
#
# Each process needs a descriptor per connection: N is lowered to what
# the hard RLIMIT_NOFILE allows (said so on stderr), and the ephemeral
# port range (NDK_EPHEMERAL_PORT_MIN) is widened below 49152 when N needs
# more than the default 16,384 ports.
#
# usage: bench/hold.sh [N ...]   (builds build-bench like bench/run)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-bench
PORT=${PORT:-18599}
export NDK_LOG=error

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD" ndkperf ndkstat >/dev/null
NDKPERF=$BUILD/tools/perf/ndkperf
NDKSTAT=$BUILD/tools/ndkstat

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=1048576
ulimit -n "$hard"
# Room for the process's own descriptors besides the connections.
max_n=$((hard - 64))

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# ms_of CMD...: wall time of one run in ms (output discarded).
ms_of() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

[ $# -gt 0 ] || set -- 10000 20000
printf '| Connections | setup (s) | setups/s | client KiB/conn | server KiB/conn | ndkstat (ms) | ndkstat -j (ms) | rows listed |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for want in "$@"; do
	n=$want
	if [ "$n" -gt "$max_n" ]; then
		echo "hold.sh: $want connections need $want descriptors per" \
			"process; the hard limit is $hard: holding $max_n" >&2
		n=$max_n
	fi
	if [ "$n" -gt 16000 ]; then
		export NDK_EPHEMERAL_PORT_MIN=$((65535 - n - 1000))
	else
		unset NDK_EPHEMERAL_PORT_MIN
	fi
	PORT=$((PORT + 1))
	"$NDKPERF" -s -b 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		ss -Hltnp "sport = :$PORT" | grep -q "pid=$srv," && break
		sleep 0.05
	done
	base=$(rss_kib "$srv")
	out=$(mktemp)
	"$NDKPERF" -p "$PORT" -t hold -n "$n" -D 4 127.0.0.1 >"$out" &
	cli=$!
	# The client prints its "# hold:" line once every connection is
	# up, then holds them for -D seconds.
	for _ in $(seq 600); do
		grep -q '^# hold: ' "$out" && break
		sleep 0.1
	done
	peak=$(rss_kib "$srv")
	rows=$("$NDKSTAT" --type connection | grep -c " Connection " || true)
	st_ms=$(ms_of "$NDKSTAT")
	stj_ms=$(ms_of "$NDKSTAT" -j)
	wait "$cli"
	kill "$srv"
	wait "$srv" 2>/dev/null || true
	python3 - "$out" "$n" "$base" "$peak" "$st_ms" "$stj_ms" "$rows" <<'PY'
import re, sys
out, n, base, peak, st, stj, rows = sys.argv[1:]
text = open(out).read()
m = re.search(r"# hold: (\d+) connections in ([\d.]+) s, client memory "
              r"([\d.]+) KiB", text)
held, secs, kib = int(m.group(1)), float(m.group(2)), float(m.group(3))
secs = max(secs, 1e-6)
print("| %d | %.2f | %.0f | %.2f | %.2f | %s | %s | %s |" % (
    held, secs, held / secs, kib, (int(peak) - int(base)) / held, st, stj,
    rows))
PY
	rm -f "$out"
done
