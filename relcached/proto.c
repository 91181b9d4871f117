/*
 * relcached/proto.c - parsing memcached's text protocol.
 *
 * Words are separated by spaces.  A command is recognised by its first word
 * and its number of words, as memcached does: a known command with the
 * wrong number of words is "ERROR", a known command with bad numbers or an
 * over-long key is "CLIENT_ERROR bad command line format" (or the
 * command's own message).  The last word "noreply" silences the reply.
 */
#include "proto.h"

#include <string.h>

#define MAX_WORDS 8 /* enough for every command but the get family */
#define KEY_MAX 250

struct word {
	const char *s;
	size_t len;
};

struct line {
	struct word w[MAX_WORDS];
	size_t n;         /* words, counted up to MAX_WORDS + 1 */
	const char *end;
};

static void split(const char *s, size_t len, struct line *ln)
{
	const char *end = s + len;

	ln->n = 0;
	ln->end = end;
	while (s < end && ln->n <= MAX_WORDS) {
		const char *start;

		while (s < end && *s == ' ')
			s++;
		if (s == end)
			break;
		start = s;
		/* A word (a key: up to 250 bytes) ends at the next space. */
		s = memchr(start, ' ', (size_t)(end - start));
		if (!s)
			s = end;
		if (ln->n < MAX_WORDS)
			ln->w[ln->n] = (struct word){ start, (size_t)(s - start) };
		ln->n++;
	}
}

static bool word_is_n(const struct word *w, const char *lit, size_t n)
{
	return w->len == n && memcmp(w->s, lit, n) == 0;
}

/* w is the string literal lit. */
#define word_is(w, lit) word_is_n((w), (lit), sizeof(lit) - 1)

/* Unsigned decimal, the whole word, at most max. */
static bool parse_unsigned(const struct word *w, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (w->len == 0)
		return false;
	for (size_t i = 0; i < w->len; i++) {
		unsigned d = (unsigned)(w->s[i] - '0');

		if (d > 9 || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* Signed 32-bit decimal (memcached's exptime and length fields). */
static bool parse_i32(const struct word *w, int64_t *out)
{
	struct word digits = *w;
	bool neg = w->len > 0 && w->s[0] == '-';
	uint64_t v;

	if (neg) {
		digits.s++;
		digits.len--;
	}
	if (!parse_unsigned(&digits, neg ? 2147483648u : 2147483647u, &v))
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

static void fail(struct request *req, const char *reply)
{
	req->type = CMD_ERROR;
	req->error = reply;
}

static bool set_key(struct request *req, const struct word *w)
{
	req->key = w->s;
	req->nkey = w->len;
	return w->len <= KEY_MAX;
}

/* set/add/replace/append/prepend KEY FLAGS EXPTIME BYTES [CAS] [noreply] */
static void parse_storage(const struct line *ln, struct request *req, bool cas)
{
	size_t base = cas ? 6 : 5;
	uint64_t flags, n;
	int64_t nbytes;

	if (ln->n != base && ln->n != base + 1)
		return fail(req, REPLY_ERROR);
	req->noreply = ln->n == base + 1 && word_is(&ln->w[base], "noreply");
	if (!set_key(req, &ln->w[1]) || !parse_unsigned(&ln->w[2], UINT32_MAX, &flags) ||
	    !parse_i32(&ln->w[3], &req->exptime) || !parse_i32(&ln->w[4], &nbytes) ||
	    nbytes < 0 || (cas && !parse_unsigned(&ln->w[5], UINT64_MAX, &n)))
		return fail(req, REPLY_BAD_FORMAT);
	req->flags = (uint32_t)flags;
	req->nbytes = (uint32_t)nbytes;
	if (cas)
		req->cas = n;
}

/* get KEY...; gat EXPTIME KEY... */
static void parse_retrieval(const struct line *ln, struct request *req, bool touch)
{
	const struct word *first = &ln->w[touch ? 2 : 1];

	if (ln->n < (touch ? 3u : 2u))
		return fail(req, REPLY_ERROR);
	if (touch && !parse_i32(&ln->w[1], &req->exptime))
		return fail(req, REPLY_BAD_EXPTIME);
	req->keys = first->s;
	req->keys_end = ln->end;
}

static void parse_delete(const struct line *ln, struct request *req)
{
	if (ln->n < 2 || ln->n > 4)
		return fail(req, REPLY_ERROR);
	req->noreply = word_is(&ln->w[ln->n - 1], "noreply");
	/* "delete KEY 0" is the old form with a zero hold time. */
	if (ln->n - req->noreply > 3 ||
	    (ln->n - req->noreply == 3 && !word_is(&ln->w[2], "0")))
		return fail(req, REPLY_BAD_DELETE);
	if (!set_key(req, &ln->w[1]))
		return fail(req, REPLY_BAD_FORMAT);
}

static void parse_arith(const struct line *ln, struct request *req)
{
	if (ln->n != 3 && ln->n != 4)
		return fail(req, REPLY_ERROR);
	req->noreply = ln->n == 4 && word_is(&ln->w[3], "noreply");
	if (!set_key(req, &ln->w[1]))
		return fail(req, REPLY_BAD_FORMAT);
	if (!parse_unsigned(&ln->w[2], UINT64_MAX, &req->delta))
		return fail(req, REPLY_BAD_DELTA);
}

static void parse_touch(const struct line *ln, struct request *req)
{
	if (ln->n != 3 && ln->n != 4)
		return fail(req, REPLY_ERROR);
	req->noreply = ln->n == 4 && word_is(&ln->w[3], "noreply");
	if (!set_key(req, &ln->w[1]))
		return fail(req, REPLY_BAD_FORMAT);
	if (!parse_i32(&ln->w[2], &req->exptime))
		return fail(req, REPLY_BAD_EXPTIME);
}

static void parse_flush(const struct line *ln, struct request *req)
{
	if (ln->n > 3)
		return fail(req, REPLY_ERROR);
	req->noreply = ln->n > 1 && word_is(&ln->w[ln->n - 1], "noreply");
	if (ln->n - req->noreply == 2 && !parse_i32(&ln->w[1], &req->delay))
		return fail(req, REPLY_BAD_EXPTIME);
}

static void parse_simple(const struct line *ln, struct request *req, size_t min,
                         size_t max)
{
	if (ln->n < min || ln->n > max)
		return fail(req, REPLY_ERROR);
	req->noreply = ln->n > 1 && word_is(&ln->w[ln->n - 1], "noreply");
}

static void parse_verbosity(const struct line *ln, struct request *req)
{
	uint64_t level;

	parse_simple(ln, req, 2, 3);
	if (req->type != CMD_ERROR && !parse_unsigned(&ln->w[1], UINT32_MAX, &level))
		fail(req, REPLY_BAD_FORMAT);
}

#define COMMAND(name, type) { name, sizeof(name) - 1, type }

static const struct command {
	const char *name;
	size_t len;
	enum cmd_type type;
} commands[] = {
	COMMAND("get", CMD_GET), COMMAND("gets", CMD_GETS), COMMAND("gat", CMD_GAT),
	COMMAND("gats", CMD_GATS), COMMAND("set", CMD_SET), COMMAND("add", CMD_ADD),
	COMMAND("replace", CMD_REPLACE), COMMAND("append", CMD_APPEND),
	COMMAND("prepend", CMD_PREPEND), COMMAND("cas", CMD_CAS),
	COMMAND("delete", CMD_DELETE), COMMAND("incr", CMD_INCR),
	COMMAND("decr", CMD_DECR), COMMAND("touch", CMD_TOUCH),
	COMMAND("flush_all", CMD_FLUSH_ALL), COMMAND("stats", CMD_STATS),
	COMMAND("version", CMD_VERSION), COMMAND("verbosity", CMD_VERBOSITY),
	COMMAND("quit", CMD_QUIT),
};

static enum cmd_type lookup_command(const struct word *w)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (word_is_n(w, commands[i].name, commands[i].len))
			return commands[i].type;
	return CMD_ERROR;
}

void proto_parse(const char *line, size_t len, struct request *req)
{
	struct line ln;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	memset(req, 0, sizeof(*req));
	split(line, len, &ln);
	req->type = ln.n ? lookup_command(&ln.w[0]) : CMD_ERROR;
	req->error = REPLY_ERROR;
	switch (req->type) {
	case CMD_GET: case CMD_GETS:
		return parse_retrieval(&ln, req, false);
	case CMD_GAT: case CMD_GATS:
		return parse_retrieval(&ln, req, true);
	case CMD_SET: case CMD_ADD: case CMD_REPLACE: case CMD_APPEND: case CMD_PREPEND:
		return parse_storage(&ln, req, false);
	case CMD_CAS:
		return parse_storage(&ln, req, true);
	case CMD_DELETE:
		return parse_delete(&ln, req);
	case CMD_INCR: case CMD_DECR:
		return parse_arith(&ln, req);
	case CMD_TOUCH:
		return parse_touch(&ln, req);
	case CMD_FLUSH_ALL:
		return parse_flush(&ln, req);
	case CMD_STATS: /* only the general statistics, no sub-commands */
	case CMD_VERSION: case CMD_QUIT:
		return parse_simple(&ln, req, 1, 1);
	case CMD_VERBOSITY:
		return parse_verbosity(&ln, req);
	case CMD_ERROR:
		return;
	}
}

bool proto_next_key(const char **pos, const char *end, const char **key, size_t *nkey)
{
	const char *s = *pos;

	while (s < end && *s == ' ')
		s++;
	if (s == end) {
		*pos = s;
		return false;
	}
	*key = s;
	while (s < end && *s != ' ')
		s++;
	*nkey = (size_t)(s - *key);
	*pos = s;
	return true;
}
