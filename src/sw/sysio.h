/* SPDX-License-Identifier: MIT */
/*
 * The data path's socket calls, made as plain system calls. glibc's
 * recv/recvmsg/sendmsg are cancellation points: a consumer's
 * pthread_cancel could end its thread inside NdkGetCqResults or a post
 * while it holds the QP's receive or send lock, which no other thread
 * could then take. These are never cancellation points (and skip the two
 * atomic operations per call that glibc spends on it). Each returns the
 * byte count or a negative errno, as the kernel does, and leaves errno
 * alone: an empty poll's EAGAIN costs no call into libc.
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
	if (n < 0)
		n = -errno;
	pthread_setcancelstate(old, NULL);
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
#elif defined(__x86_64__)
/*
 * The system call instruction itself: libc's syscall() would be one more
 * frame, entered before the kernel and returned from after it, when a
 * kernel entry has emptied the return predictor (RSB filling), and one
 * more page of code on every hop.
 */
static inline long sw_syscall6(long nr, long a1, long a2, long a3, long a4,
			       long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
static inline long sw_syscall6(long nr, long a1, long a2, long a3, long a4,
			       long a5, long a6)
{
	long ret = syscall(nr, a1, a2, a3, a4, a5, a6);

	return ret < 0 ? -errno : ret;
}
#endif

#ifndef SW_SYSIO_LIBC
static inline ssize_t sw_sys_recv(int fd, void *buf, size_t len, int flags)
{
	return sw_syscall6(SYS_recvfrom, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline ssize_t sw_sys_recvmsg(int fd, struct msghdr *msg, int flags)
{
	return sw_syscall6(SYS_recvmsg, fd, (long)msg, flags, 0, 0, 0);
}

static inline ssize_t sw_sys_sendmsg(int fd, const struct msghdr *msg,
				     int flags)
{
	return sw_syscall6(SYS_sendmsg, fd, (long)msg, flags, 0, 0, 0);
}

static inline ssize_t sw_sys_send(int fd, const void *buf, size_t len,
				  int flags)
{
	return sw_syscall6(SYS_sendto, fd, (long)buf, (long)len, flags, 0, 0);
}
#endif

#endif /* SW_SYSIO_H */
