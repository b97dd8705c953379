# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# Sourced by the wire conformance checks (check_mpa.sh, check_dp.sh): the
# scratch directory and its cleanup, the capture of one run of a traffic
# driver on lo (or the replay of a kept one), tshark with the options
# both need, field extraction, and the verdict.
#
# The caller sets NAME (the log prefix) and, for conf_init, the prefix of
# its environment variables: ${PREFIX}_CAPTURE_KEEP=1 keeps the capture
# and logs (they are kept on failure), ${PREFIX}_CAPTURE_REPLAY=DIR
# checks DIR/lo.pcapng and DIR/driver.out, as kept by an earlier run,
# without running the driver.
#
# tshark 4.0 notes:
# * "-d tcp.port==N,iwarp_mpa" is refused: MPA is only a heuristic
#   dissector on TCP ("iwarp_mpa_tcp"). It is forced with
#   --enable-heuristic iwarp_mpa_tcp and tcp.try_heuristic_first, so that
#   an ephemeral port that happens to belong to another dissector still
#   decodes as MPA; the payload heuristics (RPC-over-RDMA, SMB Direct)
#   are disabled so that pattern bytes are shown as plain data.
# * TCP segments are reassembled even out of order, so that an FPDU is
#   decoded the same however TCP cut or retransmitted it.
# * 4.0 has no fields for the RFC 6581 block (iwarp_mpa.enhanced.* came in
#   4.6): S is bit 0x10 of iwarp_mpa.res, and the IRD/ORD block is read
#   from the first 4 bytes of the private data.
# * It warns "Rev field is NOT set to one" and "Res field is NOT set to
#   zero" on every Rev 2 / S frame: RFC 5044 rules that RFC 6581 changed.
#   Those two warnings are expected; any other iWARP expert item at
#   warning level or above, any error, and any malformed frame fail.
# * A bad CRC raises no expert item; it is caught as "Bad CRC32" text,
#   and "(Good CRC32)" is counted in the -V text.

PASS=0
FAIL=1
SKIP=77

log() { printf '%s: %s\n' "$NAME" "$*"; }

# conf_init PREFIX TOOL...: skips (77) without a tool; makes $TMP, $CAP.
conf_init() {
	local prefix=$1 tool keep replay
	shift
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			log "SKIP: $tool not installed (make deps installs it)"
			exit $SKIP
		fi
	done
	keep=${prefix}_CAPTURE_KEEP
	replay=${prefix}_CAPTURE_REPLAY
	KEEP=${!keep:-0}
	REPLAY=${!replay:-}
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX") || exit $FAIL
	CAP=$TMP/lo.pcapng
	DRV_PID=
	DC_PID=
	trap conf_cleanup EXIT
}

# shellcheck disable=SC2317 # called by the EXIT trap
conf_cleanup() {
	# Only the two processes this script started, by their pid.
	if [ -n "$DRV_PID" ] && kill -0 "$DRV_PID" 2>/dev/null; then
		kill "$DRV_PID" 2>/dev/null
		wait "$DRV_PID" 2>/dev/null
	fi
	if [ -n "$DC_PID" ] && kill -0 "$DC_PID" 2>/dev/null; then
		kill -INT "$DC_PID" 2>/dev/null
		wait "$DC_PID" 2>/dev/null
	fi
	exec 3>&-
	if [ "$KEEP" = 1 ]; then
		log "capture and logs kept in $TMP"
	else
		rm -rf "$TMP"
	fi
}

# conf_start PREFIX DRIVER: conf_init with the tools every check needs,
# then capture_driver.
conf_start() {
	conf_init "$1" tshark dumpcap awk od
	capture_driver "$2"
}

# Fails the whole check at once, keeping what there is.
conf_abort() {
	log "FAIL: $*"
	KEEP=1
	exit $FAIL
}

# ------------------------------------------------------------------
# The capture

# capture_driver DRIVER: runs the driver under dumpcap on lo. The driver
# prints "LISTEN <port>" and waits for a line on stdin; the capture,
# filtered on that port, starts before the line goes. Sets LPORT and
# leaves $CAP and $TMP/driver.out. With REPLAY set, takes those instead.
capture_driver() {
	local driver=$1 started drv_rc

	if [ -n "$REPLAY" ]; then
		cp "$REPLAY/lo.pcapng" "$CAP" &&
			cp "$REPLAY/driver.out" "$TMP/" || exit $FAIL
		LPORT=$(driver_says LISTEN 2)
		log "replaying $REPLAY (listening port $LPORT)"
		return 0
	fi
	if [ ! -x "$driver" ]; then
		log "driver $driver not found"
		exit $FAIL
	fi
	mkfifo "$TMP/go" || exit $FAIL
	# CRC is on by default: make sure the environment does not turn it off.
	env -u NDK_MPA_CRC "$driver" <"$TMP/go" >"$TMP/driver.out" \
		2>"$TMP/driver.err" &
	DRV_PID=$!
	exec 3>"$TMP/go" # unblocks the driver's stdin; it waits for a line

	LPORT=
	for _ in $(seq 100); do
		LPORT=$(driver_says LISTEN 2)
		[ -n "$LPORT" ] && break
		kill -0 "$DRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$LPORT" ]; then
		cat "$TMP/driver.out" "$TMP/driver.err"
		conf_abort "the driver printed no LISTEN line"
	fi
	log "listening port $LPORT"

	dumpcap -q -i lo -f "tcp port $LPORT" -w "$CAP" 2>"$TMP/dumpcap.err" &
	DC_PID=$!
	# dumpcap prints "Capturing on 'lo'" before it opens the device, and
	# "File: <path>" once the device is open, the filter set and the file
	# created: only then is it capturing.
	started=0
	for _ in $(seq 100); do
		if grep -q '^File: ' "$TMP/dumpcap.err" &&
			kill -0 "$DC_PID" 2>/dev/null; then
			started=1
			break
		fi
		kill -0 "$DC_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ $started = 0 ]; then
		sed 's/^/  dumpcap: /' "$TMP/dumpcap.err"
		if grep -qiE 'permission|not permitted|no such device' \
			"$TMP/dumpcap.err"; then
			log "SKIP: capture on lo is not permitted here"
			exit $SKIP
		fi
		log "FAIL: dumpcap did not start capturing"
		exit $FAIL
	fi

	echo go >&3
	exec 3>&-
	# The driver bounds each of its waits (5 s); this bounds the whole run.
	drv_rc=
	for _ in $(seq 600); do
		if ! kill -0 "$DRV_PID" 2>/dev/null; then
			drv_rc=0
			wait "$DRV_PID" || drv_rc=$?
			break
		fi
		sleep 0.1
	done
	if [ -z "$drv_rc" ]; then
		sed 's/^/  driver: /' "$TMP/driver.out" "$TMP/driver.err"
		conf_abort "the driver did not finish within 60 s" # cleanup stops it
	fi
	DRV_PID=
	sleep 0.5 # let the last FIN/ACKs reach the capture
	kill -INT "$DC_PID" 2>/dev/null
	wait "$DC_PID" 2>/dev/null
	DC_PID=

	sed 's/^/  driver: /' "$TMP/driver.out"
	if [ "$drv_rc" != 0 ]; then
		sed 's/^/  driver: /' "$TMP/driver.err"
		conf_abort "driver exit status $drv_rc"
	fi
	[ -s "$CAP" ] || conf_abort "empty capture"
}

# driver_says KEY N: field N of the driver's line that starts with KEY.
driver_says() {
	awk -v k="$1" -v n="$2" '$1 == k { print $n }' "$TMP/driver.out"
}

# driver_values VAR=KEY:N...: sets each VAR to driver_says KEY N; fails
# the check if the driver did not say one.
driver_values() {
	local spec var
	for spec in "$@"; do
		var=${spec%%=*}
		spec=${spec#*=}
		printf -v "$var" '%s' "$(driver_says "${spec%%:*}" "${spec#*:}")"
		[ -n "${!var}" ] || conf_abort "the driver did not say $var"
	done
}

# ------------------------------------------------------------------
# Decoding

TS_OPTS=(-o tcp.try_heuristic_first:TRUE -o tcp.reassemble_out_of_order:TRUE
	--enable-heuristic iwarp_mpa_tcp --disable-heuristic rpcrdma_iwarp
	--disable-heuristic smb_direct_iwarp)

ts() { tshark -r "$CAP" "${TS_OPTS[@]}" "$@" 2>>"$TMP/tshark.err"; }

# ts_count VAR FILTER: sets VAR to the number of frames matching FILTER.
# A filter this tshark refuses (a field it does not know) fails the check
# instead of counting 0.
ts_count() {
	local _tsc=0
	if ts -c 1 -Y "$2" >/dev/null; then
		_tsc=$(ts -Y "$2" | grep -c .)
	else
		fail "tshark refuses the filter: $2"
	fi
	printf -v "$1" "%s" "$_tsc"
}

# ts_fields FILTER FIELD...: one line a frame, the fields separated by
# '|', each field's values (one per FPDU, in order) by ','.
ts_fields() {
	local filter=$1 f
	local -a e=()
	shift
	for f in "$@"; do e+=(-e "$f"); done
	ts -Y "$filter" -T fields -E separator='|' -E occurrence=a \
		-E aggregator=',' "${e[@]}"
}

# show_decode FRAME [SED_SCRIPT]: the frame as tshark decodes it, iWARP
# layers in full (and cut by the sed script, if given).
show_decode() {
	log "decode of frame $1:"
	ts -Y "frame.number == $1" -V -O iwarp_mpa,iwarp_ddp_rdmap |
		sed -n "${2:-p}" | sed 's/^/    /'
}

isnum() { [[ $1 =~ ^(0x[0-9a-f]+|[0-9]+)$ ]]; }
hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
be16() { printf '%04x' "$(($1))"; }
be32() { printf '%08x' "$(($1))"; }
be64() { printf '%016x' "$(($1))"; }

# hex_diff WANT GOT: the first byte at which two hex strings differ, as
# "offset: expected 0xWW, got 0xGG", or nothing if they are the same.
hex_diff() {
	local want=$1 got=$2 i
	[ "$want" = "$got" ] && return 0
	for ((i = 0; i < ${#want} || i < ${#got}; i += 2)); do
		if [ "${want:i:2}" != "${got:i:2}" ]; then
			echo "$((i / 2)): expected 0x${want:i:2}, got 0x${got:i:2}"
			return 0
		fi
	done
}

# ------------------------------------------------------------------
# Checks and the verdict

failures=0
# shellcheck disable=SC2034 # read by the scripts that source this
last_failed=0 # set by fail, cleared by whoever reports on it

fail() {
	log "FAIL: $*"
	failures=$((failures + 1))
	# shellcheck disable=SC2034 # read by the scripts that source this
	last_failed=1
}

# check_whole FILTER: nothing malformed, no expert error and no iWARP
# expert item but the two expected MPA v2 warnings, on FILTER. Leaves
# the expert report in $EXPERT.
check_whole() {
	local filter=$1 n unexpected
	ts_count n "($filter) && _ws.malformed"
	[ "$n" = 0 ] || fail "$n malformed frames"
	EXPERT=$(ts -q -z "expert,warn,$filter")
	if printf '%s\n' "$EXPERT" | grep -q '^Errors'; then
		fail "tshark reports expert errors"
	fi
	unexpected=$(printf '%s\n' "$EXPERT" | grep -i -E 'iwarp|ddp|rdma' |
		grep -v -e 'Rev field is NOT set to one' \
			-e 'Res field is NOT set to zero')
	[ -z "$unexpected" ] || fail "unexpected iWARP expert items: $unexpected"
}

tshark_version() { tshark --version 2>/dev/null | head -1; }

# conf_verdict PASS_MESSAGE: exits 0 with it, or 1 after the failures
# (with what tshark said on stderr), keeping the capture.
conf_verdict() {
	if [ $failures != 0 ]; then
		log "$failures check(s) failed; tshark $(tshark_version)"
		[ -s "$TMP/tshark.err" ] && grep -v 'Running as user' \
			"$TMP/tshark.err" | sed 's/^/  tshark: /'
		KEEP=1
		exit $FAIL
	fi
	log "PASS: $* ($(tshark_version))"
	exit $PASS
}
