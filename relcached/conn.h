/*
 * relcached/conn.h - a client connection, as the network loop (net.c) and
 * the command handlers (commands.c) share it, and the server's settings.
 */
#ifndef RELCACHED_CONN_H
#define RELCACHED_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "items.h"

struct settings {
	const char *listen_addr;
	int port;
	int threads;
	int maxconns;
	size_t item_size_max; /* -I: the largest item, key and header included */
	uint64_t mem_limit;   /* -m, in bytes */
	int verbose;
	int64_t started;      /* Unix time at start ("uptime") */
};
extern struct settings settings;

/* Per-thread command counters ("stats"); each written by one thread. */
enum stat_id {
	STAT_CMD_GET, STAT_GET_HITS, STAT_GET_MISSES, STAT_CMD_SET, STAT_CMD_TOUCH,
	STAT_TOUCH_HITS, STAT_TOUCH_MISSES, STAT_DELETE_HITS, STAT_DELETE_MISSES,
	STAT_INCR_HITS, STAT_INCR_MISSES, STAT_DECR_HITS, STAT_DECR_MISSES,
	STAT_CAS_HITS, STAT_CAS_MISSES, STAT_CAS_BADVAL, STAT_CMD_FLUSH,
	STAT_BYTES_READ, STAT_BYTES_WRITTEN,
	STAT_COUNT
};
extern const char *const stat_names[STAT_COUNT];

struct thread_stats {
	atomic_uint_fast64_t v[STAT_COUNT];
};

/* Only the owning thread writes: a relaxed load and store, no locked
 * instruction; "stats" reads them relaxed (a snapshot, not a cut). */
static inline void stat_add(struct thread_stats *ts, enum stat_id id, uint64_t n)
{
	atomic_store_explicit(&ts->v[id],
	                      atomic_load_explicit(&ts->v[id], memory_order_relaxed) + n,
	                      memory_order_relaxed);
}

enum conn_state {
	CONN_COMMAND, /* reading command lines */
	CONN_DATA,    /* reading a data block into pending */
	CONN_SWALLOW, /* dropping a data block that was refused */
	CONN_CLOSING, /* send what is queued, then close */
};

struct conn {
	int fd;
	enum conn_state state;
	struct thread_stats *stats;
	struct conn *prev, *next; /* the worker's connections */
	uint32_t events;          /* epoll interest now registered */
	/* Input: unconsumed bytes are rbuf[rpos, rlen). */
	char *rbuf;
	size_t rpos, rlen, rcap;
	/* Output: unsent bytes are wbuf[wpos, wlen). */
	char *wbuf;
	size_t wpos, wlen, wcap;
	bool out_overflow; /* an append was refused: over the hard limit */
	bool noreply;      /* the current command's replies are dropped */
	/* CONN_DATA: the item being filled, and what to do with it. */
	struct item *pending;
	size_t data_got;
	enum store_mode pending_mode;
	uint64_t pending_cas;
	/* CONN_SWALLOW: bytes still to drop. */
	size_t swallow_left;
};

/* Append n bytes to the output; false (and out_overflow) over the limit. */
bool conn_out(struct conn *c, const void *p, size_t n);
/* A reply line plus "\r\n", unless the command said noreply. */
void conn_reply(struct conn *c, const char *line);
/* An error line (also dropped for noreply, as memcached 1.6 does); it
 * ends an output overflow. */
void conn_reply_error(struct conn *c, const char *line);

/* commands.c: one command line; and the end of a CONN_DATA block. */
void cmd_execute(struct conn *c, const char *line, size_t len);
void cmd_data_done(struct conn *c);

/* net.c */
int net_start(void);
void net_stop(void);
void net_sum_stats(uint64_t sum[STAT_COUNT]);
void net_conn_stats(uint64_t *curr, uint64_t *total, uint64_t *rejected);

#endif /* RELCACHED_CONN_H */
