# Sourced by the tool tests (check_tools.sh, check_perf.sh,
# check_bench_ab.sh): a private scratch directory and NDK_RUNTIME_DIR (so
# ndkstat sees only this test's processes and the counters start at zero),
# background processes that are killed on exit, fail(), which prints what
# the test kept in $tmp, and free_port and wait_port for servers.
set -euo pipefail

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
export NDK_RUNTIME_DIR="$tmp/runtime"

# fail MESSAGE: prints it and every non-empty out, err and *.log of $tmp.
fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$tmp"/out "$tmp"/err "$tmp"/*.log; do
		[ -s "$f" ] && { echo "--- ${f##*/}:" >&2; cat "$f" >&2; }
	done
	exit 1
}

command -v python3 >/dev/null || {
	echo "SKIP: python3 is needed to check the JSON output"
	exit 77
}

# A free port: bind to 0 and read it back (the servers bind it again).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until a server listens on 127.0.0.1:$1.
wait_port() {
	local i
	for i in $(seq 100); do
		ss -Htln "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	fail "nothing listens on port $1"
}
