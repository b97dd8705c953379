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
# on lo is not permitted). Set MPA_CAPTURE_KEEP=1 to keep the capture,
# MPA_CAPTURE_REPLAY=DIR to check a kept one again (lib.sh, which also
# has the tshark notes).

set -u

DRIVER=${1:?usage: check_mpa.sh /path/to/mpa_capture}
NAME=check_mpa
# shellcheck source=tests/conformance/lib.sh
. "$(dirname "$0")/lib.sh"

# ------------------------------------------------------------------
# 1. Driver up and listening; capture on its port; run; stop capture.

conf_init MPA tshark dumpcap awk od
capture_driver "$DRIVER"
CPORT=$(driver_says CONNECT 2)
RPORT=$(driver_says REJECT 2)
if [ -z "$CPORT" ] || [ -z "$RPORT" ]; then
	conf_abort "no client ports"
fi

# ------------------------------------------------------------------
# 2. Decoding helpers.

CONN="tcp.port == $LPORT && tcp.port == $CPORT"
REJ="tcp.port == $LPORT && tcp.port == $RPORT"
OURS="tcp.port == $LPORT && (tcp.port == $CPORT || tcp.port == $RPORT)"

NAMES=(frame.number tcp.srcport tcp.dstport tcp.len tcp.payload
	iwarp_mpa.key.req iwarp_mpa.key.rep iwarp_mpa.marker_flag
	iwarp_mpa.crc_flag iwarp_mpa.rej_flag iwarp_mpa.res iwarp_mpa.rev
	iwarp_mpa.pdlength iwarp_mpa.privatedata iwarp_mpa.ulpdulength
	iwarp_mpa.crc_check iwarp_mpa.crc iwarp_ddp.tagged_flag
	iwarp_ddp.last_flag iwarp_ddp.dv iwarp_ddp.stag
	iwarp_ddp.tagged_offset iwarp_rdma.version iwarp_rdma.opcode)

# Dissector values: hex without separators, booleans as 0/1.
norm() {
	local v=${1//:/}
	case $v in
	True | true) echo 1 ;;
	False | false) echo 0 ;;
	*) echo "${v,,}" ;;
	esac
}

declare -A F

# Loads the one frame that matches filter $2 into F; $1 names it.
load() {
	local what=$1 filter=$2 out line n i
	local -a vals
	F=()
	out=$(ts_fields "$filter" "${NAMES[@]}")
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
	if ! isnum "$got"; then
		fail "$1: $2 = '$got', expected $3"
	elif ((got != $3)); then
		fail "$1: $2 = $got ($((got))), expected $3"
	fi
}

# expect_payload WHAT EXPECTED_HEX: byte for byte, with the first offset
# that differs.
expect_payload() {
	local what=$1 want=$2 got=${F[tcp.payload]:-} at
	at=$(hex_diff "$want" "$got")
	[ -z "$at" ] && return 0
	fail "$what: payload differs at offset $at" \
		"(${#want}/2 vs ${#got}/2 bytes)"
	log "  expected: $want"
	log "  got:      $got"
}

# On failure, the frame as tshark decodes it.
show_frame() {
	[ $last_failed = 1 ] || return 0
	[ -n "${F[frame.number]:-}" ] && show_decode "${F[frame.number]}"
	last_failed=0
}

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
# (0x40), STag 1, TO 0, CRC32c 0xebd34c5f (RFC 6581 RTR).
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
if ts -Y "$OURS" -V | grep -q 'Bad CRC32'; then
	fail "a frame has a bad CRC32"
fi
check_whole "$OURS"
if [ $last_failed = 1 ] || [ $failures != 0 ]; then
	log "expert info:"
	printf '%s\n' "$EXPERT" | sed 's/^/    /'
	log "our frames:"
	ts -Y "$OURS" | sed 's/^/    /'
	last_failed=0
fi

conf_verdict "request, reply, Write RTR (Good CRC32) and reject decode as" \
	"expected"
