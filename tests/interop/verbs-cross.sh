#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Cross-provider traffic: libndk's verbs provider on Linux siw inside the
# interop guest (tests/interop/vm/ndkvm) against libndk's software
# provider on the host, both ways, in one guest boot, with three tools
# that check their data:
#
#   ndkrping (tools/interop)  validated pings: Send, RDMA Write, RDMA Read
#                             (--verify on both sides)
#   ndkping (tools/perf)      Send/Receive round trips, each echo checked
#                             against the pattern sent (--verify)
#   ndkperf (tools/perf)      its data tests with --verify: the client fills what
#                             it sends and checks what it reads or gets
#                             back, the server checks what reaches it and
#                             ends the session on a mismatch
#   ndknvme, ndknvmet         (tools/nvme) a write and a verify of 256
#                             blocks: one controller each, whose commands
#                             carry keyed SGLs, RDMA Reads and Writes and
#                             Sends with Invalidate
#
#   guest servers  'ndkrping -s', 'ndkping -s', 'ndkperf -s', 'ndknvmet' on
#                  siw0 (NDK_PROVIDER=verbs), forwarded from 127.0.0.1:
#                  17176, 17178, 17179 and 17180 to guest ports 7176,
#                  7178, 7179 and 7180; the host's clients (software, on
#                  lo) connect
#   guest clients  the host's servers on 127.0.0.1:17177 (ndkrping), 17181
#                  (ndkping), 17182 (ndkperf), 17183 (ndknvmet); the
#                  guest's clients connect to 10.0.2.2 on siw0 (verbs)
#
# The figures printed are those of an emulated guest (qemu TCG, user-mode
# network): they show that the path works, not what it is worth.
#
#   verbs-cross.sh BUILD_DIR [OUT_DIR]
#
# Exit 0 pass, 1 fail, 77 skip (no guest). The defaults are the long
# form (about a minute in the guest); CTest sets the short one (about 15 s
# with the boot). Environment:
#   CROSS_SIZES        ndkrping message sizes (1 26 4096 4097 65536)
#   CROSS_COUNT        ndkrping pings per connection (50)
#   CROSS_PING_SIZES   ndkping sizes (0 1 4097 65536)
#   CROSS_PING_COUNT   ndkping round trips per connection (20)
#   CROSS_PERF_TESTS   ndkperf tests (send_lat send_bw write_lat write_bw
#                      read_lat read_bw msg_rate)
#   CROSS_PERF_SIZES   ndkperf sizes (1 4097 65536); msg_rate runs 8 bytes
#   CROSS_PERF_ITERS   ndkperf iterations per run (200)
#   CROSS_NVME         1: the NVMe pair too (1)
#   CROSS_CRC          MPA CRC of the host's side (0): siw 6.1 misreads
#                      a CRC that reaches it split over two TCP segments
#                      (README.md, NVMe host, N1), which small RDMA
#                      Writes and 64 KiB messages toward siw hit within
#                      seconds; the data checks stand in for it
# An empty list leaves that tool out.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ndkvm=$here/vm/ndkvm
lock=${NDKVM_LOCK:-/tmp/ndkvm.lock}
build=$(cd "${1:?usage: verbs-cross.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-verbs-cross.XXXXXX)}
. "$here/wait-lib.sh"

rping=$build/tools/interop/ndkrping
ping=$build/tools/perf/ndkping
perf=$build/tools/perf/ndkperf
nvme_host=$build/tools/ndknvme
nvme_tgt=$build/tools/ndknvmet
for t in "$rping" "$ping" "$perf" "$nvme_host" "$nvme_tgt" \
	"$build/tools/ndkinfo"; do
	[[ -x $t ]] || { echo "no $t" >&2; exit 1; }
done
if ! "$ndkvm" check >/dev/null 2>&1; then
	echo "verbs-cross: the interop guest cannot run here (ndkvm build?)" >&2
	exit 77
fi
count=${CROSS_COUNT:-50}
read -ra sizes <<<"${CROSS_SIZES-1 26 4096 4097 65536}"
ping_count=${CROSS_PING_COUNT:-20}
read -ra ping_sizes <<<"${CROSS_PING_SIZES-0 1 4097 65536}"
read -ra perf_tests <<<"${CROSS_PERF_TESTS-send_lat send_bw write_lat write_bw read_lat read_bw msg_rate}"
read -ra perf_sizes <<<"${CROSS_PERF_SIZES-1 4097 65536}"
perf_iters=${CROSS_PERF_ITERS:-200}
crc=${CROSS_CRC:-0}
nvme=${CROSS_NVME:-1}
nqn=nqn.2024-01.io.libndk:verbs-cross
nvme_cmds=("write 0 256 --pattern 3" "verify 0 256 --pattern 3")
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"

# Every ndkperf run: "TEST SIZE" (msg_rate once, at 8 bytes; write_lat
# needs a byte to spin on).
perf_runs=()
for t in "${perf_tests[@]}"; do
	if [[ $t == msg_rate ]]; then
		perf_runs+=("$t 8")
		continue
	fi
	for s in "${perf_sizes[@]}"; do
		[[ $t == write_lat && $s == 0 ]] && continue
		perf_runs+=("$t $s")
	done
done
nrping=${#sizes[@]} nping=${#ping_sizes[@]} nperf=${#perf_runs[@]}

# The guest: its ndkping and ndkperf servers in the background, its
# ndkrping server for each size; once the host's clients are through,
# its clients against the host's servers.
g='export LD_LIBRARY_PATH=/opt/ndk NDK_PROVIDER=verbs
/opt/ndk/ndkinfo -I eth0 | grep -E "^(Provider|Device|RdmaTechnology) "
# lines FILE ERE N SECONDS: waits until FILE has N lines matching ERE.
lines() {
	i=0
	while [ "$(grep -c -E "$2" "$1" 2>/dev/null)" -lt "$3" ]; do
		i=$((i + 1)); [ $i -le $(($4 * 10)) ] || return 1; sleep 0.1
	done
}
'
if ((nping)); then
	g+="/opt/ndk/ndkping -s -b 10.0.2.15 -p 7178 >/tmp/ping-server.log 2>&1 & ps_ping=\$!
wait-listen 7178 60
"
fi
if ((nperf)); then
	g+="/opt/ndk/ndkperf -s -b 10.0.2.15 -p 7179 >/tmp/perf-server.log 2>&1 & ps_perf=\$!
wait-listen 7179 60
"
fi
if ((nvme)); then
	g+="/opt/ndk/ndknvmet -b 10.0.2.15 -p 7180 --nqn $nqn --ram 8m -q 1 >/tmp/nvmet.log 2>&1 & ps_nvme=\$!
wait-listen 7180 60
"
fi
for s in "${sizes[@]}"; do
	g+="/opt/ndk/ndkrping -s --verify -b 10.0.2.15 -p 7176 -S $s -n $count --timeout 60 >/tmp/s$s.log 2>&1 & rp=\$!
wait-listen 7176 60; wait \$rp; echo \"GUEST-SERVER $s \$?\"; tail -n 3 /tmp/s$s.log
"
done
if ((nping)); then
	g+="lines /tmp/ping-server.log '^connection closed' $nping 120
echo \"GUEST-PING-SERVER \$(grep -c '^connection closed (STATUS_SUCCESS)' /tmp/ping-server.log) of $nping\"
grep '^connection closed' /tmp/ping-server.log | sed 's/^/GUEST-PING-SERVER-LOG /'
kill \$ps_ping
"
fi
if ((nperf)); then
	g+="lines /tmp/perf-server.log 'verify: .*(byte-exact|data differ)|ended early' $nperf 120
echo \"GUEST-PERF-SERVER \$(grep -c 'all byte-exact' /tmp/perf-server.log) of $nperf\"
grep -E 'verify|early' /tmp/perf-server.log | sed 's/^/GUEST-PERF-SERVER-LOG /'
kill \$ps_perf
"
fi
if ((nvme)); then
	# A controller per command of the host's.
	g+="lines /tmp/nvmet.log 'ctrl [0-9]*: freed|ended before Connect' ${#nvme_cmds[@]} 60
kill -TERM \$ps_nvme; wait \$ps_nvme; echo \"GUEST-NVMET \$?\"
grep -E 'exit:|error' /tmp/nvmet.log | sed 's/^/GUEST-NVMET-LOG /'
"
fi
g+="echo GUEST-CLIENTS
"
for s in "${sizes[@]}"; do
	g+="/opt/ndk/ndkrping --verify -S $s -n $count --timeout 60 10.0.2.2:17177 >/tmp/c$s.log 2>&1; echo \"GUEST-CLIENT $s \$?\"; tail -n 3 /tmp/c$s.log
"
done
for s in "${ping_sizes[@]}"; do
	g+="/opt/ndk/ndkping --verify -n $ping_count -i 0 -S $s 10.0.2.2:17181 >/tmp/pc$s.log 2>&1; echo \"GUEST-PING-CLIENT $s \$?\"; tail -n 3 /tmp/pc$s.log | sed 's/^/GUEST-PING-OUT $s /'
"
done
for r in "${perf_runs[@]}"; do
	set -- $r
	g+="/opt/ndk/ndkperf --verify -t $1 -S $2 -n $perf_iters 10.0.2.2:17182 >/tmp/pf.log 2>&1; echo \"GUEST-PERF-CLIENT $1 $2 \$?\"; grep -v '^#\\|^bytes' /tmp/pf.log | sed 's/^/GUEST-PERF-ROW $1 $2 /'; grep -E '^# verify|disconnected|verify:' /tmp/pf.log
"
done
if ((nvme)); then
	for k in "${!nvme_cmds[@]}"; do
		g+="/opt/ndk/ndknvme --nqn $nqn -q 1 10.0.2.2:17183 ${nvme_cmds[$k]} >/tmp/nv.log 2>&1; echo \"GUEST-NVME-CLIENT $k \$?\"; grep '^ndknvme: .* ok' /tmp/nv.log | sed 's/^/GUEST-NVME-OUT /'
"
	done
fi
g+="echo \"GUEST-SIW-CRC-ERRORS \$(dmesg | grep -c 'siw: crc error')\"
"

fail=0
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT
# The host's servers for the guest's clients, on the software provider.
if ((nrping)); then
	NDK_PROVIDER=software NDK_MPA_CRC=$crc "$rping" -s --verify -b 127.0.0.1 -p 17177 -S 65536 \
		-c "$nrping" --timeout 600 >"$out/host-rping-server.log" 2>&1 &
	pids+=($!)
fi
NDK_PROVIDER=software NDK_MPA_CRC=$crc "$ping" -s -b 127.0.0.1 -p 17181 \
	>"$out/host-ping-server.log" 2>&1 &
pids+=($!)
NDK_PROVIDER=software NDK_MPA_CRC=$crc "$perf" -s -b 127.0.0.1 -p 17182 \
	>"$out/host-perf-server.log" 2>&1 &
pids+=($!)
if ((nvme)); then
	NDK_PROVIDER=software NDK_MPA_CRC=$crc "$nvme_tgt" -b 127.0.0.1 \
		-p 17183 --nqn "$nqn" --ram 8m -q 1 >"$out/host-nvmet.log" 2>&1 &
	pids+=($!)
fi
log=$out/console.log
: >"$log"
t0=$SECONDS
flock "$lock" "$ndkvm" run --quiet --timeout 900 --console-log "$log" \
	--hostfwd 17176:7176 --hostfwd 17178:7178 --hostfwd 17179:7179 \
	--hostfwd 17180:7180 --file "$nvme_host:/opt/ndk/ndknvme" \
	--file "$nvme_tgt:/opt/ndk/ndknvmet" \
	--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0" \
	--file "$rping:/opt/ndk/ndkrping" --file "$ping:/opt/ndk/ndkping" \
	--file "$perf:/opt/ndk/ndkperf" \
	--file "$build/tools/ndkinfo:/opt/ndk/ndkinfo" \
	-- "$g" >"$out/guest.out" 2>&1 &
vm=$!
listening() {
	wait_for_lines "$log" "^NDKVM-LISTENING $1" "$2" 300 "$vm"
}
for s in "${sizes[@]}"; do
	# The guest's server listens; the host connects through the
	# forward, on the software provider.
	n=$(grep -c "^GUEST-SERVER " "$log" 2>/dev/null || true)
	if ! listening 7176 $((n + 1)); then
		echo "FAIL guest-server rping $s: the guest never listened"
		fail=1
		break
	fi
	if NDK_PROVIDER=software NDK_MPA_CRC=$crc "$rping" --verify -p 17176 -S "$s" \
		-n "$count" --timeout 60 127.0.0.1 >"$out/host-rping-client-$s.log" 2>&1; then
		echo "PASS guest-server rping $s (host client, software)"
	else
		echo "FAIL guest-server rping $s: host client: $(tail -n1 "$out/host-rping-client-$s.log")"
		fail=1
	fi
	wait_for_lines "$log" "^GUEST-SERVER $s " 1 120 "$vm" || true
done
if ((nping)) && listening 7178 1; then
	for s in "${ping_sizes[@]}"; do
		f=$out/host-ping-client-$s.log
		if NDK_PROVIDER=software NDK_MPA_CRC=$crc timeout 120 "$ping" --verify -n "$ping_count" \
			-i 0 -S "$s" 127.0.0.1:17178 >"$f" 2>&1 &&
			grep -q "^verify: $ping_count of $ping_count echoes byte-exact" "$f"; then
			echo "PASS guest-server ping $s (host client, software): $(grep -o 'rtt .*' "$f")"
		else
			echo "FAIL guest-server ping $s: host client: $(tail -n1 "$f")"
			fail=1
		fi
	done
elif ((nping)); then
	echo "FAIL guest-server ping: the guest never listened"
	fail=1
fi
if ((nperf)) && listening 7179 1; then
	for r in "${perf_runs[@]}"; do
		set -- $r
		f=$out/host-perf-client-$1-$2.log
		if NDK_PROVIDER=software NDK_MPA_CRC=$crc timeout 300 "$perf" --verify -t "$1" -S "$2" \
			-n "$perf_iters" 127.0.0.1:17179 >"$f" 2>&1; then
			echo "PASS guest-server perf $1 $2 (host client, software): $(grep -v '^#\|^bytes' "$f")"
		else
			echo "FAIL guest-server perf $1 $2: host client: $(tail -n1 "$f")"
			fail=1
		fi
	done
elif ((nperf)); then
	echo "FAIL guest-server perf: the guest never listened"
	fail=1
fi
if ((nvme)) && listening 7180 1; then
	for k in "${!nvme_cmds[@]}"; do
		f=$out/host-nvme-client-$k.log
		# shellcheck disable=SC2086
		if NDK_PROVIDER=software NDK_MPA_CRC=$crc timeout 120 \
			"$nvme_host" --nqn "$nqn" -q 1 127.0.0.1:17180 \
			${nvme_cmds[$k]} >"$f" 2>&1; then
			echo "PASS guest-server nvme ${nvme_cmds[$k]} (host ndknvme, software): $(grep '^ndknvme: .* ok' "$f")"
		else
			echo "FAIL guest-server nvme ${nvme_cmds[$k]}: host ndknvme: $(grep 'ndknvme: ' "$f" | tail -n 2 | tr '\n' ' ')"
			fail=1
		fi
	done
elif ((nvme)); then
	echo "FAIL guest-server nvme: the guest never listened"
	fail=1
fi
wait "$vm" || fail=1
# ndkvm's own count: the boot and the command, without the wait for
# the lock.
echo "guest: $(sed -n 's/^ndkvm: guest command exit status [0-9]*, //p' "$out/guest.out") in the guest, $((SECONDS - t0)) s with the wait for the lock"
tr -d '\r' <"$log" >"$out/console.txt"
c=$out/console.txt
grep -E '^(Provider|Device|RdmaTechnology) ' "$c" || true
echo "host MPA CRC $crc; $(grep '^GUEST-SIW-CRC-ERRORS' "$c" || echo 'GUEST-SIW-CRC-ERRORS ?') in the guest's log"
for s in "${sizes[@]}"; do
	rc=$(sed -n "s/^GUEST-SERVER $s \([0-9]*\)$/\1/p" "$c")
	[[ $rc == 0 ]] || { echo "FAIL guest-server rping $s: guest server exit ${rc:-?}"; fail=1; }
done
if ((nping)); then
	if grep -q "^GUEST-PING-SERVER $nping of $nping$" "$c"; then
		echo "PASS guest ping server: $nping connections closed cleanly"
	else
		echo "FAIL guest ping server: $(grep '^GUEST-PING-SERVER' "$c")"
		fail=1
	fi
fi
if ((nperf)); then
	if grep -q "^GUEST-PERF-SERVER $nperf of $nperf$" "$c"; then
		echo "PASS guest perf server: $nperf sessions, every check byte-exact"
	else
		echo "FAIL guest perf server: $(grep '^GUEST-PERF-SERVER' "$c")"
		fail=1
	fi
fi
if ((nvme)); then
	if grep -q '^GUEST-NVMET 0$' "$c"; then
		echo "PASS guest ndknvmet: $(sed -n 's/^GUEST-NVMET-LOG ndknvmet: exit: //p' "$c")"
	else
		echo "FAIL guest ndknvmet: $(grep '^GUEST-NVMET' "$c")"
		fail=1
	fi
	for k in "${!nvme_cmds[@]}"; do
		rc=$(sed -n "s/^GUEST-NVME-CLIENT $k \([0-9]*\)$/\1/p" "$c")
		if [[ $rc == 0 ]]; then
			echo "PASS guest-client nvme ${nvme_cmds[$k]} (guest ndknvme, verbs on siw)"
		else
			echo "FAIL guest-client nvme ${nvme_cmds[$k]}: exit ${rc:-?}"
			fail=1
		fi
	done
fi
for s in "${sizes[@]}"; do
	rc=$(sed -n "s/^GUEST-CLIENT $s \([0-9]*\)$/\1/p" "$c")
	if [[ $rc == 0 ]]; then
		echo "PASS guest-client rping $s (guest client, verbs on siw)"
	else
		echo "FAIL guest-client rping $s: guest client exit ${rc:-?}"
		fail=1
	fi
done
for s in "${ping_sizes[@]}"; do
	rc=$(sed -n "s/^GUEST-PING-CLIENT $s \([0-9]*\)$/\1/p" "$c")
	if [[ $rc == 0 ]] && grep -q "^GUEST-PING-OUT $s verify: $ping_count of $ping_count echoes byte-exact" "$c"; then
		echo "PASS guest-client ping $s (guest client, verbs on siw): $(grep "^GUEST-PING-OUT $s " "$c" | grep -o 'rtt .*')"
	else
		echo "FAIL guest-client ping $s: exit ${rc:-?}"
		fail=1
	fi
done
for r in "${perf_runs[@]}"; do
	set -- $r
	rc=$(sed -n "s/^GUEST-PERF-CLIENT $1 $2 \([0-9]*\)$/\1/p" "$c")
	if [[ $rc == 0 ]]; then
		echo "PASS guest-client perf $1 $2 (guest client, verbs on siw): $(sed -n "s/^GUEST-PERF-ROW $1 $2 //p" "$c")"
	else
		echo "FAIL guest-client perf $1 $2: exit ${rc:-?}"
		fail=1
	fi
done
if ((nperf)); then
	# The host's server saw every guest client's data byte-exact.
	n=$(grep -c 'all byte-exact' "$out/host-perf-server.log" || true)
	if ((n == nperf)); then
		echo "PASS host perf server: $n sessions, every check byte-exact"
	else
		echo "FAIL host perf server: $n of $nperf sessions checked"
		fail=1
	fi
fi
if ((fail)); then
	echo "verbs-cross: FAILED (logs in $out)"
	exit 1
fi
echo "verbs-cross: passed both ways: ndkrping ${#sizes[@]} sizes x $count," \
	"ndkping $nping sizes x $ping_count, ndkperf $nperf runs x $perf_iters," \
	"NVMe $((nvme * ${#nvme_cmds[@]})) commands" \
	"(figures from qemu TCG: not performance figures)"
