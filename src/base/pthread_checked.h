/*
 * src/base/pthread_checked.h - pthread calls whose failure would be a bug of
 * the library (an uninitialised or corrupted mutex, a wait on a mutex not
 * held): debug builds (RELHASH_DEBUG) check their results and abort with
 * the call and its error; release builds ignore them, since on a valid
 * object of the default type they cannot fail.  Calls that can fail in a
 * correct program (allocation inside pthread_mutex_init(), pthread_key_
 * create(), pthread_setspecific(), pthread_create()) are handled where they
 * are made, and wrapped here only for the debug check.
 */
#ifndef RELHASH_PTHREAD_CHECKED_H
#define RELHASH_PTHREAD_CHECKED_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#ifdef RELHASH_DEBUG
/* Report a failed call (src/base/debug.c) and abort. */
void rh_pthread_failed(const char *call, int err, const char *file, int line)
	__attribute__((noreturn));
#define rh_pthread_checked(call) \
	do { \
		int rh_err_ = (call); \
		if (rh_err_) \
			rh_pthread_failed(#call, rh_err_, __FILE__, __LINE__); \
	} while (0)
#else
#define rh_pthread_checked(call) ((void)(call))
#endif

/* pthread_cond_timedwait(): true when the deadline passed.  Any error but
 * ETIMEDOUT is a bug. */
static inline bool rh_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                     const struct timespec *deadline)
{
	int err = pthread_cond_timedwait(c, m, deadline);

#ifdef RELHASH_DEBUG
	if (err && err != ETIMEDOUT)
		rh_pthread_failed("pthread_cond_timedwait()", err, __FILE__,
		                  __LINE__);
#endif
	return err == ETIMEDOUT;
}

#define rh_once(o, f) rh_pthread_checked(pthread_once((o), (f)))
#define rh_mutex_lock(m) rh_pthread_checked(pthread_mutex_lock(m))
#define rh_mutex_unlock(m) rh_pthread_checked(pthread_mutex_unlock(m))
#define rh_cond_wait(c, m) rh_pthread_checked(pthread_cond_wait((c), (m)))
#define rh_cond_signal(c) rh_pthread_checked(pthread_cond_signal(c))
#define rh_cond_broadcast(c) rh_pthread_checked(pthread_cond_broadcast(c))

#endif /* RELHASH_PTHREAD_CHECKED_H */
