/*
 * src/base/util.c - the helpers of src/base/util.h.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_SYS_SYSCALL_H
#include <sys/syscall.h>
#endif

#include "atomics.h"

#include "pthread_checked.h"
#include "util.h"

uint64_t rh_env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return def;
	return v;
}

int rh_start_library_thread(void *(*fn)(void *))
{
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	int err;

	sigfillset(&all);
	/* sigmask and the attribute's setter fail only on invalid
	 * arguments: checked in debug builds. */
	rh_pthread_checked(pthread_sigmask(SIG_SETMASK, &all, &old));
	err = pthread_attr_init(&attr);
	if (!err) {
		rh_pthread_checked(pthread_attr_setdetachstate(
			&attr, PTHREAD_CREATE_DETACHED));
		err = pthread_create(&tid, &attr, fn, NULL);
		rh_pthread_checked(pthread_attr_destroy(&attr));
	}
	rh_pthread_checked(pthread_sigmask(SIG_SETMASK, &old, NULL));
	return err;
}

pid_t rh_gettid(void)
{
#ifdef SYS_gettid
	return (pid_t)syscall(SYS_gettid);
#else
	static _Atomic int next = 1;
	static __thread int mine;

	/* Relaxed: only uniqueness matters. */
	if (!mine)
		mine = rh_add_fetch_relaxed(&next, 1);
	return (pid_t)mine;
#endif
}

bool rh_stats_ok(const void *dst)
{
	size_t size;

	if (!dst)
		return false;
	/* memcpy: dst is a struct of the caller's headers, read as bytes. */
	memcpy(&size, dst, sizeof(size));
	return size >= sizeof(size);
}

int rh_stats_copy(void *dst, const void *src, size_t src_size)
{
	size_t size;

	if (!rh_stats_ok(dst))
		return -EINVAL;
	memcpy(&size, dst, sizeof(size));
	if (size > src_size)
		size = src_size;
	/* Only the bytes the caller's struct holds: its older, shorter
	 * layout is a prefix of ours. */
	memcpy((char *)dst + sizeof(size), (const char *)src + sizeof(size),
	       size - sizeof(size));
	memcpy(dst, &size, sizeof(size));
	return 0;
}
