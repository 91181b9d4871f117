/*
 * tests/test-resize-torture.c - the resize torture.
 *
 * The rcuhashbash setup from the paper's benchmark (Triplett, McKenney and
 * Walpole, USENIX ATC 2011: 65,536 keys, the table toggling between 2^13 and
 * 2^14 buckets), plus wide jumps (1 to 65,536 buckets), a deliberately weak
 * hash that makes every chain 10 or more nodes long, a tiny table where
 * every lookup meets the resizer and the writers in the same chain,
 * automatic resizing driven by waves of insertions and removals (also in
 * bursts that back-pressure holds, so that inserters help with the unzip
 * passes), and the fence fallback of the read side (no membarrier(2)).
 * One more case, helper_steps, is not random: it steps one family through
 * an unzip shared with a helper (debug builds; see its comment).
 *
 * One engine (torture_run()), parameterised by struct torture_cfg, runs
 * every case:
 *
 * - STABLE keys are inserted before the threads start and are never
 *   removed: readers look them up and a single miss fails the test.  Their
 *   owners (the writers) replace them with new objects all the time, so the
 *   miss check also covers relhash_replace() ("a lookup sees either the old
 *   or the new object, never neither").
 * - ABSENT keys are never inserted: any hit fails the test.  Half of them
 *   share a group (and, with the weak hash, the full 64-bit hash) with
 *   inserted keys, so lookups for them walk the same chains and compare keys.
 * - CHURN keys are inserted, removed and replaced by the writer that owns
 *   them, which keeps an exact model (which object, or none, per key).
 *   Readers look them up too; whatever they find must be live.
 * - Every object that leaves the table is freed through relhash_call() with
 *   a callback that POISONS it (0x6b over the whole object, its chain link
 *   included) and keeps it in a quarantine for a while before free(), so a
 *   too-short grace period or a node left reachable shows up as poison (or
 *   as a crash on the poisoned link: a SIGSEGV handler names what the
 *   crashing thread was doing).  Readers re-check, at the end of each
 *   read-side section, every object they found in it.
 * - Reader 0 also iterates over the whole table now and then (at most 10 %
 *   of its time): every stable key not replaced during the walk must come
 *   back exactly once, no object twice, nothing poisoned.
 * - A resizer thread resizes continuously (relhash_resize()), or, in the
 *   auto cases, the library's own thread does (RELHASH_AUTO_RESIZE), and the
 *   test fails if no resize completed.  In the auto_burst case the writers
 *   outrun it, so back-pressure holds them and they may help with the unzip
 *   passes (doc/DESIGN.md, "Helping").
 *
 * At the end: stop the threads, relhash_barrier(), and the table must equal
 * the model exactly (lookups of every key, relhash_count(), one iteration
 * that returns every object of the model exactly once); then
 * relhash_destroy() with a free_fn, which must be called once per object.
 *
 * Environment: RELHASH_TORTURE_MS (run time per case, default 3500; a case
 * that needs a completed resize and has not seen one by then runs on until
 * it has, for at most PROGRESS_CAP_MS),
 * RELHASH_TORTURE_SEED (the seed: key placement in the table, thread
 * random streams), RELHASH_TORTURE_READERS / _WRITERS (thread counts).
 * RELHASH_DEBUG_YIELD defaults to 1 here: in --enable-debug builds the
 * library then yields at random in resize steps and updates, which widens
 * race windows (set it to 0 to turn that off; release builds ignore it).
 * Every failure message names the case and the seed.
 */
#include "common.h"

#include <signal.h>

#include <relhash.h>

/* ---------------------------------------------------------------------- */
/* Configuration                                                           */

#define MAX_READERS 8
#define MAX_WRITERS 8

struct torture_cfg {
	const char *name;
	size_t nstable;          /* keys always present */
	size_t nchurn;           /* keys inserted and removed (all writers) */
	double churn_fill;       /* fraction of churn keys present at start */
	bool weak_hash;          /* hash = mix(key / 16): groups of 16 keys
	                            share the full 64-bit hash */
	bool auto_resize;        /* RELHASH_AUTO_RESIZE, no resizer thread,
	                            writers sweep the churn keys in waves */
	bool no_membarrier;      /* RELHASH_NO_MEMBARRIER=1 */
	bool split_order_inserts; /* insertions in split order, as by
	                            default; false: at the heads
	                            (relhash__debug_head_inserts()), so that
	                            chains alternate and unzips take a pass
	                            per crossing */
	size_t initial_size, min_size, max_size;
	const size_t *sizes;     /* the resizer's cycle; NULL: no resizer */
	size_t nsizes;
	unsigned nreaders, nwriters;
};

/*
 * Key layout.  Keys come in groups of 16: 10 stable, 4 churn, 2 absent.
 * With the weak hash every key of a group has the same full hash, so every
 * non-empty chain holds at least a group's 10 stable keys, churn keys are
 * inserted into and removed from the middle of long chains, and lookups for
 * absent keys walk them to the end.  Absent keys far from every group
 * (FAR_BIT) hash anywhere.
 */
#define GROUP 16u
#define G_STABLE 10u
#define G_CHURN 4u
#define G_ABSENT 2u
#define FAR_BIT (1ull << 62)

static uint64_t stable_key(size_t i)
{
	return (uint64_t)(i / G_STABLE) * GROUP + i % G_STABLE;
}

static uint64_t churn_key(size_t j)
{
	return (uint64_t)(j / G_CHURN) * GROUP + G_STABLE + j % G_CHURN;
}

static uint64_t absent_key(size_t a)
{
	return (uint64_t)(a / G_ABSENT) * GROUP + G_STABLE + G_CHURN +
	       a % G_ABSENT;
}

enum key_kind { K_STABLE, K_CHURN, K_ABSENT };

static enum key_kind key_kind(uint64_t key, size_t *index)
{
	unsigned slot = (unsigned)(key % GROUP);
	uint64_t g = key / GROUP;

	*index = 0;
	if (key & FAR_BIT)
		return K_ABSENT;
	if (slot < G_STABLE) {
		*index = (size_t)(g * G_STABLE + slot);
		return K_STABLE;
	}
	if (slot < G_STABLE + G_CHURN) {
		*index = (size_t)(g * G_CHURN + slot - G_STABLE);
		return K_CHURN;
	}
	*index = (size_t)(g * G_ABSENT + slot - G_STABLE - G_CHURN);
	return K_ABSENT;
}

static const char *kind_name(enum key_kind k)
{
	return k == K_STABLE ? "stable" : k == K_CHURN ? "churn" : "absent";
}

/*
 * The weak hash: the 16 keys of a group share one full 64-bit hash, so
 * lookups must compare keys, every non-empty chain holds at least a group
 * (10 stable keys, up to 4 churn keys), and lookups for a group's absent
 * keys walk past all of them.
 */
static uint64_t weak_hash(const void *key, size_t len, uint64_t seed)
{
	uint64_t k;

	(void)len;
	memcpy(&k, key, sizeof(k));
	return tst_mix64((k / GROUP) ^ seed);
}

/* ---------------------------------------------------------------------- */
/* Objects, poison and quarantine                                          */

#define MAGIC_LIVE 0x4c4956454f424a31ull /* "LIVEOBJ1" */
#define MAGIC_POISON 0x6b6b6b6b6b6b6b6bull

struct tobj {
	uint64_t magic;
	uint64_t key;
	struct relhash_node node;
	struct relhash_head rcu;
	uint64_t serial;
};

static const struct relhash_params default_params = {
	.node_offset = offsetof(struct tobj, node),
	.key_offset = offsetof(struct tobj, key),
	.key_len = sizeof(uint64_t),
};

static const struct relhash_params weak_params = {
	.node_offset = offsetof(struct tobj, node),
	.key_offset = offsetof(struct tobj, key),
	.key_len = sizeof(uint64_t),
	.hashfn = weak_hash,
};

/*
 * Poisoned objects wait here before free(): while they are in the ring, a
 * reader that reaches one sees 0x6b bytes (not malloc's free-list links or a
 * reused object).  ASan builds have their own quarantine on top.
 */
#define QUARANTINE 65536u

static struct {
	pthread_mutex_t lock;
	struct tobj *ring[QUARANTINE];
	size_t next;
	uint64_t poisoned, freed;
} quar = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void poison_cb(struct relhash_head *head)
{
	struct tobj *o = (struct tobj *)(void *)((char *)head -
	                                          offsetof(struct tobj, rcu));
	struct tobj *victim;

	tst_poison(o, sizeof(*o));
	pthread_mutex_lock(&quar.lock);
	victim = quar.ring[quar.next];
	quar.ring[quar.next] = o;
	quar.next = (quar.next + 1) % QUARANTINE;
	quar.poisoned++;
	if (victim)
		quar.freed++;
	pthread_mutex_unlock(&quar.lock);
	free(victim);
}

static void quarantine_drain(void)
{
	size_t i;

	pthread_mutex_lock(&quar.lock);
	for (i = 0; i < QUARANTINE; i++) {
		if (quar.ring[i])
			quar.freed++;
		free(quar.ring[i]);
		quar.ring[i] = NULL;
	}
	quar.next = 0;
	pthread_mutex_unlock(&quar.lock);
}

static uint64_t obj_serial;

static struct tobj *obj_new(uint64_t key)
{
	struct tobj *o = calloc(1, sizeof(*o));

	ck_assert_msg(o != NULL, "out of memory");
	o->magic = MAGIC_LIVE;
	o->key = key;
	o->serial = __atomic_add_fetch(&obj_serial, 1, __ATOMIC_RELAXED);
	return o;
}

/* ---------------------------------------------------------------------- */
/* Run state                                                               */

struct reader_stats {
	uint64_t sections, lookups, stable, absent, churn, churn_hits;
	uint64_t misses, false_hits, poison, wrong;
	uint64_t walks, walked, walk_errors, walk_ns;
};

struct writer_stats {
	uint64_t ops, inserts, removes, replaces, stable_replaces;
	uint64_t eexist_checks, enoent_checks, errors;
};

struct resizer_stats {
	uint64_t calls, failures;
	uint64_t ns_total, ns_max;
};

struct torture {
	const struct torture_cfg *cfg;
	const struct relhash_params *lookup_params;
	struct relhash_table *t;
	uint64_t seed;
	uint64_t t0;                /* when the threads started */
	int stop;

	struct tobj **stable_model; /* by stable index; owner writes */
	uint32_t *stable_ver;       /* odd while its owner replaces it */
	struct tobj **churn_model;  /* by churn index; owner writes */
	size_t nabsent;             /* in-group absent keys */

	struct reader_stats rs[MAX_READERS];
	struct writer_stats ws[MAX_WRITERS];
	struct resizer_stats zs;
	unsigned writer_phase_flips[MAX_WRITERS];
};

struct worker {
	struct torture *T;
	unsigned id;
	pthread_t tid;
};

/* What the calling thread is doing, for the crash handler. */
struct cur_op {
	const char *role;
	unsigned id;
	const char *op;
	uint64_t key;
};

#define NO_KEY UINT64_MAX /* set_op() for operations without a key */

static __thread struct cur_op cur;
static struct torture *crash_T;

static void set_op(const char *op, uint64_t key)
{
	cur.op = op;
	cur.key = key;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* ---------------------------------------------------------------------- */
/* Crash handler: name what the crashing thread was doing                  */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TORTURE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TORTURE_SANITIZED 1
#endif
#endif

#ifndef TORTURE_SANITIZED
static void crash_handler(int sig, siginfo_t *si, void *uc)
{
	char buf[640], what[160];
	int n;
	size_t kidx = 0;
	enum key_kind k = key_kind(cur.key, &kidx);

	(void)uc;
	if (cur.op && strcmp(cur.op, "relhash_resize") == 0)
		snprintf(what, sizeof(what), "the resizer thread, during "
		         "relhash_resize to %llu buckets",
		         (unsigned long long)cur.key);
	else if (cur.role && cur.key == NO_KEY)
		snprintf(what, sizeof(what), "%s thread %u, during %s",
		         cur.role, cur.id, cur.op ? cur.op : "?");
	else if (cur.role)
		snprintf(what, sizeof(what), "%s thread %u, during %s of key "
		         "%llu (%s #%zu)", cur.role, cur.id,
		         cur.op ? cur.op : "?", (unsigned long long)cur.key,
		         kind_name(k), kidx);
	else
		snprintf(what, sizeof(what), "a thread of the library");
	n = snprintf(buf, sizeof(buf),
	             "\n*** resize-torture[%s] seed=%llu: %s after %.3f s in "
	             "%s (fault address %p): most likely it followed a link "
	             "into a poisoned (freed) node, 0x6b6b6b6b6b6b6b6b\n",
	             crash_T ? crash_T->cfg->name : "?",
	             crash_T ? (unsigned long long)crash_T->seed : 0ull,
	             sig == SIGSEGV ? "SIGSEGV" : "SIGBUS",
	             crash_T && crash_T->t0 ? tst_ms_since(crash_T->t0) / 1e3
	                                    : 0.0,
	             what, si->si_addr);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n < sizeof(buf)
		                                     ? (size_t)n : sizeof(buf) - 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * The library's own threads (callbacks, automatic resizing) run with every
 * signal blocked, so a crash there kills the process without this handler:
 * Check then reports only "Received signal 11".
 */
static void install_crash_handler(struct torture *T)
{
	struct sigaction sa;

	crash_T = T;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = crash_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}
#else
static void install_crash_handler(struct torture *T)
{
	crash_T = T; /* the sanitizer's own handler reports crashes */
}
#endif

/* ---------------------------------------------------------------------- */
/* Readers                                                                 */

static void *do_lookup(struct torture *T, uint64_t key, bool fast)
{
	if (!fast)
		return relhash_lookup(T->t, &key);
	/* Constant params: hashfn and the 8-byte compare are inlined. */
	if (T->cfg->weak_hash)
		return relhash_lookup_fast(T->t, &key, weak_params);
	return relhash_lookup_fast(T->t, &key, default_params);
}

#define MAX_PER_SECTION 24

struct found {
	struct tobj *o;
	uint64_t key;
	bool fast;
};

/* o was returned by a lookup of key: it must be a live object with that key. */
static bool check_live(struct torture *T, unsigned id, struct reader_stats *s,
                       const struct tobj *o, uint64_t key, bool fast,
                       const char *when)
{
	uint64_t magic = o->magic, okey = o->key;
	size_t kidx = 0;
	enum key_kind k = key_kind(key, &kidx);

	if (magic == MAGIC_LIVE && okey == key)
		return true;
	if (magic == MAGIC_POISON || okey == MAGIC_POISON) {
		s->poison++;
		tst_thread_fail(__FILE__, __LINE__,
		                "resize-torture[%s] seed=%llu: POISON: reader %u "
		                "%s: object %p for %s key %llu (#%zu), found by "
		                "%s, is poisoned (magic %#llx key %#llx): freed "
		                "while a reader could still reach it; table size "
		                "%zu", T->cfg->name, (unsigned long long)T->seed,
		                id, when, (const void *)o, kind_name(k),
		                (unsigned long long)key, kidx,
		                fast ? "relhash_lookup_fast" : "relhash_lookup",
		                (unsigned long long)magic,
		                (unsigned long long)okey, relhash_size(T->t));
	} else {
		s->wrong++;
		tst_thread_fail(__FILE__, __LINE__,
		                "resize-torture[%s] seed=%llu: WRONG OBJECT: "
		                "reader %u %s: lookup (%s) of %s key %llu (#%zu) "
		                "returned %p with magic %#llx key %llu",
		                T->cfg->name, (unsigned long long)T->seed, id,
		                when, fast ? "relhash_lookup_fast" : "relhash_lookup",
		                kind_name(k), (unsigned long long)key, kidx,
		                (const void *)o, (unsigned long long)magic,
		                (unsigned long long)okey);
	}
	return false;
}

/*
 * A full iteration, in one read-side section, while everything else goes
 * on.  Every object returned must be live, none twice; every stable key
 * whose owner did not replace it during the walk (its version was the same
 * even number before and after) must be returned exactly once, as the
 * model's object.  Keys replaced meanwhile may be returned any number of
 * times (each of their objects at most once), churn keys likewise.
 */
struct walker {
	uint32_t *ver0;
	struct tobj **got_s;    /* by stable index: first object returned */
	unsigned char *cnt_s;   /* times returned */
	struct tobj **last_c;   /* by churn index: last object returned */
	size_t n;               /* objects returned so far */
	size_t size0;           /* the table's size at the start */
};

#define WALK_FAIL(T, s, ...)                                          \
	do {                                                          \
		(s)->walk_errors++;                                   \
		tst_thread_fail(__FILE__, __LINE__, __VA_ARGS__);     \
	} while (0)

/* Reader 0's buffers for its walks. */
static void walker_init(struct walker *wk, const struct torture_cfg *cfg)
{
	wk->ver0 = calloc(cfg->nstable, sizeof(*wk->ver0));
	wk->got_s = calloc(cfg->nstable, sizeof(*wk->got_s));
	wk->cnt_s = calloc(cfg->nstable, 1);
	wk->last_c = calloc(cfg->nchurn, sizeof(*wk->last_c));
	TST_THREAD_CHECK(wk->ver0 && wk->got_s && wk->cnt_s && wk->last_c,
	                 "reader 0: out of memory");
}

static void walker_free(struct walker *wk)
{
	free(wk->ver0);
	free(wk->got_s);
	free(wk->cnt_s);
	free(wk->last_c);
}

/* The walk returned o: count it, and fail on a poisoned or foreign object
 * or one returned twice.  False: stop the walk (o's link is garbage too). */
static bool walk_object(struct torture *T, unsigned id, struct reader_stats *s,
                        struct walker *wk, struct tobj *o)
{
	const struct torture_cfg *cfg = T->cfg;
	uint64_t magic = o->magic, key = o->key;
	size_t idx = 0;
	enum key_kind k = key_kind(key, &idx);

	if (magic != MAGIC_LIVE) {
		if (magic == MAGIC_POISON)
			s->poison++;
		WALK_FAIL(T, s, "resize-torture[%s] seed=%llu: %s: "
		          "reader %u: iteration returned %p with magic "
		          "%#llx key %#llx (object #%zu of the walk); "
		          "table size %zu at the start",
		          cfg->name, (unsigned long long)T->seed,
		          magic == MAGIC_POISON ? "POISON" : "WRONG OBJECT",
		          id, (void *)o, (unsigned long long)magic,
		          (unsigned long long)key, wk->n, wk->size0);
		return false;
	}
	if (k == K_STABLE && idx < cfg->nstable) {
		if (wk->cnt_s[idx] == 0)
			wk->got_s[idx] = o;
		else if (wk->got_s[idx] == o)
			WALK_FAIL(T, s, "resize-torture[%s] seed=%llu: "
			          "reader %u: iteration returned stable "
			          "key %llu (#%zu) %u times (object %p "
			          "again); table size %zu at the start",
			          cfg->name, (unsigned long long)T->seed,
			          id, (unsigned long long)key, idx,
			          wk->cnt_s[idx] + 1u, (void *)o, wk->size0);
		if (wk->cnt_s[idx] < 255)
			wk->cnt_s[idx]++;
	} else if (k == K_CHURN && idx < cfg->nchurn) {
		if (wk->last_c[idx] == o)
			WALK_FAIL(T, s, "resize-torture[%s] seed=%llu: "
			          "reader %u: iteration returned churn "
			          "object %p (key %llu) twice; table size "
			          "%zu at the start", cfg->name,
			          (unsigned long long)T->seed, id,
			          (void *)o, (unsigned long long)key,
			          wk->size0);
		wk->last_c[idx] = o;
	} else {
		WALK_FAIL(T, s, "resize-torture[%s] seed=%llu: reader %u: "
		          "iteration returned never-inserted key %llu",
		          cfg->name, (unsigned long long)T->seed, id,
		          (unsigned long long)key);
	}
	return true;
}

/* After the walk, still in its section: every stable key not replaced
 * during the walk came back exactly once, as the model's object. */
static void walk_check_stable(struct torture *T, unsigned id,
                              struct reader_stats *s, struct walker *wk)
{
	const struct torture_cfg *cfg = T->cfg;
	size_t i;

	for (i = 0; i < cfg->nstable; i++) {
		/* The model first, then the version: if the version did not
		 * move, the model read is the object of the whole walk (a
		 * replace begun after our version read would otherwise put a
		 * newer object in the model). */
		struct tobj *model = __atomic_load_n(&T->stable_model[i],
		                                     __ATOMIC_ACQUIRE);
		uint32_t v1 = tst_load(&T->stable_ver[i]);

		if (v1 != wk->ver0[i] || (v1 & 1))
			continue; /* replaced during the walk */
		if (wk->cnt_s[i] != 1 || wk->got_s[i] != model) {
			WALK_FAIL(T, s, "resize-torture[%s] seed=%llu: reader %u: "
			          "an iteration during which stable key %llu "
			          "(#%zu) stayed in the table returned it %u "
			          "time(s)%s (table size %zu at the start, %zu "
			          "at the end; %zu objects returned)", cfg->name,
			          (unsigned long long)T->seed, id,
			          (unsigned long long)stable_key(i), i,
			          wk->cnt_s[i],
			          wk->cnt_s[i] == 1 ? ", not as the model's "
			                              "object" : "",
			          wk->size0, relhash_size(T->t), wk->n);
			break;
		}
	}
}

static void reader_walk(struct torture *T, unsigned id, struct reader_stats *s,
                        struct walker *wk)
{
	const struct torture_cfg *cfg = T->cfg;
	struct relhash_iter it;
	struct tobj *o;
	size_t i;

	memset(wk->cnt_s, 0, cfg->nstable);
	memset(wk->last_c, 0, cfg->nchurn * sizeof(*wk->last_c));
	wk->n = 0;
	relhash_read_lock();
	wk->size0 = relhash_size(T->t);
	for (i = 0; i < cfg->nstable; i++)
		wk->ver0[i] = tst_load(&T->stable_ver[i]);
	set_op("iteration", NO_KEY);
	for (o = relhash_iter_first(T->t, &it); o; o = relhash_iter_next(&it)) {
		wk->n++;
		if (!walk_object(T, id, s, wk, o))
			break;
	}
	walk_check_stable(T, id, s, wk);
	relhash_read_unlock();
	s->walks++;
	s->walked += wk->n;
}

/* Walk when it is time: a walk holds grace periods (and so resizes) up, so
 * walk at most 10 % of the time, every 20 ms at most. */
static void reader_walk_when_due(struct torture *T, unsigned id,
                                 struct reader_stats *s, struct walker *wk,
                                 uint64_t *next_walk)
{
	uint64_t t0, d;

	if (!wk->last_c || tst_now_ns() < *next_walk)
		return;
	t0 = tst_now_ns();
	reader_walk(T, id, s, wk);
	d = tst_now_ns() - t0;
	s->walk_ns += d;
	*next_walk = tst_now_ns() + (9 * d > 20000000u ? 9 * d : 20000000u);
}

static const char *lookup_name(bool fast)
{
	return fast ? "relhash_lookup_fast" : "relhash_lookup";
}

/* A stable key (r picks it): a miss fails the test. */
static struct tobj *lookup_stable(struct torture *T, unsigned id,
                                  struct reader_stats *s, uint64_t r,
                                  bool fast, uint64_t *keyp)
{
	uint64_t key = stable_key(r % T->cfg->nstable);
	struct tobj *o;

	*keyp = key;
	set_op("stable lookup", key);
	o = do_lookup(T, key, fast);
	s->stable++;
	if (!o) {
		/* Look again, to tell a transient miss from a lost node. */
		void *again = do_lookup(T, key, !fast);

		s->misses++;
		tst_thread_fail(__FILE__, __LINE__,
		                "resize-torture[%s] seed=%llu: MISS: reader %u: "
		                "%s of stable key %llu (#%llu) returned NULL (a "
		                "second lookup in the same section: %s); table "
		                "size %zu, count %zu", T->cfg->name,
		                (unsigned long long)T->seed, id,
		                lookup_name(fast), (unsigned long long)key,
		                (unsigned long long)(r % T->cfg->nstable),
		                again ? "found it" : "NULL too",
		                relhash_size(T->t), relhash_count(T->t));
	}
	return o;
}

/* A never-inserted key, in a group or far from all (r picks it): a hit
 * fails the test.  Returns NULL either way. */
static struct tobj *lookup_absent(struct torture *T, unsigned id,
                                  struct reader_stats *s, uint64_t r,
                                  bool fast, uint64_t *keyp)
{
	uint64_t key = (r & 1) ? absent_key((r >> 1) % T->nabsent)
	                       : FAR_BIT | (r >> 2);
	struct tobj *o;

	*keyp = key;
	set_op("absent lookup", key);
	o = do_lookup(T, key, fast);
	s->absent++;
	if (o) {
		s->false_hits++;
		tst_thread_fail(__FILE__, __LINE__,
		                "resize-torture[%s] seed=%llu: FALSE HIT: reader "
		                "%u: %s of never-inserted key %llu returned %p "
		                "(magic %#llx, key %llu)", T->cfg->name,
		                (unsigned long long)T->seed, id,
		                lookup_name(fast), (unsigned long long)key,
		                (void *)o, (unsigned long long)o->magic,
		                (unsigned long long)o->key);
	}
	return NULL;
}

/* A churn key (r picks it): present or not, as its writer decides. */
static struct tobj *lookup_churn(struct torture *T, struct reader_stats *s,
                                 uint64_t r, bool fast, uint64_t *keyp)
{
	uint64_t key = churn_key(r % T->cfg->nchurn);
	struct tobj *o;

	*keyp = key;
	set_op("churn lookup", key);
	o = do_lookup(T, key, fast);
	s->churn++;
	if (o)
		s->churn_hits++;
	return o;
}

/* One read-side section: up to MAX_PER_SECTION lookups (60 % stable, 25 %
 * absent, 15 % churn keys), each object found checked at once and again at
 * the end of the section. */
static void reader_section(struct torture *T, unsigned id,
                           struct reader_stats *s, uint64_t *rng, bool *fast)
{
	unsigned nlook = 1 + (unsigned)(tst_rand(rng) % MAX_PER_SECTION);
	struct found seen[MAX_PER_SECTION];
	unsigned nseen = 0, i;

	relhash_read_lock();
	for (i = 0; i < nlook; i++) {
		uint64_t r = tst_rand(rng), key;
		unsigned what = (unsigned)(r % 100);
		struct tobj *o;

		r >>= 8;
		*fast = !*fast;
		if (what < 60)
			o = lookup_stable(T, id, s, r, *fast, &key);
		else if (what < 85)
			o = lookup_absent(T, id, s, r, *fast, &key);
		else
			o = lookup_churn(T, s, r, *fast, &key);
		s->lookups++;
		if (o && check_live(T, id, s, o, key, *fast,
		                    "right after the lookup"))
			seen[nseen++] = (struct found){ o, key, *fast };
	}
	/* Now and then stay in the section a little longer: objects
	 * removed meanwhile must not be freed before we leave. */
	if ((tst_rand(rng) & 15) == 0)
		for (volatile unsigned spin = 0; spin < 2000; spin++)
			;
	set_op("end-of-section re-check", NO_KEY);
	for (i = 0; i < nseen; i++)
		check_live(T, id, s, seen[i].o, seen[i].key, seen[i].fast,
		           "at the end of its section");
	relhash_read_unlock();
	s->sections++;
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct torture *T = w->T;
	struct reader_stats *s = &T->rs[w->id];
	uint64_t rng = tst_mix64(T->seed + 0x1000 + w->id) | 1;
	bool fast = false;
	struct walker wk = { 0 };
	uint64_t next_walk = tst_now_ns();

	cur.role = "reader";
	cur.id = w->id;
	relhash_thread_register();
	if (w->id == 0) /* reader 0 also iterates over the whole table */
		walker_init(&wk, T->cfg);
	while (!tst_load(&T->stop)) {
		reader_walk_when_due(T, w->id, s, &wk, &next_walk);
		reader_section(T, w->id, s, &rng, &fast);
	}
	set_op("exit", NO_KEY);
	walker_free(&wk);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Writers                                                                 */

#define WFAIL(T, w, ...)                                                      \
	do {                                                                  \
		(T)->ws[(w)->id].errors++;                                    \
		tst_thread_fail(__FILE__, __LINE__, __VA_ARGS__);             \
	} while (0)

/* The writer's own key: a lookup must return exactly the model's object. */
static void writer_check_own(struct torture *T, struct worker *w, uint64_t key,
                             const struct tobj *expect, const char *after)
{
	struct tobj *got;

	relhash_read_lock();
	got = do_lookup(T, key, (key & 1) != 0);
	if (got != expect)
		WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: after %s "
		      "of its own key %llu, lookup returned %p (magic %#llx), "
		      "expected %p; table size %zu", T->cfg->name,
		      (unsigned long long)T->seed, w->id, after,
		      (unsigned long long)key, (void *)got,
		      got ? (unsigned long long)got->magic : 0ull,
		      (const void *)expect, relhash_size(T->t));
	relhash_read_unlock();
}

static void retire(struct tobj *o)
{
	relhash_call(&o->rcu, poison_cb);
}

/* Replace stable key i (owned by w) with a fresh object. */
static void writer_replace_stable(struct torture *T, struct worker *w, size_t i)
{
	struct tobj *old = T->stable_model[i], *o = obj_new(old->key);
	int ret;

	set_op("replace (stable)", old->key);
	tst_inc(&T->stable_ver[i]); /* odd: the walker does not check i */
	ret = relhash_replace(T->t, &old->node, &o->node);
	if (ret == 0)
		/* Release: a walker that sees o also sees the odd version. */
		__atomic_store_n(&T->stable_model[i], o, __ATOMIC_RELEASE);
	tst_inc(&T->stable_ver[i]);
	if (ret != 0) {
		WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
		      "relhash_replace of stable key %llu (#%zu) returned %d, "
		      "expected 0", T->cfg->name, (unsigned long long)T->seed,
		      w->id, (unsigned long long)old->key, i, ret);
		free(o);
		return;
	}
	retire(old);
	T->ws[w->id].stable_replaces++;
	if ((o->serial & 7) == 0)
		writer_check_own(T, w, o->key, o, "relhash_replace");
}

/* Insert churn key j, absent in the model.  Sometimes first exercise the
 * error paths with a node that was inserted and removed again. */
static void writer_insert(struct torture *T, struct worker *w, size_t j,
                          bool probe_errors)
{
	uint64_t key = churn_key(j);
	struct writer_stats *s = &T->ws[w->id];
	struct tobj *o = obj_new(key);
	int ret;

	if (probe_errors) {
		struct tobj *o2;

		set_op("insert+remove (error probe)", key);
		ret = relhash_insert(T->t, &o->node);
		if (ret != 0)
			WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
			      "relhash_insert of absent churn key %llu (#%zu) "
			      "returned %d, expected 0", T->cfg->name,
			      (unsigned long long)T->seed, w->id,
			      (unsigned long long)key, j, ret);
		ret = relhash_remove(T->t, &o->node);
		if (ret != 0)
			WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
			      "relhash_remove of just-inserted churn key %llu "
			      "(#%zu) returned %d, expected 0", T->cfg->name,
			      (unsigned long long)T->seed, w->id,
			      (unsigned long long)key, j, ret);
		/* o is out of the table now but not yet retired. */
		set_op("remove of a removed node", key);
		ret = relhash_remove(T->t, &o->node);
		if (ret != -ENOENT)
			WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
			      "relhash_remove of an already removed node (churn "
			      "key %llu, #%zu) returned %d, expected -ENOENT",
			      T->cfg->name, (unsigned long long)T->seed, w->id,
			      (unsigned long long)key, j, ret);
		o2 = obj_new(key);
		set_op("replace of a removed node", key);
		ret = relhash_replace(T->t, &o->node, &o2->node);
		if (ret != -ENOENT)
			WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
			      "relhash_replace of an already removed node (churn "
			      "key %llu, #%zu) returned %d, expected -ENOENT",
			      T->cfg->name, (unsigned long long)T->seed, w->id,
			      (unsigned long long)key, j, ret);
		writer_check_own(T, w, key, NULL, "insert+remove");
		/* o2 was never reachable; o was, until the remove. */
		if (ret == 0) {
			/* The library took o2: keep the model right. */
			T->churn_model[j] = o2;
			retire(o);
			return;
		}
		free(o2);
		retire(o);
		s->enoent_checks += 2;
		o = obj_new(key);
	}
	set_op("insert", key);
	ret = relhash_insert(T->t, &o->node);
	if (ret != 0) {
		WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
		      "relhash_insert of churn key %llu (#%zu), absent in the "
		      "model, returned %d, expected 0%s", T->cfg->name,
		      (unsigned long long)T->seed, w->id,
		      (unsigned long long)key, j, ret,
		      ret == -EEXIST ? " (-EEXIST: a removed node is still "
		                       "reachable, or a duplicate was found)"
		                     : "");
		free(o);
		return;
	}
	T->churn_model[j] = o;
	s->inserts++;
	if ((o->serial & 7) == 0)
		writer_check_own(T, w, key, o, "relhash_insert");
}

static void writer_remove(struct torture *T, struct worker *w, size_t j)
{
	struct tobj *o = T->churn_model[j];
	int ret;

	set_op("remove", o->key);
	ret = relhash_remove(T->t, &o->node);
	if (ret != 0) {
		WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
		      "relhash_remove of churn key %llu (#%zu), present in the "
		      "model, returned %d, expected 0", T->cfg->name,
		      (unsigned long long)T->seed, w->id,
		      (unsigned long long)o->key, j, ret);
		return;
	}
	T->churn_model[j] = NULL;
	T->ws[w->id].removes++;
	if ((o->serial & 7) == 0)
		writer_check_own(T, w, o->key, NULL, "relhash_remove");
	retire(o);
}

static void writer_replace(struct torture *T, struct worker *w, size_t j)
{
	struct tobj *old = T->churn_model[j], *o = obj_new(old->key);
	int ret;

	set_op("replace (churn)", old->key);
	ret = relhash_replace(T->t, &old->node, &o->node);
	if (ret != 0) {
		WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
		      "relhash_replace of churn key %llu (#%zu) returned %d, "
		      "expected 0", T->cfg->name, (unsigned long long)T->seed,
		      w->id, (unsigned long long)old->key, j, ret);
		free(o);
		return;
	}
	T->churn_model[j] = o;
	T->ws[w->id].replaces++;
	if ((o->serial & 7) == 0)
		writer_check_own(T, w, o->key, o, "relhash_replace");
	retire(old);
}

/* Insert a duplicate of present churn key j: must be -EEXIST. */
static void writer_dup(struct torture *T, struct worker *w, size_t j)
{
	uint64_t key = churn_key(j);
	struct tobj *o = obj_new(key);
	int ret;

	set_op("duplicate insert", key);
	ret = relhash_insert(T->t, &o->node);
	if (ret != -EEXIST) {
		WFAIL(T, w, "resize-torture[%s] seed=%llu: writer %u: "
		      "relhash_insert of a duplicate of present churn key %llu "
		      "(#%zu) returned %d, expected -EEXIST", T->cfg->name,
		      (unsigned long long)T->seed, w->id,
		      (unsigned long long)key, j, ret);
		if (ret == 0) {
			/* Two objects with one key: take ours out again. */
			if (relhash_remove(T->t, &o->node) == 0)
				retire(o);
			return; /* leaked if not removable: already failed */
		}
	}
	free(o); /* never reachable: free at once */
	T->ws[w->id].eexist_checks++;
}

/* One random operation on churn key j (owned by w). */
static void writer_churn_op(struct torture *T, struct worker *w, size_t j,
                            uint64_t r)
{
	if (!T->churn_model[j]) {
		writer_insert(T, w, j, (r & 15) == 0);
		return;
	}
	switch (r & 15) {
	case 0:
		writer_dup(T, w, j);
		break;
	case 1: case 2: case 3: case 4: case 5: case 6: case 7:
		writer_remove(T, w, j);
		break;
	default:
		writer_replace(T, w, j);
		break;
	}
}

/*
 * The keys a writer owns: the churn and stable keys whose index is its id
 * mod the number of writers, so that with the weak hash every writer works
 * in every chain.
 */
struct own_keys {
	size_t *churn, *stable;
	size_t nchurn, nstable;
};

static bool own_keys_init(struct torture *T, struct worker *w,
                          struct own_keys *own)
{
	const struct torture_cfg *cfg = T->cfg;
	unsigned n = cfg->nwriters;
	size_t j;

	own->nchurn = own->nstable = 0;
	own->churn = malloc((cfg->nchurn / n + 1) * sizeof(*own->churn));
	own->stable = malloc((cfg->nstable / n + 1) * sizeof(*own->stable));
	if (!own->churn || !own->stable) {
		WFAIL(T, w, "writer %u: out of memory", w->id);
		free(own->churn);
		free(own->stable);
		return false;
	}
	for (j = w->id; j < cfg->nchurn; j += n)
		own->churn[own->nchurn++] = j;
	for (j = w->id; j < cfg->nstable; j += n)
		own->stable[own->nstable++] = j;
	return true;
}

/* Random operations on random own keys, until the end. */
static void writer_random(struct torture *T, struct worker *w,
                          const struct own_keys *own, uint64_t *rng)
{
	struct writer_stats *s = &T->ws[w->id];

	while (!tst_load(&T->stop)) {
		uint64_t r = tst_rand(rng);

		if ((r & 7) == 0 && own->nstable)
			writer_replace_stable(T, w,
			                      own->stable[(r >> 8) % own->nstable]);
		else if (own->nchurn)
			writer_churn_op(T, w, own->churn[(r >> 8) % own->nchurn],
			                r >> 40);
		s->ops++;
	}
}

/* Fisher-Yates. */
static void shuffle(size_t *a, size_t n, uint64_t *rng)
{
	size_t k;

	for (k = n; k > 1; k--) {
		size_t x = (size_t)(tst_rand(rng) % k), tmp;

		tmp = a[k - 1];
		a[k - 1] = a[x];
		a[x] = tmp;
	}
}

/* One sweep over the own churn keys: insert the absent ones (grow) or
 * remove the present ones (!grow), replacing some on the way. */
static void writer_sweep(struct torture *T, struct worker *w,
                         const struct own_keys *own, uint64_t *rng, bool grow)
{
	struct writer_stats *s = &T->ws[w->id];
	size_t k, j;

	for (k = 0; k < own->nchurn && !tst_load(&T->stop); k++) {
		uint64_t r = tst_rand(rng);

		j = own->churn[k];
		if (grow && !T->churn_model[j])
			writer_insert(T, w, j, (r & 31) == 0);
		else if (!grow && T->churn_model[j])
			writer_remove(T, w, j);
		else if (T->churn_model[j] && (r & 1))
			writer_replace(T, w, j);
		if ((r & 63) == 1 && own->nstable)
			writer_replace_stable(T, w,
			                      own->stable[(r >> 8) % own->nstable]);
		s->ops++;
	}
}

/* 60 ms of population-neutral operations, so that the library's resize
 * thread catches up. */
static void writer_dwell(struct torture *T, struct worker *w,
                         const struct own_keys *own, uint64_t *rng)
{
	struct writer_stats *s = &T->ws[w->id];
	struct tst_deadline dwell = tst_deadline_ms(60);

	while (!tst_expired(&dwell) && !tst_load(&T->stop)) {
		uint64_t r = tst_rand(rng);
		size_t j = own->nchurn ? own->churn[(r >> 8) % own->nchurn] : 0;

		if (own->nchurn && T->churn_model[j]) {
			if (r & 1)
				writer_replace(T, w, j);
			else
				writer_dup(T, w, j);
		}
		if (own->nstable)
			writer_replace_stable(T, w,
			                      own->stable[(r >> 24) % own->nstable]);
		s->ops++;
		if ((s->ops & 31) == 0)
			tst_sleep_us(200);
	}
}

/*
 * Waves, for automatic resizing: sweep every own churn key in (reshuffled)
 * order, inserting the absent ones (growing), then sweep again removing the
 * present ones (shrinking); dwell between sweeps.
 */
static void writer_waves(struct torture *T, struct worker *w,
                         const struct own_keys *own, uint64_t *rng)
{
	bool grow = true;

	while (!tst_load(&T->stop)) {
		shuffle(own->churn, own->nchurn, rng);
		writer_sweep(T, w, own, rng, grow);
		T->writer_phase_flips[w->id]++;
		grow = !grow;
		writer_dwell(T, w, own, rng);
	}
}

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct torture *T = w->T;
	uint64_t rng = tst_mix64(T->seed + 0x2000 + w->id) | 1;
	struct own_keys own;

	cur.role = "writer";
	cur.id = w->id;
	relhash_thread_register();
	if (!own_keys_init(T, w, &own))
		return NULL;
	if (T->cfg->auto_resize)
		writer_waves(T, w, &own, &rng);
	else
		writer_random(T, w, &own, &rng);
	free(own.churn);
	free(own.stable);
	set_op("exit", NO_KEY);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Resizer                                                                 */

static void *resizer_main(void *arg)
{
	struct worker *w = arg;
	struct torture *T = w->T;
	const struct torture_cfg *cfg = T->cfg;
	struct resizer_stats *s = &T->zs;
	size_t i = 0;

	cur.role = "resizer";
	relhash_thread_register();
	while (!tst_load(&T->stop)) {
		size_t size = cfg->sizes[i++ % cfg->nsizes], now;
		uint64_t t0 = tst_now_ns(), dt;
		int ret;

		set_op("relhash_resize", size);
		ret = relhash_resize(T->t, size);
		dt = tst_now_ns() - t0;
		tst_inc(&s->calls); /* the test thread watches it */
		s->ns_total += dt;
		if (dt > s->ns_max)
			s->ns_max = dt;
		now = relhash_size(T->t);
		if (ret != 0 || now != size) {
			s->failures++;
			tst_thread_fail(__FILE__, __LINE__,
			                "resize-torture[%s] seed=%llu: "
			                "relhash_resize(%zu) returned %d, then "
			                "relhash_size() = %zu", cfg->name,
			                (unsigned long long)T->seed, size, ret,
			                now);
		}
	}
	set_op("exit", NO_KEY);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Final verification                                                      */

struct verify {
	unsigned failures;
	char first[4][400];
};

static __attribute__((format(printf, 2, 3))) void
vfail(struct verify *v, const char *fmt, ...)
{
	va_list ap;

	if (v->failures < 4) {
		va_start(ap, fmt);
		vsnprintf(v->first[v->failures], sizeof(v->first[0]), fmt, ap);
		va_end(ap);
	}
	v->failures++;
}

/* Objects in the model: every stable key and the present churn keys. */
static size_t model_population(const struct torture *T)
{
	size_t i, n = T->cfg->nstable;

	for (i = 0; i < T->cfg->nchurn; i++)
		if (T->churn_model[i])
			n++;
	return n;
}

/* In a read-side section: a lookup of every key returns the model's
 * object, and of every never-inserted key NULL. */
static void verify_lookups(struct torture *T, struct verify *v)
{
	const struct torture_cfg *cfg = T->cfg;
	struct tobj *o;
	size_t i;

	for (i = 0; i < cfg->nstable; i++) {
		uint64_t key = stable_key(i);

		set_op("final lookup", key);
		o = do_lookup(T, key, i & 1);
		if (o != T->stable_model[i])
			vfail(v, "stable key %llu (#%zu): lookup returned %p, "
			      "model has %p", (unsigned long long)key, i,
			      (void *)o, (void *)T->stable_model[i]);
	}
	for (i = 0; i < cfg->nchurn; i++) {
		uint64_t key = churn_key(i);

		set_op("final lookup", key);
		o = do_lookup(T, key, i & 1);
		if (o != T->churn_model[i])
			vfail(v, "churn key %llu (#%zu): lookup returned %p, "
			      "model has %p (%s)", (unsigned long long)key, i,
			      (void *)o, (void *)T->churn_model[i],
			      T->churn_model[i] ? "present" : "absent");
	}
	for (i = 0; i < T->nabsent; i++) {
		uint64_t key = absent_key(i);

		set_op("final lookup", key);
		o = do_lookup(T, key, i & 1);
		if (o)
			vfail(v, "never-inserted key %llu: lookup returned %p",
			      (unsigned long long)key, (void *)o);
	}
}

/* The final iteration returned o, of key kind k: it must be model's
 * object, returned for the first time (seen counts the returns). */
static void verify_in_model(struct verify *v, const struct tobj *o,
                            enum key_kind k, struct tobj *const *model,
                            unsigned char *seen, size_t idx)
{
	if (o != model[idx])
		vfail(v, "iteration returned %p for %s key %llu, model has %p",
		      (const void *)o, kind_name(k), (unsigned long long)o->key,
		      (void *)model[idx]);
	else if (seen[idx]++)
		vfail(v, "iteration returned %s key %llu twice", kind_name(k),
		      (unsigned long long)o->key);
}

/* The final iteration returned o: it must be the model's object for its
 * key, returned for the first time (seen_s, seen_c count the returns). */
static void verify_iterated(struct torture *T, struct verify *v,
                            const struct tobj *o, unsigned char *seen_s,
                            unsigned char *seen_c)
{
	size_t idx = 0;
	enum key_kind k;

	if (o->magic != MAGIC_LIVE) {
		vfail(v, "iteration returned %p with magic %#llx (poisoned or "
		      "garbage)", (const void *)o, (unsigned long long)o->magic);
		return;
	}
	k = key_kind(o->key, &idx);
	if (k == K_STABLE && idx < T->cfg->nstable) {
		verify_in_model(v, o, k, T->stable_model, seen_s, idx);
	} else if (k == K_CHURN && idx < T->cfg->nchurn) {
		verify_in_model(v, o, k, T->churn_model, seen_c, idx);
	} else {
		vfail(v, "iteration returned key %llu, never inserted",
		      (unsigned long long)o->key);
	}
}

/* After the threads: the table equals the model (lookups of every key,
 * one iteration that returns every object of the model exactly once,
 * relhash_count()).  Returns the model's population. */
static size_t verify_final(struct torture *T, struct verify *v)
{
	const struct torture_cfg *cfg = T->cfg;
	struct relhash_iter it;
	unsigned char *seen_s = calloc(cfg->nstable, 1);
	unsigned char *seen_c = calloc(cfg->nchurn, 1);
	size_t i, expect = model_population(T), got, iterated = 0;
	struct tobj *o;

	ck_assert(seen_s && seen_c);
	relhash_read_lock();
	verify_lookups(T, v);
	set_op("final iteration", NO_KEY);
	for (o = relhash_iter_first(T->t, &it); o; o = relhash_iter_next(&it)) {
		iterated++;
		verify_iterated(T, v, o, seen_s, seen_c);
	}
	relhash_read_unlock();
	for (i = 0; i < cfg->nstable; i++)
		if (!seen_s[i])
			vfail(v, "iteration did not return stable key %llu",
			      (unsigned long long)stable_key(i));
	for (i = 0; i < cfg->nchurn; i++)
		if (T->churn_model[i] && !seen_c[i])
			vfail(v, "iteration did not return present churn key "
			      "%llu", (unsigned long long)churn_key(i));
	if (iterated != expect)
		vfail(v, "iteration returned %zu objects, the model has %zu",
		      iterated, expect);
	got = relhash_count(T->t);
	if (got != expect)
		vfail(v, "relhash_count() = %zu, the model has %zu", got, expect);
	free(seen_s);
	free(seen_c);
	return expect;
}

static void free_obj(void *obj, void *arg)
{
	struct tobj *o = obj;

	if (o->magic != MAGIC_LIVE)
		(*(uint64_t *)arg) |= 1ull << 63; /* flagged below */
	(*(uint64_t *)arg)++;
	free(o);
}

/* ---------------------------------------------------------------------- */
/* The engine                                                              */

static uint64_t torture_seed(void)
{
	const char *s = getenv("RELHASH_TORTURE_SEED");

	if (s && *s)
		return strtoull(s, NULL, 0);
	return tst_mix64((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
	                 tst_now_ns());
}

/* The case's settings, with thread counts from the environment; and what
 * the library reads from the environment at its first use. */
static void torture_configure(struct torture_cfg *cfg)
{
	cfg->nreaders = tst_env_unsigned("RELHASH_TORTURE_READERS",
	                                 cfg->nreaders);
	cfg->nwriters = tst_env_unsigned("RELHASH_TORTURE_WRITERS",
	                                 cfg->nwriters);
	ck_assert(cfg->nreaders >= 1 && cfg->nreaders <= MAX_READERS);
	ck_assert(cfg->nwriters >= 1 && cfg->nwriters <= MAX_WRITERS);

	/* Before the library's first use in this (forked) process.  Race
	 * widening: random yields in the resize steps and at the start of
	 * updates and lookups, in --enable-debug builds only
	 * (src/base/debug.c); RELHASH_DEBUG_YIELD=0 in the environment turns
	 * them off. */
	setenv("RELHASH_DEBUG_YIELD", "1", 0);
	if (cfg->no_membarrier)
		setenv("RELHASH_NO_MEMBARRIER", "1", 1);
}

/* The run's state and its (empty) table. */
static struct torture *torture_new(const struct torture_cfg *cfg)
{
	struct torture *T = calloc(1, sizeof(*T));
	struct relhash_epoch_stats es = { .size = sizeof(es) };
	struct relhash_params p;

	ck_assert(T != NULL);
	T->cfg = cfg;
	T->seed = torture_seed();
	T->lookup_params = cfg->weak_hash ? &weak_params : &default_params;
	tst_reset_thread_failures();
	install_crash_handler(T);

	relhash_epoch_stats(&es);
	if (cfg->no_membarrier && es.uses_membarrier) {
		/* Only possible with CK_FORK=no, after an earlier case. */
		printf("resize-torture[%s]: note: the library was already "
		       "initialised with membarrier (CK_FORK=no?); running "
		       "the case with membarrier\n", cfg->name);
	}

	p = *T->lookup_params;
	p.seed = tst_mix64(T->seed) | 1;
	p.initial_size = cfg->initial_size;
	p.min_size = cfg->min_size;
	p.max_size = cfg->max_size;
	p.flags = cfg->auto_resize ? RELHASH_AUTO_RESIZE : 0;
	T->t = relhash_create(&p);
	ck_assert_msg(T->t != NULL, "relhash_create failed: %s",
	              strerror(errno));
	return T;
}

static void insert_initial(struct torture *T, struct tobj *o,
                           const char *kind)
{
	int ret = relhash_insert(T->t, &o->node);

	ck_assert_msg(ret == 0, "[%s] seed=%llu: initial insert of %s key %llu "
	              "returned %d", T->cfg->name, (unsigned long long)T->seed,
	              kind, (unsigned long long)o->key, ret);
}

/* Every stable key, and churn keys with probability churn_fill. */
static void torture_populate(struct torture *T)
{
	const struct torture_cfg *cfg = T->cfg;
	uint64_t rng = tst_mix64(T->seed + 7) | 1;
	size_t j;

	/* Absent keys live in every group that holds an inserted key. */
	j = cfg->nstable / G_STABLE;
	if (cfg->nchurn / G_CHURN > j)
		j = cfg->nchurn / G_CHURN;
	T->nabsent = (j + 1) * G_ABSENT;

	T->stable_model = calloc(cfg->nstable, sizeof(*T->stable_model));
	T->stable_ver = calloc(cfg->nstable, sizeof(*T->stable_ver));
	T->churn_model = calloc(cfg->nchurn, sizeof(*T->churn_model));
	ck_assert(T->stable_model && T->stable_ver && T->churn_model);
	for (j = 0; j < cfg->nstable; j++) {
		T->stable_model[j] = obj_new(stable_key(j));
		insert_initial(T, T->stable_model[j], "stable");
	}
	for (j = 0; j < cfg->nchurn; j++) {
		if ((double)(tst_rand(&rng) >> 11) / 9007199254740992.0 >=
		    cfg->churn_fill)
			continue;
		T->churn_model[j] = obj_new(churn_key(j));
		insert_initial(T, T->churn_model[j], "churn");
	}
}

/* The threads of a run. */
struct crew {
	struct worker readers[MAX_READERS], writers[MAX_WRITERS], resizer;
};

static void crew_start(struct torture *T, struct crew *c)
{
	const struct torture_cfg *cfg = T->cfg;
	unsigned i;

	for (i = 0; i < cfg->nreaders; i++) {
		c->readers[i] = (struct worker){ .T = T, .id = i };
		tst_thread_start(&c->readers[i].tid, reader_main, &c->readers[i]);
	}
	for (i = 0; i < cfg->nwriters; i++) {
		c->writers[i] = (struct worker){ .T = T, .id = i };
		tst_thread_start(&c->writers[i].tid, writer_main, &c->writers[i]);
	}
	if (cfg->sizes) {
		c->resizer = (struct worker){ .T = T, .id = 0 };
		tst_thread_start(&c->resizer.tid, resizer_main, &c->resizer);
	}
}

static void crew_stop(struct torture *T, struct crew *c)
{
	const struct torture_cfg *cfg = T->cfg;
	unsigned i;

	tst_store(&T->stop, 1);
	for (i = 0; i < cfg->nreaders; i++)
		TST_JOIN(c->readers[i].tid, 60000, "[%s] seed=%llu: reader %u "
		         "did not stop within 60 s", cfg->name,
		         (unsigned long long)T->seed, i);
	for (i = 0; i < cfg->nwriters; i++)
		TST_JOIN(c->writers[i].tid, 60000, "[%s] seed=%llu: writer %u "
		         "did not stop within 60 s", cfg->name,
		         (unsigned long long)T->seed, i);
	if (cfg->sizes)
		TST_JOIN(c->resizer.tid, 120000, "[%s] seed=%llu: the resizer "
		         "did not stop within 120 s (a resize hangs?)",
		         cfg->name, (unsigned long long)T->seed);
}

/* The table sizes the test thread saw while the threads ran. */
struct size_watch {
	size_t min, max, changes, last;
};

static void size_watch_init(struct size_watch *sw, struct torture *T)
{
	sw->min = sw->max = sw->last = relhash_size(T->t);
	sw->changes = 0;
}

/*
 * How long a case that must see a resize complete may run past
 * RELHASH_TORTURE_MS waiting for one.  The final checks claim that resizes
 * complete, not how fast: on a loaded machine (a debug build, sanitizers,
 * an emulator, more threads than CPUs) the first one can take longer than
 * a short run.  A resize that never completes still fails, at this cap.
 */
#define PROGRESS_CAP_MS 30000u

/* Whether the case has seen the resize its final checks require: one
 * completed relhash_resize() call, or one the library's thread did. */
static bool resize_progress_seen(const struct torture *T,
                                 const struct relhash_table_stats *ts0)
{
	struct relhash_table_stats ts = { .size = sizeof(ts) };

	if (!T->cfg->sizes && !T->cfg->auto_resize)
		return true;
	if (T->cfg->sizes && tst_load(&T->zs.calls) < 1)
		return false;
	relhash_table_stats(T->t, &ts);
	return ts.resizes > ts0->resizes;
}

/* Watch the size every 5 ms for ms milliseconds, and then until the case's
 * resize progress is seen (at most PROGRESS_CAP_MS), or until a worker
 * fails. */
static void size_watch_run(struct size_watch *sw, struct torture *T,
                           unsigned ms,
                           const struct relhash_table_stats *ts0)
{
	struct tst_deadline d = tst_deadline_ms(ms);
	struct tst_deadline cap = tst_deadline_ms(ms + PROGRESS_CAP_MS);

	while (!tst_expired(&d) ||
	       (!resize_progress_seen(T, ts0) && !tst_expired(&cap))) {
		size_t now;

		tst_sleep_ms(5);
		now = relhash_size(T->t);
		if (now != sw->last)
			sw->changes++;
		sw->last = now;
		if (now < sw->min)
			sw->min = now;
		if (now > sw->max)
			sw->max = now;
		/* Stop early once a worker has failed. */
		if (tst_load(&tst_failures.count))
			break;
	}
}

/* What a run measured, for its summary line and its final checks. */
struct outcome {
	struct reader_stats rsum;
	struct writer_stats wsum;
	struct relhash_table_stats ts0, ts;
	struct relhash_epoch_stats es0, es;
	struct size_watch sizes;
	double secs;
	struct verify v;
	size_t expect; /* objects in the model at the end */
};

static void reader_stats_add(struct reader_stats *sum,
                             const struct reader_stats *s)
{
	sum->sections += s->sections;
	sum->lookups += s->lookups;
	sum->stable += s->stable;
	sum->absent += s->absent;
	sum->churn += s->churn;
	sum->churn_hits += s->churn_hits;
	sum->misses += s->misses;
	sum->false_hits += s->false_hits;
	sum->poison += s->poison;
	sum->wrong += s->wrong;
	sum->walks += s->walks;
	sum->walked += s->walked;
	sum->walk_errors += s->walk_errors;
	sum->walk_ns += s->walk_ns;
}

static void writer_stats_add(struct writer_stats *sum,
                             const struct writer_stats *s)
{
	sum->ops += s->ops;
	sum->inserts += s->inserts;
	sum->removes += s->removes;
	sum->replaces += s->replaces;
	sum->stable_replaces += s->stable_replaces;
	sum->eexist_checks += s->eexist_checks;
	sum->enoent_checks += s->enoent_checks;
	sum->errors += s->errors;
}

/* One line with every figure of the run. */
static void print_summary(const struct torture *T, const struct outcome *out)
{
	const struct torture_cfg *cfg = T->cfg;
	const struct reader_stats *rsum = &out->rsum;
	const struct writer_stats *wsum = &out->wsum;

	printf("resize-torture[%s]: seed=%llu %.2fs readers=%u writers=%u "
	       "membarrier=%d | lookups=%llu (stable %llu, absent %llu, "
	       "churn %llu/%llu hits) misses=%llu false_hits=%llu poison=%llu "
	       "wrong=%llu | walks=%llu (%llu objects, avg %.1f ms) "
	       "walk_errors=%llu | "
	       "writer ops=%llu ins=%llu rm=%llu repl=%llu "
	       "stable_repl=%llu eexist_ok=%llu enoent_ok=%llu errors=%llu | "
	       "resizes=%llu (resizer calls %llu, avg %.1f ms, max %.1f ms) "
	       "sizes seen %zu..%zu changes>=%zu | table gps=%llu "
	       "unzip_passes=%llu helped_chunks=%llu | epoch gps=%llu "
	       "callbacks=%llu | final "
	       "count=%zu size=%zu verify_failures=%u\n",
	       cfg->name, (unsigned long long)T->seed, out->secs, cfg->nreaders,
	       cfg->nwriters, out->es.uses_membarrier,
	       (unsigned long long)rsum->lookups,
	       (unsigned long long)rsum->stable,
	       (unsigned long long)rsum->absent,
	       (unsigned long long)rsum->churn,
	       (unsigned long long)rsum->churn_hits,
	       (unsigned long long)rsum->misses,
	       (unsigned long long)rsum->false_hits,
	       (unsigned long long)rsum->poison,
	       (unsigned long long)rsum->wrong,
	       (unsigned long long)rsum->walks,
	       (unsigned long long)rsum->walked,
	       rsum->walks ? (double)rsum->walk_ns / rsum->walks / 1e6 : 0.0,
	       (unsigned long long)rsum->walk_errors,
	       (unsigned long long)wsum->ops,
	       (unsigned long long)wsum->inserts,
	       (unsigned long long)wsum->removes,
	       (unsigned long long)wsum->replaces,
	       (unsigned long long)wsum->stable_replaces,
	       (unsigned long long)wsum->eexist_checks,
	       (unsigned long long)wsum->enoent_checks,
	       (unsigned long long)wsum->errors,
	       (unsigned long long)(out->ts.resizes - out->ts0.resizes),
	       (unsigned long long)T->zs.calls,
	       T->zs.calls ? (double)T->zs.ns_total / T->zs.calls / 1e6 : 0.0,
	       (double)T->zs.ns_max / 1e6, out->sizes.min, out->sizes.max,
	       out->sizes.changes,
	       (unsigned long long)(out->ts.grace_periods -
	                            out->ts0.grace_periods),
	       (unsigned long long)(out->ts.unzip_passes - out->ts0.unzip_passes),
	       (unsigned long long)(out->ts.helped_chunks -
	                            out->ts0.helped_chunks),
	       (unsigned long long)(out->es.grace_periods -
	                            out->es0.grace_periods),
	       (unsigned long long)(out->es.callbacks_run -
	                            out->es0.callbacks_run),
	       relhash_count(T->t), relhash_size(T->t), out->v.failures);
	fflush(stdout);
}

/* The verdict, most telling failures first. */
static void assert_outcome(const struct torture *T, const struct outcome *out)
{
	const struct torture_cfg *cfg = T->cfg;
	const struct reader_stats *rsum = &out->rsum;
	const struct verify *v = &out->v;
	unsigned long long seed = (unsigned long long)T->seed;

	tst_assert_no_thread_failures();
	ck_assert_msg(rsum->misses == 0 && rsum->false_hits == 0 &&
	              rsum->poison == 0 && rsum->wrong == 0 &&
	              rsum->walk_errors == 0 && out->wsum.errors == 0,
	              "[%s] seed=%llu: misses=%llu false_hits=%llu poison=%llu "
	              "wrong=%llu walk_errors=%llu writer errors=%llu",
	              cfg->name, seed, (unsigned long long)rsum->misses,
	              (unsigned long long)rsum->false_hits,
	              (unsigned long long)rsum->poison,
	              (unsigned long long)rsum->wrong,
	              (unsigned long long)rsum->walk_errors,
	              (unsigned long long)out->wsum.errors);
	ck_assert_msg(v->failures == 0,
	              "[%s] seed=%llu: the final table differs from the model "
	              "in %u way(s); first: %s%s%s%s%s%s%s", cfg->name, seed,
	              v->failures, v->first[0], v->failures > 1 ? "; " : "",
	              v->first[1], v->failures > 2 ? "; " : "", v->first[2],
	              v->failures > 3 ? "; " : "", v->first[3]);
	ck_assert_msg(rsum->stable > 0 && rsum->absent > 0,
	              "[%s] seed=%llu: the readers did no lookups", cfg->name,
	              seed);
	if (cfg->sizes)
		ck_assert_msg(T->zs.calls >= 1 &&
		              out->ts.resizes > out->ts0.resizes,
		              "[%s] seed=%llu: %llu resize call(s) completed in "
		              "%.1f s", cfg->name, seed,
		              (unsigned long long)T->zs.calls, out->secs);
	if (cfg->auto_resize)
		ck_assert_msg(out->ts.resizes > out->ts0.resizes,
		              "[%s] seed=%llu: RELHASH_AUTO_RESIZE never resized "
		              "the table in %.1f s although the population "
		              "swung %u time(s) between %zu and %zu objects",
		              cfg->name, seed, out->secs,
		              T->writer_phase_flips[0], cfg->nstable,
		              cfg->nstable + cfg->nchurn);
	if (cfg->no_membarrier && !out->es0.uses_membarrier)
		ck_assert_msg(!out->es.uses_membarrier, "[%s]: membarrier in use "
		              "although RELHASH_NO_MEMBARRIER=1", cfg->name);
}

/* relhash_destroy() frees every object of the model once, and nothing
 * else; then everything the run allocated goes. */
static void torture_teardown(struct torture *T, size_t expect)
{
	uint64_t frees = 0;
	int ret;

	relhash_destroy(T->t, free_obj, &frees);
	ck_assert_msg(!(frees >> 63), "[%s] seed=%llu: relhash_destroy "
	              "passed a non-live (poisoned?) object to free_fn",
	              T->cfg->name, (unsigned long long)T->seed);
	ck_assert_msg(frees == expect, "[%s] seed=%llu: relhash_destroy "
	              "called free_fn %llu times, the model has %zu objects",
	              T->cfg->name, (unsigned long long)T->seed,
	              (unsigned long long)frees, expect);
	ret = relhash_barrier();
	ck_assert_msg(ret == 0, "relhash_barrier returned %d", ret);
	quarantine_drain();
	free(T->stable_model);
	free(T->stable_ver);
	free(T->churn_model);
	crash_T = NULL;
	free(T);
}

static void torture_run(const struct torture_cfg *cfg_in)
{
	struct torture_cfg cfg = *cfg_in;
	unsigned ms = tst_env_unsigned("RELHASH_TORTURE_MS", 3500), i;
	struct outcome out = { 0 };
	struct torture *T;
	struct crew crew;
	int ret;

	torture_configure(&cfg);
	relhash__debug_head_inserts(!cfg.split_order_inserts);
	T = torture_new(&cfg);
	torture_populate(T);
	out.ts0.size = sizeof(out.ts0);
	relhash_table_stats(T->t, &out.ts0);
	out.es0.size = sizeof(out.es0);
	relhash_epoch_stats(&out.es0);
	size_watch_init(&out.sizes, T);

	T->t0 = tst_now_ns();
	crew_start(T, &crew);
	size_watch_run(&out.sizes, T, ms, &out.ts0);
	crew_stop(T, &crew);
	out.secs = tst_ms_since(T->t0) / 1000.0;
	cur.role = "main";
	set_op("final verification", NO_KEY);

	ret = relhash_barrier();
	ck_assert_msg(ret == 0, "relhash_barrier returned %d", ret);
	out.ts.size = sizeof(out.ts);
	relhash_table_stats(T->t, &out.ts);
	out.es.size = sizeof(out.es);
	relhash_epoch_stats(&out.es);
	for (i = 0; i < cfg.nreaders; i++)
		reader_stats_add(&out.rsum, &T->rs[i]);
	for (i = 0; i < cfg.nwriters; i++)
		writer_stats_add(&out.wsum, &T->ws[i]);
	out.expect = verify_final(T, &out.v);
	print_summary(T, &out);
	assert_outcome(T, &out);
	torture_teardown(T, out.expect);
}

/* ---------------------------------------------------------------------- */
/* The cases                                                               */

/* The resizer's cycle: the sizes of array a, in turn. */
#define RESIZER_CYCLE(a) .sizes = (a), .nsizes = sizeof(a) / sizeof((a)[0])
/* Every case runs two readers and two writers (the environment may say
 * otherwise, see torture_configure()). */
#define TWO_READERS_TWO_WRITERS .nreaders = 2, .nwriters = 2

/* rcuhashbash: 65,536 keys, 2^13 <-> 2^14 buckets, continuously. */
static const size_t toggle_sizes[] = { 16384, 8192 };
#define RCUHASHBASH                                                    \
	.nstable = 65536, .nchurn = 16384, .churn_fill = 0.5,          \
	.initial_size = 8192, RESIZER_CYCLE(toggle_sizes)

static const struct torture_cfg toggle_cfg = {
	.name = "toggle",
	RCUHASHBASH,
	TWO_READERS_TWO_WRITERS,
};

/* Multi-step expansions (up to 16 doublings in one call) and one-step
 * shrinks by up to 2^16, on a table with min_size 1.  Fewer keys: at one
 * bucket the whole table is one chain. */
static const size_t wide_sizes[] = { 4, 65536, 16, 4096, 1, 32768, 2, 1024 };

static const struct torture_cfg wide_cfg = {
	.name = "wide",
	.nstable = 1000, .nchurn = 400, .churn_fill = 0.5,
	.initial_size = 64, .min_size = 1,
	RESIZER_CYCLE(wide_sizes),
	TWO_READERS_TWO_WRITERS,
	.split_order_inserts = true,
};

/* The weak hash: every non-empty chain holds >= 10 nodes (a group), many
 * hold several groups, and churn happens in the middle of those chains. */
static const size_t weak_sizes[] = { 8192, 1024, 4096, 512, 16384, 2048 };

static const struct torture_cfg weak_cfg = {
	.name = "weak_hash",
	.nstable = 20000, .nchurn = 8000, .churn_fill = 0.5,
	.weak_hash = true,
	.initial_size = 1024,
	RESIZER_CYCLE(weak_sizes),
	TWO_READERS_TWO_WRITERS,
};

/*
 * A tiny table (60 keys, 1 to 32 buckets): every lookup walks a chain that
 * is being unzipped and updated right now, so the rare coincidences the big
 * cases depend on (a reader between two nodes while a removal and an unzip
 * pass touch that very family) happen all the time.
 */
static const size_t tiny_sizes[] = { 1, 8, 2, 32, 4, 16 };

static const struct torture_cfg tiny_cfg = {
	.name = "tiny",
	.nstable = 20, .nchurn = 40, .churn_fill = 0.5,
	.initial_size = 4, .min_size = 1,
	RESIZER_CYCLE(tiny_sizes),
	TWO_READERS_TWO_WRITERS,
};

/* RELHASH_AUTO_RESIZE: the population swings between 2,048 and 26,624
 * objects, so the library's thread grows 4,096 -> 65,536 and shrinks back. */
static const struct torture_cfg auto_cfg = {
	.name = "auto",
	.nstable = 2048, .nchurn = 24576, .churn_fill = 0.0,
	.auto_resize = true,
	.initial_size = 4096,
	TWO_READERS_TWO_WRITERS,
	.split_order_inserts = true,
};

/*
 * Bursts that outrun the resize thread: four writers fill a table that
 * starts at 8 buckets, inserting outside read-side sections, so
 * back-pressure holds them and they may do unzip work (doc/DESIGN.md,
 * "Helping").  Few keys, as in the tiny case: a pass of up to 64 families
 * is one chunk, so helpers and the resizer share the very chains the
 * readers walk.  Whether helpers join depends on timing: expansions back
 * after a shrink take one short pass per doubling (split order), which the
 * resizer often finishes alone.  That held inserters do help is checked
 * by test-growth's burst fill, whose passes are many.
 */
static const struct torture_cfg auto_burst_cfg = {
	.name = "auto_burst",
	.nstable = 32, .nchurn = 992, .churn_fill = 0.0,
	.auto_resize = true,
	.initial_size = 8,
	.nreaders = 2,
	.nwriters = 4,
};

/* The paper's setup again, with the fence fallback on the read side. */
static const struct torture_cfg toggle_nomb_cfg = {
	.name = "toggle_nomembarrier",
	RCUHASHBASH,
	.no_membarrier = true,
	TWO_READERS_TWO_WRITERS,
	.split_order_inserts = true,
};

START_TEST(test_toggle)
{
	torture_run(&toggle_cfg);
}
END_TEST

START_TEST(test_wide)
{
	torture_run(&wide_cfg);
}
END_TEST

START_TEST(test_weak_hash)
{
	torture_run(&weak_cfg);
}
END_TEST

START_TEST(test_tiny)
{
	torture_run(&tiny_cfg);
}
END_TEST

START_TEST(test_auto)
{
	torture_run(&auto_cfg);
}
END_TEST

START_TEST(test_auto_burst)
{
	torture_run(&auto_burst_cfg);
}
END_TEST

START_TEST(test_toggle_nomembarrier)
{
	torture_run(&toggle_nomb_cfg);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Helping, step by step                                                   */

/*
 * One zipped family driven through its unzip, in the order that breaks a
 * wrong helping protocol, with the library's yield points
 * (relhash__debug_set_yield_hook(), debug builds only; elsewhere the case
 * says it is skipped).  The hash is the key itself.  128 buckets hold, in
 * bucket 64, the chain a1 -> b1 -> a2 -> b2 -> a3 -> b3, whose a-nodes stay
 * in bucket 64 of 256 buckets and b-nodes go to 192.  relhash_resize(256):
 * the resizer is held after the grace period that follows the
 * publication, before the first unzip pass; a reader looking up a2 in the
 * new array is held standing on b1 (it has read a1->next); an inserter
 * pushes the load over the hard limit, so back-pressure holds it and it
 * helps.  Then the resizer goes on and the reader stays put for HS_HOLD_MS.
 * Pass 1 patches a1->next = a2, pass 2 would patch b1->next = b2, which
 * skips a2 for our reader: it must not happen before the reader leaves
 * (one patch per family per grace period).  A helper that starts pass 2
 * before pass 1's grace period (RH_BUG_HELP_BEFORE_GRACE), or chunks that
 * overlap (RH_BUG_HELP_CHUNK_OVERLAP: family 64 is the first entry of the
 * second chunk, and the last of the first), make the reader miss a2.
 * The hook is declared weak in tests/debug-hooks.h.
 */
enum { HS_OLD = 128, HS_FAMILY = 64, HS_HOLD_MS = 300, HS_EXTRA = 4000 };
enum hs_role { HS_NONE, HS_RESIZER, HS_READER };
enum hs_stage {
	HS_START,
	HS_RESIZER_HELD,   /* before pass 1, after the grace period */
	HS_READER_ON_B1,
	HS_GO,             /* an inserter is held by back-pressure */
	HS_READER_DONE,
};

static __thread enum hs_role hs_role;
static __thread unsigned hs_reader_steps;
static struct {
	struct relhash_table *t;
	uint64_t gp0;          /* the table's grace periods before resizing */
	int stage;             /* enum hs_stage */
	struct tobj *objs;
	size_t nobjs;
} hs;

/* Called at every yield point of the library, in every thread. */
static void hs_hook(void)
{
	struct relhash_table_stats st = { .size = sizeof(st) };

	if (hs_role == HS_RESIZER && tst_load(&hs.stage) == HS_START) {
		relhash_table_stats(hs.t, &st);
		/* Published and waited for: the next yield is the first
		 * pass's. */
		if (st.nbuckets != 2 * HS_OLD || st.grace_periods != hs.gp0 + 1)
			return;
		tst_store(&hs.stage, HS_RESIZER_HELD);
		(void)TST_WAIT_FOR(tst_load(&hs.stage) >= HS_GO, 5000);
	} else if (hs_role == HS_READER && ++hs_reader_steps == 3) {
		/* 1: relhash_lookup() itself, 2: at a1, 3: at b1. */
		tst_store(&hs.stage, HS_READER_ON_B1);
		tst_sleep_ms(HS_HOLD_MS);
	}
}

static void *hs_resizer_main(void *arg)
{
	(void)arg;
	hs_role = HS_RESIZER;
	if (relhash_resize(hs.t, 2 * HS_OLD) != 0)
		tst_thread_fail(__FILE__, __LINE__, "relhash_resize failed");
	return NULL;
}

static void *hs_reader_main(void *arg)
{
	uint64_t key = *(const uint64_t *)arg;
	void *found;

	hs_role = HS_READER;
	relhash_read_lock();
	found = relhash_lookup(hs.t, &key);
	relhash_read_unlock();
	if (!found)
		tst_thread_fail(__FILE__, __LINE__, "helper_steps: key %llu "
		                "(a2) missed by a reader standing on b1 while "
		                "the family was unzipped",
		                (unsigned long long)key);
	tst_store(&hs.stage, HS_READER_DONE);
	return NULL;
}

/* Inserts keys outside bucket 64's family until the reader is done. */
static void *hs_inserter_main(void *arg)
{
	size_t i;

	(void)arg;
	for (i = 6; i < hs.nobjs && tst_load(&hs.stage) < HS_READER_DONE; i++)
		if (relhash_insert(hs.t, &hs.objs[i].node) != 0)
			tst_thread_fail(__FILE__, __LINE__, "insert failed");
	return NULL;
}

START_TEST(test_helper_steps)
{
	struct relhash_params p = default_params;
	/* a1 b1 a2 b2 a3 b3: bucket 64 of 128; 64 or 192 of 256. */
	static const uint64_t chain[6] = { 64, 192, 320, 448, 576, 704 };
	struct relhash_table_stats st = { .size = sizeof(st) };
	pthread_t resizer, reader, inserter;
	uint64_t key, a2 = chain[2];
	size_t i, n;

	if (!relhash__debug_set_yield_hook) {
		printf("resize-torture[helper_steps]: skipped, needs a debug "
		       "build (--enable-debug)\n");
		return;
	}
	p.hashfn = hashfn_identity;
	p.initial_size = HS_OLD;
	p.min_size = HS_OLD;
	p.flags = RELHASH_AUTO_RESIZE;
	hs.t = relhash_create(&p);
	hs.nobjs = 6 + HS_EXTRA;
	hs.objs = calloc(hs.nobjs, sizeof(*hs.objs));
	ck_assert(hs.t && hs.objs);
	for (i = 0; i < 6; i++)
		hs.objs[i].key = chain[5 - i]; /* prepended: a1 ends first */
	for (n = 6, key = 1000; n < hs.nobjs; key++)
		if ((key & (HS_OLD - 1)) != HS_FAMILY)
			hs.objs[n++].key = key;
	relhash__debug_head_inserts(true);
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(relhash_insert(hs.t, &hs.objs[i].node), 0);
	relhash_table_stats(hs.t, &st);
	hs.gp0 = st.grace_periods;
	relhash__debug_set_yield_hook(hs_hook);

	tst_thread_start(&resizer, hs_resizer_main, NULL);
	ck_assert_msg(TST_WAIT_FOR(tst_load(&hs.stage) == HS_RESIZER_HELD,
	                           10000), "the resizer never reached pass 1");
	tst_thread_start(&reader, hs_reader_main, &a2);
	ck_assert_msg(TST_WAIT_FOR(tst_load(&hs.stage) == HS_READER_ON_B1,
	                           10000), "the reader never stood on b1");
	tst_thread_start(&inserter, hs_inserter_main, NULL);
	TST_ASSERT_WAIT((relhash_table_stats(hs.t, &st),
	                 st.throttled_inserts > 0), 10000,
	                "no insertion was held by back-pressure");
	tst_store(&hs.stage, HS_GO);
	TST_JOIN(reader, 10000, "reader");
	TST_JOIN(resizer, 10000, "resizer");
	TST_JOIN(inserter, 10000, "inserter");
	relhash__debug_set_yield_hook(NULL);
	tst_assert_no_thread_failures();
	relhash_destroy(hs.t, NULL, NULL);
	ck_assert_int_eq(relhash_synchronize(), 0);
	free(hs.objs);
}
END_TEST

static Suite *resize_torture_suite(void)
{
	Suite *s = suite_create("resize-torture");
	struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "toggle", test_toggle },
		{ "wide", test_wide },
		{ "weak_hash", test_weak_hash },
		{ "tiny", test_tiny },
		{ "auto", test_auto },
		{ "auto_burst", test_auto_burst },
		{ "helper_steps", test_helper_steps },
		{ "toggle_nomembarrier", test_toggle_nomembarrier },
	};
	size_t i;

	/* One tcase per case.  The run time is bounded by RELHASH_TORTURE_MS;
	 * the timeout only catches a hang the joins' own limits would miss. */
	for (i = 0; i < TST_COUNT(cases); i++)
		tst_add_tcase(s, cases[i].name, 300, &cases[i].test, 1);
	return s;
}

int main(void)
{
	return tst_run(srunner_create(resize_torture_suite()));
}
