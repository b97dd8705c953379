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

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SW_SYSIO_LIBC 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define SW_SYSIO_LIBC 1
#endif

#ifdef SW_SYSIO_LIBC
/*
 * TSan orders a send before the recv that reads it only through glibc's
 * calls, which it intercepts: with raw system calls it would report the
 * bytes a Write placed as racing with the sender's writes before it. So
 * under TSan the glibc calls, with cancellation off around them.
 */
static inline int sw_sysio_begin(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline ssize_t sw_sysio_end(ssize_t n, int old)
{
	int err = errno;

	pthread_setcancelstate(old, NULL);
	errno = err;
	return n;
}

static inline ssize_t sw_sys_recv(int fd, void *buf, size_t len, int flags)
{
	int old = sw_sysio_begin();

	return sw_sysio_end(recv(fd, buf, len, flags), old);
}

static inline ssize_t sw_sys_recvmsg(int fd, struct msghdr *msg, int flags)
{
	int old = sw_sysio_begin();

	return sw_sysio_end(recvmsg(fd, msg, flags), old);
}

static inline ssize_t sw_sys_sendmsg(int fd, const struct msghdr *msg,
				     int flags)
{
	int old = sw_sysio_begin();

	return sw_sysio_end(sendmsg(fd, msg, flags), old);
}

static inline ssize_t sw_sys_send(int fd, const void *buf, size_t len,
				  int flags)
{
	int old = sw_sysio_begin();

	return sw_sysio_end(send(fd, buf, len, flags), old);
}
#else
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

static inline ssize_t sw_sys_send(int fd, const void *buf, size_t len,
				  int flags)
{
	return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}
#endif

#endif /* SW_SYSIO_H */
