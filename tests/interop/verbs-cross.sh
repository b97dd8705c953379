#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Cross-provider traffic: libndk's verbs provider on Linux siw inside the
# interop guest (tests/interop/vm/ndkvm) against libndk's software
# provider on the host, both ways, with ndkrping (validated pings: Send,
# RDMA Write, RDMA Read) in one guest boot:
#
#   guest-server  guest 'ndkrping -s' on siw0 (NDK_PROVIDER=verbs),
#                 forwarded 127.0.0.1:17176 -> guest 7176; host
#                 'ndkrping -c' on lo (software): the host initiates
#   guest-client  host 'ndkrping -s' on 127.0.0.1:17177 (software),
#                 guest 'ndkrping -c -a 10.0.2.2 -p 17177' on siw0 (verbs)
#
# For each size, one connection of COUNT pings; the server side checks the
# data it read too (-V). ndkinfo in the guest shows the provider.
#
#   verbs-cross.sh BUILD_DIR [OUT_DIR]
#
# Exit 0 pass, 1 fail, 77 skip (no guest). CROSS_COUNT (50) and
# CROSS_SIZES override the defaults. Not in CTest (one guest boot, about a
# minute).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ndkvm=$here/vm/ndkvm
lock=${NDKVM_LOCK:-/tmp/ndkvm.lock}
build=$(cd "${1:?usage: verbs-cross.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-verbs-cross.XXXXXX)}
. "$here/wait-lib.sh"

rping=$build/tools/interop/ndkrping
[[ -x $rping ]] || { echo "no $rping" >&2; exit 1; }
if ! "$ndkvm" check >/dev/null 2>&1; then
	echo "verbs-cross: the interop guest cannot run here (ndkvm build?)" >&2
	exit 77
fi
count=${CROSS_COUNT:-50}
sizes=(${CROSS_SIZES:-1 26 4096 4097 65536})
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"

# The guest: its server for each size, then its client for each size
# (the host's server serves them one by one).
g='export LD_LIBRARY_PATH=/opt/ndk NDK_PROVIDER=verbs
/opt/ndk/ndkinfo -I eth0 | grep -E "^(Provider|Device|RdmaTechnology) "
'
for s in "${sizes[@]}"; do
	g+="/opt/ndk/ndkrping -s -V -a 10.0.2.15 -p 7176 -S $s -C $count -w 60 >/tmp/s$s.log 2>&1 & rp=\$!
wait-listen 7176 60; wait \$rp; echo \"GUEST-SERVER $s \$?\"; cat /tmp/s$s.log | tail -n 3
"
done
g+="echo GUEST-CLIENTS
"
for s in "${sizes[@]}"; do
	g+="/opt/ndk/ndkrping -c -V -a 10.0.2.2 -p 17177 -S $s -C $count -w 60 >/tmp/c$s.log 2>&1; echo \"GUEST-CLIENT $s \$?\"; tail -n 3 /tmp/c$s.log
"
done

fail=0
# The host's server for the guest's clients, one connection per size.
NDK_PROVIDER=software "$rping" -s -V -a 127.0.0.1 -p 17177 -S 65536 \
	-n "${#sizes[@]}" -w 300 >"$out/host-server.log" 2>&1 &
hs=$!
log=$out/console.log
: >"$log"
flock "$lock" "$ndkvm" run --quiet --timeout 600 --console-log "$log" \
	--hostfwd 17176:7176 \
	--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0" \
	--file "$rping:/opt/ndk/ndkrping" \
	--file "$build/tools/ndkinfo:/opt/ndk/ndkinfo" \
	-- "$g" >"$out/guest.out" 2>&1 &
vm=$!
for s in "${sizes[@]}"; do
	# The guest's server listens; the host connects through the
	# forward, on the software provider.
	n=$(grep -c "^GUEST-SERVER " "$log" 2>/dev/null || true)
	if ! wait_for_lines "$log" "^NDKVM-LISTENING 7176" $((n + 1)) 300 "$vm"; then
		echo "FAIL guest-server $s: the guest never listened"
		fail=1
		break
	fi
	if NDK_PROVIDER=software "$rping" -c -V -a 127.0.0.1 -p 17176 -S "$s" \
		-C "$count" -w 60 >"$out/host-client-$s.log" 2>&1; then
		echo "PASS guest-server $s (host client, software)"
	else
		echo "FAIL guest-server $s: host client: $(tail -n1 "$out/host-client-$s.log")"
		fail=1
	fi
	wait_for_lines "$log" "^GUEST-SERVER $s " 1 120 "$vm" || true
done
wait "$vm" || fail=1
kill "$hs" 2>/dev/null || true
wait "$hs" 2>/dev/null || true
tr -d '\r' <"$log" | grep -E '^(Provider|Device|RdmaTechnology) ' || true
for s in "${sizes[@]}"; do
	rc=$(tr -d '\r' <"$log" | sed -n "s/^GUEST-SERVER $s \([0-9]*\)$/\1/p")
	[[ $rc == 0 ]] || { echo "FAIL guest-server $s: guest server exit ${rc:-?}"; fail=1; }
	rc=$(tr -d '\r' <"$log" | sed -n "s/^GUEST-CLIENT $s \([0-9]*\)$/\1/p")
	if [[ $rc == 0 ]]; then
		echo "PASS guest-client $s (guest client, verbs on siw)"
	else
		echo "FAIL guest-client $s: guest client exit ${rc:-?}"
		fail=1
	fi
done
if ((fail)); then
	echo "verbs-cross: FAILED (logs in $out)"
	exit 1
fi
echo "verbs-cross: passed, ${#sizes[@]} sizes x $count pings each way"
