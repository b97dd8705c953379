# SPDX-License-Identifier: MIT
# Sourced by the interop scripts: waiting for a line in a log that a
# background process writes. The log may not exist yet when the wait
# starts (the background shell opens it later), and a writer that died
# must end the wait at once, not at the timeout.

# wait_for_lines FILE ERE COUNT SECONDS PID: 0 once FILE has COUNT lines
# matching ERE; 1 after SECONDS or once PID has exited without them.
wait_for_lines() {
	local file=$1 re=$2 want=$3 secs=$4 pid=$5 i n
	for ((i = 0; i < secs * 20; i++)); do
		n=$(grep -c -E -e "$re" "$file" 2>/dev/null || true)
		((${n:-0} >= want)) && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			# One last look: the line may have come just before it ended.
			n=$(grep -c -E -e "$re" "$file" 2>/dev/null || true)
			((${n:-0} >= want))
			return
		fi
		sleep 0.05
	done
	return 1
}

# wait_for_value FILE SED-EXPR SECONDS PID: prints the first value that
# 'sed -n SED-EXPR' extracts from FILE, waiting for it like wait_for_lines.
wait_for_value() {
	local file=$1 expr=$2 secs=$3 pid=$4 i v
	for ((i = 0; i < secs * 20; i++)); do
		v=$(sed -n "$expr" "$file" 2>/dev/null | head -n1)
		[[ -n $v ]] && echo "$v" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	v=$(sed -n "$expr" "$file" 2>/dev/null | head -n1)
	[[ -n $v ]] && echo "$v"
}
