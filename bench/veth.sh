# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Sourced by bench/run and bench/ab: two network namespaces, NAME-s (the
# servers, NET.1) and NAME-c (the clients, NET.2), joined by a veth pair
# NAME0-NAME1 (MTU 1500): what two hosts look like to TCP. Root only.

# veth_pair_down NAME: removes both namespaces (and with them the pair).
veth_pair_down() {
	ip netns del "$1-s" 2>/dev/null
	ip netns del "$1-c" 2>/dev/null
	return 0
}

# veth_pair_up NAME NET CC: NET is the first three octets of a /24, CC
# the TCP congestion control of both namespaces (said here so that it
# cannot differ from the host's). Removes any earlier pair of that NAME.
veth_pair_up() {
	local n=$1 net=$2 cc=$3
	veth_pair_down "$n"
	ip netns add "$n-s" && ip netns add "$n-c" &&
		ip link add "${n}0" type veth peer name "${n}1" &&
		ip link set "${n}0" netns "$n-s" &&
		ip link set "${n}1" netns "$n-c" &&
		ip -n "$n-s" addr add "$net.1/24" dev "${n}0" &&
		ip -n "$n-c" addr add "$net.2/24" dev "${n}1" &&
		ip -n "$n-s" link set lo up &&
		ip -n "$n-c" link set lo up &&
		ip -n "$n-s" link set "${n}0" up &&
		ip -n "$n-c" link set "${n}1" up &&
		ip netns exec "$n-s" sysctl -qw "net.ipv4.tcp_congestion_control=$cc" &&
		ip netns exec "$n-c" sysctl -qw "net.ipv4.tcp_congestion_control=$cc"
}
