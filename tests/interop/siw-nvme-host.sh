#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndknvme (tools/nvme, our NVMe over Fabrics RDMA host) against Linux's
# nvmet-rdma over siw, in one boot of the interop guest
# (tests/interop/vm/ndkvm). The guest serves one subsystem with a
# memory-backed null_blk namespace (1 GiB of 512-byte blocks) on three
# ports, each forwarded from the host:
#
#   4420 (host 24420)  id; the CM Reject of a too large admin queue and the
#                      Connect error for an unknown subsystem; write + verify of a pattern over several ranges
#                      with 2 and 3 I/O queues, both memory modes
#                      (fast-register + remote invalidate, one MR per
#                      queue), in-capsule and keyed writes, small and large
#                      commands; a verify with the wrong pattern must fail;
#                      random 4 KiB and 64 KiB load with verification;
#                      badcmd (an NVMe error status for each bad command)
#   4421 (host 24421)  the target goes away: once a load runs there, the
#                      guest removes the subsystem from the port (nvmet
#                      disconnects every queue)
#   4422 (host 24422)  the target goes silent: once a load runs there, the
#                      guest takes eth0 down for 20 s (no FIN, no answer):
#                      our command timeout must end it
#
# In both go-away cases every outstanding command must end (with an error
# unless its response was already on the way), ndknvme must exit 1 within
# a bound, and the guest kernel must log no BUG or WARNING. The capture of
# the guest NIC is checked with tshark.
#
# MPA CRC is off (NDK_MPA_CRC=0) unless NVME_HOST_CRC=1: siw 6.1 misreads
# an MPA CRC that reaches it in two TCP segments (README.md, "NVMe host"
# N1), which our large Read Responses make likely within seconds, and
# nvmet-rdma then crashes the guest (N2).
#
#   siw-nvme-host.sh BUILD_DIR [OUT_DIR]     exit 0 pass, 1 fail, 77 skip
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: siw-nvme-host.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-siw-nvme-host.XXXXXX)}
. "$here/siw-lib.sh"
siw_find_harness "$top"
bin=$build/tools/ndknvme
[[ -x $bin ]] || { echo "no $bin"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"
nqn=nqn.2024-01.io.libndk:ndknvme-test
blocks=2097152 # null_blk gb=1 bs=512
# At least 6: the 4 KiB load must see two Keep Alives (one every
# KATO / 2 = 2.5 s).
load_secs=${NVME_LOAD_SECONDS:-8}
if ((load_secs < 6)); then
	echo "NVME_LOAD_SECONDS=$load_secs: at least 6 (two Keep Alives)" >&2
	exit 2
fi

g='n=/sys/kernel/config/nvmet
nqn='"$nqn"'
modload null_blk nr_devices=1 memory_backed=1 gb=1 bs=512 || echo "GUEST-FAIL null_blk"
s=$n/subsystems/$nqn
mkdir $s
echo 1 >$s/attr_allow_any_host
mkdir $s/namespaces/1
echo /dev/nullb0 >$s/namespaces/1/device_path
echo 1 >$s/namespaces/1/enable || echo "GUEST-FAIL namespace"
port() {
	mkdir $n/ports/$1
	echo rdma >$n/ports/$1/addr_trtype
	echo ipv4 >$n/ports/$1/addr_adrfam
	echo 10.0.2.15 >$n/ports/$1/addr_traddr
	echo $2 >$n/ports/$1/addr_trsvcid
	ln -s $s $n/ports/$1/subsystems/$nqn || echo "GUEST-FAIL port $2"
}
port 1 4420
port 2 4421
port 3 4422
conns() { ss -tnH state established "( sport = :$1 )" | wc -l; }
# Until N connections are up on a port (an admin queue and I/O queues).
waitconns() {
	i=0
	while [ "$(conns $1)" -lt $2 ]; do
		sleep 0.2
		i=$((i + 1))
		[ $i -lt 3000 ] || return 1
	done
}
wait-listen 4420 30
wait-listen 4421 30
wait-listen 4422 30
if waitconns 4421 3; then
	sleep 3
	echo "GUEST-GONE port 4421 with $(conns 4421) connections"
	rm $n/ports/2/subsystems/$nqn
	sleep 2
	echo "GUEST-AFTER-GONE $(conns 4421) connections"
fi
if waitconns 4422 3; then
	sleep 3
	echo "GUEST-SILENT port 4422 with $(conns 4422) connections"
	ip link set eth0 down
	# ndknvme gives up 4 s after its oldest command (--timeout 4).
	sleep 12
	ip link set eth0 up
	echo "GUEST-BACK"
	sleep 4
fi
echo "==== dmesg"
dmesg | grep -e nvmet -e "kernel BUG" -e "WARNING:" -e "Call Trace" -e "siw" -e "nullb0" | grep -v -e "SoftiWARP attached" -e "loading out-of-tree" -e "module verification"
'
printf '%s' "$g" >"$out/guest.sh"

siw_checks_begin
if [[ ${NVME_HOST_CRC:-0} == 1 ]]; then
	echo "MPA CRC on: siw may misread a CRC and nvmet then crash (README.md N1, N2)"
else
	export NDK_MPA_CRC=0
fi
"$NDKVM" run --timeout 900 --hostfwd 24420:4420 --hostfwd 24421:4421 \
	--hostfwd 24422:4422 --console-log "$out/console.log" \
	--pcap "$out/guest.pcap" --quiet -- "$g" >"$out/ndkvm.out" 2>&1 &
vm=$!
pids+=("$vm")
if ! siw_wait_lines "$out/console.log" '^NDKVM-LISTENING 4422' 1 300 "$vm"; then
	bad "the guest's nvmet never listened"
	tail -30 "$out/console.log" | tr -d '\r'
	exit 1
fi

# tshark's options for a capture of iWARP connections, as siw-lib.sh's.
mpa_o=(-o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
	--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)

# tshark finds FPDUs segment by segment, and in bulk data without a CRC
# to resync on it can lose their boundaries and read payload as headers,
# calling a frame malformed (a BoundError). Such a frame in connections
# that mpa-walk.py follows through every byte (framing, versions,
# opcodes, CRCs) is tshark's: listed, not counted, as in
# siw-nvme-target.sh. Returns 1 if a malformed frame's connections do not
# walk.
nvme_walk_malformed() { # pcap
	local p=$1 f st sp dp port
	local -A walked=()
	while read -r f st sp dp; do
		port=$((sp < dp ? sp : dp))
		if [[ -z ${walked[$port]:-} ]]; then
			python3 "$here/mpa-walk.py" --crc "$p" "$port" \
				>"$p.walk.$port" 2>&1 || {
				tail -3 "$p.walk.$port"
				echo "pcap: frame $f (connection $st) is malformed and the connections on port $port do not walk"
				return 1
			}
			walked[$port]=1
		fi
		echo "pcap: frame $f (connection $st): tshark lost its FPDU boundaries there; mpa-walk.py walks every byte of the connections on port $port"
	done < <(tshark -r "$p" "${mpa_o[@]}" -Y '_ws.malformed' -T fields \
		-e frame.number -e tcp.stream -e tcp.srcport -e tcp.dstport \
		2>/dev/null)
}

# siw_check_pcap, except that TCP payload sent after a connection began to
# close, on a connection that then ended with a reset, may be the start of
# an FPDU the reset cut off (the target going away mid-transfer while we
# close), and the last payload one side of a connection sent may be the
# start of an FPDU whose rest never reached the capture (the guest taking
# its link down mid-FPDU, gone-silent), and a segment right behind bytes
# the capture itself missed (tshark: "previous segment not captured",
# seen as the guest's link came back in gone-silent) cannot be decoded
# for want of them: listed, not counted.
nvme_check_pcap() { # pcap
	local p=$1 f st r src fin=() rst=() cut=0 und=0 line rc=0
	local -A last=()
	line=$(siw_check_pcap "$p") || rc=1
	echo "$line"
	((rc)) || return 0
	grep -q ', 0 Bad CRC32' <<<"$line" || return 1
	grep -q ' 0 malformed, ' <<<"$line" || nvme_walk_malformed "$p" || return 1
	# The first FIN of every connection and whether it saw a reset.
	while read -r st f r; do
		[[ -z ${fin[$st]:-} ]] && fin[$st]=$f
		[[ $r == 1 ]] && rst[$st]=1
	done < <(tshark -r "$p" -Y 'tcp.flags.fin == 1 || tcp.flags.reset == 1' \
		-T fields -e tcp.stream -e frame.number -e tcp.flags.reset 2>/dev/null)
	# The last frame with payload from each side of each connection.
	while read -r st src f; do
		last[$st.$src]=$f
	done < <(tshark -r "$p" -Y 'tcp.len > 0' -T fields -e tcp.stream \
		-e tcp.srcport -e frame.number 2>/dev/null)
	while read -r f st src lost; do
		und=$((und + 1))
		if [[ -n $lost ]]; then
			cut=$((cut + 1))
			echo "pcap: frame $f (connection $st) follows bytes the capture missed"
		elif [[ -n ${rst[$st]:-} && -n ${fin[$st]:-} ]] && ((f > fin[$st])); then
			cut=$((cut + 1))
			echo "pcap: frame $f (connection $st) was cut off by the reset that ended it"
		elif [[ ${last[$st.$src]:-} == "$f" ]]; then
			cut=$((cut + 1))
			echo "pcap: frame $f (connection $st) is the last its sender's capture has: the rest never came"
		fi
	done < <(tshark -2 -r "$p" "${mpa_o[@]}" -Y 'tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in &&
		!tcp.analysis.retransmission && !tcp.analysis.spurious_retransmission' \
		-T fields -e frame.number -e tcp.stream -e tcp.srcport \
		-e tcp.analysis.lost_segment 2>/dev/null)
	((und == cut))
}

k=0
# nv NAME PORT [ndknvme args...]: runs ndknvme, output in $out/NAME.log;
# sets rc. Each run picks its source ports from a range of its own, so
# that tshark never sees a 4-tuple reused across two connections.
nv() {
	local name=$1 port=$2
	shift 2
	k=$((k + 1))
	export NDK_EPHEMERAL_PORT_MIN=$((40000 + 32 * k))
	export NDK_EPHEMERAL_PORT_MAX=$((40000 + 32 * k + 31))
	rc=0
	timeout 300 "$bin" --nqn "$nqn" -p "$port" 127.0.0.1 "$@" \
		>"$out/$name.log" 2>"$out/$name.err" || rc=$?
	echo "$rc" >"$out/$name.rc"
	grep "^ndknvme: " "$out/$name.log" | sed "s/^/  [$name] /" | tail -8
}
# expect NAME RC PATTERN...: the run's status and lines in its output.
expect() {
	local name=$1 want=$2 p
	shift 2
	((rc == want)) || bad "$name: exit $rc, want $want ($(tail -1 "$out/$name.err" 2>/dev/null))"
	for p in "$@"; do
		grep -q -E -e "$p" "$out/$name.log" || bad "$name: no '$p'"
	done
}

nv id 24420 -q 2 -v id
expect id 0 '^ndknvme: id ok$' "namespace 1: $blocks blocks of 512 bytes" \
	'queue 0: connected, IRD 16 ORD 0, crqsize 32' 'model "Linux"'

# Refusals at setup: the RDMA CM Reject (an admin queue larger than
# nvmet-rdma's 32 entries: NVME_RDMA_CM_INVALID_HSQSIZE) and a Fabrics
# Connect to a subsystem the port does not serve.
nv reject 24420 --admin-qsize 64 id
expect reject 3 '^ndknvme: setup failed'
grep -q 'queue 0: the controller rejected the connection: NVMe RDMA CM status 4 (invalid host SQ size)' \
	"$out/reject.err" || bad "reject: no NVMe RDMA CM status 4 ($(grep ndknvme "$out/reject.err" | head -1))"
nv badnqn 24420 --nqn nqn.2024-01.io.libndk:none id
expect badnqn 3 '^ndknvme: setup failed'
grep -q 'queue 0: Fabrics Connect: 0x4182 (connect invalid parameters, DNR): byte 256 of the Connect data' \
	"$out/badnqn.err" ||
	bad "badnqn: no Connect Invalid Parameters ($(grep ndknvme "$out/badnqn.err" | head -1))"
grep -h -e 'rejected' -e 'Fabrics Connect' "$out/reject.err" "$out/badnqn.err" | sed 's/^/  [refused] /'

# Ranges: aligned and not, at both ends of the namespace, written and read
# back through other queue counts, memory modes and command sizes.
ranges=("0 2048 11 -q 2" "100003 777 12 -q 3 --mem global"
	"$((blocks - 300)) 300 13 -q 2 --no-incapsule" "5000 1000 14 -q 2 --max-io 4k")
# NVME_RANGES: how many of them (make test runs the first 2: one queue
# count and memory mode each way).
ranges=("${ranges[@]:0:${NVME_RANGES:-${#ranges[@]}}}")
i=0
for r in "${ranges[@]}"; do
	read -r lba cnt seed opts <<<"$r"
	i=$((i + 1))
	# shellcheck disable=SC2086
	nv "write$i" 24420 $opts write "$lba" "$cnt" --pattern "$seed"
	expect "write$i" 0 "^ndknvme: write ok $cnt blocks at lba $lba "
	# Read back the other way: other queue count, other memory mode.
	mem=global
	[[ $opts == *global* ]] && mem=fr
	nv "verify$i" 24420 -q 3 --mem "$mem" verify "$lba" "$cnt" --pattern "$seed"
	expect "verify$i" 0 "^ndknvme: verify ok $cnt blocks at lba $lba "
done
nv verify-wrong 24420 -q 2 verify 0 2048 --pattern 99
expect verify-wrong 4 '^ndknvme: mismatch at lba [0-9]+ byte 8: expected 0x63, got 0x0b' \
	'^ndknvme: verify FAILED: 0 blocks ok, 2048 mismatched'
nv read1 24420 -q 2 read 0 16 --dump
expect read1 0 '^ndknvme: read ok 16 blocks at lba 0 ' '^00 00 00 00 00 00 00 00 0b 00 00 00'

nv load4k 24420 -q 2 -d 32 -v load --rw randrw --bs 4096 --qd 16 -D "$load_secs" --range 200000 16384
# Keep Alive every KATO/2 (2.5 s) while the load runs, each answered.
expect load4k 0 '^ndknvme: load ok [1-9][0-9]* ios, [1-9][0-9]* reads verified, 0 mismatches' \
	'lat \(usec\): min' '^ndknvme: [2-9][0-9]* Keep Alive sent, 0 failed$'
nv load64k 24420 -q 2 --mem global load --rw randrw --bs 64k --qd 4 -D 4 --range 300000 8192
expect load64k 0 '^ndknvme: load ok [1-9][0-9]* ios, [0-9]* reads verified, 0 mismatches'
# The first range again: untouched by the loads (which ran elsewhere).
nv verify-again 24420 -q 1 verify 0 2048 --pattern 11
expect verify-again 0 '^ndknvme: verify ok 2048 blocks'

nv badcmd 24420 -q 2 badcmd
expect badcmd 0 '^ndknvme: badcmd ok: 4 of 4' \
	'badcmd io-opcode-0x7c status 0x[0-9a-f]*01 \(invalid command opcode' \
	'badcmd admin-opcode-0xf0 status 0x[0-9a-f]*01 \(invalid command opcode' \
	'badcmd read-bad-nsid status 0x[0-9a-f]*0b \(invalid namespace'

# gone NAME PORT GUEST-LINE BOUND [ndknvme args]: a load that the guest
# ends; ndknvme must end every command and exit 1 within BOUND seconds
# of the guest's line.
gone() {
	local name=$1 port=$2 line=$3 bound=$4 t1 t2 n e s
	shift 4
	nv "$name" "$port" "$@" &
	local p=$!
	k=$((k + 1)) # as the background nv counted
	if ! siw_wait_lines "$out/console.log" "^$line" 1 300 "$vm"; then
		bad "$name: the guest never printed $line"
		wait "$p" || true
		return
	fi
	t1=$(date +%s%N)
	wait "$p" || true
	t2=$(date +%s%N)
	# The run was in the background: its status is in the .rc file.
	rc=$(cat "$out/$name.rc" 2>/dev/null || echo none)
	[[ $rc == 1 ]] || bad "$name: exit $rc, want 1"
	t2=$(((t2 - t1) / 1000000))
	echo "  [$name] ndknvme ended $((t2 / 1000)).$(printf %03d $((t2 % 1000))) s after the guest's $line"
	((t2 < bound * 1000)) || bad "$name: ndknvme took more than $bound s"
	read -r n e s < <(sed -n 's/^ndknvme: lost: \([0-9]*\) commands outstanding, \([0-9]*\) ended with an error, \([0-9]*\) completed.*/\1 \2 \3/p' "$out/$name.log")
	if [[ -z ${n:-} ]]; then
		bad "$name: no 'lost:' line"
	elif ((n != e + s || e < 1)); then
		bad "$name: $n outstanding, $e ended with an error, $s completed"
	fi
	grep -q '^ndknvme: load FAILED' "$out/$name.log" || bad "$name: no load FAILED line"
}
gone gone-port 24421 GUEST-GONE 20 -q 2 --timeout 10 load --rw randrw --qd 16 -D 300 --range 400000 16384
gone gone-silent 24422 GUEST-SILENT 25 -q 2 --timeout 4 load --rw randrw --qd 16 -D 300 --range 500000 16384
grep -h -e 'controller failed' "$out"/gone-*.err | sed 's/^/  [gone] /'
# The guest's siw closes a queue whose socket still holds unread commands
# of the load; TCP then ends it with a reset rather than a FIN. Either is
# the controller ending the connection, as opposed to going silent.
grep -E -q 'controller failed: queue [0-9]*: the (controller closed the connection|connection was reset)' "$out/gone-port.err" ||
	bad "gone-port: no lost connection reported"
grep -q 'controller failed: queue [0-9]*: command .* got no response in 4000 ms' "$out/gone-silent.err" ||
	bad "gone-silent: no command timeout reported"
# NdkFlush must give back every request at once, the receive a Send was
# being placed into included (README.md, NVMe host: L1).
if grep -h 'the flush returned nothing' "$out"/*.err; then
	bad "a flushed queue kept requests"
fi

wait "$vm" || siw_vm_failed $? "$out/ndkvm.out"
tr -d '\r' <"$out/console.log" >"$out/console.txt"
mv "$out/console.txt" "$out/console.log"
grep -E '^GUEST-' "$out/console.log" | sed 's/^/  [guest] /'
grep -q '^GUEST-FAIL' "$out/console.log" && bad "guest setup failed"
sed -n '/^==== dmesg/,$p' "$out/console.log" | grep -v '^====' | tail -25 | sed 's/^/  [dmesg] /'
if grep -q -e 'kernel BUG' -e 'WARNING:' -e 'Call Trace' "$out/console.log"; then
	bad "guest kernel BUG/WARNING (see $out/console.log)"
fi
grep -q 'nvmet: creating nvm controller' "$out/console.log" || bad "nvmet created no controller"
nvme_check_pcap "$out/guest.pcap" || bad "capture does not decode cleanly"
if ((fail)); then
	echo "FAIL: logs in $out"
	exit 1
fi
echo "PASS: id, ${#ranges[@]} ranges written and verified, 2 loads, badcmd, target gone and silent"
[[ -n ${2:-} ]] || rm -rf "$out"
