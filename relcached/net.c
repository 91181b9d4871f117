/*
 * relcached/net.c - the network: one listening socket, worker threads each
 * with its own epoll loop, and the connections' buffers.
 *
 * Every worker has the listening socket in its epoll set (EPOLLEXCLUSIVE:
 * one worker is woken per connection).  The worker that accepts deals the
 * connections out round-robin: it hands each one that is not its own to
 * its worker through that worker's hand-over pipe, and every worker serves
 * the connections it was dealt until they close.  Interest is
 * level-triggered.
 *
 * Memory per connection is bounded: a command line may be at most
 * LINE_MAX_GET bytes; a data block goes straight into its item (at most -I
 * bytes); input is not read while more than WBUF_HIGH bytes of output wait
 * for a client that does not read, and one command may queue at most
 * WBUF_HARD bytes (a bigger multi-get is answered with a SERVER_ERROR).
 */
#define _GNU_SOURCE /* accept4 */
#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define RBUF_INITIAL 2048 /* an idle connection's input buffer */
#define RBUF_ACTIVE 16384 /* once a read has filled it: fewer, larger reads */
/* memcached's rule: a line may outgrow 2048 bytes only when it is a get
 * (many keys); we cap that too. */
#define LINE_MAX_OTHER 2048
#define LINE_MAX_GET 65536
#define WBUF_HIGH (1u << 20)
#define WBUF_HARD ((size_t)64 << 20)
#define WBUF_KEEP 65536 /* an emptied output buffer bigger than this is freed */
#define MAX_EVENTS 64

#define REPLY_TOO_MANY "ERROR Too many open connections\r\n"

const char *const stat_names[STAT_COUNT] = {
	"cmd_get", "get_hits", "get_misses", "cmd_set", "cmd_touch",
	"touch_hits", "touch_misses", "delete_hits", "delete_misses",
	"incr_hits", "incr_misses", "decr_hits", "decr_misses",
	"cas_hits", "cas_misses", "cas_badval", "cmd_flush",
	"bytes_read", "bytes_written",
};

struct worker {
	pthread_t thread;
	int epfd;
	int stopfd;
	/* Accepted sockets dealt to this worker by another one: each write
	 * is one int, so atomic (at most PIPE_BUF bytes); [0] is read here. */
	int handover[2];
	struct conn *conns;
	struct thread_stats stats;
};

static int listen_fd = -1;
static struct worker *workers;
static int workers_running; /* threads started, which net_stop() joins */
/* Counters only ("stats", the -c limit, which may overshoot by the
 * accepts in flight): relaxed. */
static atomic_uint_fast64_t curr_conns, total_conns, rejected_conns;
/* The round-robin deal of accepted connections; only its spread matters:
 * relaxed. */
static atomic_uint next_worker;

/* epoll_event.data.ptr of the file descriptors that are not clients. */
static char listen_tag, stop_tag, handover_tag;

/* ------------------------------------------------------------------ */
/* Output                                                               */

bool conn_out(struct conn *c, const void *p, size_t n)
{
	size_t need = c->wlen + n;

	if (c->out_overflow || need - c->wpos > WBUF_HARD) {
		c->out_overflow = true;
		return false;
	}
	if (need > c->wcap) {
		size_t cap = c->wcap ? c->wcap : 1024;
		char *nb;

		while (cap < need)
			cap *= 2;
		nb = realloc(c->wbuf, cap);
		if (!nb) {
			c->out_overflow = true;
			return false;
		}
		c->wbuf = nb;
		c->wcap = cap;
	}
	memcpy(c->wbuf + c->wlen, p, n);
	c->wlen = need;
	return true;
}

void conn_reply(struct conn *c, const char *line)
{
	if (c->noreply)
		return;
	if (conn_out(c, line, strlen(line)))
		conn_out(c, "\r\n", 2);
}

void conn_reply_error(struct conn *c, const char *line)
{
	/* memcached 1.6 drops errors too when the command said noreply. */
	c->out_overflow = false;
	conn_reply(c, line);
}

/* Send what is queued; false when the connection failed. */
static bool conn_flush(struct conn *c)
{
	while (c->wpos < c->wlen) {
		ssize_t n = send(c->fd, c->wbuf + c->wpos, c->wlen - c->wpos,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		c->wpos += (size_t)n;
		stat_add(c->stats, STAT_BYTES_WRITTEN, (uint64_t)n);
	}
	c->wpos = c->wlen = 0;
	if (c->wcap > WBUF_KEEP) {
		free(c->wbuf);
		c->wbuf = NULL;
		c->wcap = 0;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Input                                                                */

static bool conn_grow_input(struct conn *c, size_t cap)
{
	char *nb = realloc(c->rbuf, cap);

	if (!nb)
		return false;
	c->rbuf = nb;
	c->rcap = cap;
	return true;
}

/* The input holds an incomplete command line: is it too long already? */
static bool line_too_long(const struct conn *c)
{
	const char *line = c->rbuf + c->rpos;
	size_t len = c->rlen - c->rpos;
	bool get = (len >= 4 && memcmp(line, "get ", 4) == 0) ||
	           (len >= 5 && memcmp(line, "gets ", 5) == 0);

	return len > (get ? LINE_MAX_GET : LINE_MAX_OTHER);
}

/* Room for more input: compact; a full buffer (one incomplete line, the
 * longest allowed being LINE_MAX_GET) grows.  false: out of memory. */
static bool conn_make_room(struct conn *c)
{
	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	if (c->rlen < c->rcap || c->state != CONN_COMMAND)
		return true; /* a full buffer of data block is consumed first */
	return conn_grow_input(c, c->rcap * 2);
}

/* One read(); false when the connection is done (EOF, error, bad line). */
static bool conn_read(struct conn *c)
{
	ssize_t n;

	if (!conn_make_room(c))
		return false;
	if (c->rlen == c->rcap)
		return true;
	n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
	if (n > 0) {
		c->rlen += (size_t)n;
		stat_add(c->stats, STAT_BYTES_READ, (uint64_t)n);
		/* A busy client: read more per call from now on. */
		if (c->rlen == c->rcap && c->rcap < RBUF_ACTIVE)
			conn_grow_input(c, RBUF_ACTIVE);
		return true;
	}
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

/* Move up to want bytes of input out; returns how many. */
static size_t take_input(struct conn *c, char *dst, size_t want)
{
	size_t avail = c->rlen - c->rpos, n = avail < want ? avail : want;

	if (dst)
		memcpy(dst, c->rbuf + c->rpos, n);
	c->rpos += n;
	return n;
}

/* One step of the input state machine; false when it needs more input. */
static bool conn_step(struct conn *c)
{
	char *line, *nl;

	switch (c->state) {
	case CONN_DATA: {
		size_t need = c->pending->nbytes + 2 - c->data_got;

		c->data_got += take_input(c, item_value(c->pending) + c->data_got, need);
		if (c->data_got < c->pending->nbytes + 2)
			return false;
		cmd_data_done(c);
		return true;
	}
	case CONN_SWALLOW:
		c->swallow_left -= take_input(c, NULL, c->swallow_left);
		if (c->swallow_left > 0)
			return false;
		c->state = CONN_COMMAND;
		return true;
	case CONN_COMMAND:
		line = c->rbuf + c->rpos;
		nl = memchr(line, '\n', c->rlen - c->rpos);
		if (!nl) {
			/* As memcached: closed, without a reply. */
			if (line_too_long(c))
				c->state = CONN_CLOSING;
			return false;
		}
		c->rpos = (size_t)(nl + 1 - c->rbuf);
		cmd_execute(c, line, (size_t)(nl - line));
		return true;
	case CONN_CLOSING:
		return false;
	}
	return false;
}

/* Run the commands that are complete, while the client takes its output. */
static void conn_process(struct conn *c)
{
	while (c->wlen - c->wpos < WBUF_HIGH && conn_step(c))
		;
}

/* ------------------------------------------------------------------ */
/* Connections                                                          */

static void conn_close(struct worker *w, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	close(c->fd); /* also leaves the epoll set */
	if (c->pending)
		item_discard(c->pending);
	free(c->rbuf);
	free(c->wbuf);
	free(c);
	atomic_fetch_sub_explicit(&curr_conns, 1, memory_order_relaxed);
}

/* Read while output is drained; write while output is queued. */
static bool conn_set_interest(struct worker *w, struct conn *c)
{
	uint32_t ev = 0;
	struct epoll_event e;

	if (c->state != CONN_CLOSING && c->wlen - c->wpos < WBUF_HIGH)
		ev |= EPOLLIN;
	if (c->wpos < c->wlen)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return true;
	e.events = ev;
	e.data.ptr = c;
	c->events = ev;
	return epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0;
}

static void conn_event(struct worker *w, struct conn *c, uint32_t events)
{
	bool ok = true;

	if (events & EPOLLIN)
		ok = conn_read(c);
	conn_process(c);
	if (!conn_flush(c))
		ok = false;
	/* Commands held back by a full output buffer may run now. */
	conn_process(c);
	ok = ok && conn_flush(c);
	if (!ok && c->state != CONN_CLOSING) {
		/* EOF or error: what is queued is still worth one try. */
		c->state = CONN_CLOSING;
	}
	if (c->state == CONN_CLOSING && (c->wpos == c->wlen || !ok))
		return conn_close(w, c);
	if (!conn_set_interest(w, c))
		conn_close(w, c);
}

static struct conn *conn_new(struct worker *w, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct epoll_event e = { .events = EPOLLIN };
	int one = 1;

	if (!c || !(c->rbuf = malloc(RBUF_INITIAL)))
		goto fail;
	c->fd = fd;
	c->rcap = RBUF_INITIAL;
	c->stats = &w->stats;
	c->events = EPOLLIN;
	e.data.ptr = c;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &e) != 0)
		goto fail;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	return c;
fail:
	if (c)
		free(c->rbuf);
	free(c);
	return NULL;
}

/* Serve fd on w (a new connection); closes it when that fails. */
static void conn_adopt(struct worker *w, int fd)
{
	if (conn_new(w, fd))
		return;
	close(fd);
	atomic_fetch_sub_explicit(&curr_conns, 1, memory_order_relaxed);
}

/*
 * Give the new connection fd to the next worker in turn.  One worker alone
 * would otherwise serve a burst of connections (it accepts them all in one
 * wake-up), and on a loaded machine the others' cores would idle.  When the
 * turn's hand-over pipe is full, this worker keeps the connection.
 */
static void conn_deal(struct worker *self, int fd)
{
	unsigned turn = atomic_fetch_add_explicit(&next_worker, 1, memory_order_relaxed);
	struct worker *w = &workers[turn % (unsigned)settings.threads];

	if (w != self && write(w->handover[1], &fd, sizeof(fd)) == (ssize_t)sizeof(fd))
		return;
	conn_adopt(self, fd);
}

/* The connections other workers dealt to w. */
static void take_handed_over(struct worker *w)
{
	int fds[MAX_EVENTS];
	ssize_t n = read(w->handover[0], fds, sizeof(fds));

	for (ssize_t i = 0; i < n / (ssize_t)sizeof(int); i++)
		conn_adopt(w, fds[i]);
}

/* Accept what is waiting (other workers may take some). */
static void accept_all(struct worker *w)
{
	for (int i = 0; i < MAX_EVENTS; i++) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				perror("relcached: accept");
			return;
		}
		if (atomic_load_explicit(&curr_conns, memory_order_relaxed) >=
		    (uint64_t)settings.maxconns) {
			atomic_fetch_add_explicit(&rejected_conns, 1, memory_order_relaxed);
			(void)!send(fd, REPLY_TOO_MANY, sizeof(REPLY_TOO_MANY) - 1,
			            MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		atomic_fetch_add_explicit(&curr_conns, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&total_conns, 1, memory_order_relaxed);
		conn_deal(w, fd);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[MAX_EVENTS];

	relhash_thread_register();
	for (;;) {
		int n = epoll_wait(w->epfd, ev, MAX_EVENTS, -1);

		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &stop_tag)
				goto out;
			if (ev[i].data.ptr == &listen_tag)
				accept_all(w);
			else if (ev[i].data.ptr == &handover_tag)
				take_handed_over(w);
			else
				conn_event(w, ev[i].data.ptr, ev[i].events);
		}
	}
out:
	while (w->conns)
		conn_close(w, w->conns);
	relhash_thread_unregister();
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Start and stop                                                       */

static int open_listener(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(settings.port) };
	int one = 1, fd;

	if (inet_pton(AF_INET, settings.listen_addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "relcached: -l %s: not an IPv4 address\n", settings.listen_addr);
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0) {
		fprintf(stderr, "relcached: %s:%d: %s\n", settings.listen_addr,
		        settings.port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* w's descriptors; its thread starts once every worker has its own (any
 * worker may deal connections to any other). */
static int worker_open(struct worker *w)
{
	struct epoll_event l = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &listen_tag };
	struct epoll_event s = { .events = EPOLLIN, .data.ptr = &stop_tag };
	struct epoll_event h = { .events = EPOLLIN, .data.ptr = &handover_tag };

	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->epfd < 0 || w->stopfd < 0 ||
	    pipe2(w->handover, O_CLOEXEC | O_NONBLOCK) != 0 ||
	    epoll_ctl(w->epfd, EPOLL_CTL_ADD, listen_fd, &l) != 0 ||
	    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stopfd, &s) != 0 ||
	    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->handover[0], &h) != 0)
		return -1;
	return 0;
}

/* After the workers stopped: close w's descriptors and the connections
 * still waiting in its hand-over pipe. */
static void worker_close(struct worker *w)
{
	int fd;

	while (read(w->handover[0], &fd, sizeof(fd)) == (ssize_t)sizeof(fd))
		close(fd);
	close(w->handover[0]);
	close(w->handover[1]);
	close(w->epfd);
	close(w->stopfd);
}

int net_start(void)
{
	listen_fd = open_listener();
	if (listen_fd < 0)
		return -1;
	workers = calloc((size_t)settings.threads, sizeof(*workers));
	if (!workers)
		return -1;
	for (int i = 0; i < settings.threads; i++) {
		if (worker_open(&workers[i]) != 0) {
			perror("relcached: worker");
			return -1;
		}
	}
	for (; workers_running < settings.threads; workers_running++) {
		struct worker *w = &workers[workers_running];

		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			perror("relcached: worker");
			net_stop();
			return -1;
		}
	}
	return 0;
}

void net_stop(void)
{
	uint64_t one = 1;

	for (int i = 0; i < workers_running; i++)
		(void)!write(workers[i].stopfd, &one, sizeof(one));
	for (int i = 0; i < workers_running; i++)
		pthread_join(workers[i].thread, NULL);
	for (int i = 0; i < settings.threads; i++)
		worker_close(&workers[i]);
	workers_running = 0;
	free(workers);
	workers = NULL;
	close(listen_fd);
	listen_fd = -1;
}

void net_sum_stats(uint64_t sum[STAT_COUNT])
{
	memset(sum, 0, sizeof(uint64_t) * STAT_COUNT);
	for (int i = 0; i < settings.threads; i++)
		for (int s = 0; s < STAT_COUNT; s++)
			sum[s] += atomic_load_explicit(&workers[i].stats.v[s],
			                               memory_order_relaxed);
}

void net_conn_stats(uint64_t *curr, uint64_t *total, uint64_t *rejected)
{
	*curr = atomic_load_explicit(&curr_conns, memory_order_relaxed);
	*total = atomic_load_explicit(&total_conns, memory_order_relaxed);
	*rejected = atomic_load_explicit(&rejected_conns, memory_order_relaxed);
}
