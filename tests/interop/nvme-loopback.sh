#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ndknvmet on 127.0.0.1 without a VM:
#   1. ndkcmatose connects with private data that is no NVMe RDMA CM
#      Request: the target must reject it with the NVMe RDMA CM status
#      (Invalid Private Data Length: RECFMT 0, STS 1, little-endian)
#   2. when the build has ndknvme (the NVMe/RDMA host tool): id, write and
#      verify 4096 blocks on 2 I/O queues, badcmd (4 commands the target
#      must refuse), a 3 s random read/write load with verification
#   3. SIGTERM: exit 0, the counters printed, the command errors exactly
#      badcmd's
#
#   nvme-loopback.sh BUILD_DIR [OUT_DIR]      exit 0 pass, 1 fail
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: nvme-loopback.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ndk-nvme-loopback.XXXXXX)}
. "$here/wait-lib.sh"
tgt_bin=$build/tools/ndknvmet
host_bin=$build/tools/ndknvme
cma_bin=$build/tools/interop/ndkcmatose
[[ -x $tgt_bin && -x $cma_bin ]] || { echo "no $tgt_bin or $cma_bin"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*
echo "logs in $out"
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}
port=${NDK_NVMET_PORT:-14440}
nqn=nqn.2024-01.io.libndk:nvme-loopback

"$tgt_bin" -b 127.0.0.1 -p "$port" --nqn "$nqn" --ram 32m -q 2 >"$out/ndknvmet.log" 2>&1 &
tgt=$!
trap 'kill $tgt 2>/dev/null || true' EXIT
wait_for_lines "$out/ndknvmet.log" '^ndknvmet: listening on' 1 20 "$tgt" ||
	bad "ndknvmet did not listen"

rc=0
"$cma_bin" -c 1 -S 0 --private-data x --timeout 20 "127.0.0.1:$port" \
	>"$out/cmatose.log" 2>&1 || rc=$?
((rc == 3)) || bad "ndkcmatose: rc $rc, not 3 (rejected)"
grep -q 'peer private data 4 bytes: 00 00 01 00' "$out/cmatose.log" ||
	bad "the reject does not carry NVMe RDMA CM status 1 (invalid length)"

errors=0
if [[ -x $host_bin ]]; then
	h=("$host_bin" --nqn "$nqn" -q 2 "127.0.0.1:$port")
	for c in "id" "write 0 4096" "verify 0 4096" "badcmd" \
		"load --rw randrw --qd 8 --bs 65536 -D 3"; do
		rc=0
		# shellcheck disable=SC2086
		timeout 120 "${h[@]}" $c >"$out/host-${c%% *}.log" 2>&1 || rc=$?
		((rc == 0)) || bad "ndknvme $c: rc $rc"
		grep -q "^ndknvme: ${c%% *} ok" "$out/host-${c%% *}.log" ||
			bad "ndknvme $c: no ok line"
	done
	errors=$(sed -n 's/.* \([0-9]*\) of [0-9]* bad commands got an error status.*/\1/p' \
		"$out/host-badcmd.log")
else
	echo "SKIP part 2: no $host_bin in this build"
fi

kill -TERM "$tgt"
rc=0
wait "$tgt" || rc=$?
trap - EXIT
((rc == 0)) || bad "ndknvmet exited $rc"
sed 's/^/  [target] /' "$out/ndknvmet.log"
for f in "$out"/host-*.log; do
	[[ -e $f ]] && sed "s/^/  [$(basename "$f" .log)] /" "$f"
done
grep -q '^ndknvmet: .*rejected a queue request (NVMe RDMA CM status 1)' "$out/ndknvmet.log" ||
	bad "target: no reject logged"
ex=$(sed -n 's/^ndknvmet: exit: //p' "$out/ndknvmet.log")
[[ -n $ex ]] || bad "target: no exit counters"
grep -q " 1 rejected, " <<<" $ex" || bad "target: not 1 rejected request"
grep -q " ${errors:-0} errors, " <<<" $ex" || bad "target: command errors are not badcmd's ${errors:-0}"
grep -q 'never completed' "$out/ndknvmet.log" && bad "target: requests never completed"
if ((fail)); then
	echo "FAIL: logs in $out"
	exit 1
fi
echo "PASS: ndknvmet on loopback (reject$([[ -x $host_bin ]] && echo ", ndknvme id/write/verify/badcmd/load"))"
[[ -n ${2:-} ]] || rm -rf "$out"
