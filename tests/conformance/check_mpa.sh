#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Wire conformance of our MPA v2 / DDP / RDMAP traffic, judged by
# Wireshark's iWARP dissectors (iwarp_mpa, iwarp_ddp_rdmap).
#
# Usage: check_mpa.sh /path/to/mpa_capture
#
# Starts dumpcap on lo with a capture filter on the driver's listening
# port, lets the driver (mpa_capture.c) run one accepted connection (with
# the RTR) and one rejected connection, stops the capture and decodes it
# with tshark. Every frame is checked twice: through the dissector's
# fields (-T fields) and byte for byte against the expected TCP payload,
# which gives the exact offset of any difference.
#
# Exit status: 0 pass, 1 fail, 77 skipped (no tshark/dumpcap, or capture
# on lo is not permitted). Set MPA_CAPTURE_KEEP=1 to keep the capture.
#
# tshark 4.0 notes (shared/reference/iwarp.md 6.2, 6.3):
# * "-d tcp.port==N,iwarp_mpa" is refused: MPA is only a heuristic
#   dissector on TCP ("iwarp_mpa_tcp"). We force it with
#   --enable-heuristic iwarp_mpa_tcp and tcp.try_heuristic_first, so that
#   an ephemeral port that happens to belong to another dissector still
#   decodes as MPA, and disable the RPC-over-RDMA payload heuristic.
# * 4.0 has no fields for the RFC 6581 block (iwarp_mpa.enhanced.* came in
#   4.6): S is bit 0x10 of iwarp_mpa.res, and the IRD/ORD block is read
#   from the first 4 bytes of the private data.
# * It warns "Rev field is NOT set to one" and "Res field is NOT set to
#   zero" on every Rev 2 / S frame: RFC 5044 rules that RFC 6581 changed.
#   Those two warnings are expected; any other iWARP expert item at
#   warning level or above, any error, and any malformed frame fail.
# * A bad CRC raises no expert item; it is caught as "Bad CRC32" text.

set -u

DRIVER=${1:?usage: check_mpa.sh /path/to/mpa_capture}
PASS=0
FAIL=1
SKIP=77

log() { printf 'check_mpa: %s\n' "$*"; }

for tool in tshark dumpcap; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		log "SKIP: $tool not installed (make deps installs it)"
		exit $SKIP
	fi
done
if [ ! -x "$DRIVER" ]; then
	log "driver $DRIVER not found"
	exit $FAIL
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_mpa.XXXXXX") || exit $FAIL
CAP=$TMP/lo.pcapng
DRV_PID=
DC_PID=
KEEP=${MPA_CAPTURE_KEEP:-0}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
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
trap cleanup EXIT

# ------------------------------------------------------------------
# 1. Driver up and listening; capture on its port; run; stop capture.

mkfifo "$TMP/go" || exit $FAIL
# CRC is on by default: make sure the environment does not turn it off.
env -u NDK_MPA_CRC "$DRIVER" <"$TMP/go" >"$TMP/driver.out" \
	2>"$TMP/driver.err" &
DRV_PID=$!
exec 3>"$TMP/go" # unblocks the driver's stdin; it waits for a line

LPORT=
for _ in $(seq 100); do
	LPORT=$(awk '$1 == "LISTEN" { print $2 }' "$TMP/driver.out")
	[ -n "$LPORT" ] && break
	kill -0 "$DRV_PID" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$LPORT" ]; then
	log "FAIL: the driver printed no LISTEN line"
	cat "$TMP/driver.out" "$TMP/driver.err"
	KEEP=1
	exit $FAIL
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
drv_rc=0
wait "$DRV_PID" || drv_rc=$?
DRV_PID=
sleep 0.5 # let the last FIN/ACKs reach the capture
kill -INT "$DC_PID" 2>/dev/null
wait "$DC_PID" 2>/dev/null
DC_PID=

sed 's/^/  driver: /' "$TMP/driver.out"
if [ $drv_rc != 0 ]; then
	log "FAIL: driver exit status $drv_rc"
	sed 's/^/  driver: /' "$TMP/driver.err"
	KEEP=1
	exit $FAIL
fi
CPORT=$(awk '$1 == "CONNECT" { print $2 }' "$TMP/driver.out")
RPORT=$(awk '$1 == "REJECT" { print $2 }' "$TMP/driver.out")
if [ -z "$CPORT" ] || [ -z "$RPORT" ] || [ ! -s "$CAP" ]; then
	log "FAIL: no client ports or an empty capture"
	KEEP=1
	exit $FAIL
fi

# ------------------------------------------------------------------
# 2. Decoding helpers.

TS_OPTS=(-o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
	--disable-heuristic rpcrdma_iwarp)
CONN="tcp.port == $LPORT && tcp.port == $CPORT"
REJ="tcp.port == $LPORT && tcp.port == $RPORT"
OURS="tcp.port == $LPORT && (tcp.port == $CPORT || tcp.port == $RPORT)"

ts() { tshark -r "$CAP" "${TS_OPTS[@]}" "$@" 2>>"$TMP/tshark.err"; }

NAMES=(frame.number tcp.srcport tcp.dstport tcp.len tcp.payload
	iwarp_mpa.key.req iwarp_mpa.key.rep iwarp_mpa.marker_flag
	iwarp_mpa.crc_flag iwarp_mpa.rej_flag iwarp_mpa.res iwarp_mpa.rev
	iwarp_mpa.pdlength iwarp_mpa.privatedata iwarp_mpa.ulpdulength
	iwarp_mpa.crc_check iwarp_mpa.crc iwarp_ddp.tagged_flag
	iwarp_ddp.last_flag iwarp_ddp.dv iwarp_ddp.stag
	iwarp_ddp.tagged_offset iwarp_rdma.version iwarp_rdma.opcode)
EFIELDS=()
for n in "${NAMES[@]}"; do EFIELDS+=(-e "$n"); done

hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
# Dissector values: hex without separators, booleans as 0/1.
norm() {
	local v=${1//:/}
	case $v in
	True | true) echo 1 ;;
	False | false) echo 0 ;;
	*) echo "${v,,}" ;;
	esac
}

failures=0
frame_failed=0
declare -A F

fail() {
	log "FAIL: $*"
	failures=$((failures + 1))
	frame_failed=1
}

# Loads the one frame that matches filter $2 into F; $1 names it.
load() {
	local what=$1 filter=$2 out line n i
	local -a vals
	F=()
	out=$(ts -Y "$filter" -T fields -E separator='|' -E occurrence=a \
		"${EFIELDS[@]}")
	n=$(printf '%s' "$out" | grep -c .)
	if [ "$n" != 1 ]; then
		fail "$what: $n frames match '$filter', expected 1"
		return 1
	fi
	line=$out
	IFS='|' read -r -a vals <<<"$line"
	for i in "${!NAMES[@]}"; do
		F[${NAMES[$i]}]=$(norm "${vals[$i]:-}")
	done
	return 0
}

# expect WHAT FIELD VALUE: string compare after norm.
expect() {
	local got=${F[$2]:-}
	[ "$got" = "$3" ] || fail "$1: $2 = '$got', expected '$3'"
}

# expect_num WHAT FIELD VALUE: numeric compare (decimal or 0x hex).
expect_num() {
	local got=${F[$2]:-}
	if ! [[ $got =~ ^(0x[0-9a-f]+|[0-9]+)$ ]]; then
		fail "$1: $2 = '$got', expected $3"
	elif ((got != $3)); then
		fail "$1: $2 = $got ($((got))), expected $3"
	fi
}

# expect_payload WHAT EXPECTED_HEX: byte for byte, with the first offset
# that differs.
expect_payload() {
	local what=$1 want=$2 got=${F[tcp.payload]:-} i
	[ "$got" = "$want" ] && return 0
	for ((i = 0; i < ${#want} || i < ${#got}; i += 2)); do
		if [ "${want:i:2}" != "${got:i:2}" ]; then
			fail "$what: payload differs at offset $((i / 2)):" \
				"expected 0x${want:i:2}, got 0x${got:i:2}" \
				"(${#want}/2 vs ${#got}/2 bytes)"
			break
		fi
	done
	log "  expected: $want"
	log "  got:      $got"
}

# On failure, the frame as tshark decodes it.
show_frame() {
	[ $frame_failed = 1 ] || return 0
	if [ -n "${F[frame.number]:-}" ]; then
		log "decode of frame ${F[frame.number]}:"
		ts -Y "frame.number == ${F[frame.number]}" -V \
			-O iwarp_mpa,iwarp_ddp_rdmap | sed 's/^/    /'
	fi
	frame_failed=0
}

be16() { printf '%04x' "$1"; }

KEY_REQ=$(hex "MPA ID Req Frame")
KEY_REP=$(hex "MPA ID Rep Frame")
REQ_PD=conformance-request
REP_PD=conformance-reply
REJ_REQ_PD=conformance-reject-me
REJ_PD="go away"

# ------------------------------------------------------------------
# 3. The accepted connection.

# Request: C and S set (0x50), Rev 2, PD = v2 block + 19 bytes.
# Block: A (P2P) | IRD 8 = 0x8008; C (Write RTR) | D (Read RTR) | ORD 4 =
# 0xc004.
if load "MPA Request" "$CONN && iwarp_mpa.key.req"; then
	W="MPA Request"
	expect "$W" tcp.srcport "$CPORT"
	expect "$W" iwarp_mpa.key.req "$KEY_REQ"
	expect "$W" iwarp_mpa.marker_flag 0
	expect "$W" iwarp_mpa.crc_flag 1
	expect "$W" iwarp_mpa.rej_flag 0
	expect_num "$W" iwarp_mpa.res 0x10 # S set, reserved bits zero
	expect_num "$W" iwarp_mpa.rev 2
	expect_num "$W" iwarp_mpa.pdlength $((4 + ${#REQ_PD}))
	expect "$W" iwarp_mpa.privatedata "8008c004$(hex "$REQ_PD")"
	expect_num "$W" tcp.len $((20 + 4 + ${#REQ_PD})) # nothing behind it
	expect_payload "$W" \
		"${KEY_REQ}5002$(be16 $((4 + ${#REQ_PD})))8008c004$(hex "$REQ_PD")"
	show_frame
fi
REQ_FRAME=${F[frame.number]:-0}

# Reply: C and S, Rev 2. IRD = min(2, 128, peer ORD 4) = 2 with A;
# ORD = min(16, 128, peer IRD 8) = 8 with C only (Write RTR chosen):
# 0x8002 0x8008.
if load "MPA Reply" "$CONN && iwarp_mpa.key.rep"; then
	W="MPA Reply"
	expect "$W" tcp.srcport "$LPORT"
	expect "$W" iwarp_mpa.key.rep "$KEY_REP"
	expect "$W" iwarp_mpa.marker_flag 0
	expect "$W" iwarp_mpa.crc_flag 1
	expect "$W" iwarp_mpa.rej_flag 0
	expect_num "$W" iwarp_mpa.res 0x10
	expect_num "$W" iwarp_mpa.rev 2
	expect_num "$W" iwarp_mpa.pdlength $((4 + ${#REP_PD}))
	expect "$W" iwarp_mpa.privatedata "80028008$(hex "$REP_PD")"
	expect_num "$W" tcp.len $((20 + 4 + ${#REP_PD}))
	expect_payload "$W" \
		"${KEY_REP}5002$(be16 $((4 + ${#REP_PD})))80028008$(hex "$REP_PD")"
	[ "${F[frame.number]:-0}" -gt "$REQ_FRAME" ] ||
		fail "$W: frame ${F[frame.number]:-?} is not after the Request"
	show_frame
fi
REP_FRAME=${F[frame.number]:-0}

# RTR: the only FPDU of the connection, from the initiator. Zero-length
# RDMA Write: ULPDU_Length 14, DDP T|L|DV=1 (0xc1), RDMAP RV=1 Write
# (0x40), STag 1, TO 0, CRC32c 0xebd34c5f (iwarp.md 6.5).
if load "RTR FPDU" "$CONN && iwarp_mpa.fpdu"; then
	W="RTR FPDU"
	expect "$W" tcp.srcport "$CPORT"
	expect_num "$W" iwarp_mpa.ulpdulength 14
	expect_num "$W" iwarp_mpa.crc_check 0xebd34c5f
	expect "$W" iwarp_ddp.tagged_flag 1
	expect "$W" iwarp_ddp.last_flag 1
	expect_num "$W" iwarp_ddp.dv 1
	expect_num "$W" iwarp_ddp.stag 1
	expect_num "$W" iwarp_ddp.tagged_offset 0
	expect_num "$W" iwarp_rdma.version 1
	expect_num "$W" iwarp_rdma.opcode 0 # RDMA Write
	expect_num "$W" tcp.len 20
	expect_payload "$W" "000ec140000000010000000000000000ebd34c5f"
	[ "${F[frame.number]:-0}" -gt "$REP_FRAME" ] ||
		fail "$W: frame ${F[frame.number]:-?} is not after the Reply"
	if [ -n "${F[frame.number]:-}" ] &&
		! ts -Y "frame.number == ${F[frame.number]}" -V |
		grep -q '(Good CRC32)'; then
		fail "$W: tshark does not say 'Good CRC32'"
	fi
	show_frame
fi

# ------------------------------------------------------------------
# 4. The rejected connection.

if load "reject Request" "$REJ && iwarp_mpa.key.req"; then
	W="reject Request"
	expect "$W" iwarp_mpa.key.req "$KEY_REQ"
	expect "$W" iwarp_mpa.crc_flag 1
	expect_num "$W" iwarp_mpa.res 0x10
	expect_num "$W" iwarp_mpa.rev 2
	expect_payload "$W" \
		"${KEY_REQ}5002$(be16 $((4 + ${#REJ_REQ_PD})))8008c004$(hex "$REJ_REQ_PD")"
	show_frame
fi

# Reject: a Reply with R (flags 0x70: C R S), Rev 2, the v2 block and then
# "go away". The block is what the provider puts in a reject: A, and the
# responder's limits before Accept, IRD = min(128, peer ORD 4) = 4 and
# ORD = min(128, peer IRD 8) = 8, no RTR chosen: 0x8004 0x0008.
if load "reject Reply" "$REJ && iwarp_mpa.key.rep"; then
	W="reject Reply"
	expect "$W" tcp.srcport "$LPORT"
	expect "$W" iwarp_mpa.key.rep "$KEY_REP"
	expect "$W" iwarp_mpa.marker_flag 0
	expect "$W" iwarp_mpa.crc_flag 1
	expect "$W" iwarp_mpa.rej_flag 1
	expect_num "$W" iwarp_mpa.res 0x10
	expect_num "$W" iwarp_mpa.rev 2
	expect_num "$W" iwarp_mpa.pdlength $((4 + ${#REJ_PD}))
	pd=${F[iwarp_mpa.privatedata]:-}
	[ "${pd: -$((2 * ${#REJ_PD}))}" = "$(hex "$REJ_PD")" ] ||
		fail "$W: private data '$pd' does not end with '$REJ_PD'"
	expect_num "$W" tcp.len $((20 + 4 + ${#REJ_PD}))
	expect_payload "$W" \
		"${KEY_REP}7002$(be16 $((4 + ${#REJ_PD})))80040008$(hex "$REJ_PD")"
	show_frame
fi

# ------------------------------------------------------------------
# 5. Whole capture: nothing malformed, no bad CRC, no unexpected expert
#    items, and exactly the frames above.

n=$(ts -Y "($OURS) && iwarp_mpa" | grep -c .)
[ "$n" = 5 ] || fail "$n iWARP frames on our connections, expected 5"
n=$(ts -Y "($OURS) && _ws.malformed" | grep -c .)
[ "$n" = 0 ] || fail "$n malformed frames"
if ts -Y "$OURS" -V | grep -q 'Bad CRC32'; then
	fail "a frame has a bad CRC32"
fi
expert=$(ts -q -z "expert,warn,$OURS")
if printf '%s\n' "$expert" | grep -q '^Errors'; then
	fail "tshark reports expert errors"
fi
unexpected=$(printf '%s\n' "$expert" | grep -i 'iwarp' |
	grep -v -e 'Rev field is NOT set to one' \
		-e 'Res field is NOT set to zero')
[ -z "$unexpected" ] || fail "unexpected iWARP expert items: $unexpected"
if [ $frame_failed = 1 ] || [ $failures != 0 ]; then
	log "expert info:"
	printf '%s\n' "$expert" | sed 's/^/    /'
	log "our frames:"
	ts -Y "$OURS" | sed 's/^/    /'
	frame_failed=0
fi

if [ $failures != 0 ]; then
	log "$failures check(s) failed; tshark $(tshark --version 2>/dev/null |
		head -1)"
	[ -s "$TMP/tshark.err" ] && grep -v 'Running as user' \
		"$TMP/tshark.err" | sed 's/^/  tshark: /'
	KEEP=1
	exit $FAIL
fi
log "PASS: request, reply, Write RTR (Good CRC32) and reject decode as" \
	"expected ($(tshark --version 2>/dev/null | head -1))"
exit $PASS
