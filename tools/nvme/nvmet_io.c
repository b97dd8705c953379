// SPDX-License-Identifier: MIT
/*
 * The NVM command set of ndknvmet (nvmet.h) and the namespace's storage:
 * Read (the data goes to the host with an RDMA Write before the CQE),
 * Write (fetched with an RDMA Read, stored, then the CQE), Flush, Write
 * Zeroes and Dataset Management (accepted: deallocation is a hint). One
 * namespace, NSID 1, in RAM or in a file or block device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "nvmet.h"

#define ZERO_CHUNK (256u << 10)

/* ------------------------------------------------------------------ */
/* Storage                                                            */

static void ns_ids(struct nvmet_ns *ns, const char *seed)
{
	/* FNV-1a over the seed, twice with different offsets: stable
	 * identifiers for a subsystem name, different between names. */
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	const char *p;

	for (p = seed; *p; p++) {
		h1 = (h1 ^ (uint8_t)*p) * 0x100000001b3ull;
		h2 = (h2 ^ (uint8_t)*p) * 0x100000001b3ull;
	}
	nvme_put64(ns->nguid, h1);
	nvme_put64(ns->nguid + 8, h2);
	nvme_put64(ns->uuid, h2 ^ 0x5555555555555555ull);
	nvme_put64(ns->uuid + 8, h1 ^ 0xaaaaaaaaaaaaaaaaull);
	/* RFC 4122 name-based (version 5 layout), variant 10b. */
	ns->uuid[6] = (uint8_t)((ns->uuid[6] & 0x0f) | 0x50);
	ns->uuid[8] = (uint8_t)((ns->uuid[8] & 0x3f) | 0x80);
}

static int ns_finish(struct nvmet_ns *ns, uint64_t bytes,
		     unsigned int lba_shift)
{
	ns->lba_shift = lba_shift;
	ns->blocks = bytes >> lba_shift;
	ns->bytes = ns->blocks << lba_shift;
	return ns->blocks ? 0 : -EINVAL;
}

int nvmet_ns_open_ram(struct nvmet_ns *ns, uint64_t bytes,
		      unsigned int lba_shift)
{
	void *p;

	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
	if (ns_finish(ns, bytes, lba_shift))
		return -EINVAL;
	/* Pages appear as they are written; the rest reads as zeros. */
	p = mmap(NULL, ns->bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	ns->ram = p;
	snprintf(ns->what, sizeof(ns->what), "ram %llu MiB",
		 (unsigned long long)(ns->bytes >> 20));
	return 0;
}

int nvmet_ns_open_file(struct nvmet_ns *ns, const char *path,
		       unsigned int lba_shift)
{
	off_t end;

	memset(ns, 0, sizeof(*ns));
	ns->fd = open(path, O_RDWR | O_CLOEXEC);
	if (ns->fd < 0)
		return -errno;
	/* SEEK_END gives the size of a file and of a block device. */
	end = lseek(ns->fd, 0, SEEK_END);
	if (end < 0 || ns_finish(ns, (uint64_t)end, lba_shift)) {
		close(ns->fd);
		ns->fd = -1;
		return -EINVAL;
	}
	snprintf(ns->what, sizeof(ns->what), "file %s (%llu MiB)", path,
		 (unsigned long long)(ns->bytes >> 20));
	return 0;
}

void nvmet_ns_set_ids(struct nvmet_ns *ns, const char *subnqn)
{
	ns_ids(ns, subnqn);
}

void nvmet_ns_close(struct nvmet_ns *ns)
{
	if (ns->ram)
		munmap(ns->ram, ns->bytes);
	if (ns->fd >= 0)
		close(ns->fd);
	ns->ram = NULL;
	ns->fd = -1;
}

int nvmet_ns_read(struct nvmet_ns *ns, void *buf, uint64_t off, size_t len)
{
	uint8_t *p = buf;
	ssize_t n;

	if (ns->ram) {
		memcpy(buf, ns->ram + off, len);
		return 0;
	}
	while (len) {
		n = pread(ns->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			/* A file that shrank under us reads as zeros. */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int nvmet_ns_write(struct nvmet_ns *ns, const void *buf, uint64_t off,
		   size_t len, bool fua)
{
	const uint8_t *p = buf;
	ssize_t n;

	if (ns->ram) {
		memcpy(ns->ram + off, buf, len);
		return 0;
	}
	while (len) {
		n = pwrite(ns->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return fua ? nvmet_ns_flush(ns) : 0;
}

int nvmet_ns_zero(struct nvmet_ns *ns, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[ZERO_CHUNK];
	size_t n;
	int rc;

	if (ns->ram) {
		memset(ns->ram + off, 0, len);
		return 0;
	}
	if (!fallocate(ns->fd, FALLOC_FL_ZERO_RANGE, (off_t)off, (off_t)len))
		return 0;
	while (len) {
		n = (size_t)MIN(len, (uint64_t)ZERO_CHUNK);
		rc = nvmet_ns_write(ns, zeros, off, n, false);
		if (rc)
			return rc;
		off += n;
		len -= n;
	}
	return 0;
}

int nvmet_ns_flush(struct nvmet_ns *ns)
{
	if (ns->fd >= 0 && fdatasync(ns->fd))
		return -errno;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Commands                                                           */

static enum nvmet_next done(struct nvmet_slot *s, uint16_t status)
{
	s->status = status;
	return NVMET_REPLY;
}

/* SLBA (CDW10-11) and NLB (CDW12 15:0, 0's based) within the namespace:
 * 0 with the byte offset and length, or the status. */
static uint16_t lba_range(struct nvmet_slot *s, uint64_t *off, uint64_t *len)
{
	const struct nvmet_ns *ns = &s->q->t->ns;
	uint64_t slba = s->cmd.cdw[0] | ((uint64_t)s->cmd.cdw[1] << 32);
	uint64_t nlb = (uint64_t)(s->cmd.cdw[2] & 0xffff) + 1;

	if (slba >= ns->blocks || nlb > ns->blocks - slba)
		return NVME_SC_LBA_RANGE | NVME_SC_DNR;
	*off = slba << ns->lba_shift;
	*len = nlb << ns->lba_shift;
	return 0;
}

/* The data of a Read or Write: exactly the blocks it names. */
static uint16_t rw_check(struct nvmet_slot *s, uint64_t *off, uint64_t *len)
{
	uint16_t st = lba_range(s, off, len);

	if (st)
		return st;
	if (*len > s->q->t->max_xfer)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	st = nvmet_check_sgl(s, (uint32_t)*len);
	if (st)
		return st;
	if (s->cmd.sgl_length != *len)
		return NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	return 0;
}

static enum nvmet_next io_read(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	uint64_t off, len;
	uint16_t st = rw_check(s, &off, &len);

	if (st)
		return done(s, st);
	if (nvmet_ns_read(&t->ns, s->data, off, (size_t)len))
		return done(s, NVME_SC_INTERNAL);
	s->xfer = (uint32_t)len;
	atomic_fetch_add(&t->cnt.bytes_read, len);
	atomic_fetch_add(&t->cnt.read_cmds, 1);
	return NVMET_REPLY;
}

static enum nvmet_next io_write_fetched(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	uint64_t len = ((uint64_t)(s->cmd.cdw[2] & 0xffff) + 1)
		       << t->ns.lba_shift;

	if (nvmet_ns_write(&t->ns, s->data, s->io_off, (size_t)len, s->io_fua))
		return done(s, NVME_SC_INTERNAL);
	atomic_fetch_add(&t->cnt.bytes_written, len);
	atomic_fetch_add(&t->cnt.write_cmds, 1);
	return done(s, 0);
}

static enum nvmet_next io_write(struct nvmet_slot *s)
{
	uint64_t off, len;
	uint16_t st = rw_check(s, &off, &len);

	if (st)
		return done(s, st);
	s->io_off = off;
	s->io_fua = s->cmd.cdw[2] & (1u << 30);
	s->xfer = (uint32_t)len;
	s->after_fetch = io_write_fetched;
	return NVMET_FETCH;
}

static enum nvmet_next io_write_zeroes(struct nvmet_slot *s)
{
	struct nvmet_target *t = s->q->t;
	uint64_t off, len;
	uint16_t st = lba_range(s, &off, &len);

	if (st)
		return done(s, st);
	if (nvmet_ns_zero(&t->ns, off, len))
		return done(s, NVME_SC_INTERNAL);
	return done(s, 0);
}

enum nvmet_next nvmet_io_cmd(struct nvmet_slot *s)
{
	struct nvmet_ctrl *c = s->q->ctrl;
	uint32_t nsid = s->cmd.nsid;

	if (!atomic_load(&c->ready))
		return done(s, NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR);
	if (nsid != 1 &&
	    !(s->cmd.opcode == NVME_IO_FLUSH && nsid == NVME_NSID_ALL))
		return done(s, NVME_SC_INVALID_NS | NVME_SC_DNR);
	switch (s->cmd.opcode) {
	case NVME_IO_READ:
		return io_read(s);
	case NVME_IO_WRITE:
		return io_write(s);
	case NVME_IO_FLUSH:
		return done(s, nvmet_ns_flush(&s->q->t->ns) ? NVME_SC_INTERNAL
							    : 0);
	case NVME_IO_WRITE_ZEROES:
		return io_write_zeroes(s);
	case NVME_IO_DSM:
		/* Deallocation is advisory; nothing to check or keep. */
		return done(s, 0);
	default:
		return done(s, NVME_SC_INVALID_OPCODE | NVME_SC_DNR);
	}
}
