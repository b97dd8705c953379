/* SPDX-License-Identifier: MIT */
/*
 * What the traffic drivers of the wire conformance checks (mpa_capture.c
 * for check_mpa.sh, dp_capture.c for check_dp.sh) share: checks that say
 * what failed and make the driver exit 1, a host on lo, the listener
 * whose port the capture filters on, and main. Public NDKPI only, on
 * tools/common.
 *
 * The protocol with the script: the driver prints "LISTEN <port>" and
 * waits for a line (or EOF) on stdin, so that the capture, filtered on
 * that port, starts first; it prints what the capture must show, then
 * "DONE" on success.
 */
#ifndef NDK_CONFORMANCE_CAPTURE_H
#define NDK_CONFORMANCE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <ndk/ndk.h>
#include "tool_host.h"

#define WAIT_MS 5000 /* each wait of a driver */

/* Checks failed so far: the driver exits 1 if any did. */
extern int cap_failures;

/* Prints the failure (file:line: what, or printf-style) and counts it. */
void cap_failed(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* In a function returning int: fails and returns -1 unless cond. */
#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			cap_failed(__FILE__, __LINE__, "check failed: %s", \
				   #cond);                                 \
			return -1;                                         \
		}                                                          \
	} while (0)

/* The same for a status that must be want. */
#define CHECK_ST(expr, want)                                               \
	do {                                                               \
		NTSTATUS st_ = (expr), want_ = (want);                     \
		if (st_ != want_) {                                        \
			cap_failed(__FILE__, __LINE__,                     \
				   "%s = %s (0x%08x), expected %s", #expr, \
				   NdkStatusName(st_), (unsigned int)st_,  \
				   NdkStatusName(want_));                  \
			return -1;                                         \
		}                                                          \
	} while (0)

/* An adapter on lo with a PD (dies, exit 2, if it cannot be opened) and
 * a CQ of 64 whose notifications are not used. */
struct cap_host {
	struct tool_host t;
	NDK_CQ *cq;
};

int cap_host_open(struct cap_host *h);

/* Whether *count is above 0 within ms (looked at every 10 ms). */
bool cap_wait_positive(atomic_int *count, unsigned int ms);

/* 127.0.0.1:port. */
struct sockaddr_in cap_lo4(uint16_t port);

/* Prints "key <local port of c>". */
int cap_print_local_port(const char *key, NDK_CONNECTOR *c);

/* Listens on 127.0.0.1:port (0: one is picked) with ad; prints "LISTEN
 * <port>" and waits for the script's go. bound gets the address. */
int cap_listen(NDK_ADAPTER *ad, uint16_t port, struct tool_listener *l,
	       struct sockaddr_in *bound);

/* main of a driver called prog: [PORT] on the command line, run(port),
 * "DONE" if it and every check passed. Returns the exit status. */
int cap_main(const char *prog, int argc, char **argv,
	     int (*run)(uint16_t port));

#endif
