#!/usr/bin/env bash
# Tests of ndkstat and ndkinfo (tools/).
#
#   check_tools.sh ndkstat NDKSTAT HOLDER    live objects of oid_holder
#   check_tools.sh fake NDKSTAT FAKE_OID_SO  a preloaded fake NdkQueryOid
#   check_tools.sh ndkinfo NDKINFO NDKSTAT   adapters, a down interface
#   check_tools.sh cli TOOL...               the convention of docs/tools.md
#
# Every run has a private NDK_RUNTIME_DIR, so ndkstat lists only the
# objects of this test and the counters start at zero. JSON is checked
# with python3 (json.tool, then its contents).
mode=$1
shift
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# LD_PRELOAD of the fake into a sanitizer build: the fake comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# run WANT_RC CMD...: runs CMD with stdout in $tmp/out, stderr in $tmp/err.
run() {
	local want=$1 rc=0
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want"
}

# json_check PYTHON: valid JSON in $tmp/out, then PYTHON asserts on `d`.
json_check() {
	python3 -m json.tool "$tmp/out" >/dev/null || fail "not valid JSON"
	python3 - "$tmp/out" "$1" <<'PY' || fail "JSON content: $1"
import json, os, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
env = os.environ
exec(sys.argv[2])
PY
}

# Data rows of ndkstat's text table (everything after the header row).
rows() {
	awk 'seen { print } /^  Mode +IfIndex +Type +Local Address/ { seen = 1 }' \
		"$tmp/out"
}

# ---------------------------------------------------------------------
check_ndkstat() {
	local ndkstat=$1 holder=$2 lo fifo fd line pid lport sport aport n
	lo=$(cat /sys/class/net/lo/ifindex)

	# Usage errors exit 2; an unknown interface is a failure (1)
	# (docs/tools.md, Exit status).
	run 2 "$ndkstat" -x
	grep -q "Try 'ndkstat --help'" "$tmp/err" || fail "no hint on stderr"
	run 2 "$ndkstat" --type bogus
	run 2 "$ndkstat" -P abc
	run 2 "$ndkstat" -P -5
	run 2 "$ndkstat" -i 0
	run 2 "$ndkstat" -i x
	run 2 "$ndkstat" -n 0
	run 2 "$ndkstat" -I ''
	run 2 "$ndkstat" extra
	# The old letters: -s (now --stats), -t (--type), -p (-P), -c (-n), -V.
	for o in -s "-t listener" "-p 1" "-c 1" -V; do
		# shellcheck disable=SC2086
		run 2 "$ndkstat" $o
	done
	run 1 "$ndkstat" -I no-such-if0
	run 1 "$ndkstat" -I 2147483647

	# Nothing yet: a title, a blank line, the header, no rows.
	run 0 "$ndkstat"
	[ "$(sed -n 1p "$tmp/out")" = \
		"Active NetworkDirect Connections, Listeners, SharedEndpoints" ] ||
		fail "title line"
	[ -z "$(sed -n 2p "$tmp/out")" ] || fail "no blank line after title"
	sed -n 3p "$tmp/out" | grep -qE \
		'^  Mode +IfIndex +Type +Local Address +Foreign Address +PID +Process$' ||
		fail "header row"
	[ -z "$(rows)" ] || fail "rows in an empty runtime dir"

	# The holder: a listener, a shared endpoint, one connection.
	fifo=$tmp/holder.in
	mkfifo "$fifo"
	"$holder" <"$fifo" >"$tmp/holder.out" &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$fifo"
	for _ in $(seq 100); do
		[ -s "$tmp/holder.out" ] && break
		sleep 0.1
	done
	read -r line <"$tmp/holder.out" || fail "holder printed nothing"
	# shellcheck disable=SC2086
	set -- $line
	[ "$1 $3 $5 $7" = "pid listener shared active" ] ||
		fail "holder said '$line'"
	[ "$2" = "$pid" ] || fail "holder pid $2, started $pid"
	lport=$4 sport=$6 aport=$8
	echo "holder pid $pid: listener $lport, shared $sport, active $aport"

	run 0 "$ndkstat"
	rows >"$tmp/rows"
	n=$(wc -l <"$tmp/rows")
	[ "$n" = 4 ] || fail "$n rows, expected 4"
	for re in \
		"Kernel +$lo +Connection +127\.0\.0\.1:$aport +127\.0\.0\.1:$lport +$pid +oid_holder" \
		"Kernel +$lo +Connection +127\.0\.0\.1:$lport +127\.0\.0\.1:$aport +$pid +oid_holder" \
		"Kernel +$lo +Listener +127\.0\.0\.1:$lport +NA +$pid +oid_holder" \
		"Kernel +$lo +SharedEndpoint +127\.0\.0\.1:$sport +NA +$pid +oid_holder"; do
		grep -qE "^  $re\$" "$tmp/rows" || fail "no row like '$re'"
	done
	# Connections first, then listeners, then shared endpoints.
	awk '{ print $3 }' "$tmp/rows" | tr '\n' ' ' | grep -qx \
		'Connection Connection Listener SharedEndpoint ' ||
		fail "row order"
	grep -q tcp_ "$tmp/rows" && fail "libndk's TCP entries never differ"

	# The same through -I by name and by index.
	cp "$tmp/out" "$tmp/all"
	run 0 "$ndkstat" -I lo
	cmp -s "$tmp/out" "$tmp/all" || fail "-I lo differs"
	run 0 "$ndkstat" -I "$lo"
	cmp -s "$tmp/out" "$tmp/all" || fail "-I $lo differs"

	# Filters.
	run 0 "$ndkstat" -P "$pid" --type listener
	rows >"$tmp/rows"
	[ "$(wc -l <"$tmp/rows")" = 1 ] || fail "-P --type listener: not one row"
	grep -qE "^  Kernel +$lo +Listener +127\.0\.0\.1:$lport +NA +$pid +oid_holder$" \
		"$tmp/rows" || fail "-P --type listener row"
	run 0 "$ndkstat" --type connection
	[ "$(rows | wc -l)" = 2 ] || fail "--type connection: not two rows"
	run 0 "$ndkstat" --type shared
	[ "$(rows | grep -c SharedEndpoint)" = 1 ] || fail "--type shared"
	[ "$(rows | wc -l)" = 1 ] || fail "--type shared: other rows"
	run 0 "$ndkstat" --pid 1
	[ -z "$(rows)" ] || fail "--pid 1 shows rows"

	# JSON.
	run 0 "$ndkstat" -j
	HPID=$pid LPORT=$lport SPORT=$sport APORT=$aport LO=$lo json_check '
pid, lo = int(env["HPID"]), int(env["LO"])
lp, sp, ap = (int(env[k]) for k in ("LPORT", "SPORT", "APORT"))
assert set(d) == {"connections", "listeners", "shared_endpoints"}, d
keys = {"ifindex", "ifname", "mode", "local", "foreign", "pid", "process"}
for k in ("connections", "listeners", "shared_endpoints"):
    for o in d[k]:
        assert set(o) == keys, o
        assert (o["ifindex"], o["ifname"], o["mode"], o["pid"],
                o["process"]) == (lo, "lo", "Kernel", pid, "oid_holder"), o
c = sorted((o["local"], o["foreign"]) for o in d["connections"])
want = sorted([("127.0.0.1:%d" % ap, "127.0.0.1:%d" % lp),
               ("127.0.0.1:%d" % lp, "127.0.0.1:%d" % ap)])
assert c == want, c
assert [(o["local"], o["foreign"]) for o in d["listeners"]] == \
    [("127.0.0.1:%d" % lp, None)], d["listeners"]
assert [(o["local"], o["foreign"]) for o in d["shared_endpoints"]] == \
    [("127.0.0.1:%d" % sp, None)], d["shared_endpoints"]
'
	run 0 "$ndkstat" -j --stats --type listener -P "$pid"
	LO=$lo json_check '
assert len(d["listeners"]) == 1 and not d["connections"], d
s = d["statistics"]["lo"]
assert s["ifindex"] == int(env["LO"])
assert s["Connect"] == 1 and s["Accept"] == 1, s
assert s["ActiveConnection"] == 2, s
assert list(s)[1:] == ["Connect", "Accept", "ConnectFailure",
    "ConnectionError", "ActiveConnection", "CQError", "RDMAInOctets",
    "RDMAOutOctets", "RDMAInFrames", "RDMAOutFrames"], list(s)
'

	# Statistics: the holder connected and accepted once; both ends of
	# its connection are active.
	run 0 "$ndkstat" --stats -I lo
	[ "$(sed -n 1p "$tmp/out")" = "lo (ifindex $lo):" ] ||
		fail "--stats: interface line"
	[ "$(grep -c '^    [A-Za-z]\+ \+[0-9]\+$' "$tmp/out")" = 10 ] ||
		fail "--stats: not ten counters"
	ctr() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/out"; }
	[ "$(ctr Connect)" -ge 1 ] || fail "Connect $(ctr Connect)"
	[ "$(ctr Accept)" -ge 1 ] || fail "Accept $(ctr Accept)"
	[ "$(ctr ActiveConnection)" = 2 ] ||
		fail "ActiveConnection $(ctr ActiveConnection)"
	run 0 "$ndkstat" --stats
	grep -q "^lo (ifindex $lo):" "$tmp/out" || fail "--stats: no lo"

	# Repetition: -i with -n, text and JSON Lines.
	run 0 "$ndkstat" -i 0.1 -n 3
	[ "$(grep -c '^Active NetworkDirect' "$tmp/out")" = 3 ] ||
		fail "-i 0.1 -n 3: not three tables"
	run 0 "$ndkstat" --json --interval 0.1 --iterations 2
	[ "$(wc -l <"$tmp/out")" = 2 ] || fail "-j -i: not two lines"
	while read -r line; do
		printf '%s\n' "$line" | python3 -m json.tool >/dev/null ||
			fail "-j -i: a line is not JSON"
	done <"$tmp/out"
	# Until interrupted: SIGINT ends it with status 0.
	"$ndkstat" -i 0.05 >"$tmp/out" 2>"$tmp/err" &
	n=$!
	for _ in $(seq 200); do
		[ "$(grep -c '^Active NetworkDirect' "$tmp/out")" -ge 2 ] && break
		sleep 0.05
	done
	kill -INT "$n"
	wait "$n" || fail "-i ended by SIGINT: status $?"
	[ "$(grep -c '^Active NetworkDirect' "$tmp/out")" -ge 2 ] ||
		fail "-i 0.05: fewer than two tables in 10 s"

	# The holder exits: its rows go, the counters stay.
	exec {fd}>&-
	wait "$pid" || fail "holder exited $?"
	run 0 "$ndkstat"
	[ -z "$(rows)" ] || fail "rows after the holder exited"
	run 0 "$ndkstat" --stats -I lo
	[ "$(ctr ActiveConnection)" = 0 ] || fail "ActiveConnection after exit"
	[ "$(ctr Connect)" -ge 1 ] || fail "Connect after exit"

	# Another holder, killed with SIGKILL: its rows go too.
	rm -f "$tmp/holder.out"
	"$holder" <"$fifo" >"$tmp/holder.out" &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$fifo"
	for _ in $(seq 100); do
		[ -s "$tmp/holder.out" ] && break
		sleep 0.1
	done
	run 0 "$ndkstat" -P "$pid"
	[ "$(rows | wc -l)" = 4 ] || fail "second holder: not 4 rows"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	exec {fd}>&-
	run 0 "$ndkstat"
	[ -z "$(rows)" ] || fail "rows after kill -9"
	run 0 "$ndkstat" -j --stats
	json_check '
assert not (d["connections"] or d["listeners"] or d["shared_endpoints"]), d
assert d["statistics"]["lo"]["ActiveConnection"] == 0
'
	echo "ndkstat: ok"
}

# ---------------------------------------------------------------------
check_fake() {
	local fake=$2 lo i me cmd
	lo=$(cat /sys/class/net/lo/ifindex)
	# Only ndkstat gets the fake (not python3).
	cmd=(env "LD_PRELOAD=$fake" "$1")

	run 0 "${cmd[@]}"
	rows >"$tmp/rows"
	[ "$(wc -l <"$tmp/rows")" = 23 ] ||
		fail "$(wc -l <"$tmp/rows") rows, expected 20 + 3"
	me='q"b\\s\?é\?'
	grep -qE "^  Kernel +$lo +Connection +10\.0\.0\.1:5000 +10\.0\.0\.2:6000 +[0-9]+ +$me  tcp_foreign=10\.0\.0\.2:6001\$" \
		"$tmp/rows" || fail "connection with a different TCP peer"
	for i in $(seq 5001 5019); do
		grep -qE "^  Kernel +$lo +Connection +10\.0\.0\.1:$i +10\.0\.0\.2:6000 +[0-9]+ +$me\$" \
			"$tmp/rows" || fail "connection from port $i"
	done
	grep -qE "^  Kernel +$lo +Listener +127\.0\.0\.1:1000 +NA +[0-9]+ +$me\$" \
		"$tmp/rows" || fail "listener"
	grep -qE "^  User +$lo +SharedEndpoint +\[::1\]:2000 +NA +[0-9]+ +$me  tcp_local=\[::1\]:2001\$" \
		"$tmp/rows" || fail "user-mode IPv6 shared endpoint"
	grep -qE "^  Kernel +$lo +Listener +\[fe80::1%lo\]:3000 +NA +0 +-\$" \
		"$tmp/rows" || fail "link-local listener of pid 0"
	grep -q 2779096485 "$tmp/rows" && fail "a TCP entry's garbage pid shown"

	run 0 "${cmd[@]}" -j --stats
	json_check '
me = "q\"b\\s\t\u00e9\ufffd"
c = d["connections"]
assert len(c) == 20, len(c)
assert c[0] == {"ifindex": c[0]["ifindex"], "ifname": "lo", "mode": "Kernel",
    "local": "10.0.0.1:5000", "foreign": "10.0.0.2:6000", "pid": c[0]["pid"],
    "process": me, "tcp_foreign": "10.0.0.2:6001"}, c[0]
assert all("tcp_foreign" not in o and "tcp_local" not in o for o in c[1:])
assert all(o["process"] == me for o in c)
l = d["listeners"]
assert [(o["local"], o["pid"], o["process"], o["mode"]) for o in l] == [
    ("127.0.0.1:1000", c[0]["pid"], me, "Kernel"),
    ("[fe80::1%lo]:3000", 0, "-", "Kernel")], l
assert all("tcp_local" not in o for o in l)
s = d["shared_endpoints"]
assert len(s) == 1 and s[0]["mode"] == "User" and \
    s[0]["local"] == "[::1]:2000" and s[0]["tcp_local"] == "[::1]:2001", s
st = d["statistics"]
assert list(st) == ["lo"], st
assert st["lo"]["Connect"] == 12345678901234
assert st["lo"]["RDMAOutFrames"] == 18446744073709551615
assert [st["lo"][k] for k in ("Accept", "ConnectFailure", "ConnectionError",
    "ActiveConnection", "CQError", "RDMAInOctets", "RDMAOutOctets",
    "RDMAInFrames")] == [2, 3, 4, 5, 6, 7, 8, 9]
'
	run 0 "${cmd[@]}" --stats
	grep -qE '^    Connect +12345678901234$' "$tmp/out" || fail "--stats Connect"
	grep -qE '^    RDMAOutFrames +18446744073709551615$' "$tmp/out" ||
		fail "--stats RDMAOutFrames"
	[ "$(grep -c 'ifindex' "$tmp/out")" = 1 ] ||
		fail "--stats lists interfaces the fake does not know"

	# A query that fails is status 1, with the OID and the status.
	run 1 env FAKE_OID_FAIL=1 "${cmd[@]}"
	grep -q 'OID_NDK_CONNECTIONS on lo: STATUS_NOT_IMPLEMENTED' \
		"$tmp/err" || fail "failure message"
	[ ! -s "$tmp/out" ] || fail "output despite the failure"
	echo "ndkstat (fake OID): ok"
}

# ---------------------------------------------------------------------
check_ndkinfo() {
	local ndkinfo=$1 ndkstat=$2 lo nifs
	lo=$(cat /sys/class/net/lo/ifindex)
	nifs=$(find /sys/class/net -mindepth 1 -maxdepth 1 | wc -l)

	run 2 "$ndkinfo" -x
	run 2 "$ndkinfo" -V
	run 2 "$ndkinfo" extra
	run 2 "$ndkinfo" -I ''
	run 1 "$ndkinfo" -I no-such-if0

	run 0 "$ndkinfo"
	[ "$(grep -c '^Name  ' "$tmp/out")" = "$nifs" ] ||
		fail "not one block per interface ($nifs)"
	awk '/^Name +: lo$/ { on = 1 } /^$/ { on = 0 } on' "$tmp/out" \
		>"$tmp/lo"
	for re in "IfIndex +: $lo" "Status +: operational" \
		"Provider +: software" \
		"ProviderReason +: .+" \
		"NdkVersion +: 2\.1" "RdmaTechnology +: iWARP" \
		"VendorId +: 0x[0-9a-f]{8}" "DeviceId +: 0x[0-9a-f]{8}" \
		"MaxCallerData +: 252" "MaxCalleeData +: 252" \
		"MaxInboundReadLimit +: 128" "MaxCqDepth +: [0-9]+" \
		"LargeRequestThreshold +: [0-9]+" \
		"AdapterFlags +: 0x[0-9a-f]{8} \(.*LOOPBACK_CONNECTIONS.*\)"; do
		grep -qE "^$re\$" "$tmp/lo" || fail "lo: no '$re'"
	done
	[ "$(wc -l <"$tmp/lo")" = 27 ] || fail "lo: $(wc -l <"$tmp/lo") lines"

	run 0 "$ndkinfo" -j -I lo
	LO=$lo json_check '
a = d["adapters"]
assert len(a) == 1, a
a = a[0]
assert (a["name"], a["ifindex"], a["status"], a["ntstatus"]) == \
    ("lo", int(env["LO"]), "operational", "STATUS_SUCCESS"), a
assert a["NdkVersion"] == "2.1" and a["RdmaTechnology"] == "iWARP", a
assert (a["Provider"], a["Device"]) == ("software", ""), a
assert a["ProviderReason"], a
for k in ("VendorId", "DeviceId", "MaxRegistrationSize", "MaxWindowSize",
          "FRMRPageCount", "MaxInitiatorRequestSge", "MaxReceiveRequestSge",
          "MaxReadRequestSge", "MaxTransferLength", "MaxInlineDataSize",
          "MaxInboundReadLimit", "MaxOutboundReadLimit",
          "MaxReceiveQueueDepth", "MaxInitiatorQueueDepth", "MaxSrqDepth",
          "MaxCqDepth", "LargeRequestThreshold", "MaxCallerData",
          "MaxCalleeData", "AdapterFlags"):
    assert isinstance(a[k], int), k
assert a["MaxCallerData"] == 252 and a["MaxInboundReadLimit"] == 128, a
names = {"IN_ORDER_DMA": 1, "RDMA_READ_SINK_NOT_REQUIRED": 2,
         "CQ_INTERRUPT_MODERATION": 4, "MULTI_ENGINE": 8,
         "RDMA_READ_LOCAL_INVALIDATE": 0x10, "CQ_RESIZE": 0x100,
         "LOOPBACK_CONNECTIONS": 0x10000}
assert sum(names[n] for n in a["AdapterFlagNames"]) == a["AdapterFlags"], a
assert "LOOPBACK_CONNECTIONS" in a["AdapterFlagNames"]
'
	run 0 "$ndkinfo" -j
	NIFS=$nifs json_check '
assert len(d["adapters"]) == int(env["NIFS"]), d
assert len({a["ifindex"] for a in d["adapters"]}) == len(d["adapters"])
for a in d["adapters"]:
    assert (a["status"] == "operational") == (a["ntstatus"] ==
                                               "STATUS_SUCCESS"), a
'
	run 0 "$ndkinfo" -I "$lo"
	grep -q '^Name  *: lo$' "$tmp/out" || fail "-I $lo"

	# In a new network namespace lo is down: "not ready", and with -I
	# that is status 1. (Needs unshare and the right to use it.)
	if unshare -n true 2>/dev/null; then
		run 0 unshare -n "$ndkinfo"
		grep -qE '^Status +: not ready \(NDIS_STATUS_ADAPTER_NOT_READY\)$' \
			"$tmp/out" || fail "down lo: not 'not ready'"
		run 1 unshare -n "$ndkinfo" -j -I lo
		json_check '
a = d["adapters"][0]
assert (a["name"], a["status"], a["ntstatus"]) == \
    ("lo", "not ready", "NDIS_STATUS_ADAPTER_NOT_READY"), a
assert "RdmaTechnology" not in a, a
'
		# ndkstat still answers for a down interface.
		run 0 unshare -n "$ndkstat" -j --stats -I lo
		json_check 'assert d["statistics"]["lo"]["Connect"] == 0, d'
	else
		echo "(no unshare -n: down-interface case not run)"
	fi
	echo "ndkinfo: ok"
}

# ---------------------------------------------------------------------
# The command-line convention of docs/tools.md, for every tool given:
# --help prints the usage on stdout and exits 0, --version names the tool
# and the version, an unknown option and the retired -V exit 2 with a
# hint on stderr, and -h is --help.
check_cli() {
	local bin name
	for bin in "$@"; do
		name=${bin##*/}
		run 0 "$bin" --help
		grep -q "^usage: $name " "$tmp/out" || fail "$name --help: no usage on stdout"
		[ ! -s "$tmp/err" ] || fail "$name --help: stderr is not empty"
		run 0 "$bin" -h
		grep -q "^usage: $name " "$tmp/out" || fail "$name -h: no usage"
		run 0 "$bin" --version
		grep -qE "^$name \(libndk\) [0-9]+\.[0-9]+\.[0-9]+, NDKPI 2\.1$" "$tmp/out" ||
			fail "$name --version: '$(cat "$tmp/out")'"
		run 2 "$bin" --no-such-option
		grep -q "Try '$name --help'" "$tmp/err" || fail "$name: no hint"
		[ ! -s "$tmp/out" ] || fail "$name: a usage error printed on stdout"
		run 2 "$bin" -V
		echo "$name: --help, --version, usage errors: ok"
	done
}

case $mode in
cli) check_cli "$@" ;;
ndkstat) check_ndkstat "$@" ;;
fake) check_fake "$@" ;;
ndkinfo) check_ndkinfo "$@" ;;
*)
	echo "usage: $0 cli|ndkstat|fake|ndkinfo ..." >&2
	exit 1
	;;
esac
