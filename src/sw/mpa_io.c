/* SPDX-License-Identifier: MIT */
/* The receive side of the MPA handshake on a non-blocking socket. */
#include <errno.h>
#include <sys/socket.h>
#include "sw/mpa_io.h"
#include "core/log.h"

int sw_mpa_rx_fill(struct sw_mpa_rx *rx, int fd, size_t want, bool whole)
{
	if (want > sizeof(rx->buf))
		return -EMSGSIZE;
	while (rx->len < want) {
		ssize_t n = recv(fd, rx->buf + rx->len, want - rx->len,
				 MSG_DONTWAIT);

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		rx->len += (size_t)n;
		if (!whole)
			break;
	}
	return 1;
}

int sw_mpa_rx_frame(struct sw_mpa_rx *rx, int fd, enum mpa_rr_type type,
		    struct mpa_rr *rr, const char *kind, const void *owner)
{
	const char *what = type == MPA_RR_REPLY ? "Reply" : "Request";
	int ret;

	for (;;) {
		ret = mpa_rr_parse(rx->buf, rx->len, type, MPA_PRIVATE_DATA_MAX,
				   rr, NULL);
		if (ret > 0) {
			/* rx has room for more than any frame, so a frame
			 * that ends the bytes read came from a read that
			 * emptied the socket: nothing followed it then. */
			if (rx->len == (size_t)ret)
				return 1;
			ndk_info("%s %p: data behind the MPA %s", kind, owner,
				 what);
			return -1;
		}
		if (ret != -EAGAIN) {
			ndk_info("%s %p: bad MPA %s: %s", kind, owner, what,
				 mpa_strerror(ret));
			return -1;
		}
		ret = sw_mpa_rx_fill(rx, fd, sizeof(rx->buf), false);
		if (ret <= 0)
			return ret < 0 ? -1 : 0;
	}
}
