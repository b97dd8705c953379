# SPDX-License-Identifier: MIT
# The reliability scenarios' common part (sourced): two network namespaces
# joined by a veth pair, an ndkstress server in one and clients in the
# other, and nftables faults. The caller sets PROG (its name in messages)
# and STRESS (the ndkstress binary). Skips (exit 77) without root, ip,
# nft, network namespaces or veth.

NSA=ndkfA$$
NSB=ndkfB$$
ADDR_B=10.79.0.2
export NDK_LOG=${NDK_LOG:-error}

[ "$(id -u)" = 0 ] || { echo "$PROG: needs root: skipped"; exit 77; }
for t in ip nft; do
	command -v $t >/dev/null || { echo "$PROG: no $t: skipped"; exit 77; }
done
[ -x "$STRESS" ] || { echo "$PROG: $STRESS not built"; exit 1; }

SRV=0
cleanup() {
	[ "$SRV" != 0 ] && kill -9 "$SRV" 2>/dev/null
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$TMP"
}
TMP=$(mktemp -d)
trap cleanup EXIT

ip netns add "$NSA" && ip netns add "$NSB" || { echo "$PROG: no netns: skipped"; exit 77; }
ip -n "$NSA" link add vA type veth peer name vB netns "$NSB" ||
	{ echo "$PROG: no veth: skipped"; exit 77; }
ip -n "$NSA" addr add 10.79.0.1/24 dev vA
ip -n "$NSB" addr add $ADDR_B/24 dev vB
for ns in "$NSA" "$NSB"; do ip -n "$ns" link set lo up; done
ip -n "$NSA" link set vA up
ip -n "$NSB" link set vB up
ip netns exec "$NSA" nft list ruleset >/dev/null 2>&1 ||
	{ echo "$PROG: nft does not work here: skipped"; exit 77; }


# Big buffers always mmap'd and returned on free: the server's RSS then
# shows what it holds, not what glibc keeps cached after a session ends.
export MALLOC_MMAP_THRESHOLD_=131072


server_start() {
	ip netns exec "$NSB" env NDK_MPA_CRC="${CRC:-1}" \
		NDK_PEER_TIMEOUT_MS="${PEER_TIMEOUT:-30000}" "$STRESS" -s \
		-b $ADDR_B >"$TMP/server.log" 2>&1 &
	SRV=$!
	for _ in $(seq 100); do
		ip netns exec "$NSB" ss -Hltn "sport = :18517" | grep -q . &&
			return 0
		sleep 0.05
	done
	echo "$PROG: ndkstress server did not start"
	cat "$TMP/server.log"
	exit 1
}

server_stop() {
	[ "$SRV" != 0 ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	SRV=0
}

faults_clear() {
	ip netns exec "$NSA" nft flush ruleset
	ip netns exec "$NSB" nft flush ruleset
	ip -n "$NSA" link set vA mtu 1500
	ip -n "$NSB" link set vB mtu 1500
}

# client SECONDS [ARGS...]: the client's JSON summary into $TMP/client.json;
# its exit status in CLIENT_RC.
client() {
	local secs=$1
	shift
	ip netns exec "$NSA" env NDK_MPA_CRC="${CRC:-1}" \
		timeout $((secs + 120)) "$STRESS" -j -D "$secs" "$@" $ADDR_B \
		>"$TMP/client.json" 2>"$TMP/client.log"
	CLIENT_RC=$?
}

field() { # NAME: a number from the client's JSON summary
	python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1]))[sys.argv[2]])
except Exception:
    print(-1)' "$TMP/client.json" "$1"
}

# nft_hook NS HOOK DEV RULE: a netdev chain on DEV (hook ingress or
# egress) with one rule; nft_in and nft_out name the two.
nft_hook() {
	ip netns exec "$1" nft -f - <<-EOF
		table netdev fault {
			chain $2 {
				type filter hook $2 device $3 priority 0;
				$4
			}
		}
	EOF
}
nft_in() { nft_hook "$1" ingress "$2" "$3"; }
nft_out() { nft_hook "$1" egress "$2" "$3"; }

# Payload bytes 64.. of 1% of the segments that carry data, with the TCP
# checksum fixed up: only the MPA CRC can tell.
CORRUPT='meta length > 400 numgen random mod 100 < 1 @th,512,32 set 0xdeadbeef'

# fault_apply NAME: one fault, the previous one cleared first. loss 5% and
# duplicates 2% each way, corruption (above) each way, a 2 s link flap,
# resets injected toward the client into 2% of its data segments (the
# server's side is left half-open), or none.
fault_apply() {
	faults_clear
	case $1 in
	loss)
		nft_in "$NSA" vA 'numgen random mod 100 < 5 drop'
		nft_in "$NSB" vB 'numgen random mod 100 < 5 drop'
		;;
	dup)
		nft_out "$NSA" vA 'numgen random mod 100 < 2 dup to vA'
		nft_out "$NSB" vB 'numgen random mod 100 < 2 dup to vB'
		;;
	corrupt)
		nft_in "$NSA" vA "$CORRUPT"
		nft_in "$NSB" vB "$CORRUPT"
		;;
	flap)
		ip -n "$NSA" link set vA down
		sleep 2
		ip -n "$NSA" link set vA up
		;;
	resets)
		nft_in "$NSB" vB 'tcp flags & (syn|rst) == 0 meta length > 400 numgen random mod 100 < 2 reject with tcp reset'
		;;
	esac
}

