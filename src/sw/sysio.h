/* SPDX-License-Identifier: MIT */
/*
 * The data path's socket calls, made as plain system calls. glibc's
 * recv/recvmsg/sendmsg are cancellation points: a consumer's
 * pthread_cancel could end its thread inside NdkGetCqResults or a post
 * while it holds the QP's receive or send lock, which no other thread
 * could then take. These are never cancellation points (and skip the two
 * atomic operations per call that glibc spends on it). Same results and
 * errno as the glibc calls.
 */
#ifndef SW_SYSIO_H
#define SW_SYSIO_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline ssize_t sw_sys_recv(int fd, void *buf, size_t len, int flags)
{
	return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t sw_sys_recvmsg(int fd, struct msghdr *msg, int flags)
{
	return (ssize_t)syscall(SYS_recvmsg, fd, msg, flags);
}

static inline ssize_t sw_sys_sendmsg(int fd, const struct msghdr *msg,
				     int flags)
{
	return (ssize_t)syscall(SYS_sendmsg, fd, msg, flags);
}

#endif /* SW_SYSIO_H */
