/*
 * tests/fuzz/fuzz-relcached-proto.c - libFuzzer harness for relcached's
 * protocol parser (relcached/proto.c).
 *
 * The input is split at '\n' into command lines, as relcached's connection
 * does, and each line is parsed.  Besides the sanitizers' checks, every
 * parse must keep the parser's promises: pointers stay inside the line,
 * keys of commands that take one are 1..250 bytes, every get-family key is
 * a non-empty run without spaces, an error carries a reply, and noreply is
 * set only when the last word says so.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../relcached/proto.h"

static void require(int ok)
{
	if (!ok)
		abort();
}

static int inside(const char *p, size_t n, const char *line, size_t len)
{
	return p >= line && p + n <= line + len;
}

static void check_keys(const struct request *req, const char *line, size_t len)
{
	const char *pos = req->keys, *key;
	size_t nkey, count = 0;

	require(inside(req->keys, (size_t)(req->keys_end - req->keys), line, len));
	while (proto_next_key(&pos, req->keys_end, &key, &nkey)) {
		require(nkey > 0 && inside(key, nkey, line, len));
		require(memchr(key, ' ', nkey) == NULL);
		require(++count <= len);
	}
	require(pos == req->keys_end);
}

static int ends_with_noreply(const char *line, size_t len)
{
	static const char word[] = " noreply";
	size_t n = sizeof(word) - 1;

	while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\r'))
		len--;
	return len >= n && memcmp(line + len - n, word, n) == 0;
}

static void check_line(const char *line, size_t len)
{
	struct request req;

	proto_parse(line, len, &req);
	if (req.type == CMD_ERROR) {
		require(req.error != NULL);
		require(strcmp(req.error, "ERROR") == 0 ||
		        strncmp(req.error, "CLIENT_ERROR ", 13) == 0);
		return;
	}
	if (req.noreply)
		require(ends_with_noreply(line, len));
	switch (req.type) {
	case CMD_GET: case CMD_GETS: case CMD_GAT: case CMD_GATS:
		check_keys(&req, line, len);
		break;
	case CMD_SET: case CMD_ADD: case CMD_REPLACE: case CMD_APPEND:
	case CMD_PREPEND: case CMD_CAS: case CMD_DELETE: case CMD_INCR:
	case CMD_DECR: case CMD_TOUCH:
		require(req.nkey >= 1 && req.nkey <= 250 && inside(req.key, req.nkey, line, len));
		require(memchr(req.key, ' ', req.nkey) == NULL);
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy with no spare bytes after it: ASan sees any overread. */
	char *buf = malloc(size ? size : 1);
	size_t start = 0;

	memcpy(buf, data, size);
	for (size_t i = 0; i <= size; i++) {
		if (i == size || buf[i] == '\n') {
			check_line(buf + start, i - start);
			start = i + 1;
		}
	}
	free(buf);
	return 0;
}
