/* SPDX-License-Identifier: MIT */
/*
 * Raw MPA peers against the provider's connection manager, on 127.0.0.1:
 *
 *  - passive: a raw client (rawpeer.h) talks to our NDK listener;
 *  - active: our NdkConnect reaches a raw server.
 *
 * Every scenario must end in a clean status, with no ConnectEvent for a
 * malformed Request, no crash or hang, the listener still working (a
 * well-behaved NDK connect to it succeeds) and the process's descriptors
 * all back after NdkCloseAdapter.
 */
#ifndef NDK_RAWPEER_CM_H
#define NDK_RAWPEER_CM_H

#include <stdbool.h>
#include <stdint.h>
#include "cmutil.h"
#include "rawpeer.h"

#define CM_TIMEOUT_MS 300 /* NDK_CM_TIMEOUT_MS for these tests */
#define NUDGE_MS      50 /* NDK_RTR_NUDGE_MS */
#define GRACE_MS      50 /* NDK_ACCEPT_GRACE_MS */
#define LOOPS	      3 /* each scenario runs this many times */
#define WAIT_MS	      5000 /* "never" for things that must happen */

/* Sets the three timers above; call before any adapter (and engine
 * thread) exists, so that no getenv races. */
void rawcm_set_timers(void);

/*
 * Group setup: the first listener of a process opens its OID registry
 * file, which stays open (and locked) for the process's life; open it
 * before the descriptor counts start.
 */
int rawcm_open_registry(void **state);

/* NdkCloseAdapter after closing the PD and CQ, so it has nothing left to
 * close (and warn about) but what a scenario leaves open on purpose. */
void rawcm_host_close(struct cm_host *h);

/*
 * One row of a case table (ended by a row whose name is NULL): what a
 * raw peer sends in one write, and whether it then shuts its sending
 * side (FIN).
 */
struct raw_case {
	const char *name;
	struct raw_part send[3];
	bool fin_after;
};

/* ------------------------------------------------------------------ */
/* Passive: a raw client against our listener                         */

struct passive {
	struct cm_host h;
	struct tool_listener l;
	int fds; /* with the listener up and nothing connected */
};

void passive_open(struct passive *p);
/* The provider let go of every socket of the bad peers, and raised no
 * ConnectEvent for them. */
void passive_settled(struct passive *p);
/* A well-behaved NDK connect still works; then closes all. */
void passive_close(struct passive *p);

/* A raw client sends req; the listener's ConnectEvent hands us c. */
NDK_CONNECTOR *passive_raw_request(struct passive *p, int *fd,
				   const uint8_t *req, size_t len);
/* The consumer accepts c (IRD/ORD 4, PD "ok"); the raw client reads the
 * Reply, which must be neither a reject nor ask for markers. */
NDK_QP *passive_accept_read_reply(struct passive *p, NDK_CONNECTOR *c, int fd,
				  struct cm_req *acc, struct mpa_msg *rep);
/* A raw client whose Request the consumer accepted: passive_raw_request
 * and passive_accept_read_reply in one. */
struct raw_accepted {
	int fd;
	NDK_CONNECTOR *c;
	NDK_QP *qp;
	struct cm_req acc; /* the Accept's completion */
	struct mpa_msg rep; /* the Reply the client read */
};

void passive_raw_accepted(struct passive *p, const uint8_t *req, size_t len,
			  struct raw_accepted *r);
/* A P2P Reply to mpa_req_v2: Rev 2, S, A, exactly the Write RTR chosen,
 * IRD/ORD 4, then "ok". */
void assert_p2p_write_reply(const struct mpa_msg *rep);

/* ------------------------------------------------------------------ */
/* Active: our NdkConnect against a raw server                        */

struct active {
	struct cm_host h;
	int lfd, sfd;
	struct sockaddr_in addr;
	NDK_QP *qp;
	NDK_CONNECTOR *c;
	struct cm_req conn;
	uint64_t t0;
};

/* NdkConnect (IRD 8, ORD 4, PD "req") to a raw server, which accepts and
 * reads our Request: Rev 2, S, A, Write and Read RTR offered. */
void active_open(struct active *a);
/* Closes what active_open made (the connector unless it is NULL). */
void active_close(struct active *a);

/* The raw server sends mpa_good_reply (a byte at a time if bytewise);
 * our Connect completes STATUS_SUCCESS. */
void active_reply(struct active *a, bool bytewise);
/* active_reply, then NdkCompleteConnect; the raw side reads our Write
 * RTR into rtr (20 bytes). */
void active_establish(struct active *a, bool bytewise, uint8_t *rtr);

/* The raw server answers with the case's bytes (and FIN): Connect must
 * complete STATUS_CONNECTION_REFUSED and the provider must hang up. */
void active_refused(const struct raw_case *c);
/* The same for every row of a table (a RAWCM_TEST run). */
void active_refused_all(const void *cases);

/* ------------------------------------------------------------------ */
/* Scenarios as cmocka tests                                          */

/*
 * What a RAWCM_TEST runs LOOPS times, checking after each run that the
 * descriptors all came back: one of
 *  - run(arg), on its own;
 *  - passive(p, arg), between passive_open and passive_settled and
 *    passive_close;
 *  - active(a, arg), between active_open and active_close.
 */
struct rawcm_scenario {
	void (*run)(const void *arg);
	void (*passive)(struct passive *p, const void *arg);
	void (*active)(struct active *a, const void *arg);
	const void *arg;
};

void rawcm_run(void **state);

/* A scenario called name (the name of its cmocka test), of each kind. */
#define RAWCM_ALONE(name, fn, arg_) \
	static const struct rawcm_scenario name = { .run = (fn), .arg = (arg_) }
#define RAWCM_PASSIVE(name, fn, arg_)                                \
	static const struct rawcm_scenario name = { .passive = (fn), \
						    .arg = (arg_) }
#define RAWCM_ACTIVE(name, fn, arg_)                                \
	static const struct rawcm_scenario name = { .active = (fn), \
						    .arg = (arg_) }
/* Its entry in the cmocka table. */
#define RAWCM_TEST(name)                                    \
	{                                                   \
#name, rawcm_run, NULL, NULL, (void *)&name \
	}

#endif
