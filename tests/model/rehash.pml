/*
 * rehash.pml -- Promela model of the healing rehash with a new seed
 * (doc/DESIGN.md section 12, "Healing: a rehash with a new seed"): a table
 * of two buckets moves every node from OLD (seed s0) through MID (seed s1,
 * with a DESCRIPTOR: OLD, s0 and the SET of the snapshot) to NEW (s1), while
 * readers, an iterator or a duplicate walker, and an updater run.  It was
 * written from the protocol's first text, before src/table/rehash.c, and
 * found the flaw that GP3 and the walk's MID-mode continuation repair (the
 * STALE_WALK_FIX below; src/table/rehash.c, rh_rehash_left_behind()).  Run
 * it with
 * tests/model/run-spin.sh.
 *
 * Processes:
 *   mover()     the resize thread's rehash: (1) snapshot under every update
 *               lock (the SET, in OLD chain order, OLD bucket by bucket),
 *               publish MID; (2) GP1, a grace period begun after that; (3)
 *               in a read-side section, compute each live member's new hash
 *               (a dereference); then under every lock, for each live entry
 *               in SET order, store its new hash in the node and append it
 *               to its NEW bucket's list, one store each; end each list with
 *               MID's chain of that bucket (NEW's head = MID's head where a
 *               list is empty), publish NEW; (4) GP2, begun after that; free
 *               OLD, MID and the SET.  With the fix (below): NEW keeps the
 *               descriptor until GP2 ends; then it is cleared and OLD
 *               freed, and MID and the SET a grace period (GP3) later.
 *   reader()    NLOOKUPS lookups, each in its own read-side section, of a
 *               key in the table when it begins; OLD mode: the OLD chain;
 *               MID mode: the key's SET range, then its MID chain; NEW
 *               mode: the NEW chain.  With WALK (duplicate keys): one walk
 *               of key 0, relhash_lookup() then relhash_lookup_next() until
 *               NULL, all in one section; each call loads pub.buckets
 *               again, so a walk may begin in OLD mode and go on in MID
 *               mode, or begin in MID mode and go on in NEW mode.
 *               relhash_lookup_next(obj): in MID mode, obj's entry in its
 *               key's SET range if it has one (marked or not), then the
 *               rest of the range and the MID chain; else along obj's next,
 *               comparing obj's hash field.
 *   iterator()  ITER: one iteration in one section: OLD: the OLD chains;
 *               MID: the SET's live entries, then the MID chains; NEW: the
 *               NEW chains.  A chain returns only its bucket's nodes (by
 *               the node's hash field under the array's seed).
 *   updater()   NUPD updates, one after the other, each of a kind OPS
 *               allows: load pub.buckets, hash with its seed, lock that
 *               hash's lock, load pub.buckets again (changed: unlock, start
 *               again), then by the array seen: OLD or NEW as today (insert
 *               at the head, unlink, replace in place); MID: insert at
 *               MID's head; remove a member by marking its entry, a MID
 *               node by unlinking it; replace a member by linking the
 *               replacement at MID's head, then marking.  All inside a
 *               read-side section, as updates run today; a removed or
 *               replaced node is freed after a grace period.
 *
 * Properties (asserts):
 *   P1  a lookup finds a key that is in the table for the whole lookup (a
 *       replacement keeps its key in the table) ... assert(found || gone[K])
 *       A walk returns every node of its key that is in the table for the
 *       whole walk; an iteration returns every node in the table for the
 *       whole iteration.
 *   P2  no process dereferences a freed node, a freed bucket array (OLD,
 *       MID: its heads, its seed, its descriptor) or the freed SET.
 *   P3  a walk or an iteration never returns a node twice.
 *   Every process ends: a stuck one is an invalid end state.
 *
 * The table (fixed; NB_ANY tries every new bucket of the three nodes):
 *   OLD bucket 0: 0 -> 1, OLD bucket 1: 2; new buckets 0:0, 1:1, 2:0, so
 *   node 0's NEW successor (2) lies in another OLD chain.  Spare nodes
 *   3, 4 (NUPD of them) are inserted (a fresh key, each of its two hashes
 *   either bucket; with DUP, key 0 and node 0's hashes) or replace a node
 *   (its key and hashes).  Keys are node numbers, except DUP's spare.
 *
 * Compile-time switches (spin -DNAME[=value]):
 *   NLOOKUPS      lookups of the reader (default 1); READER=0: no reader
 *   WALK          the reader is a duplicate walker of key 0 instead
 *   ITER          an iterator process
 *   NUPD          updates (default 1; 0: no updater, at most 2)
 *   OPS           kinds allowed, a mask: 1 insert, 2 remove, 4 replace
 *                 (default 7)
 *   DUP           an insertion adds a second node with key 0
 *   DUP2          node 1 has key 0 too (and node 0's new bucket)
 *   NB_ANY        every new bucket of nodes 0..2 is tried
 *   STALE_WALK_FIX  1 (default): the fix below; 0: the design as
 *                 doc/DESIGN.md first wrote it, which spin refutes (a walk
 *                 skips a node of its key, or reaches a freed node)
 *   Wrong variants, each must make spin report an error:
 *   NO_GP1           the relink right after MID's publication: an OLD
 *                    reader follows a member's new next and misses (P1)
 *   NO_GP2           OLD, MID and the SET freed right after NEW's
 *                    publication (no GP2, no GP3): a MID reader reads
 *                    freed memory (P2)
 *   EARLY_COOKIE     GP2 begun before NEW's publication (after the hash
 *                    computation) and so over before it; the frees rely
 *                    on it alone (P2)
 *   INSERT_INTO_OLD  a MID-mode insertion links into the OLD chain (P1)
 *   NO_RECHECK       no second load of pub.buckets under the lock: an
 *                    insertion into a stale array is lost (P1)
 *   MEMBERS_IN_MID   the relink links members into the MID chains (MID's
 *                    heads = NEW's): a MID iteration returns them twice (P3)
 *   MARK_BEFORE_LINK a MID-mode replacement marks the entry before it links
 *                    the replacement: a reader sees neither (P1)
 *   NO_MARK          a MID-mode removal of a member does not mark it: the
 *                    SET still leads to the freed node (P2)
 *   MID_BEFORE_MEMBERS  NEW chains hold the MID nodes first, then the
 *                    members: a walk crossing into NEW skips or repeats
 *   NEXT_BY_SEED     relhash_lookup_next() along obj's next compares the
 *                    hash under the seed of the array it loaded, not obj's
 *                    own hash field (P1: see "Walks" below; needs DUP2)
 *   NO_GP3           the fix without its GP3: MID and the SET freed when
 *                    NEW's descriptor is cleared; a walk that loaded the
 *                    descriptor just before reads the freed SET (P2)
 *
 * ---------------------------------------------------------------------------
 * THE STALE WALK (found with this model; STALE_WALK_FIX=0 shows it)
 *
 * The protocol as first written said of a walk begun in MID mode and
 * resumed in NEW mode that it goes along obj's next: after a member, NEW's
 * chain holds the later members of the same SET range in the same order,
 * then the MID chain.  Not after a
 * member marked (removed or replaced) between the lookup that returned it
 * and the relink: the relink skips marked entries (it may not write their
 * nodes, which may be freed by then), so obj->next still points to its OLD
 * successor and obj->hash holds its s0 hash.  The walk then follows the
 * OLD chain's remains, compares a hash no relinked node carries, and never
 * reaches the MID chain.  Trail (run-spin.sh prints spin's), OLD 0 -> 1 | 2,
 * walking key 0 with DUP:
 *   1. MID published; the updater, replacing member 0 by 3 (same key),
 *      links 3 at MID head[0];
 *   2. the walker, in MID mode, finds entry 0 still live: returns 0;
 *   3. the updater marks entry 0; GP1 ends; the relink skips 0; NEW is
 *      published;
 *   4. relhash_lookup_next(0) in NEW mode: 0->next = 1 (OLD's), then NIL:
 *      3, in the table throughout the walk, is skipped (P1).
 * With a second removal (run-spin.sh's rh-as-spec-freed), 0->next is a
 * member removed and freed before the walk began: a use after free (P2).
 * The fix (STALE_WALK_FIX=1): NEW keeps the descriptor until GP2 ends.
 * relhash_lookup_next(obj) in NEW mode, while NEW has it, looks for obj's
 * entry in its key's SET range: marked, the walk goes on as in MID mode
 * (the rest of the range, then the MID chain from MID's head).  Only a walk
 * that began before NEW's publication can stand on a marked member (marked
 * entries are exactly the members the relink skipped), and GP2 waits for
 * it, so clearing the descriptor after GP2 leaves none behind; walks that
 * read the descriptor just before the clear only search the SET, so MID
 * and the SET are freed a grace period after the clear (GP3; in C, a
 * deferred free: the rehash still waits for two grace periods).
 * Rejected: writing marked members' next in the relink (they may be freed);
 * detecting a stale obj by its hash (equal s0 and s1 hashes would fool it).
 * ---------------------------------------------------------------------------
 *
 * Modelling notes
 *  - Sequentially consistent: acquire loads, release stores and a grace
 *    period ordering everything before it are assumed.
 *  - The mover takes both update locks in one step (the C code takes them
 *    in index order); the snapshot, which writes only the unpublished SET
 *    before publishing MID, is one step.  The relink's stores are one step
 *    each, so an OLD reader (only with NO_GP1) can see any prefix of them.
 *  - Grace periods as in unzip.pml: the waiter observes each other process
 *    outside its read-side section at least once after the grace period
 *    began.  An updater's section runs from its first load of pub.buckets
 *    to its unlock; the mover's from its first hash computation to its
 *    last.
 *  - Hashes: a node's hash field is hs[n] (which seed it was computed
 *    with); a chain walk matches a node when the key matches and the hash
 *    field was computed with the seed of the walk.  SET entries carry the
 *    old hash; every live entry of a range is dereferenced (keys colliding
 *    on the whole old hash: the worst case, which a flood brings).
 *  - Walks: relhash_lookup_next(obj) along obj's next compares obj's hash
 *    field, as today's code does: a walk begun in OLD mode whose obj was
 *    removed before the snapshot goes on in MID mode along obj's next,
 *    which is the OLD chain, whose members still carry s0 hashes
 *    (NEXT_BY_SEED, comparing the s1 hash there, skips them).
 *  - printf lines narrate a trail when it is replayed (spin -t); NIL is
 *    printed as a number, NT.
 *  - Not modelled: allocation and the SET's regrowth, resize steps,
 *    insert-or-get, hashed and bulk lookups, the flood watch, fork; weak
 *    memory; more than one rehash.
 *  - Scratch variables used only inside d_steps are `hidden`.
 */

#ifndef NLOOKUPS
#define NLOOKUPS 1
#endif
#ifndef READER
#define READER 1
#endif
#ifndef NUPD
#define NUPD 1
#endif
#ifndef OPS
#define OPS 7
#endif
#ifndef STALE_WALK_FIX
#define STALE_WALK_FIX 1
#endif

#define NN   3                       /* nodes in the table at first         */
#define NT   (NN + NUPD)             /* then the spares                     */
#define NIL  NT                      /* the NULL pointer                    */
#define OLD  0                       /* the arrays, as pub.buckets holds    */
#define MID  1
#define NEW  2
#define DK   0                       /* the key a walk looks up             */

#define OP_INSERT  1
#define OP_REMOVE  2
#define OP_REPLACE 4

/* read-side section slots: every process that reads has one */
#define S_MOVER 0
#define S_READ  1
#define S_UPD   2
#define S_ITER  3
#if READER
#define HAVE_READ 2
#else
#define HAVE_READ 0
#endif
#if NUPD > 0
#define HAVE_UPD 4
#else
#define HAVE_UPD 0
#endif
#ifdef ITER
#define HAVE_ITER 8
#else
#define HAVE_ITER 0
#endif
/* the slots a grace period need not observe: processes that do not exist */
#define ABSENT (15 & ~(1 | HAVE_READ | HAVE_UPD | HAVE_ITER))

/* ------------------------------------------------------------------------
 * Shared state
 * ------------------------------------------------------------------------ */
byte pub;                 /* pub.buckets: OLD, MID or NEW                   */
byte oh[2];               /* OLD's heads                                    */
byte mh[2];               /* MID's heads                                    */
byte nh[2];               /* NEW's heads                                    */
byte nxt[NT];             /* node->next                                     */
bit  hs[NT];              /* node->hash: computed with s0 (0) or s1 (1)     */
byte key[NT];
bit  ob[NT];              /* the OLD bucket of the node's key (s0)          */
bit  nb[NT];              /* its MID and NEW bucket (s1)                    */
bit  removed[NT];         /* not in the table (removed, replaced, or a
                             spare not inserted yet)                         */
bit  gone[NT];            /* key k not in the table: set when a removal
                             starts (a replacement keeps the key)           */
bit  freed[NT];           /* node freed: poison                             */
bit  inset[NT];           /* node is a member: it has a SET entry           */
bit  mark[NT];            /* its entry is marked removed                    */
byte set_ent[NN + NUPD];  /* the SET: members in SET order                  */
byte set_start[3];        /* OLD bucket b's entries: [start[b], start[b+1]) */
bit  set_freed;
bit  old_freed;
bit  mid_freed;
bit  new_desc;            /* NEW still points to the descriptor (the fix)   */
bit  lk[2];               /* the update locks                               */
bit  reading[4];          /* in a read-side section, by slot                */

/* scratch for d_steps only, not part of the state vector */
hidden byte t_b, t_p, t_n, t_i;
hidden byte t_tl[2];

#define HEAD(a, b) ((a) == OLD -> oh[b] : ((a) == MID -> mh[b] : nh[b]))
#define AR(a) ((a) == OLD -> 'O' : ((a) == MID -> 'M' : 'N'))

/* ------------------------------------------------------------------------
 * Grace period: gpw, a byte of the caller, the slots seen outside their
 * sections since the grace period began (the caller's own among them).
 * ------------------------------------------------------------------------ */
inline grace_period(gpw, self)
{
	gpw = ABSENT | (1 << self);
	do
	:: atomic { !(gpw & 1) && !reading[0] -> gpw = gpw | 1 }
#if HAVE_READ
	:: atomic { !(gpw & 2) && !reading[1] -> gpw = gpw | 2 }
#endif
#if HAVE_UPD
	:: atomic { !(gpw & 4) && !reading[2] -> gpw = gpw | 4 }
#endif
#if HAVE_ITER
	:: atomic { !(gpw & 8) && !reading[3] -> gpw = gpw | 8 }
#endif
	:: gpw == 15 -> gpw = 0; break
	od
}

/* P2 at a dereference of array a (its heads, seed or descriptor) */
#define ARRAY_OK(a) (((a) != OLD || !old_freed) && ((a) != MID || !mid_freed))

inline deref(n)
{
	if
	:: freed[n] -> printf("MSC: dereferences FREED node %d\n", n)
	:: else
	fi;
	assert(!freed[n])                                        /* P2 */
}

inline deref_array(a)
{
	if
	:: !ARRAY_OK(a) -> printf("MSC: dereferences FREED array %c\n", AR(a))
	:: else
	fi;
	assert(ARRAY_OK(a))                                      /* P2 */
}

inline deref_set()
{
	if
	:: set_freed -> printf("MSC: reads the FREED SET\n")
	:: else
	fi;
	assert(!set_freed)                                       /* P2 */
}

/* nondeterministic choice of a node in the table */
#define ANY_LIVE(v) \
	:: !removed[0] -> v = 0 \
	:: !removed[1] -> v = 1 \
	:: !removed[2] -> v = 2 \
	:: NT > 3 && !removed[3 % NT] -> v = 3 % NT \
	:: NT > 4 && !removed[4 % NT] -> v = 4 % NT

#define NONE_LIVE (removed[0] && removed[1] && removed[2] && \
	(NT <= 3 || removed[3 % NT]) && (NT <= 4 || removed[4 % NT]))

/* ------------------------------------------------------------------------
 * The search of one key (the key, OLD and new bucket of node kn), shared by
 * lookups and walks.  Its state: ph (SEEK: position it first; SET: at
 * entry i of the SET range; CHAIN: at node n, matching hash fields computed
 * with seed sd; DONE), and hit, the node found (NIL: none yet).  One step
 * per entry or node.
 * ------------------------------------------------------------------------ */
#define PH_SET   0
#define PH_CHAIN 1
#define PH_DONE  2

inline search()
{
	do
	:: d_step {
		hit == NIL && ph == PH_SET && i < set_start[ob[kn] + 1] ->
		deref_set();
		n = set_ent[i];
		i++;
		if
		:: !mark[n] ->                  /* a live entry: compare the key */
			deref(n);
			if
			:: key[n] == key[kn] ->
				printf("MSC: reader: SET entry %d: found\n", n);
				hit = n
			:: else
			fi
		:: else
		fi
	   }
	:: d_step {
		hit == NIL && ph == PH_SET && i >= set_start[ob[kn] + 1] ->
		deref_array(MID);
		n = mh[nb[kn]];
		sd = 1;
		ph = PH_CHAIN;
		printf("MSC: reader: MID head[%d] = %d\n", nb[kn], n)
	   }
	:: d_step {
		hit == NIL && ph == PH_CHAIN && n != NIL ->
		deref(n);
		if
		:: key[n] == key[kn] && hs[n] == sd ->
			printf("MSC: reader: node %d: found\n", n);
			hit = n
		:: else -> printf("MSC: reader: at %d -> %d\n", n, nxt[n])
		fi;
		n = nxt[n]
	   }
	:: d_step {
		hit == NIL && ph == PH_CHAIN && n == NIL ->
		ph = PH_DONE
	   }
	:: hit != NIL || ph == PH_DONE -> break
	od
}

/* relhash_lookup(): position the search in array a */
inline seek_first()
{
	d_step {
		deref_array(a);
		if
		:: a == MID ->
			i = set_start[ob[kn]];
			ph = PH_SET
		:: else ->
			n = HEAD(a, (a == OLD -> ob[kn] : nb[kn]));
			sd = (a != OLD);
			ph = PH_CHAIN
		fi;
		printf("MSC: reader: %c mode, looks up key %d\n", AR(a), key[kn])
	}
}

#ifdef WALK
/* relhash_lookup_next(obj) in array a: in MID mode, obj's entry if it has
 * one (marked or not), then the rest of the range; else along obj's next */
inline seek_next()
{
	d_step {
		hit = NIL;
		t_n = 0;                /* go on in the SET range */
		if
		:: a == MID ->
			deref_array(MID);
			deref_set();
			t_n = inset[obj]
#if STALE_WALK_FIX
		:: a == NEW && dd ->
			/* NEW still has the descriptor: a member marked before
			 * the relink was not relinked, its next is stale */
			deref_set();
			t_n = inset[obj] && mark[obj]
#endif
		:: else
		fi;
		if
		:: t_n ->
			i = set_start[ob[kn]];
			do
			:: set_ent[i] != obj -> i++
			:: else -> break
			od;
			i++;
			ph = PH_SET
		:: else ->
			deref(obj);
			n = nxt[obj];
#ifdef NEXT_BY_SEED
			sd = (a != OLD);
#else
			sd = hs[obj];
#endif
			ph = PH_CHAIN
		fi;
		printf("MSC: reader: %c mode, next after %d\n", AR(a), obj)
	}
}
#endif

/* ------------------------------------------------------------------------
 * Reader: lookups (relhash__lookup_inline() and its out-of-line MID path),
 * or with WALK one duplicate walk of key 0.
 * ------------------------------------------------------------------------ */
#if READER
proctype reader()
{
	byte round = 0;
	byte kn = 0;      /* a node of the key looked up */
	byte a = 0;       /* the array loaded            */
	byte ph = 0;
	byte i = 0;
	byte n = 0;
	bit  sd = 0;
	byte hit = NIL;
#ifdef WALK
	byte obj = NIL;
	byte want = 0;    /* nodes of key 0 in the table at the start        */
	byte got = 0;     /* nodes returned                                  */
	bit  dd = 0;      /* the array loaded has a descriptor (NEW only)    */
#endif

#ifndef WALK
	do
	:: atomic {
		round < NLOOKUPS && !NONE_LIVE ->
		if
		ANY_LIVE(kn)
		fi;
		reading[S_READ] = 1;             /* read_lock               */
		a = pub;                         /* load(pub.buckets)       */
		printf("MSC: reader: section begins, loads %c\n", AR(a))
	   };
		seek_first();
		search();
		atomic {
			if
			:: hit == NIL -> printf("MSC: reader did NOT find key %d\n", key[kn])
			:: else
			fi;
			assert(hit != NIL || gone[key[kn]]);                   /* P1 */
			reading[S_READ] = 0;            /* read_unlock             */
			kn = 0; a = 0; ph = 0; i = 0; n = 0; sd = 0; hit = NIL;
			round++
		}
	:: round >= NLOOKUPS -> break
	od
#else
	atomic {
		reading[S_READ] = 1;
		kn = DK;
		t_i = 0;
		do
		:: t_i < NT ->
			if
			:: key[t_i] == DK && !removed[t_i] -> want = want | (1 << t_i)
			:: else
			fi;
			t_i++
		:: else -> break
		od;
		a = pub;
		printf("MSC: reader: walk's section begins, loads %c\n", AR(a))
	};
	seek_first();
	do
	:: search();
		if
		:: hit == NIL -> break
		:: else
		fi;
		d_step {
			if
			:: got & (1 << hit) -> printf("MSC: walker: %d returned TWICE\n", hit)
			:: else -> printf("MSC: walker: returns %d\n", hit)
			fi;
			assert(!(got & (1 << hit)));                          /* P3 */
			got = got | (1 << hit);
			obj = hit
		};
		atomic {
			a = pub;                       /* relhash_lookup_next(obj) */
			dd = (a == NEW && new_desc);    /* NEW's descriptor        */
			printf("MSC: reader: loads %c\n", AR(a))
		};
		seek_next()
	od;
	atomic {
		t_i = 0;
		do
		:: t_i < NT ->
			if
			:: (want & (1 << t_i)) && !removed[t_i] && !(got & (1 << t_i)) ->
				printf("MSC: walker: SKIPPED %d\n", t_i)
			:: else
			fi;
			assert(!((want & (1 << t_i)) && !removed[t_i]) ||
			       (got & (1 << t_i)));                             /* P1 */
			t_i++
		:: else -> break
		od;
		reading[S_READ] = 0
	}
#endif
}
#endif

/* ------------------------------------------------------------------------
 * Iterator: one iteration in one section, on the array it loads.
 * ------------------------------------------------------------------------ */
#ifdef ITER
inline it_return(n)
{
	if
	:: got & (1 << n) -> printf("MSC: iterator: %d returned TWICE\n", n)
	:: else -> printf("MSC: iterator: returns %d\n", n)
	fi;
	assert(!(got & (1 << n)));                                     /* P3 */
	got = got | (1 << n)
}

proctype iterator()
{
	byte a = 0;
	byte b = 0;
	byte i = 0;
	byte n = 0;
	byte want = 0;
	byte got = 0;

	atomic {
		reading[S_ITER] = 1;
		t_i = 0;
		do
		:: t_i < NT ->
			if
			:: !removed[t_i] -> want = want | (1 << t_i)
			:: else
			fi;
			t_i++
		:: else -> break
		od;
		a = pub;
		printf("MSC: iterator: %c mode\n", AR(a))
	};
	if
	:: a == MID ->
		do
		:: d_step {
			i < set_start[2] ->
			deref_array(MID);
			deref_set();
			n = set_ent[i];
			if
			:: !mark[n] -> deref(n); it_return(n)
			:: else
			fi;
			i++
		   }
		:: i >= set_start[2] -> break
		od
	:: else
	fi;
	do
	:: b < 2 ->
		d_step { deref_array(a); n = HEAD(a, b) };
		do
		:: d_step {
			n != NIL ->
			deref(n);
			if
			:: a == OLD && hs[n] == 0 && ob[n] == b -> it_return(n)
			:: a != OLD && hs[n] == 1 && nb[n] == b -> it_return(n)
			:: else
			fi;
			n = nxt[n]
		   }
		:: n == NIL -> break
		od;
		b++
	:: else -> break
	od;
	atomic {
		t_i = 0;
		do
		:: t_i < NT ->
			if
			:: (want & (1 << t_i)) && !removed[t_i] && !(got & (1 << t_i)) ->
				printf("MSC: iterator: SKIPPED %d\n", t_i)
			:: else
			fi;
			assert(!((want & (1 << t_i)) && !removed[t_i]) ||
			       (got & (1 << t_i)));                             /* P1 */
			t_i++
		:: else -> break
		od;
		reading[S_ITER] = 0
	}
}
#endif

/* ------------------------------------------------------------------------
 * Mover: the resize thread's rehash.
 * ------------------------------------------------------------------------ */
proctype mover()
{
	byte gpw = 0;
	byte i = 0;
	byte n = 0;

	/* 1. Snapshot, every lock held: OLD chains into the SET, publish MID */
	d_step {
		lk[0] == 0 && lk[1] == 0 ->
		t_n = 0;
		t_b = 0;
		do
		:: t_b < 2 ->
			set_start[t_b] = t_n;
			t_p = oh[t_b];
			do
			:: t_p != NIL ->
				deref(t_p);
				set_ent[t_n] = t_p;
				inset[t_p] = 1;
				printf("MSC: mover: SET[%d] = %d (OLD bucket %d)\n", t_n, t_p, t_b);
				t_n++;
				t_p = nxt[t_p]
			:: else -> break
			od;
			t_b++
		:: else -> break
		od;
		set_start[2] = t_n;
		pub = MID;                              /* publish(pub.buckets) */
		printf("MSC: mover: MID published\n")
	};

	/* 2. GP1 */
#ifndef NO_GP1
	grace_period(gpw, S_MOVER);
	printf("MSC: mover: GP1 over\n");
#endif

	/* 3. the new hashes, in a read-side section */
	reading[S_MOVER] = 1;
	do
	:: d_step {
		i < set_start[2] ->
		n = set_ent[i];
		if
		:: !mark[n] -> deref(n)          /* hash the key with s1 */
		:: else
		fi;
		i++
	   }
	:: i >= set_start[2] -> break
	od;
	reading[S_MOVER] = 0;
#ifdef EARLY_COOKIE
	/* wrong: GP2 taken now, before NEW is published */
	grace_period(gpw, S_MOVER);
	printf("MSC: mover: GP2 (early) over\n");
#endif

	/* relink, every lock held */
	d_step {
		lk[0] == 0 && lk[1] == 0 ->
		lk[0] = 1;
		lk[1] = 1;
		i = 0;
		t_tl[0] = NIL;
		t_tl[1] = NIL
	};
	do
	:: d_step {
		i < set_start[2] ->
		n = set_ent[i];
		if
		:: !mark[n] ->
			deref(n);
			hs[n] = 1;                           /* node->hash = new */
			t_b = nb[n];
			printf("MSC: mover: %d->hash = its s1 hash, to NEW list %d\n", n, t_b);
			if
			:: t_tl[t_b] == NIL -> nh[t_b] = n    /* NEW unpublished  */
			:: else ->
				printf("MSC: mover: %d->next = %d\n", t_tl[t_b], n);
				nxt[t_tl[t_b]] = n
			fi;
			t_tl[t_b] = n
		:: else
		fi;
		i++
	   }
	:: i >= set_start[2] -> break
	od;
	atomic {
		t_b = 0;
		do
		:: t_b < 2 ->
#ifndef MID_BEFORE_MEMBERS
			if
			:: t_tl[t_b] == NIL -> nh[t_b] = mh[t_b]
			:: else ->
				printf("MSC: mover: %d->next = MID head %d\n", t_tl[t_b], mh[t_b]);
				nxt[t_tl[t_b]] = mh[t_b]
			fi;
#else
			/* wrong: the MID chain first, then the members */
			if
			:: t_tl[t_b] == NIL -> nh[t_b] = mh[t_b]
			:: else ->
				nxt[t_tl[t_b]] = NIL;
				if
				:: mh[t_b] == NIL -> skip
				:: else ->
					t_p = mh[t_b];
					do
					:: nxt[t_p] != NIL -> t_p = nxt[t_p]
					:: else -> break
					od;
					printf("MSC: mover: MID node %d->next = member %d\n", t_p, nh[t_b]);
					nxt[t_p] = nh[t_b];
					nh[t_b] = mh[t_b]
				fi
			fi;
#endif
#ifdef MEMBERS_IN_MID
			/* wrong: the members linked into MID's chains */
			printf("MSC: mover: MID head[%d] = %d\n", t_b, nh[t_b]);
			mh[t_b] = nh[t_b];
#endif
			printf("MSC: mover: NEW head[%d] = %d\n", t_b, nh[t_b]);
			t_b++
		:: else -> break
		od;
		pub = NEW;                              /* publish(pub.buckets) */
		new_desc = STALE_WALK_FIX;
		printf("MSC: mover: NEW published\n");
		lk[0] = 0;
		lk[1] = 0;
		i = 0;
		n = 0
	};

	/* 4. GP2, then free */
#if !defined(NO_GP2) && !defined(EARLY_COOKIE)
	grace_period(gpw, S_MOVER);
	printf("MSC: mover: GP2 over\n");
#endif
#if STALE_WALK_FIX
	/* the fix: NEW's descriptor cleared only after GP2, when no walk that
	 * loaded MID is left; MID and the SET freed a grace period later
	 * (GP3: a deferred free in the C code, nobody waits for it) */
	d_step {
		new_desc = 0;
		old_freed = 1;
		printf("MSC: mover: NEW's descriptor cleared, OLD freed\n")
	};
#if !defined(NO_GP2) && !defined(EARLY_COOKIE) && !defined(NO_GP3)
	grace_period(gpw, S_MOVER);
	printf("MSC: mover: GP3 over\n");
#endif
#endif
	d_step {
		old_freed = 1;
		mid_freed = 1;
		set_freed = 1;
		printf("MSC: mover: OLD, MID and the SET freed\n")
	}
}

/* ------------------------------------------------------------------------
 * Updater
 * ------------------------------------------------------------------------ */
#if NUPD > 0
/* unlink r from chain b of array a (pred = r->next); not found: nothing */
inline unlink_or_swap(a, b, r, v)
{
	t_p = HEAD(a, b);
	if
	:: t_p == r ->
		if
		:: a == OLD -> oh[b] = v
		:: a == MID -> mh[b] = v
		:: else -> nh[b] = v
		fi;
		printf("MSC: updater: %c head[%d] = %d\n", AR(a), b, v)
	:: else ->
		do
		:: t_p != NIL && nxt[t_p] != r -> t_p = nxt[t_p]
		:: else -> break
		od;
		if
		:: t_p != NIL ->
			printf("MSC: updater: %d->next = %d\n", t_p, v);
			nxt[t_p] = v
		:: else ->
			printf("MSC: updater: %d not in %c chain %d\n", r, AR(a), b)
		fi
	fi
}

inline link_at_head(a, b, y)
{
	nxt[y] = HEAD(a, b);
	hs[y] = (a != OLD);
	if
	:: a == OLD -> oh[b] = y
	:: a == MID -> mh[b] = y
	:: else -> nh[b] = y
	fi;
	removed[y] = 0;
	printf("MSC: updater: %d linked at %c head[%d] -> %d\n", y, AR(a), b, nxt[y])
}

proctype updater()
{
	byte gpw = 0;
	byte cnt = 0;
	byte op = 0;
	byte r = 0;       /* the node removed or replaced                     */
	byte y = 0;       /* the node inserted, or the replacement            */
	byte a = 0;       /* the array loaded                                 */
	byte a2 = 0;      /* ... and loaded again under the lock              */
	byte h = 0;       /* the lock: the key's bucket under a's seed        */
	byte kn = 0;

	do
	:: cnt < NUPD ->
		atomic {
			y = NN + cnt;
			if
#if OPS & OP_INSERT
			:: op = OP_INSERT;
				kn = y;
#ifdef DUP
				key[y] = DK; ob[y] = ob[DK]; nb[y] = nb[DK]
#else
				key[y] = y;
				if
				:: ob[y] = 0
				:: ob[y] = 1
				fi;
				if
				:: nb[y] = 0
				:: nb[y] = 1
				fi
#endif
#endif
#if OPS & OP_REMOVE
			:: !NONE_LIVE -> op = OP_REMOVE;
				if
				ANY_LIVE(r)
				fi;
				kn = r
#endif
#if OPS & OP_REPLACE
			:: !NONE_LIVE -> op = OP_REPLACE;
				if
				ANY_LIVE(r)
				fi;
				kn = r;
				key[y] = key[r]; ob[y] = ob[r]; nb[y] = nb[r]
#endif
			fi;
			reading[S_UPD] = 1;                     /* read_lock       */
			a = pub;
			printf("MSC: updater: section begins, loads %c\n", AR(a))
		};
		do
		:: /* hash with a's seed, lock, load pub.buckets again */
			d_step {
				deref_array(a);
				h = (a == OLD -> ob[kn] : nb[kn])
			};
			atomic {
				lk[h] == 0 ->
				lk[h] = 1;
				a2 = pub;
				printf("MSC: updater: locks %d, loads %c\n", h, AR(a2))
			};
#ifndef NO_RECHECK
			if
			:: a2 != a ->
				atomic {
					printf("MSC: updater: %c became %c, again\n", AR(a), AR(a2));
					lk[h] = 0;
					a = pub
				}
			:: else -> break
			fi
#else
			break
#endif
		od;
		if
		:: op == OP_INSERT ->
			d_step {
				if
#ifdef INSERT_INTO_OLD
				:: a == MID -> t_b = ob[y]; link_at_head(OLD, t_b, y)  /* wrong */
#else
				:: a == MID -> t_b = nb[y]; link_at_head(MID, t_b, y)
#endif
				:: a == OLD -> t_b = ob[y]; link_at_head(OLD, t_b, y)
				:: a == NEW -> t_b = nb[y]; link_at_head(NEW, t_b, y)
				fi;
				gone[key[y]] = 0
			}
		:: op == OP_REMOVE ->
			d_step {
				removed[r] = 1;
				gone[key[r]] = 1;
				printf("MSC: updater: removes %d (%c mode)\n", r, AR(a));
				if
				:: a == MID && inset[r] ->
#ifndef NO_MARK
					mark[r] = 1;
					printf("MSC: updater: SET entry of %d marked\n", r)
#else
					skip                             /* wrong */
#endif
				:: a == MID && !inset[r] ->
					t_b = nb[r]; t_n = nxt[r]; unlink_or_swap(MID, t_b, r, t_n)
				:: a == OLD ->
					t_b = ob[r]; t_n = nxt[r]; unlink_or_swap(OLD, t_b, r, t_n)
				:: a == NEW ->
					t_b = nb[r]; t_n = nxt[r]; unlink_or_swap(NEW, t_b, r, t_n)
				fi
			}
		:: op == OP_REPLACE && a == MID && inset[r] ->
			printf("MSC: updater: replaces member %d by %d\n", r, y);
#ifndef MARK_BEFORE_LINK
			d_step { t_b = nb[y]; link_at_head(MID, t_b, y) };
			d_step { removed[r] = 1; mark[r] = 1; printf("MSC: updater: SET entry of %d marked\n", r) }
#else
			d_step { removed[r] = 1; mark[r] = 1; printf("MSC: updater: SET entry of %d marked\n", r) };
			d_step { t_b = nb[y]; link_at_head(MID, t_b, y) }  /* wrong: late */
#endif
		:: op == OP_REPLACE && !(a == MID && inset[r]) ->
			d_step {
				printf("MSC: updater: replaces %d by %d (%c mode)\n", r, y, AR(a));
				nxt[y] = nxt[r];
				hs[y] = (a != OLD);
				removed[y] = 0;
				removed[r] = 1;
				t_b = (a == OLD -> ob[r] : nb[r]);
				unlink_or_swap(a, t_b, r, y)
			}
		fi;
		atomic {
			lk[h] = 0;                              /* unlock          */
			reading[S_UPD] = 0                      /* read_unlock     */
		};
		if
		:: op != OP_INSERT ->
			grace_period(gpw, S_UPD);
			printf("MSC: updater: frees %d\n", r);
			freed[r] = 1
		:: else
		fi;
		d_step { op = 0; r = 0; y = 0; a = 0; a2 = 0; h = 0; kn = 0; cnt++ }
	:: cnt >= NUPD -> break
	od
}
#endif

/* ------------------------------------------------------------------------
 * The table at first: OLD bucket 0: 0 -> 1, OLD bucket 1: 2; MID empty.
 * ------------------------------------------------------------------------ */
init
{
	atomic {
		key[0] = 0; key[1] = 1; key[2] = 2;
		ob[0] = 0;  ob[1] = 0;  ob[2] = 1;
#ifdef NB_ANY
		if :: nb[0] = 0 :: nb[0] = 1 fi;
		if :: nb[1] = 0 :: nb[1] = 1 fi;
		if :: nb[2] = 0 :: nb[2] = 1 fi;
#else
		nb[0] = 0;  nb[1] = 1;  nb[2] = 0;
#endif
#ifdef DUP2
		key[1] = DK;  nb[1] = nb[DK];   /* a second node of key 0 */
#endif
		nxt[0] = 1; nxt[1] = NIL; nxt[2] = NIL;
		oh[0] = 0;  oh[1] = 2;
		mh[0] = NIL; mh[1] = NIL;
		nh[0] = NIL; nh[1] = NIL;
		t_i = NN;
		do
		:: t_i < NT ->
			removed[t_i] = 1; gone[t_i] = 1; nxt[t_i] = NIL; t_i++
		:: else -> break
		od;
		t_i = 0;
		printf("MSC: OLD: 0 -> 1 | 2; new buckets %d %d %d; keys %d %d %d; NIL = %d\n",
		       nb[0], nb[1], nb[2], key[0], key[1], key[2], NIL);
		pub = OLD;
		run mover();
#if READER
		run reader();
#endif
#ifdef ITER
		run iterator();
#endif
#if NUPD > 0
		run updater();
#endif
	}
}
