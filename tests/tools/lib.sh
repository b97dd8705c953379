# Sourced by the tool tests (check_tools.sh, check_perf.sh): a private
# scratch directory and NDK_RUNTIME_DIR (so ndkstat sees only this test's
# processes and the counters start at zero), background processes that are
# killed on exit, and fail(), which prints what the test kept in $tmp.
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
