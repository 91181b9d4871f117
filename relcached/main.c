/*
 * relcached/main.c - options, start-up and shutdown of relcached, a
 * memcached-compatible cache server on relhash (doc/relcached.md).
 *
 * The workers run the network (net.c); this thread waits for SIGINT or
 * SIGTERM, then stops them and frees every item.
 */
#include "conn.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct settings settings = {
	.listen_addr = "127.0.0.1",
	.port = 11211,
	.threads = 4,
	.maxconns = 1024,
	.item_size_max = 1024 * 1024,
	.mem_limit = (uint64_t)64 << 20,
};

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: relcached [-p PORT] [-l ADDR] [-t THREADS] [-m MEGABYTES]\n"
	        "                 [-c MAXCONNS] [-I MAX_ITEM_SIZE] [-v] [-h] [-V]\n"
	        "  -p PORT           TCP port (default 11211)\n"
	        "  -l ADDR           IPv4 address to listen on (default 127.0.0.1)\n"
	        "  -t THREADS        worker threads (default 4)\n"
	        "  -m MEGABYTES      item memory limit (default 64)\n"
	        "  -c MAXCONNS       simultaneous connections (default 1024)\n"
	        "  -I SIZE           largest item, with k or m suffix (default 1m)\n"
	        "  -v                print what the server does on stderr\n"
	        "  -V                print the version and exit\n");
}

/* A decimal number in [min, max], with an optional k/m suffix when
 * suffix is true; -1 when malformed. */
static long long parse_number(const char *s, long long min, long long max, bool suffix)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno)
		return -1;
	if (suffix && (*end == 'k' || *end == 'K'))
		v = v > LLONG_MAX / 1024 ? -1 : v * 1024, end++;
	else if (suffix && (*end == 'm' || *end == 'M'))
		v = v > LLONG_MAX / 1048576 ? -1 : v * 1048576, end++;
	if (*end != '\0' || v < min || v > max)
		return -1;
	return v;
}

static int bad_option(int opt, const char *arg)
{
	fprintf(stderr, "relcached: bad value for -%c: '%s'\n", opt, arg);
	usage(stderr);
	return -1;
}

static int parse_options(int argc, char **argv)
{
	long long v;
	int opt;

	while ((opt = getopt(argc, argv, "p:l:t:m:c:I:vVh")) != -1) {
		switch (opt) {
		case 'p': case 't': case 'm': case 'c': case 'I':
			v = parse_number(optarg, opt == 'p' ? 0 : 1,
			                 opt == 'p' ? 65535 : opt == 'I' ? 1LL << 30 :
			                 opt == 'm' ? 1LL << 20 : 1 << 20, opt == 'I');
			if (v < 0 || (opt == 'I' && v < 1024) || (opt == 't' && v > 1024))
				return bad_option(opt, optarg);
			if (opt == 'p')
				settings.port = (int)v;
			else if (opt == 't')
				settings.threads = (int)v;
			else if (opt == 'm')
				settings.mem_limit = (uint64_t)v << 20;
			else if (opt == 'c')
				settings.maxconns = (int)v;
			else
				settings.item_size_max = (size_t)v;
			break;
		case 'l': settings.listen_addr = optarg; break;
		case 'v': settings.verbose++; break;
		case 'V': printf("relcached " RELCACHED_VERSION "\n"); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t stop;
	int sig, rc;

	if (parse_options(argc, argv) != 0)
		return 2;
	settings.started = store_now();
	/* Workers inherit the mask: only this thread takes the stop signals. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = store_init(settings.mem_limit);
	if (rc != 0) {
		fprintf(stderr, "relcached: cannot create the table: %s\n", strerror(-rc));
		return 1;
	}
	if (net_start() != 0)
		return 1;
	if (settings.verbose)
		fprintf(stderr, "relcached: listening on %s:%d, %d threads, %llu MB\n",
		        settings.listen_addr, settings.port, settings.threads,
		        (unsigned long long)(settings.mem_limit >> 20));
	sigwait(&stop, &sig);
	if (settings.verbose)
		fprintf(stderr, "relcached: %s, stopping\n", strsignal(sig));
	net_stop();
	store_destroy();
	return 0;
}
