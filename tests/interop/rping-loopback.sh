#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndkrping against itself on 127.0.0.1, no VM: one persistent server
# (-c: as many connections as sizes) and one client per size, 100 pings
# each with --verify (the client compares what came back, the server
# checks what it read against rping's pattern). Then the two faults: a bad rkey makes
# the server's Read hit an invalid STag, a bad Write makes the client's
# peer answer with a Terminate; each must end its connection.
#
#   rping-loopback.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/wait-lib.sh"

bin=${1:?usage: rping-loopback.sh BUILD_DIR}/tools/interop/ndkrping
count=${RPING_COUNT:-100}
sizes=(1 2 25 26 27 100 1000 4095 4096 4097 16384 65535 65536)
out=$(mktemp -d)
srv=""
cleanup() {
	[[ -n $srv ]] && kill "$srv" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# A server on an ephemeral port; its first line names the port.
start_server() { # log args...
	local log=$1
	shift
	"$bin" -s -b 127.0.0.1 -p 0 "$@" >"$log" 2>&1 &
	srv=$!
	port=$(wait_for_value "$log" 's/^ndkrping: listening on 127.0.0.1:\([0-9]*\)$/\1/p' 5 "$srv") && return 0
	echo "server did not start:" >&2
	cat "$log" >&2 2>/dev/null || true
	return 1
}

fail=0
start_server "$out/server.log" --verify -n "$count" -c ${#sizes[@]}
for s in "${sizes[@]}"; do
	if ! "$bin" -p "$port" --verify -n "$count" -S "$s" 127.0.0.1 >"$out/c$s.log" 2>&1 ||
		! grep -q "client: $count pings of $s bytes, validated" "$out/c$s.log"; then
		echo "FAIL: client -S $s" >&2
		cat "$out/c$s.log" >&2
		fail=1
	fi
done
wait "$srv" || fail=1
srv=""
n=$(grep -c "server: $count pings validated, client disconnected" "$out/server.log" || true)
if ((n != ${#sizes[@]})); then
	echo "FAIL: server served $n of ${#sizes[@]} connections fully" >&2
	fail=1
fi
cat "$out/server.log"

# Faults: the client's bad rkey (we send the Terminate), the client's bad
# Write (the server sends it), the server's bad Write (the client does).
start_server "$out/fault.log" -c 2
for f in badrkey badwrite; do
	if ! NDK_LOG=info "$bin" -n 3 --fault $f "127.0.0.1:$port" >"$out/f$f.log" 2>&1 ||
		! grep -q 'Terminate' "$out/f$f.log"; then
		echo "FAIL: client --fault $f" >&2
		fail=1
	fi
	cat "$out/f$f.log"
done
wait "$srv" || true
srv=""
start_server "$out/fault2.log" --fault badwrite -c 1
NDK_LOG=info "$bin" -n 3 "127.0.0.1:$port" >"$out/f3.log" 2>&1 || true
if ! wait "$srv"; then
	echo "FAIL: server --fault badwrite" >&2
	fail=1
fi
srv=""
grep -q "sending Terminate DDP / tagged buffer / invalid STag" "$out/f3.log" || {
	echo "FAIL: the client did not send a Terminate" >&2
	fail=1
}
cat "$out/fault2.log" "$out/f3.log"
((fail == 0)) && echo "PASS: ${#sizes[@]} sizes x $count pings, 3 faults"
exit $fail
