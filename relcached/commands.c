/*
 * relcached/commands.c - what each command of the text protocol does:
 * parsed by proto.c, executed against the store (items.c), replies
 * appended to the connection's output (net.c sends them).
 */
#include "conn.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

#define REPLY_TOO_LARGE "SERVER_ERROR object too large for cache"
#define REPLY_NO_MEMORY "SERVER_ERROR out of memory storing object"
#define REPLY_GET_OVERFLOW "SERVER_ERROR out of memory writing get response"
#define REPLY_BAD_CHUNK "CLIENT_ERROR bad data chunk"
#define REPLY_NON_NUMERIC "CLIENT_ERROR cannot increment or decrement non-numeric value"

static const char *const store_replies[] = {
	[STORE_STORED] = "STORED",
	[STORE_NOT_STORED] = "NOT_STORED",
	[STORE_EXISTS] = "EXISTS",
	[STORE_NOT_FOUND] = "NOT_FOUND",
	[STORE_DELETED] = "DELETED",
	[STORE_TOUCHED] = "TOUCHED",
	[STORE_NO_MEMORY] = REPLY_NO_MEMORY,
	[STORE_NON_NUMERIC] = REPLY_NON_NUMERIC,
};

static void reply_result(struct conn *c, enum store_result res)
{
	if (res == STORE_NO_MEMORY || res == STORE_NON_NUMERIC)
		conn_reply_error(c, store_replies[res]);
	else
		conn_reply(c, store_replies[res]);
}

/* ------------------------------------------------------------------ */
/* get, gets, gat, gats                                                 */

struct value_out {
	struct conn *c;
	bool with_cas;
};

/* "VALUE key flags bytes [cas]\r\n" and the data block. */
static void write_value(const struct item *it, void *arg)
{
	const struct value_out *vo = arg;
	char head[KEY_MAX_LENGTH + 96];
	int n = snprintf(head, sizeof(head), "VALUE %.*s %" PRIu32 " %" PRIu32,
	                 (int)it->nkey, it->data, it->flags, it->nbytes);

	if (vo->with_cas)
		n += snprintf(head + n, sizeof(head) - (size_t)n, " %" PRIu64, it->cas);
	memcpy(head + n, "\r\n", 2);
	if (conn_out(vo->c, head, (size_t)n + 2))
		conn_out(vo->c, item_value_const(it), it->nbytes + 2);
}

/* get: a lock-free lookup, the value copied out inside the section. */
static bool get_one(struct value_out *vo, const struct item_key *k)
{
	const struct item *it;

	relhash_read_lock();
	it = store_find(k);
	if (it)
		write_value(it, vo);
	relhash_read_unlock();
	return it != NULL;
}

/* gat: a touch that writes the touched item out. */
static bool gat_one(struct value_out *vo, const struct item_key *k, int64_t exptime)
{
	enum store_result res = store_touch(k, exptime, write_value, vo);

	if (res == STORE_NO_MEMORY)
		vo->c->out_overflow = true;
	return res == STORE_TOUCHED;
}

static void count_retrieval(struct conn *c, bool touch, bool hit)
{
	stat_add(c->stats, touch ? STAT_CMD_TOUCH : STAT_CMD_GET, 1);
	if (touch)
		stat_add(c->stats, hit ? STAT_TOUCH_HITS : STAT_TOUCH_MISSES, 1);
	stat_add(c->stats, hit ? STAT_GET_HITS : STAT_GET_MISSES, 1);
}

static void cmd_get(struct conn *c, const struct request *req, bool with_cas, bool touch)
{
	struct value_out vo = { c, with_cas };
	int64_t exptime = touch ? store_exptime(req->exptime) : 0;
	const char *pos = req->keys, *key;
	size_t mark = c->wlen, nkey;
	struct item_key k;

	while (proto_next_key(&pos, req->keys_end, &key, &nkey)) {
		bool hit;

		if (!item_key_set(&k, key, nkey)) {
			c->wlen = mark;
			conn_reply_error(c, REPLY_BAD_FORMAT);
			return;
		}
		hit = touch ? gat_one(&vo, &k, exptime) : get_one(&vo, &k);
		count_retrieval(c, touch, hit);
		if (c->out_overflow) {
			/* Drop this command's partial answer, say why. */
			c->wlen = mark;
			c->out_overflow = false;
			conn_reply_error(c, REPLY_GET_OVERFLOW);
			return;
		}
	}
	conn_reply(c, "END");
}

/* ------------------------------------------------------------------ */
/* Storage commands: the line, then the data block                      */

static const enum store_mode store_modes[] = {
	[CMD_SET] = MODE_SET, [CMD_ADD] = MODE_ADD, [CMD_REPLACE] = MODE_REPLACE,
	[CMD_APPEND] = MODE_APPEND, [CMD_PREPEND] = MODE_PREPEND, [CMD_CAS] = MODE_CAS,
};

/* Refuse a storage command: reply, then drop its data block. */
static void refuse_store(struct conn *c, const struct request *req,
                         const struct item_key *k, const char *why)
{
	conn_reply_error(c, why);
	c->state = CONN_SWALLOW;
	c->swallow_left = (size_t)req->nbytes + 2;
	/* memcached: a failed set leaves no stale value behind. */
	if (req->type == CMD_SET)
		store_delete(k);
}

static void cmd_store(struct conn *c, const struct request *req)
{
	struct item_key k;
	struct item *it;

	stat_add(c->stats, STAT_CMD_SET, 1);
	item_key_set(&k, req->key, req->nkey); /* proto.c checked the length */
	if (item_size(req->nkey, req->nbytes) > settings.item_size_max)
		return refuse_store(c, req, &k, REPLY_TOO_LARGE);
	it = item_new(&k, req->flags, store_exptime(req->exptime), req->nbytes);
	if (!it)
		return refuse_store(c, req, &k, REPLY_NO_MEMORY);
	c->pending = it;
	c->data_got = 0;
	c->pending_mode = store_modes[req->type];
	c->pending_cas = req->cas;
	c->state = CONN_DATA;
}

void cmd_data_done(struct conn *c)
{
	struct item *it = c->pending;
	enum store_result res;

	c->pending = NULL;
	c->state = CONN_COMMAND;
	if (memcmp(item_value(it) + it->nbytes, "\r\n", 2) != 0) {
		item_discard(it);
		conn_reply_error(c, REPLY_BAD_CHUNK);
		return;
	}
	res = store_item(it, c->pending_mode, c->pending_cas);
	if (c->pending_mode == MODE_CAS)
		stat_add(c->stats, res == STORE_STORED ? STAT_CAS_HITS :
		                   res == STORE_EXISTS ? STAT_CAS_BADVAL : STAT_CAS_MISSES, 1);
	reply_result(c, res);
}

/* ------------------------------------------------------------------ */
/* delete, incr/decr, touch, flush_all                                  */

static void cmd_delete(struct conn *c, const struct request *req)
{
	struct item_key k;
	enum store_result res;

	item_key_set(&k, req->key, req->nkey);
	res = store_delete(&k);
	stat_add(c->stats, res == STORE_DELETED ? STAT_DELETE_HITS : STAT_DELETE_MISSES, 1);
	reply_result(c, res);
}

static void cmd_arith(struct conn *c, const struct request *req, bool incr)
{
	struct item_key k;
	enum store_result res;
	uint64_t value;
	char digits[24];

	item_key_set(&k, req->key, req->nkey);
	res = store_arith(&k, incr, req->delta, &value);
	if (res != STORE_NON_NUMERIC && res != STORE_NO_MEMORY)
		stat_add(c->stats, incr ? (res == STORE_STORED ? STAT_INCR_HITS : STAT_INCR_MISSES)
		                        : (res == STORE_STORED ? STAT_DECR_HITS : STAT_DECR_MISSES), 1);
	if (res != STORE_STORED)
		return reply_result(c, res);
	snprintf(digits, sizeof(digits), "%" PRIu64, value);
	conn_reply(c, digits);
}

static void cmd_touch(struct conn *c, const struct request *req)
{
	struct item_key k;
	enum store_result res;

	item_key_set(&k, req->key, req->nkey);
	res = store_touch(&k, store_exptime(req->exptime), NULL, NULL);
	stat_add(c->stats, STAT_CMD_TOUCH, 1);
	stat_add(c->stats, res == STORE_TOUCHED ? STAT_TOUCH_HITS : STAT_TOUCH_MISSES, 1);
	reply_result(c, res);
}

static void cmd_flush(struct conn *c, const struct request *req)
{
	stat_add(c->stats, STAT_CMD_FLUSH, 1);
	store_flush(req->delay);
	conn_reply(c, "OK");
}

/* ------------------------------------------------------------------ */
/* stats                                                                */

static void stat_line(struct conn *c, const char *name, uint64_t v)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "STAT %s %" PRIu64 "\r\n", name, v);

	conn_out(c, line, (size_t)n);
}

static void cmd_stats(struct conn *c)
{
	uint64_t sum[STAT_COUNT], curr, total, rejected;
	struct relhash_epoch_stats es = { .size = sizeof(es) };
	struct store_stats ss;

	net_sum_stats(sum);
	net_conn_stats(&curr, &total, &rejected);
	store_get_stats(&ss);
	relhash_epoch_stats(&es);
	stat_line(c, "pid", (uint64_t)getpid());
	stat_line(c, "uptime", (uint64_t)(store_now() - settings.started));
	stat_line(c, "time", (uint64_t)store_now());
	conn_out(c, "STAT version " RELCACHED_VERSION "\r\n",
	         sizeof("STAT version " RELCACHED_VERSION "\r\n") - 1);
	stat_line(c, "curr_connections", curr);
	stat_line(c, "total_connections", total);
	stat_line(c, "rejected_connections", rejected);
	for (int i = 0; i < STAT_COUNT; i++)
		stat_line(c, stat_names[i], sum[i]);
	stat_line(c, "threads", (uint64_t)settings.threads);
	stat_line(c, "limit_maxbytes", ss.limit_maxbytes);
	stat_line(c, "bytes", ss.bytes);
	stat_line(c, "curr_items", ss.curr_items);
	stat_line(c, "total_items", ss.total_items);
	stat_line(c, "evictions", ss.evictions);
	stat_line(c, "reclaimed", ss.reclaimed);
	stat_line(c, "table_buckets", ss.table_buckets);
	stat_line(c, "table_resizes", ss.table_resizes);
	stat_line(c, "table_grace_periods", ss.table_grace_periods);
	stat_line(c, "table_throttled_inserts", ss.table_throttled_inserts);
	stat_line(c, "grace_periods", es.grace_periods);
	stat_line(c, "deferred_frees_pending", es.callbacks_pending);
	conn_reply(c, "END");
}

/* ------------------------------------------------------------------ */

void cmd_execute(struct conn *c, const char *line, size_t len)
{
	struct request req;

	proto_parse(line, len, &req);
	c->noreply = req.noreply;
	switch (req.type) {
	case CMD_ERROR: return conn_reply_error(c, req.error);
	case CMD_GET: return cmd_get(c, &req, false, false);
	case CMD_GETS: return cmd_get(c, &req, true, false);
	case CMD_GAT: return cmd_get(c, &req, false, true);
	case CMD_GATS: return cmd_get(c, &req, true, true);
	case CMD_SET: case CMD_ADD: case CMD_REPLACE: case CMD_APPEND:
	case CMD_PREPEND: case CMD_CAS:
		return cmd_store(c, &req);
	case CMD_DELETE: return cmd_delete(c, &req);
	case CMD_INCR: return cmd_arith(c, &req, true);
	case CMD_DECR: return cmd_arith(c, &req, false);
	case CMD_TOUCH: return cmd_touch(c, &req);
	case CMD_FLUSH_ALL: return cmd_flush(c, &req);
	case CMD_STATS: return cmd_stats(c);
	case CMD_VERSION: return conn_reply(c, "VERSION " RELCACHED_VERSION);
	case CMD_VERBOSITY: return conn_reply(c, "OK");
	case CMD_QUIT: c->state = CONN_CLOSING; return;
	}
}
