/* SPDX-License-Identifier: MIT */
/*
 * The connector's one timer. conn_arm_timer() says why it is armed (enum
 * conn_timer_purpose); when it fires, conn_timer_fn() acts on that purpose
 * alone. Each purpose belongs to the states listed in conn_timer_states[]:
 * the state setter stops a timer whose phase is left, so a fire never
 * lands in another phase.
 */
#include <assert.h>
#include <stdint.h>
#include "sw/connector_int.h"
#include "core/log.h"
#include "front/adapter.h"

#define CONN_STATE_BIT(s) (1u << (s))

/*
 * The states each timer purpose may run in: a timer never outlives its
 * phase, conn_set_state() stops it when the connector leaves them.
 */
static const uint32_t conn_timer_states[CONN_TIMER_PURPOSE_COUNT] = {
	[CONN_TIMER_CONNECT] = CONN_STATE_BIT(SW_CONN_TCP_CONNECTING) |
			       CONN_STATE_BIT(SW_CONN_AWAIT_REPLY),
	[CONN_TIMER_COMPLETE_CONNECT] = CONN_STATE_BIT(SW_CONN_REPLIED),
	[CONN_TIMER_ACCEPT] = CONN_STATE_BIT(SW_CONN_AWAIT_RTR) |
			      CONN_STATE_BIT(SW_CONN_SENDING_REPLY),
	[CONN_TIMER_ACCEPT_GRACE] = CONN_STATE_BIT(SW_CONN_ACCEPT_GRACE),
	[CONN_TIMER_RTR_NUDGE] = CONN_STATE_BIT(SW_CONN_RTR_SENT),
	[CONN_TIMER_DISCONNECT] = CONN_STATE_BIT(SW_CONN_DISCONNECTING),
};

static const char *const conn_timer_names[CONN_TIMER_PURPOSE_COUNT] = {
	[CONN_TIMER_NONE] = "none",
	[CONN_TIMER_CONNECT] = "connect",
	[CONN_TIMER_COMPLETE_CONNECT] = "complete-connect",
	[CONN_TIMER_ACCEPT] = "accept",
	[CONN_TIMER_ACCEPT_GRACE] = "accept-grace",
	[CONN_TIMER_RTR_NUDGE] = "rtr-nudge",
	[CONN_TIMER_DISCONNECT] = "disconnect",
};

/* Arms the one timer for purpose, replacing any other; c->conn.lock held. */
void conn_arm_timer(struct sw_connector *c, enum conn_timer_purpose purpose,
		    uint64_t ms)
{
	NDK_ASSERT_LOCKED(&c->conn.lock);
	assert(conn_timer_states[purpose] & CONN_STATE_BIT(c->state));
	c->engine_used = true;
	ndk_dbg("connector %p: %s timer %llu ms in %s", (void *)c,
		conn_timer_names[purpose], (unsigned long long)ms,
		sw_conn_state_name(c->state));
	c->timer_purpose = purpose;
	c->timer_deadline_ns = ndk_now_ns() + ms * 1000000;
	ndk_timer_start(conn_engine(c), &c->timer, ms);
}

/*
 * Off the engine thread the timer function may already be waiting for
 * c->conn.lock: with no purpose left it ignores that stale fire (and one whose
 * deadline a re-arm moved on).
 */
void conn_stop_timer(struct sw_connector *c)
{
	NDK_ASSERT_LOCKED(&c->conn.lock);
	c->timer_purpose = CONN_TIMER_NONE;
	c->timer_deadline_ns = UINT64_MAX;
	ndk_timer_cancel(conn_engine(c), &c->timer);
}

/* The connector moves to state to: a timer of the old phase stops. */
void conn_timer_enter_state(struct sw_connector *c, enum sw_conn_state to)
{
	if (c->timer_purpose != CONN_TIMER_NONE &&
	    !(conn_timer_states[c->timer_purpose] & CONN_STATE_BIT(to)))
		conn_stop_timer(c);
}

/*
 * The timer fired: what happens depends only on why it was armed (the
 * setter stopped it if the connector left that phase since).
 */
void conn_timer_fn(struct ndk_timer *t)
{
	struct sw_connector *c = container_of(t, struct sw_connector, timer);
	enum conn_timer_purpose purpose;

	ndk_lock(&c->conn.lock);
	purpose = c->timer_purpose;
	if (purpose == CONN_TIMER_NONE || ndk_now_ns() < c->timer_deadline_ns) {
		ndk_unlock(&c->conn.lock); /* stale */
		return;
	}
	ndk_dbg("connector %p: %s timer fired in %s", (void *)c,
		conn_timer_names[purpose], sw_conn_state_name(c->state));
	c->timer_purpose = CONN_TIMER_NONE;
	c->timer_deadline_ns = UINT64_MAX;
	switch (purpose) {
	case CONN_TIMER_CONNECT:
		conn_connect_failed(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_COMPLETE_CONNECT:
		/* CompleteConnect never came: this attempt is over. */
		conn_abandon(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_ACCEPT:
		/* The peer never called CompleteConnect: NdkAccept fails
		 * with STATUS_IO_TIMEOUT. */
		conn_accept_failed(c, STATUS_IO_TIMEOUT);
		break;
	case CONN_TIMER_ACCEPT_GRACE:
		conn_grace_over(c);
		break;
	case CONN_TIMER_RTR_NUDGE:
		conn_nudge(c);
		conn_set_state(c, SW_CONN_ESTABLISHED);
		break;
	case CONN_TIMER_DISCONNECT:
		conn_disconnect_timed_out(c);
		break;
	default:
		break;
	}
	ndk_unlock(&c->conn.lock);
}
