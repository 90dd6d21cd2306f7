// SPDX-License-Identifier: Apache-2.0
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

size_t ts_ring_bytes(uint32_t capacity)
{
	return sizeof(struct ts_ring) + (size_t)capacity * sizeof(struct ts_slot);
}

int ts_ring_init(struct ts_ring *r, uint32_t capacity, const struct ts_ident *id)
{
	struct timespec mono, real;

	if (capacity < 2 || (capacity & (capacity - 1)))
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	r->version = TS_RING_VERSION;
	r->capacity = capacity;
	r->slot_size = sizeof(struct ts_slot);
	r->start_real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	r->mono_to_real_ns = (int64_t)r->start_real_ns -
			     (int64_t)((uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec);
	if (id)
		r->id = *id;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->dropped, 0);
	atomic_init(&r->closed, 0);
	for (uint32_t i = 0; i < capacity; i++)
		atomic_init(&r->slots[i].seq, i);
	r->magic = TS_RING_MAGIC; /* last: a reader trusts the header once it sees this */
	return 0;
}

int ts_ring_file_mode(const char *dir)
{
	struct stat st;

	return stat(dir, &st) == 0 && (st.st_mode & S_ISGID) ? 0660 : 0600;
}

int ts_ring_create(const char *dir, uint32_t capacity, const struct ts_ident *id,
		   struct ts_ring **out, int *lock_fd, char *path, size_t pathlen)
{
	char tmp[4096];
	size_t size = ts_ring_bytes(capacity);
	int mode = ts_ring_file_mode(dir), fd, err;
	struct timespec now;
	void *mem;

	clock_gettime(CLOCK_MONOTONIC, &now);
	snprintf(path, pathlen, "%s/%d-%lx%s", dir, (int)getpid(), (unsigned long)now.tv_nsec,
		 TS_RING_SUFFIX);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* fchmod, unlike open's mode, ignores the umask; should it fail, the ring stays 0600 */
	if (mode != 0600)
		(void)fchmod(fd, (mode_t)mode);
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED)
		goto fail;
	/* held for the process's life: the relay knows the producer is gone when it can
	 * take the lock, even across PID namespaces and after SIGKILL */
	if (flock(fd, LOCK_SH) < 0) {
		munmap(mem, size);
		goto fail;
	}
	err = ts_ring_init(mem, capacity, id);
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err) {
		munmap(mem, size);
		close(fd);
		unlink(tmp);
		return err;
	}
	*out = mem;
	*lock_fd = fd;
	return 0;
fail:
	err = -errno;
	close(fd);
	unlink(tmp);
	return err;
}

int ts_ring_open(const char *path, struct ts_ring **out)
{
	struct ts_ring *r;
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	void *mem;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct ts_ring)) {
		close(fd);
		return -EBADMSG;
	}
	mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED)
		return -errno;
	r = mem;
	if (r->magic != TS_RING_MAGIC || r->version != TS_RING_VERSION ||
	    r->slot_size != sizeof(struct ts_slot) || r->capacity < 2 ||
	    (r->capacity & (r->capacity - 1)) || ts_ring_bytes(r->capacity) != (size_t)st.st_size) {
		munmap(mem, (size_t)st.st_size);
		return -EBADMSG;
	}
	*out = r;
	return 0;
}

void ts_ring_unmap(struct ts_ring *r)
{
	if (r)
		munmap(r, ts_ring_bytes(r->capacity));
}

int ts_ring_producer_alive(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), alive;

	if (fd < 0)
		return 0;
	alive = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}
