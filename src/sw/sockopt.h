/* SPDX-License-Identifier: MIT */
/*
 * The TCP options every connection socket gets, active or accepted: no
 * Nagle delay, and a bound on how long a silent peer is believed alive
 * (NDK_PEER_TIMEOUT_MS, docs/ndk.md "Dead peers").
 */
#ifndef SW_SOCKOPT_H
#define SW_SOCKOPT_H

#include <stdint.h>

/* NDK_PEER_TIMEOUT_MS: 0 leaves the kernel's defaults. */
uint64_t sw_peer_timeout_ms(void);

/*
 * TCP_NODELAY, and with a peer timeout T: TCP_USER_TIMEOUT T (data
 * unacknowledged for T ends the connection) and keepalive (idle T/2, then
 * 3 probes T/6 apart, at least 1 s each), so that an idle connection to a
 * vanished peer ends after about T too. Failures are ignored: the socket
 * works without them.
 */
void sw_sock_set_conn_options(int fd);

#endif /* SW_SOCKOPT_H */
