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

NAME=check_mpa
# shellcheck source=tests/conformance/lib.sh
. "$(dirname "$0")/lib.sh"

# ------------------------------------------------------------------
# 1. Driver up and listening; capture on its port; run; stop capture.

conf_start MPA "${1:?usage: check_mpa.sh /path/to/mpa_capture}"
driver_values CPORT=CONNECT:2 RPORT=REJECT:2

# ------------------------------------------------------------------
# 2. Decoding helpers.

# shellcheck disable=SC2153 # CPORT and RPORT are set by driver_values
CONN="tcp.port == $LPORT && tcp.port == $CPORT"
# shellcheck disable=SC2153
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

# check_frame WHAT FILTER CHECK...: loads the one frame that FILTER
# matches (1 if there is not one) and checks it: FIELD:STRING (expect),
# FIELD=NUMBER (expect_num), payload=HEX (expect_payload), in order.
check_frame() {
	local what=$1 arg
	load "$1" "$2" || return 1
	shift 2
	for arg in "$@"; do
		case $arg in
		payload=*) expect_payload "$what" "${arg#payload=}" ;;
		*=*) expect_num "$what" "${arg%%=*}" "${arg#*=}" ;;
		*) expect "$what" "${arg%%:*}" "${arg#*:}" ;;
		esac
	done
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

# check_mpa_frame WHAT FILTER SRCPORT KEY R BLOCK PD: the one frame that
# FILTER matches is an MPA Request or Reply (KEY, in hex) from SRCPORT with
# C and S set, and R if R is 1, no markers, the large-FPDU bit 0x08 where
# we set it (not in a reject: docs/wire.md, Large FPDUs), the other
# reserved bits zero, Rev 2, then the IRD/ORD block (BLOCK, in hex) and
# the private data PD, and nothing behind it; byte for byte.
check_mpa_frame() {
	local what=$1 filter=$2 port=$3 key=$4 rej=$5 block=$6 pd=$7 field
	local large=$((rej ? 0 : 8))
	field=iwarp_mpa.key.rep
	[ "$key" = "$KEY_REQ" ] && field=iwarp_mpa.key.req
	check_frame "$what" "$filter" tcp.srcport:"$port" "$field:$key" \
		iwarp_mpa.marker_flag:0 iwarp_mpa.crc_flag:1 \
		iwarp_mpa.rej_flag:"$rej" \
		iwarp_mpa.res="$(printf '0x%02x' $((0x10 | large)))" \
		iwarp_mpa.rev=2 \
		iwarp_mpa.pdlength=$((4 + ${#pd})) \
		iwarp_mpa.privatedata:"$block$(hex "$pd")" \
		tcp.len=$((20 + 4 + ${#pd})) \
		payload="$key$(printf '%02x' $((0x50 | rej << 5 | large)))02$(be16 \
			$((4 + ${#pd})))$block$(hex "$pd")"
}

# Request: IRD/ORD block A (P2P) | IRD 8 = 0x8008; C (Write RTR) | D
# (Read RTR) | ORD 4 = 0xc004.
check_mpa_frame "MPA Request" "$CONN && iwarp_mpa.key.req" "$CPORT" \
	"$KEY_REQ" 0 8008c004 "$REQ_PD"
show_frame
REQ_FRAME=${F[frame.number]:-0}

# Reply: IRD = min(2, 128, peer ORD 4) = 2 with A; ORD = min(16, 128,
# peer IRD 8) = 8 with C only (Write RTR chosen): 0x8002 0x8008.
if check_mpa_frame "MPA Reply" "$CONN && iwarp_mpa.key.rep" "$LPORT" \
	"$KEY_REP" 0 80028008 "$REP_PD"; then
	[ "${F[frame.number]:-0}" -gt "$REQ_FRAME" ] ||
		fail "MPA Reply: frame ${F[frame.number]:-?} is not after" \
			"the Request"
fi
show_frame
REP_FRAME=${F[frame.number]:-0}

# RTR: the only FPDU of the connection, from the initiator. Zero-length
# RDMA Write: ULPDU_Length 14, DDP T|L|DV=1 (0xc1), RDMAP RV=1 Write
# (0x40, opcode 0), STag 1, TO 0, CRC32c 0xebd34c5f (RFC 6581 RTR).
if check_frame "RTR FPDU" "$CONN && iwarp_mpa.fpdu" \
	tcp.srcport:"$CPORT" iwarp_mpa.ulpdulength=14 \
	iwarp_mpa.crc_check=0xebd34c5f iwarp_ddp.tagged_flag:1 \
	iwarp_ddp.last_flag:1 iwarp_ddp.dv=1 iwarp_ddp.stag=1 \
	iwarp_ddp.tagged_offset=0 iwarp_rdma.version=1 iwarp_rdma.opcode=0 \
	tcp.len=20 payload="000ec140000000010000000000000000ebd34c5f"; then
	[ "${F[frame.number]:-0}" -gt "$REP_FRAME" ] ||
		fail "RTR FPDU: frame ${F[frame.number]:-?} is not after" \
			"the Reply"
	if [ -n "${F[frame.number]:-}" ] &&
		! ts -Y "frame.number == ${F[frame.number]}" -V |
		grep -q '(Good CRC32)'; then
		fail "RTR FPDU: tshark does not say 'Good CRC32'"
	fi
fi
show_frame

# ------------------------------------------------------------------
# 4. The rejected connection.

check_mpa_frame "reject Request" "$REJ && iwarp_mpa.key.req" "$RPORT" \
	"$KEY_REQ" 0 8008c004 "$REJ_REQ_PD"
show_frame

# Reject: a Reply with R, the v2 block and then "go away". The block is
# what the provider puts in a reject: A, and the responder's limits
# before Accept, IRD = min(128, peer ORD 4) = 4 and ORD = min(128, peer
# IRD 8) = 8, no RTR chosen: 0x8004 0x0008.
check_mpa_frame "reject Reply" "$REJ && iwarp_mpa.key.rep" "$LPORT" \
	"$KEY_REP" 1 80040008 "$REJ_PD"
show_frame

# ------------------------------------------------------------------
# 5. Whole capture: nothing malformed, no bad CRC, no unexpected expert
#    items, and exactly the frames above.

ts_count n "($OURS) && iwarp_mpa"
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
