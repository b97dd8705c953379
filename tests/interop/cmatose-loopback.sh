#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndkcmatose against itself on 127.0.0.1, no VM: 3 connections with
# private data both ways and 10 messages each way, then a reject with
# private data (the client must read it and exit 3).
#
#   cmatose-loopback.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/wait-lib.sh"

bin=${1:?usage: cmatose-loopback.sh BUILD_DIR}/tools/interop/ndkcmatose
out=$(mktemp -d)
srv=""
cleanup() {
	[[ -n $srv ]] && kill "$srv" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

start_server() { # log args...
	local log=$1
	shift
	"$bin" -s -b 127.0.0.1 -p 0 "$@" >"$log" 2>&1 &
	srv=$!
	port=$(wait_for_value "$log" 's/^cmatose: listening on 127.0.0.1:\([0-9]*\)$/\1/p' 5 "$srv") && return 0
	cat "$log" 2>/dev/null || true
	return 1
}

start_server "$out/s.log" -c 3 -n 10 -S 1000 --private-data from-server
"$bin" -p "$port" -c 3 -n 10 -S 1000 --private-data from-client 127.0.0.1 >"$out/c.log" 2>&1 ||
	bad "client rc $?"
wait "$srv" || bad "server rc $?"
srv=""
cat "$out/s.log" "$out/c.log"
(($(grep -c 'connect reply: IRD 1 ORD 1, peer private data 11 bytes: .* "from-server"' "$out/c.log") == 3)) ||
	bad "client did not see the server's private data 3 times"
(($(grep -c 'established: IRD 1 ORD 1, peer private data 11 bytes: .* "from-client"' "$out/s.log") == 3)) ||
	bad "server did not see the client's private data 3 times"
grep -q 'data transfers complete' "$out/c.log" || bad "client: no data transfers"

start_server "$out/r.log" -x --private-data "not today"
rc=0
"$bin" --private-data hello "127.0.0.1:$port" >"$out/rc.log" 2>&1 || rc=$?
wait "$srv" || bad "rejecting server rc $?"
srv=""
cat "$out/r.log" "$out/rc.log"
((rc == 3)) || bad "rejected client rc $rc, want 3"
grep -q 'reject: .*peer private data 9 bytes: .* "not today"' "$out/rc.log" ||
	bad "client did not read the reject's private data"
((fail == 0)) && echo "PASS"
exit $fail
