/* SPDX-License-Identifier: MIT */
/*
 * What registry.c shares with counters.c: the lock of this process's
 * files, the runtime directory and its per-user directories, and the
 * careful reads of files another user may own.
 */
#ifndef NDK_OID_REGISTRY_INT_H
#define NDK_OID_REGISTRY_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "core/lock.h"

/* Files and directories that only their owner may change. */
#define NDK_REG_NOT_OURS ((mode_t)(S_IWGRP | S_IWOTH))

/* Serializes this process's writes to its user's directory. */
extern struct ndk_lock ndk_reg_lock;

/* NDK_RUNTIME_DIR or its default. */
const char *ndk_reg_dir(void);
/* A random value for file names (a weaker one if getrandom fails). */
uint64_t ndk_reg_nonce(void);
/* ndk_reg_lock held: this process's user's directory, made if missing;
 * a negative errno if none. */
int ndk_reg_own_dir_locked(void);
/* A regular file of the directory's owner opened for reading, never
 * through a symlink or blocking on a FIFO; -1 for anything else. */
int ndk_reg_user_file_open(int dirfd, const char *name, const struct stat *dir,
			   struct stat *st);
/* Called for every user directory; non-zero stops the walk. */
typedef int (*ndk_reg_user_dir_fn)(int dirfd, const struct stat *dir,
				   void *arg);
/* Every user's directory in the runtime directory: 0, or what fn
 * returned to stop. */
int ndk_reg_for_each_user_dir(ndk_reg_user_dir_fn fn, void *arg);
/* Exactly len bytes at off; false if fewer are there. */
bool ndk_reg_pread_all(int fd, void *buf, size_t len, off_t off);

#endif /* NDK_OID_REGISTRY_INT_H */
