/*
 * relcached/proto.h - memcached's text protocol: one command line in, one
 * parsed request out.  No I/O and no state, so that a fuzzer can drive it
 * (tests/fuzz/fuzz-relcached-proto.c).
 */
#ifndef RELCACHED_PROTO_H
#define RELCACHED_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cmd_type {
	CMD_ERROR, /* req.error holds the reply */
	CMD_GET,
	CMD_GETS,
	CMD_GAT,
	CMD_GATS,
	CMD_SET,
	CMD_ADD,
	CMD_REPLACE,
	CMD_APPEND,
	CMD_PREPEND,
	CMD_CAS,
	CMD_DELETE,
	CMD_INCR,
	CMD_DECR,
	CMD_TOUCH,
	CMD_FLUSH_ALL,
	CMD_STATS,
	CMD_VERSION,
	CMD_VERBOSITY,
	CMD_QUIT,
};

/* memcached's replies to a malformed line. */
#define REPLY_ERROR "ERROR"
#define REPLY_BAD_FORMAT "CLIENT_ERROR bad command line format"
#define REPLY_BAD_DELETE \
	"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"
#define REPLY_BAD_DELTA "CLIENT_ERROR invalid numeric delta argument"
#define REPLY_BAD_EXPTIME "CLIENT_ERROR invalid exptime argument"

struct request {
	enum cmd_type type;
	const char *error;  /* CMD_ERROR */
	bool noreply;
	const char *key;    /* storage, delete, incr/decr, touch */
	size_t nkey;
	const char *keys;   /* get family: the keys, separated by spaces */
	const char *keys_end;
	uint32_t flags;
	int64_t exptime;    /* as sent: relative or absolute */
	uint32_t nbytes;
	uint64_t cas;
	uint64_t delta;
	int64_t delay;      /* flush_all */
};

/*
 * Parse one command line (without its "\n"; a trailing "\r" is ignored).
 * Always fills req; pointers in it point into line.  Key lengths are
 * checked here (at most 250 bytes), values sizes are not (the caller knows
 * the -I limit).
 */
void proto_parse(const char *line, size_t len, struct request *req);

/* The next key of a get-family request (keys .. keys_end), advancing *pos; false at the end.
 * Keys longer than 250 bytes are returned too: the caller rejects them. */
bool proto_next_key(const char **pos, const char *end, const char **key, size_t *nkey);

#endif /* RELCACHED_PROTO_H */
