#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The functional suites (tests/func) with the verbs provider, inside the
# interop guest (tests/interop/vm/ndkvm): every test executable of
# BUILD_DIR runs there with NDK_PROVIDER=verbs on eth0 (10.0.2.15, and
# fd00::15 for IPv6), whose RDMA device is siw0, or rxe0 with --rxe, or
# first siw0 and then rxe0 in the same boot with --both. Lo cannot carry
# rdma_cm there: a device attached to lo has an all-zero GID, which the
# kernel's GID cache drops (docs/verbs.md, Devices).
#
#   verbs-guest.sh BUILD_DIR [--rxe | --both] [--timeout S] [TEST...]
#
# With no TEST, the executables named in VERBS_GUEST_TESTS (CTest's short
# form sets it), else every one in BUILD_DIR/tests/func. Prints one line
# per test case (PASS, SKIP or FAIL, the device, the executable), an
# executable that declares itself a test of the software provider's own
# wire (raw iWARP peers: cm_software_only, exit 77) as one N/A line, any
# other that exits 77 as one SKIP line, each executable's seconds (TIME),
# a FAIL line for an executable while which the guest kernel logged a
# warning or BUG, the rows of test_contract (CONTRACT lines: expected
# and got per row),
# then the failures' cmocka messages and a summary per device. Exit
# status: 0 when nothing failed, 1 otherwise, 77 when the guest cannot
# run. A full run
# takes about two minutes per device under TCG.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ndkvm=$here/vm/ndkvm
lock=${NDKVM_LOCK:-/tmp/ndkvm.lock}

usage() {
	echo "usage: $0 BUILD_DIR [--rxe | --both] [--timeout S] [TEST...]" >&2
	exit 2
}

(($# >= 1)) || usage
build=$(cd "$1" && pwd)
shift
devices=siw
per_test=180
# The devices that test_netns and test_dead_peer put on their veths
# (docs/verbs.md, Testing); elsewhere they skip.
netns_devices=${VERBS_GUEST_NETNS_DEVICES:-siw rxe}
tests=()
while (($#)); do
	case $1 in
	--rxe) devices=rxe && shift ;;
	--both) devices="siw rxe" && shift ;;
	--timeout) per_test=$2 && shift 2 ;;
	-*) usage ;;
	*) tests+=("$1") && shift ;;
	esac
done
if ! "$ndkvm" check >/dev/null 2>&1; then
	echo "verbs-guest: the interop guest cannot run here (ndkvm build?)" >&2
	exit 77
fi
[[ -e $build/libndk.so.0 ]] || {
	echo "verbs-guest: no libndk.so.0 in $build" >&2
	exit 2
}
if ((${#tests[@]} == 0)) && [[ -n ${VERBS_GUEST_TESTS:-} ]]; then
	read -ra tests <<<"$VERBS_GUEST_TESTS"
fi
if ((${#tests[@]} == 0)); then
	for t in "$build"/tests/func/test_*; do
		[[ -x $t && -f $t ]] && tests+=("$(basename "$t")")
	done
fi

# What the guest gets: the library, the test executables, ndkinfo and
# the libraries below (the guest image has no copy).
files=(--file "$(readlink -f "$build/libndk.so.0"):/opt/ndk/libndk.so.0"
	--file "$build/tools/ndkinfo:/opt/ndk/ndkinfo")
# cmocka, and the sanitizer runtimes of an ASan/UBSan build with the C++
# runtime they need (so the verbs provider runs under them on a real
# device).
while read -r lib; do
	files+=(--file "$(readlink -f "$lib"):/opt/ndk/$(basename "$lib")")
done < <(ldd "$build/tests/func/${tests[0]}" |
	awk '$1 ~ /^lib(cmocka|asan|ubsan|stdc\+\+|gcc_s)\./ { print $3 }')
for t in "${tests[@]}"; do
	files+=(--file "$build/tests/func/$t:/opt/ndk/$t")
done

# Per device: its setup, then per test case the status line that follows
# its RUN line (cmocka repeats failures and skips in its summary: those
# are not counted; nor are its "--- message" and "N test(s)" lines).
# rxe replaces siw on eth0 (one device per netdev).
guest=$(
	cat <<EOF
export LD_LIBRARY_PATH=/opt/ndk PATH=/opt/ndk:\$PATH
export NDK_PROVIDER=verbs NDK_TEST_IF=eth0 NDK_TEST_ADDR4=10.0.2.15
export NDK_TEST_ADDR6=fd00::15
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ip -6 addr add fd00::15/64 dev eth0 nodad
now() { cut -d' ' -f1 /proc/uptime; }
# The kernel's warnings and BUGs so far, each with the line after it
# (where it happened).
kwarn() { dmesg | grep -A1 -e 'WARNING:' -e 'kernel BUG' | grep -v '^--\$'; }
# The end of a log that failed: a sanitizer's report from its first line
# (its end is the shadow legend), else the log's last lines.
log_end() {
	if grep -q '^==[0-9]*==ERROR: ' \$1; then
		sed -n '/^==[0-9]*==ERROR: /,/^SUMMARY: /p' \$1 | head -n 80
	else
		tail -n 20 \$1
	fi
}
for dev in $devices; do
	if [ \$dev = rxe ]; then
		modload rdma_rxe >/dev/null
		rdma link delete siw0 2>/dev/null
		rdma link add rxe0 type rxe netdev eth0
	fi
	export NDK_RUNTIME_DIR=/tmp/ndk-runtime-\$dev
	# test_netns, test_dead_peer: an RDMA device of this type on each
	# veth end they make (netns_pair.h), on the devices named in
	# \$netns_devices; elsewhere they skip (docs/verbs.md, Testing).
	unset NDK_TEST_RDMA_LINK
	case " $netns_devices " in *" \$dev "*) export NDK_TEST_RDMA_LINK=\$dev ;; esac
	mkdir -p /tmp/\$dev && cd /tmp/\$dev
	rdma link
	ndkinfo -I eth0 | grep -E '^(Provider|Device|RdmaTechnology) '
	for n in ${tests[*]}; do
		t0=\$(now)
		k0=\$(kwarn | wc -l)
		timeout $per_test /opt/ndk/\$n >\$n.log 2>&1
		rc=\$?
		echo "TIME \$dev \$n \$(awk -v a=\$t0 -v b=\$(now) 'BEGIN { printf "%.1f", b - a }')"
		# A kernel warning while it ran is a failure of the test:
		# the device met something it did not expect of its user.
		if [ \$(kwarn | wc -l) != \$k0 ]; then
			echo "FAIL \$dev \$n (the kernel logged a warning)"
			kwarn | tail -n +\$((k0 + 1)) | head -n 3
		fi
		if [ \$rc = 77 ] &&
			grep -q 'a test of the software provider' \$n.log; then
			# Declared by the test (cm_software_only): its peer is
			# a raw iWARP wire of the software provider's own.
			echo "N/A \$dev \$n: \$(tail -n1 \$n.log)"
			continue
		fi
		if [ \$rc = 77 ]; then
			echo "SKIP \$dev \$n (all): \$(tail -n1 \$n.log)"
			continue
		fi
		awk -v exe="\$dev \$n" '
			/^\[ RUN      \]/ { cur = \$4; next }
			cur != "" && /^\[       OK \]/ { print "PASS " exe " " cur; cur = ""; next }
			cur != "" && /^\[  SKIPPED \]/ { print "SKIP " exe " " cur; cur = ""; next }
			cur != "" && /^\[  (FAILED|ERROR)  *\] [^-0-9]/ { print "FAIL " exe " " cur; cur = ""; next }
			END { if (cur != "") print "FAIL " exe " " cur " (did not finish)" }
		' \$n.log
		# The contract table's rows (test_contract): expected and got.
		sed -n "s/^contract: /CONTRACT \$dev /p; s/^threads: /THREADS \$dev \$n /p" \$n.log
		if [ \$rc = 124 ]; then
			echo "FAIL \$dev \$n (timed out after ${per_test} s)"
		elif [ \$rc -gt 128 ]; then
			echo "FAIL \$dev \$n (killed by signal \$((rc - 128)))"
			log_end \$n.log
		elif [ \$rc != 0 ] && ! grep -q '^\[  \(FAILED\|ERROR\)' \$n.log; then
			# Every case passed, yet the exit says otherwise: a
			# sanitizer's report at exit (leaks), say.
			echo "FAIL \$dev \$n (exit \$rc)"
			log_end \$n.log
		fi
	done
	for n in ${tests[*]}; do
		grep -q '^\[  \(FAILED\|ERROR\)' \$n.log 2>/dev/null || continue
		echo "---- \$dev \$n"
		grep -A2 '^\[  ERROR   \] ---\|^Could not run\|Segmentation' \$n.log |
			grep -v 'closed with' | head -n 40
	done
done
EOF
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ndevices=$(wc -w <<<"$devices")
flock "$lock" "$ndkvm" run --quiet --mem 2048 \
	--timeout $((per_test * ${#tests[@]} * ndevices + 120)) "${files[@]}" \
	-- "$guest" | tee "$out"
failed=0
for dev in $devices; do
	pass=$(grep -c "^PASS $dev " "$out" || true)
	skip=$(grep -c "^SKIP $dev " "$out" || true)
	fail=$(grep -c "^FAIL $dev " "$out" || true)
	na=$(grep -c "^N/A $dev " "$out" || true)
	echo "verbs-guest ($dev): $pass passed, $skip skipped, $fail failed" \
		"($na executables of the software provider's wire not run)"
	# A device that ran nothing (the guest died, rxe did not come up)
	# is a failure too.
	((pass + skip > 0 && fail == 0)) || failed=1
done
exit $failed
