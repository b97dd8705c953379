#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Wire conformance of our data FPDUs (RFC 5044 MPA framing, RFC 5041 DDP,
# RFC 5040 RDMAP), judged by Wireshark's iWARP dissectors.
#
# Usage: check_dp.sh /path/to/dp_capture
#
# Starts dumpcap on lo with a capture filter on the driver's listening
# port, lets the driver (dp_capture.c) run one connection that carries a
# Send, a Send with Solicited Event, a Send with Invalidate, an RDMA Write,
# an RDMA Read (Request and Response), a zero-length Send and a Write to
# an invalid STag that the target answers with a Terminate; stops the
# capture and decodes it with tshark.
#
# Checks:
# * every FPDU decodes as iWARP MPA + DDP/RDMAP with "(Good CRC32)" (CRC
#   is on by default), DDP version 1 and RDMAP version 1;
# * the messages, in order, per direction: opcode, STag and TO (tagged),
#   QN, MSN and MO (untagged: MSN starts at 1 on each queue and adds 1 per
#   message, MO is the byte offset), the L bit on exactly the last segment
#   of each message, the TO continuity of tagged segments, the Invalidate
#   STag, the Read Request body, and the Terminate (layer DDP, tagged
#   buffer error, invalid STag, M and D set, the offending DDP header);
# * each FPDU alone in its TCP segment (always so on lo: MSS 65495) is
#   also compared byte for byte, CRC aside, with the FPDU built here from
#   RFC 5040/5041/5044, which gives the offset of any difference;
# * no malformed frame, no TCP payload left undecoded, no expert error
#   and no iWARP expert item besides the two expected MPA v2 warnings.
#
# Exit status: 0 pass, 1 fail, 77 skipped (no tshark/dumpcap, or capture
# on lo is not permitted). Set DP_CAPTURE_KEEP=1 to keep the capture (it
# is kept on failure), and DP_CAPTURE_REPLAY=DIR to check a kept capture
# again without running the driver (lib.sh, which also has the tshark
# notes). The checks hold for any MSS: under "unshare -n" with lo at MTU
# 600 the Write and the Read Response span several FPDUs (each several
# segments long unless NDK_MPA_LARGE_FPDU=0: docs/wire.md, Large FPDUs)
# and the test passes.
#
# With several FPDUs in one frame, -T fields lists each field's values in
# FPDU order; fields that only some FPDUs have (STag/TO for tagged, QN/MSN/
# MO for untagged, the Read Request body, the Invalidate STag, Terminate
# fields) are handed out to the FPDUs that carry them, in order.

set -u

NAME=check_dp
# shellcheck source=tests/conformance/lib.sh
. "$(dirname "$0")/lib.sh"

# ------------------------------------------------------------------
# 1. Driver up and listening; capture on its port; run; stop capture.

conf_start DP "${1:?usage: check_dp.sh /path/to/dp_capture}"

# What the driver used: CONNECT port, WINDOW stag, WRITE stag to len,
# READ sink_stag sink_to len src_stag src_to, BADWRITE stag to len.
driver_values CPORT=CONNECT:2 WSTAG=WINDOW:2 \
	W_STAG=WRITE:2 W_TO=WRITE:3 W_LEN=WRITE:4 \
	R_SINK=READ:2 R_SINKTO=READ:3 R_LEN=READ:4 R_SRC=READ:5 R_SRCTO=READ:6 \
	B_STAG=BADWRITE:2 B_TO=BADWRITE:3 B_LEN=BADWRITE:4

# ------------------------------------------------------------------
# 2. Decoding: one row per FPDU.

# shellcheck disable=SC2153 # CPORT is set by driver_values
CONN="tcp.port == $LPORT && tcp.port == $CPORT"

# Per frame; the awk below splits them per FPDU. Keep in step with it.
NAMES=(frame.number tcp.srcport tcp.len tcp.payload
	iwarp_mpa.ulpdulength iwarp_mpa.crc_check iwarp_mpa.crc
	iwarp_ddp.tagged_flag iwarp_ddp.last_flag iwarp_ddp.dv
	iwarp_rdma.version iwarp_rdma.opcode
	iwarp_ddp.stag iwarp_ddp.tagged_offset
	iwarp_ddp.qn iwarp_ddp.msn iwarp_ddp.mo
	iwarp_rdma.inval_stag
	iwarp_rdma.sinkstag iwarp_rdma.sinkto iwarp_rdma.rdmardsz
	iwarp_rdma.srcstag iwarp_rdma.srcto
	iwarp_rdma.term_layer iwarp_rdma.term_etype_ddp
	iwarp_rdma.term_errcode_ddp_tagged iwarp_rdma.term_hdrct_m
	iwarp_rdma.hdrct_d iwarp_rdma.hdrct_r iwarp_rdma.term_ddp_seg_len
	iwarp_rdma.term_ddp_h iwarp_rdma.term_rdma_h)

ts_fields "$CONN && iwarp_mpa.fpdu" "${NAMES[@]}" >"$TMP/frames.txt"

# Row columns (one FPDU): frame src tcplen nfpdu ulplen crc_check crc T L
# dv rv op stag to qn msn mo inv sinkstag sinkto rdsz srcstag srcto tlayer
# tetype tecode tm td tr tseglen tddph trdmah. "-" where absent.
ROW_NAMES=(frame src tcplen nfpdu ulplen crc_check crc T L dv rv op stag to
	qn msn mo inv sinkstag sinkto rdsz srcstag srcto tlayer tetype tecode
	tm td tr tseglen tddph trdmah)
awk -F'|' '
function norm(v) {
	if (v == "True" || v == "true") return 1
	if (v == "False" || v == "false") return 0
	return v == "" ? "-" : tolower(v)
}
# The opcode (0x0-0xf, or 0-15): its value, portably (mawk has no strtonum).
function hexdigit(v) {
	if (v ~ /^0x/) return index("0123456789abcdef", substr(v, length(v))) - 1
	return v + 0
}
function take(field, idx,    a, n) {
	n = split($field, a, ",")
	return idx <= n ? norm(a[idx]) : "-"
}
{
	n = split($5, ulp, ",")
	ti = 0; ui = 0; ri = 0; ii = 0; mi = 0
	for (k = 1; k <= n; k++) {
		t = take(8, k); op = hexdigit(take(12, k))
		row = $1 "|" $2 "|" $3 "|" n "|" norm(ulp[k]) "|" take(6, k) \
			"|" take(7, k) "|" t "|" take(9, k) "|" take(10, k) \
			"|" take(11, k) "|" take(12, k)
		if (t == 1) {
			ti++
			row = row "|" take(13, ti) "|" take(14, ti) "|-|-|-"
		} else {
			ui++
			row = row "|-|-|" take(15, ui) "|" take(16, ui) "|" \
				take(17, ui)
		}
		if (t != 1 && (op == 4 || op == 6)) {
			ii++
			row = row "|" take(18, ii)
		} else {
			row = row "|-"
		}
		if (t != 1 && op == 1) {
			ri++
			row = row "|" take(19, ri) "|" take(20, ri) "|" \
				take(21, ri) "|" take(22, ri) "|" take(23, ri)
		} else {
			row = row "|-|-|-|-|-"
		}
		if (t != 1 && op == 7) {
			mi++
			for (f = 24; f <= 32; f++)
				row = row "|" take(f, mi)
		} else {
			row = row "|-|-|-|-|-|-|-|-|-"
		}
		print row
	}
}' "$TMP/frames.txt" >"$TMP/fpdus.txt"

ROWS=()
mapfile -t ROWS <"$TMP/fpdus.txt"
declare -A R
# row I: loads row I into R[name].
row() {
	local -a vals
	IFS='|' read -r -a vals <<<"${ROWS[$1]}"
	local i
	R=()
	for i in "${!ROW_NAMES[@]}"; do
		R[${ROW_NAMES[$i]}]=${vals[$i]:--}
	done
}
# tcp.payload of a frame (hex, no separators).
declare -A PAYLOAD
while IFS='|' read -r f _ _ p _; do
	PAYLOAD[$f]=${p//:/}
done <"$TMP/frames.txt"

declare -A BAD_FRAMES

fail_frame() {
	BAD_FRAMES[$1]=1
	shift
	fail "$@"
}

# ------------------------------------------------------------------
# 3. Per FPDU: framing, CRC, versions.

TOTAL=${#ROWS[@]}
[ "$TOTAL" -gt 0 ] || fail "no FPDU decoded on the connection"
declare -A NFPDU_OF FPDU_BYTES
for i in "${!ROWS[@]}"; do
	row "$i"
	f=${R[frame]}
	NFPDU_OF[$f]=${R[nfpdu]}
	if isnum "${R[ulplen]}"; then
		n=$((2 + R[ulplen]))
		FPDU_BYTES[$f]=$((${FPDU_BYTES[$f]:-0} + n + (4 - n % 4) % 4 + 4))
	fi
	[ "${R[crc_check]}" != - ] ||
		fail_frame "$f" "frame $f: FPDU $i has no checked CRC" \
			"(iwarp_mpa.crc = ${R[crc]}): CRC not negotiated?"
	[ "${R[dv]}" = 1 ] || fail_frame "$f" "frame $f: DDP version ${R[dv]}"
	[ "${R[rv]}" = 1 ] || fail_frame "$f" "frame $f: RDMAP version ${R[rv]}"
done

# RFC 5044 wants FPDUs aligned with TCP segments; TCP may still coalesce
# or split them, so a frame whose FPDUs do not fill it exactly is a note.
for f in $(printf '%s\n' "${!FPDU_BYTES[@]}" | sort -n); do
	n=$(awk -F'|' -v f="$f" '$1 == f { print $3; exit }' "$TMP/frames.txt")
	[ "$n" = "${FPDU_BYTES[$f]}" ] ||
		log "note: frame $f: TCP payload $n bytes, its FPDUs" \
			"${FPDU_BYTES[$f]} (an FPDU spans TCP segments)"
done

# "(Good CRC32)" once per FPDU, frame by frame; never "Bad CRC32".
ts -Y "$CONN && iwarp_mpa.fpdu" -V >"$TMP/verbose.txt"
declare -A GOOD
while read -r f n; do GOOD[$f]=$n; done < <(awk '
	/^Frame [0-9]+:/ { f = $2; sub(":", "", f); g[f] += 0 }
	/\(Good CRC32\)/ { g[f]++ }
	END { for (f in g) print f, g[f] }' "$TMP/verbose.txt")
for f in "${!NFPDU_OF[@]}"; do
	[ "${GOOD[$f]:-0}" = "${NFPDU_OF[$f]}" ] ||
		fail_frame "$f" "frame $f: ${GOOD[$f]:-0} 'Good CRC32' for" \
			"${NFPDU_OF[$f]} FPDU(s)"
done
if grep -q 'Bad CRC32' "$TMP/verbose.txt"; then
	fail "tshark reports a bad CRC32:" \
		"$(grep -B8 'Bad CRC32' "$TMP/verbose.txt" | grep -E '^Frame|Bad CRC32')"
fi

# ------------------------------------------------------------------
# 4. FPDUs to messages: per direction and per class (tagged/untagged), a
#    message runs up to its L=1 segment. Tagged segments continue STag and
#    TO; untagged ones keep the MSN and advance MO.

# Message ids index these arrays (plain arrays: in $(( )) an associative
# array's subscript would be taken literally).
MSGS=()
MSG_FIRST=() MSG_LAST=() MSG_NSEG=() MSG_LEN=() MSG_NEXT=()
declare -A OPEN

for i in "${!ROWS[@]}"; do
	row "$i"
	f=${R[frame]}
	key="${R[src]}:${R[T]}"
	op=$((R[op]))
	if [ "${R[T]}" = 1 ]; then
		hdr=14
	else
		hdr=18
	fi
	if ! isnum "${R[ulplen]}"; then
		fail_frame "$f" "frame $f: no ULPDU length"
		continue
	fi
	plen=$((R[ulplen] - hdr))
	((op == 1 || op == 7)) && plen=0 # their body is not payload
	if [ -z "${OPEN[$key]:-}" ]; then
		id=${#MSGS[@]}
		MSGS+=("$id")
		OPEN[$key]=$id
		MSG_FIRST[id]=$i
		MSG_NSEG[id]=0
		MSG_LEN[id]=0
	else
		id=${OPEN[$key]}
		# A continuation: same opcode, and STag/TO or MSN/MO in step.
		first=${MSG_FIRST[id]}
		first_op=$(
			row "$first"
			echo $((R[op]))
		)
		((op == first_op)) ||
			fail_frame "$f" "frame $f: opcode $op continues a" \
				"message of opcode $first_op without L"
		if [ "${R[T]}" = 1 ]; then
			if ! isnum "${R[to]}" || ((R[to] != MSG_NEXT[id])); then
				fail_frame "$f" "frame $f: TO ${R[to]}," \
					"expected $(printf 0x%x "${MSG_NEXT[id]}")" \
					"(continuation)"
			fi
		else
			if ! isnum "${R[mo]}" || ((R[mo] != MSG_NEXT[id])); then
				fail_frame "$f" "frame $f: MO ${R[mo]}," \
					"expected ${MSG_NEXT[id]} (continuation)"
			fi
		fi
	fi
	if [ "${R[T]}" = 1 ]; then
		isnum "${R[to]}" && MSG_NEXT[id]=$((R[to] + plen))
	else
		isnum "${R[mo]}" && MSG_NEXT[id]=$((R[mo] + plen))
	fi
	MSG_NSEG[id]=$((MSG_NSEG[id] + 1))
	MSG_LEN[id]=$((MSG_LEN[id] + plen))
	MSG_LAST[id]=$i
	[ "${R[L]}" = 1 ] && unset "OPEN[$key]"
done
for key in "${!OPEN[@]}"; do
	id=${OPEN[$key]}
	row "${MSG_FIRST[id]}"
	fail_frame "${R[frame]}" "the message that starts in frame" \
		"${R[frame]} (port ${key%%:*}) has no last segment (L=1)"
done

# Untagged: per direction and QN, MSN 1, 2, 3, ... and MO from 0.
declare -A NEXT_MSN
for id in "${MSGS[@]}"; do
	for ((i = MSG_FIRST[id]; i <= MSG_LAST[id]; i++)); do
		row "$i"
		[ "${R[T]}" = 0 ] || continue
		k="${R[src]}:${R[qn]}"
		want=${NEXT_MSN[$k]:-1}
		if ! isnum "${R[msn]}" || ((R[msn] != want)); then
			fail_frame "${R[frame]}" "frame ${R[frame]}: QN ${R[qn]}" \
				"MSN ${R[msn]}, expected $want"
		fi
	done
	row "${MSG_FIRST[id]}"
	if [ "${R[T]}" = 0 ]; then
		[ "${R[mo]}" = 0 ] ||
			fail_frame "${R[frame]}" "frame ${R[frame]}: first MO" \
				"${R[mo]}, expected 0"
		k="${R[src]}:${R[qn]}"
		NEXT_MSN[$k]=$((${NEXT_MSN[$k]:-1} + 1))
	fi
done

# ------------------------------------------------------------------
# 5. The expected messages, in order, per direction.

hexpat() { # LEN SEED: the driver's fill() pattern
	awk -v n="$1" -v s="$2" \
		'BEGIN { for (i = 0; i < n; i++) printf "%02x", (i * 31 + s) % 256 }'
}
ZEROS=000000
# The FPDU without its CRC: length, ULPDU, pad (RFC 5044 4).
fpdu_hex() {
	local ulpdu=$1 n=$((${#1} / 2))
	local pad=$(((4 - (2 + n) % 4) % 4))
	printf '%s%s%s' "$(be16 $n)" "$ulpdu" "${ZEROS:0:2*pad}"
}
tagged_hex() { # OP STAG TO PAYLOAD
	printf 'c1%02x%s%s%s' $((0x40 | $1)) "$(be32 "$2")" "$(be64 "$3")" "$4"
}
untagged_hex() { # OP INV QN MSN MO REST
	printf '41%02x%s%s%s%s%s' $((0x40 | $1)) "$(be32 "$2")" "$(be32 "$3")" \
		"$(be32 "$4")" "$(be32 "$5")" "$6"
}

# Compares the message's FPDU with the expected bytes when it is the only
# FPDU of its frame (always so on lo); offsets count from the FPDU start.
expect_bytes() {
	local what=$1 id=$2 want got f at
	want=$(fpdu_hex "$3")
	[ "${MSG_NSEG[id]}" = 1 ] || return 0
	row "${MSG_FIRST[id]}"
	f=${R[frame]}
	if [ "${R[nfpdu]}" != 1 ] ||
		[ "$((R[tcplen]))" != $((${#want} / 2 + 4)) ]; then
		log "note: $what: frame $f holds more than the FPDU," \
			"byte check skipped (field checks apply)"
		return 0
	fi
	got=${PAYLOAD[$f]:0:${#want}}
	at=$(hex_diff "$want" "$got")
	[ -z "$at" ] && return 0
	fail_frame "$f" "$what (frame $f): byte ${at%%:*} of the FPDU:" \
		"${at#*: }"
	log "  expected: ${want:0:200}"
	log "  got:      ${got:0:200}"
}

# expect_field WHAT ID NAME VALUE: numeric, on the first segment.
expect_field() {
	local what=$1 id=$2 name=$3 want=$4 got
	row "${MSG_FIRST[id]}"
	got=${R[$name]}
	if ! isnum "$got"; then
		fail_frame "${R[frame]}" "$what (frame ${R[frame]}): $name" \
			"'$got', expected $want"
	elif ((got != want)); then
		fail_frame "${R[frame]}" "$what (frame ${R[frame]}): $name" \
			"$got, expected $want ($(printf 0x%x "$((want))"))"
	fi
}
# expect_str WHAT ID NAME VALUE: string, on the first segment.
expect_str() {
	row "${MSG_FIRST[$2]}"
	[ "${R[$3]}" = "$4" ] ||
		fail_frame "${R[frame]}" "$1 (frame ${R[frame]}): $3" \
			"'${R[$3]}', expected '$4'"
}
expect_len() {
	[ "${MSG_LEN[$2]}" = "$3" ] || {
		row "${MSG_FIRST[$2]}"
		fail_frame "${R[frame]}" "$1 (frame ${R[frame]}):" \
			"${MSG_LEN[$2]} payload bytes in ${MSG_NSEG[$2]}" \
			"segment(s), expected $3"
	}
}

# expect_msg WHAT ID CHECK...: NAME=NUMBER (expect_field), NAME:STRING
# (expect_str), len=N (expect_len), bytes=HEX (expect_bytes), in order.
expect_msg() {
	local what=$1 id=$2 arg
	shift 2
	for arg in "$@"; do
		case $arg in
		len=*) expect_len "$what" "$id" "${arg#len=}" ;;
		bytes=*) expect_bytes "$what" "$id" "${arg#bytes=}" ;;
		*=*) expect_field "$what" "$id" "${arg%%=*}" "${arg#*=}" ;;
		*) expect_str "$what" "$id" "${arg%%:*}" "${arg#*:}" ;;
		esac
	done
}
# expect_after WHAT ID CAUSE CAUSE_ID: message ID starts in a later frame
# than message CAUSE_ID.
expect_after() {
	local f
	row "${MSG_FIRST[$2]}"
	f=${R[frame]}
	row "${MSG_FIRST[$4]}"
	((f > R[frame])) ||
		fail_frame "$f" "$1 in frame $f, not after $3 (frame ${R[frame]})"
}

# The messages of one direction, in order.
A_MSGS=()
P_MSGS=()
for id in "${MSGS[@]}"; do
	row "${MSG_FIRST[id]}"
	if [ "${R[src]}" = "$CPORT" ]; then
		A_MSGS+=("$id")
	elif [ "${R[src]}" = "$LPORT" ]; then
		P_MSGS+=("$id")
	fi
done
ops() {
	local id s=
	for id in "$@"; do
		row "${MSG_FIRST[id]}"
		s="$s $((R[op]))"
	done
	echo "${s# }"
}
# Initiator: Write (RTR), Send, SendSE, SendInv, Write, Read Request,
# Send (0 bytes), Write (bad STag). Responder: Read Response, Terminate.
A_OPS="0 3 5 4 0 1 3 0"
P_OPS="2 7"
[ "$(ops "${A_MSGS[@]}")" = "$A_OPS" ] ||
	fail "initiator messages: opcodes '$(ops "${A_MSGS[@]}")'," \
		"expected '$A_OPS'"
[ "$(ops "${P_MSGS[@]}")" = "$P_OPS" ] ||
	fail "responder messages: opcodes '$(ops "${P_MSGS[@]}")'," \
		"expected '$P_OPS'"

if [ ${#A_MSGS[@]} = 8 ] && [ ${#P_MSGS[@]} = 2 ]; then
	# The Write RTR (RFC 6581): STag 1, TO 0, no payload.
	expect_msg "Write RTR" "${A_MSGS[0]}" stag=1 to=0 len=0 \
		bytes="$(tagged_hex 0 1 0 '')"
	expect_msg "Send" "${A_MSGS[1]}" qn=0 msn=1 mo=0 len=100 \
		bytes="$(untagged_hex 3 0 0 1 0 "$(hexpat 100 7)")"
	expect_msg "Send with SE" "${A_MSGS[2]}" qn=0 msn=2 len=64 \
		bytes="$(untagged_hex 5 0 0 2 0 "$(hexpat 64 11)")"
	expect_msg "Send with Invalidate" "${A_MSGS[3]}" qn=0 msn=3 \
		inv="$WSTAG" len=32 \
		bytes="$(untagged_hex 4 "$WSTAG" 0 3 0 "$(hexpat 32 13)")"
	expect_msg "RDMA Write" "${A_MSGS[4]}" stag="$W_STAG" to="$W_TO" \
		len="$W_LEN" \
		bytes="$(tagged_hex 0 "$W_STAG" "$W_TO" "$(hexpat "$W_LEN" 17)")"
	expect_msg "Read Request" "${A_MSGS[5]}" qn=1 msn=1 mo=0 L:1 \
		ulplen=46 sinkstag="$R_SINK" sinkto="$R_SINKTO" rdsz="$R_LEN" \
		srcstag="$R_SRC" srcto="$R_SRCTO" \
		bytes="$(untagged_hex 1 0 1 1 0 "$(be32 "$R_SINK")$(be64 \
			"$R_SINKTO")$(be32 "$R_LEN")$(be32 "$R_SRC")$(be64 \
			"$R_SRCTO")")"
	expect_msg "zero-length Send" "${A_MSGS[6]}" qn=0 msn=4 len=0 \
		bytes="$(untagged_hex 3 0 0 4 0 '')"
	expect_msg "Write to the invalidated window" "${A_MSGS[7]}" \
		stag="$B_STAG" to="$B_TO" len="$B_LEN" \
		bytes="$(tagged_hex 0 "$B_STAG" "$B_TO" "$(hexpat "$B_LEN" 23)")"
	expect_msg "Read Response" "${P_MSGS[0]}" stag="$R_SINK" \
		to="$R_SINKTO" len="$R_LEN" \
		bytes="$(tagged_hex 2 "$R_SINK" "$R_SINKTO" "$(hexpat "$R_LEN" 19)")"
	expect_after "Read Response" "${P_MSGS[0]}" "its Request" "${A_MSGS[5]}"

	# Terminate (RFC 5040 5.2, 6.6): QN 2, MSN 1, MO 0, L; layer DDP
	# (1), tagged buffer (1), invalid STag (0); M and D with the Write's
	# segment length and DDP header; no RDMAP header.
	expect_msg "Terminate" "${P_MSGS[1]}" qn=2 msn=1 mo=0 L:1 tlayer=1 \
		tetype=1 tecode=0 tm:1 td:1 tr:0 \
		tseglen:"$(be16 $((14 + B_LEN)))" \
		tddph:"$(tagged_hex 0 "$B_STAG" "$B_TO" '')" trdmah:- \
		bytes="$(untagged_hex 7 0 2 1 0 "1100c000$(be16 $((14 + \
			B_LEN)))$(tagged_hex 0 "$B_STAG" "$B_TO" '')")"
	expect_after "Terminate" "${P_MSGS[1]}" "the bad Write" "${A_MSGS[7]}"
fi

# ------------------------------------------------------------------
# 6. Whole connection: nothing malformed, nothing left undecoded, no
#    unexpected expert items.

# A TCP retransmission (loopback sends tail-loss probes when a slow build
# leaves a segment unacknowledged for a few milliseconds) repeats bytes
# already decoded from the original frame; tshark does not dissect it
# again.
ts_count n "($CONN) && tcp.len > 0 && !iwarp_mpa &&
	!tcp.analysis.retransmission && !tcp.analysis.spurious_retransmission"
[ "$n" = 0 ] || fail "$n frames with TCP payload not decoded as MPA"
ts_count n "($CONN) && (iwarp_mpa.key.req || iwarp_mpa.key.rep)"
[ "$n" = 2 ] || fail "$n MPA Request/Reply frames, expected 2"
check_whole "$CONN"

if [ $failures != 0 ]; then
	log "FPDUs (${ROW_NAMES[*]}):"
	for r in "${ROWS[@]}"; do
		printf '    %s\n' "${r//|/ }" | cut -c1-300
	done
	log "our frames:"
	ts -Y "$CONN" | sed 's/^/    /'
	log "expert info:"
	printf '%s\n' "$EXPERT" | sed 's/^/    /'
	for f in $(printf '%s\n' "${!BAD_FRAMES[@]}" | sort -n | head -5); do
		# shellcheck disable=SC2016 # a sed address, not an expansion
		show_decode "$f" '/^iWARP Marker/,$p'
	done
fi
conf_verdict "$TOTAL FPDUs in ${#MSGS[@]} messages (Send, Send with SE," \
	"Send with Invalidate, Write, Read Request/Response, zero-length" \
	"Send, Terminate) decode as DDP/RDMAP with Good CRC32"
