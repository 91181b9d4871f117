/*
 * unzip.pml -- Promela model of ONE family of two sibling buckets (a, b) of
 * a relhash table while it is being unzipped after an expansion, with
 * concurrent readers, a concurrent remover and (NINSERTS > 0) a concurrent
 * inserter that places its node inside its bucket's clean prefix.
 *
 * Algorithm: Triplett, McKenney & Walpole, "Resizable, Scalable, Concurrent
 * Hash Tables via Relativistic Programming" (USENIX ATC 2011), with updates
 * allowed during the unzip as doc/DESIGN.md section 8 argues (a node with
 * two predecessors in a zipped family; cursors re-derived under the lock).  Run it with
 * tests/model/run-spin.sh.
 *
 * Processes, and the C function each one mirrors:
 *   reader()    relhash__lookup_inline() in include/relhash/inline.h, inside
 *               a read-side critical section (read_lock ... read_unlock).
 *   unzipper()  unzip_family() in src/table/resize.c: one patch per pass under the
 *               family's bucket lock, a grace period between passes.
 *   remover()   chain_redirect() in src/table/table.c, followed by the grace
 *               period and the reclaim of the removed node.
 *   inserter()  insert_node() in src/table/table.c while the family has one array
 *               (`placing`): under the family lock, a node N of bucket x is
 *               linked at any link L of x's clean prefix (head[x], or the
 *               `next` of one of x's own nodes from the head on, up to the
 *               one just before the crossing), never after a foreign node:
 *               N->next = *L, then publish *L = N.  Between and during the
 *               unzipper's passes, at any point except inside another
 *               locked update; readers may be anywhere.  N is a spare node
 *               NN, NN+1, ...; the remover may remove it again.
 *   init        the end of an expansion: the new table's two sibling heads
 *               point into the old, still zipped chain.
 *
 * Properties (all asserts, so a plain safety run checks them):
 *   P1  a lookup never misses a node that was not removed before the lookup
 *       ended .......................... assert(n == k || removed[k])
 *       (removed[] is set when a removal starts and is never cleared, so
 *       this is "found, or the node was removed before the lookup ended".
 *       A spare is `removed` until its insertion publishes it; a lookup
 *       only looks for nodes in the table when it begins, so an inserted
 *       node must be found by every lookup begun after its publication.)
 *   P2  a reader never dereferences a reclaimed node, checked at every
 *       dereference .................... assert(!reclaimed[n])
 *   P3  termination of the unzipper: at most NN-1 patches (asserted;
 *       insertions into clean prefixes add no crossing), and
 *       when it stops both chains really hold only their own colour.  Every
 *       other turn of its loop consumes a `skipped` flag, set at most once
 *       per removal, and grace periods end because readers are bounded, so
 *       the unzipper cannot loop forever; a process stuck forever would be
 *       an invalid end state, which spin reports.
 *   INV after every locked update: I1 (head[x] is NIL or a node of colour
 *       x), I2 (every live node of colour x, inserted ones included, is
 *       reachable from head[x]), the
 *       chains are acyclic, removed nodes are unreachable, and whenever the
 *       family is not clean exactly one crossing is safe to patch, and
 *       unzip_family()'s cheaper test picks the same one.  Turned
 *       off with -DCHECK_INVARIANTS=0: the negative controls do that, so
 *       that they have to be caught by what a reader observes (P1, P2).
 *
 * Compile-time switches (spin -DNAME[=value]):
 *   NN                  nodes in the initial zipped chain, 2..7 (default 5)
 *   MINLEN              shortest initial chain tried (default NN).  Every
 *                       length MINLEN..NN and every colour pattern with node
 *                       0 in bucket a (the rest is its mirror image) is tried.
 *   NREADERS            1 or 2 reader processes (default 2)
 *   NLOOKUPS            lookups per reader (default 2)
 *   NREMOVALS           removals the remover may do, one after the other
 *                       (default 1); it may also stop earlier
 *   NINSERTS            insertions, one after the other (default 0: no
 *                       inserter); NN + NINSERTS <= 8.  Every bucket, every
 *                       link of its clean prefix and every moment is tried.
 *   INSERT_PAST_PREFIX  the inserter may also link N after foreign nodes,
 *                       at any link on x's chain.  Not a bug in this model:
 *                       spin verifies it (see "Inserting past the prefix"
 *                       below), so it is no negative control.
 *   REDIRECT_HEAD_LAST  the remover stores the `next` pointers first and the
 *                       head last (default: head first)
 *   HEAD_TO_NEXT        what chain_redirect() in src/table/table.c actually does
 *                       (as of commit 3a440c2): a head that points to the
 *                       removed node r gets r->next, even when that is a node
 *                       of the other bucket, so I1 is relaxed to "a head is
 *                       NIL or points into the family"; an empty clean prefix
 *                       then ends at the head itself, and the unzipper patches
 *                       the head (clean_prefix() in src/table/resize.c: *link =
 *                       &heads[i]).  The removal never skips a node, so no
 *                       `skipped` flag is needed (GP_AFTER_HEAD_SKIP is
 *                       forced to 0), and spin verifies it.
 *   GP_AFTER_HEAD_SKIP  1 (default) the fix described below; 0 the algorithm
 *                       as first specified: spin finds a P1 violation.
 *   GP_AFTER_LAST_PATCH 0 (default, as src/table/resize.c does) the unzipper stops
 *                       without a grace period when its patch left the
 *                       family clean; 1: it waits one more grace period
 *                       and makes a pass that finds the family clean (the
 *                       code before doc/DESIGN.md's "No grace period after
 *                       the last patch").  The readers, the remover and the
 *                       inserter go on after the unzipper stops either way;
 *                       the remover then treats the family as at rest.
 *   Negative controls, each must make spin report an error:
 *   GP_BETWEEN_PATCHES=0  no grace period between two unzip passes (P1)
 *   BUG_FIRST_PRED        the remover redirects only the first `next`
 *                         pointer to the victim (P2)
 *   BUG_STOP_AT_FOREIGN   the reader stops at the first node of the other
 *                         bucket (P1)
 *   BUG_NO_GP_RECLAIM     the remover reclaims without a grace period (P2)
 *   BUG_CLEAR_FLAG_LATE   the unzipper clears `skipped` after its grace
 *                         period instead of before it (P1; needs 2 removals)
 *   BUG_INSERT_PUBLISH_FIRST  the inserter publishes *L = N before it sets
 *                         N->next (P1; needs NINSERTS)
 *   BUG_INSERT_OTHER_PREFIX   a node of bucket x is linked into the clean
 *                         prefix of the other bucket (P1, I1/I2; needs
 *                         NINSERTS)
 *   BUG_LAST_PATCH_EARLY  the unzipper takes every patch for the family's
 *                         last and stops: the remover at rest then misses
 *                         a pointer to its victim (P2)
 *
 * ---------------------------------------------------------------------------
 * THE HEAD-SKIP HAZARD (found with this model; GP_AFTER_HEAD_SKIP=0 shows it)
 *
 * If the remover removes the node head[x] points to and removed->next has the
 * other colour y, I1 forces it to set head[x] to the first x node further
 * down, SKIPPING a run of y nodes.  That store is an unzip patch in disguise.
 * Readers of x that loaded the old head still walk through the skipped y
 * run, which the unzipper now sees as the top of y's clean prefix; its next
 * pass may, in the same grace period, patch the last node of that run to
 * skip the x nodes those readers look for.  A 4-node trail (run-spin.sh
 * prints the equivalent one spin finds), chain a0 -> b1 -> a2 -> b3,
 * head[a] = a0, head[b] = b1:
 *   1. a reader looking up a2 loads head[a] = a0;
 *   2. the remover removes a0: head[a] = a2, skipping b1 (a0->next stays b1);
 *   3. an unzip pass: prefix(a) = {a2}, prefix(b) = {b1}, F_b = a2 lies in
 *      prefix(a), so the "safe" patch is b1->next = b3;
 *   4. the reader walks a0 -> b1 -> b3 -> NIL: it misses a2, never removed.
 * Fix 1 (GP_AFTER_HEAD_SKIP=1): a removal that moves a head past at least one
 * foreign node sets a per-family flag `skipped`, under the lock.  A pass
 * that finds the flag set clears it, drops the lock, waits for a grace
 * period and tries again.  Redirecting a `next` pointer to removed->next, or
 * a head to a removed->next of its own colour, needs no wait: spin agrees
 * (the flag is set only for real skips and the model passes).
 * Fix 2 (HEAD_TO_NEXT, what the C code does): do not keep I1 in the remover;
 * set the head to removed->next like any other pointer and let the unzipper
 * skip the foreign run at the head later, as one of its own patches, under
 * the one-patch-per-grace-period rule.
 * ---------------------------------------------------------------------------
 *
 * Modelling notes
 *  - Node identity = position in the initial chain (0..NN-1), then the
 *    spares for insertions (NN..NT-1, NT = NN + NINSERTS); NIL = NT.  A
 *    node's key is its identity, its bucket is col[] (0 = a, 1 = b).
 *  - Updaters hold the family lock for all their stores; readers never take
 *    it.  What an updater only reads under the lock is stable, so its
 *    computation shares a d_step with the store it leads to, but every
 *    store readers can see is its own step (the unzipper makes only one).
 *  - Grace period: the waiter has to observe every reader outside a
 *    read-side critical section at least once after the grace period began,
 *    one reader at a time, in any order.  This allows exactly the executions
 *    that "snapshot the active readers and their generations, then wait
 *    until each of them has left or moved to a newer generation" allows:
 *    whenever the latter lets the waiter go, each reader was outside its
 *    critical section at some moment since the snapshot, and the
 *    observation (which changes no shared state) can be put there.
 *  - A reader enters its critical section and loads the head in one step;
 *    its last dereference, the P1 check and the exit are one step.  This
 *    makes read-side critical sections as short as they can be, which can
 *    expose bugs, never hide them.
 *  - printf lines narrate a trail when it is replayed (spin -t); the
 *    verifier itself never prints them.
 *  - Inserting past the prefix (INSERT_PAST_PREFIX): linking N after a
 *    foreign node Q on x's chain keeps every position a reader can occupy
 *    (N->next is Q's old next) and only adds N, so "after a grace period,
 *    readers stand only where the current pointers lead" still holds, and
 *    the unzipper, re-deriving prefixes and the safe crossing from the
 *    pointers at every pass, copes (spin agrees).  It may add crossings and
 *    passes (P3's bound is then NN + NINSERTS - 1), and it can cut the
 *    other bucket's clean prefix short (Q in it, N now its crossing): a
 *    cursor of src/table/resize.c past Q would then no longer be in that prefix.
 *    Cursors are not modelled, so the model cannot show whether that
 *    matters; the C code never inserts there.
 *  - One expansion step only: the next resize (another expansion, or a
 *    shrink's splices), which may start at once after the last patch, is
 *    argued in doc/DESIGN.md ("No grace period after the last patch"), not
 *    modelled.  The inserter does not switch to at-rest placement (it
 *    already places in its bucket's clean prefix, which at rest is the
 *    whole chain).
 *  - Not modelled: inserts while the family spans two arrays (they go at
 *    the heads, before the unzip starts); readers still on the old array
 *    before the expansion's first grace period; the unzipper's per-bucket cursors in
 *    src/table/resize.c (the model re-derives each clean prefix from its head at
 *    every pass, which the cursors must be equivalent to); weak memory
 *    (the model is sequentially consistent: it assumes acquire loads,
 *    release stores and a grace period that orders everything before it).
 *  - Scratch variables used only inside d_steps are `hidden` (not part of
 *    the state vector).  So -DBFS cannot be used; use pan -i for short trails.
 */

#ifndef NN
#define NN 5
#endif
#ifndef MINLEN
#define MINLEN NN
#endif
#ifndef NREADERS
#define NREADERS 2
#endif
#ifndef NLOOKUPS
#define NLOOKUPS 2
#endif
#ifndef NREMOVALS
#define NREMOVALS 1
#endif
#ifndef NINSERTS
#define NINSERTS 0
#endif
#ifndef GP_BETWEEN_PATCHES
#define GP_BETWEEN_PATCHES 1
#endif
#ifndef GP_AFTER_LAST_PATCH
#define GP_AFTER_LAST_PATCH 0
#endif
#ifndef GP_AFTER_HEAD_SKIP
#define GP_AFTER_HEAD_SKIP 1
#endif
#ifndef CHECK_INVARIANTS
#define CHECK_INVARIANTS 1
#endif
#ifdef HEAD_TO_NEXT
/* a removal never skips anything, so there is nothing to flag */
#undef GP_AFTER_HEAD_SKIP
#define GP_AFTER_HEAD_SKIP 0
#endif

#define NT   (NN + NINSERTS)             /* nodes: the chain, then spares   */
#if NT > 8
#error "NN + NINSERTS must be at most 8"
#endif
#ifdef INSERT_PAST_PREFIX
#define PATCH_BOUND NT                   /* P3: an insertion may add one    */
#else
#define PATCH_BOUND NN
#endif
#define NIL  NT                          /* the NULL pointer                */
#define HEADP (NT + 1)                   /* t_P: "the head pointer itself"  */
#define CA   0                           /* bucket a                        */
#define CB   1                           /* bucket b                        */
#define CH(i) (col[i] -> 'b' : 'a')      /* bucket letter, for printf       */

#if NREADERS == 1
#define ALLREADERS 1
#else
#define ALLREADERS 3
#endif

#if GP_AFTER_HEAD_SKIP
#define PASS_GUARD (lock == 0 && !skipped)
#else
#define PASS_GUARD (lock == 0)
#endif

/* ------------------------------------------------------------------------
 * Shared state of the family
 * ------------------------------------------------------------------------ */
byte nxt[NT];             /* node->next                                     */
byte head[2];             /* the new table's heads of buckets a and b       */
bit  col[NT];             /* the bucket a node hashes to                    */
bit  removed[NT];         /* unlinked (or never in the table); set when the
                             removal starts, before its first store         */
bit  reclaimed[NT];       /* freed: must never be dereferenced again        */
bit  reading[NREADERS];   /* reader i is in a read-side critical section   */
bit  lock;                /* the family's bucket lock (updaters only)       */
bit  rest;                /* the unzipper stopped: zip_mask cleared, the
                             remover treats the family as at rest */
hidden byte r_on[NT];
hidden byte r_p;
bit  skipped;             /* a head moved past a foreign node since the
                             unzipper last began a grace period             */

/* scratch for d_steps only, not part of the state vector */
hidden byte t_i, t_p, t_q, t_x, t_n;
hidden byte t_P[2], t_F[2];
hidden byte t_safe[2];
hidden byte t_reach[2 * NT];   /* t_reach[x*NT+i]: i reachable from head[x] */

/* ------------------------------------------------------------------------
 * Grace period (synchronize, on the updater side).  gpw: a byte local to
 * the caller, the set of readers seen quiescent since the grace period began.
 * ------------------------------------------------------------------------ */
inline grace_period(gpw)
{
	gpw = 0;
	do
	:: atomic { !(gpw & 1) && !reading[0] -> gpw = gpw | 1 }
#if NREADERS > 1
	:: atomic { !(gpw & 2) && !reading[1] -> gpw = gpw | 2 }
#endif
	:: gpw == ALLREADERS -> gpw = 0; break
	od
}

/* ------------------------------------------------------------------------
 * Structural invariants, checked at the end of every locked update.  For use
 * inside a d_step.
 * ------------------------------------------------------------------------ */
inline check_invariants()
{
#if CHECK_INVARIANTS
	t_i = 0;
	do
	:: t_i < 2 * NT -> t_reach[t_i] = 0; t_i++
	:: else -> break
	od;
	t_x = 0;
	do
	:: t_x < 2 ->
#ifndef HEAD_TO_NEXT
		assert(head[t_x] == NIL || col[head[t_x]] == t_x);     /* I1 */
#endif
		t_p = head[t_x];
		t_n = 0;
		do
		:: t_p != NIL ->
			t_reach[t_x * NT + t_p] = 1;
			t_p = nxt[t_p];
			t_n++;
			assert(t_n <= NT)                           /* acyclic */
		:: else -> break
		od;
		t_x++
	:: else -> break
	od;
	t_i = 0;
	do
	:: t_i < NT ->
		if
		:: removed[t_i] ->            /* unlinked means unreachable */
			assert(!t_reach[t_i] && !t_reach[NT + t_i])
		:: else ->                                               /* I2 */
			assert(t_reach[col[t_i] * NT + t_i])
		fi;
		t_i++
	:: else -> break
	od
#else
	skip
#endif
}

/* the negative control BUG_STOP_AT_FOREIGN: the walk ends at a foreign node */
#ifdef BUG_STOP_AT_FOREIGN
#define STOP_EARLY(n, k) (col[n] != col[k])
#else
#define STOP_EARLY(n, k) false
#endif

/* is any node still in the table?  (removals are final) */
#define SOME_LIVE (!removed[0] || \
	(NT > 1 && !removed[1 % NT]) || (NT > 2 && !removed[2 % NT]) || \
	(NT > 3 && !removed[3 % NT]) || (NT > 4 && !removed[4 % NT]) || \
	(NT > 5 && !removed[5 % NT]) || (NT > 6 && !removed[6 % NT]) || \
	(NT > 7 && !removed[7 % NT]))

/* nondeterministic choice of a node still in the table */
#define ANY_LIVE(v) \
	:: !removed[0] -> v = 0 \
	:: NT > 1 && !removed[1 % NT] -> v = 1 % NT \
	:: NT > 2 && !removed[2 % NT] -> v = 2 % NT \
	:: NT > 3 && !removed[3 % NT] -> v = 3 % NT \
	:: NT > 4 && !removed[4 % NT] -> v = 4 % NT \
	:: NT > 5 && !removed[5 % NT] -> v = 5 % NT \
	:: NT > 6 && !removed[6 % NT] -> v = 6 % NT \
	:: NT > 7 && !removed[7 % NT] -> v = 7 % NT

/* ------------------------------------------------------------------------
 * Reader: relhash__lookup_inline() in include/relhash/inline.h, inside
 * relhash_read_lock() ... relhash_read_unlock():
 *     n = load(head[bucket(k)]);
 *     for (; n; n = load(n->next)) if (key(n) == k) return n;
 *     return NULL;
 * It walks past nodes of the other bucket to the end of the chain.
 * ------------------------------------------------------------------------ */
proctype reader(byte id)
{
	byte round = 0;
	byte k = 0;
	byte n = 0;

	do
	:: atomic {
			round < NLOOKUPS && SOME_LIVE ->
			if                                /* any key present now */
			ANY_LIVE(k)
			fi;
			reading[id] = 1;                  /* read_lock              */
			n = head[col[k]];                 /* load(head[bucket(k)])  */
			printf("MSC: reader %d looks up %d%c, head[%c] = %d\n",
			       id, k, CH(k), CH(k), n)
		};
		do
		:: d_step {
			n != NIL && n != k && !STOP_EARLY(n, k) ->
			if
			:: reclaimed[n] ->
				printf("MSC: reader %d dereferences RECLAIMED %d%c\n", id, n, CH(n))
			:: else
			fi;
			assert(!reclaimed[n]);            /* P2: n->hash, n->next   */
			printf("MSC: reader %d at %d%c -> %d\n", id, n, CH(n), nxt[n]);
			n = nxt[n]                        /* load(n->next)          */
		   }
		:: d_step {
			(n == NIL || n == k || STOP_EARLY(n, k)) ->
			if
			:: n != NIL && reclaimed[n] ->
				printf("MSC: reader %d dereferences RECLAIMED %d%c\n", id, n, CH(n))
			:: else
			fi;
			assert(n == NIL || !reclaimed[n]); /* P2: the key compare   */
			if
			:: n == k -> printf("MSC: reader %d found %d%c\n", id, k, CH(k))
			:: else -> printf("MSC: reader %d did NOT find %d%c\n", id, k, CH(k))
			fi;
			assert(n == k || removed[k]);      /* P1                    */
			reading[id] = 0;                   /* read_unlock           */
			k = 0;
			n = 0;
			round++
		   };
		   break
		od
	:: else -> break
	od
}

/* ------------------------------------------------------------------------
 * Unzipper: unzip_family() in src/table/resize.c.  Each pass, under the family
 * lock:
 *   - for each colour x: P_x = last node of x's clean prefix (the run of x
 *     nodes that starts at head[x]), F_x = P_x->next, the first foreign
 *     node (or NIL).  Both F NIL: the family is clean, stop.
 *   - exactly one crossing is safe: the one whose F_x lies inside the OTHER
 *     colour's clean prefix (every reader of that colour starts below P_x).
 *     Patch it with ONE store: P_x->next = the first x node after F_x, or
 *     NIL.
 * then, with the lock dropped, a grace period before the next pass.
 * ------------------------------------------------------------------------ */
proctype unzipper()
{
	byte gpw = 0;
	byte patches = 0;
	bit clean = 0;

	do
#if GP_AFTER_HEAD_SKIP
	/* A head moved past foreign nodes since our last grace period began:
	 * readers that loaded the old head may be walking through what we are
	 * about to call the other colour's clean prefix.  Take the lock, clear
	 * the flag, drop the lock, wait those readers out, try again. */
	:: atomic {
		lock == 0 && skipped ->
#ifndef BUG_CLEAR_FLAG_LATE
		skipped = 0;
#endif
		printf("MSC: unzipper: head skip seen, grace period first\n")
	   };
		grace_period(gpw)
#ifdef BUG_CLEAR_FLAG_LATE
		/* wrong: a head skip during that grace period goes unnoticed */
		; atomic { lock == 0 -> skipped = 0 }
#endif
#endif
	:: d_step {
		PASS_GUARD ->
		lock = 1;

		/* the clean prefixes */
		t_x = 0;
		do
		:: t_x < 2 ->
			t_P[t_x] = NIL;
			t_F[t_x] = NIL;
			t_p = head[t_x];
			if
			:: t_p != NIL && col[t_p] != t_x ->
				/* empty prefix: the head itself leads out of it
				 * (only with HEAD_TO_NEXT) */
				t_P[t_x] = HEADP;
				t_F[t_x] = t_p
			:: t_p != NIL && col[t_p] == t_x ->
				do
				:: nxt[t_p] != NIL && col[nxt[t_p]] == t_x ->
					t_p = nxt[t_p]
				:: else -> break
				od;
				t_P[t_x] = t_p;
				t_F[t_x] = nxt[t_p]
			:: else
			fi;
			t_x++
		:: else -> break
		od;

		/* t_safe[x]: F_x lies inside the other colour's clean prefix */
		t_x = 0;
		do
		:: t_x < 2 ->
			t_safe[t_x] = 0;
			if
			:: t_F[t_x] != NIL ->
				t_p = head[1 - t_x];
				do
				:: t_p != NIL && t_p != t_F[t_x] && col[t_p] == 1 - t_x ->
					t_p = nxt[t_p]
				:: else -> break
				od;
				t_safe[t_x] = (t_p == t_F[t_x])
			:: else
			fi;
			t_x++
		:: else -> break
		od;

		if
		:: t_F[CA] == NIL && t_F[CB] == NIL ->
			clean = 1;
			printf("MSC: unzipper: family clean\n")
		:: else ->
#if CHECK_INVARIANTS
			assert(t_safe[CA] + t_safe[CB] == 1);   /* exactly one */
			/* unzip_family()'s shortcut for the same test: a's
			 * crossing is the one iff the first a node from F_a on
			 * is F_b (both may be NIL) */
			t_q = NIL;
			if
			:: t_F[CA] != NIL ->
				t_q = t_F[CA];
				do
				:: t_q != NIL && col[t_q] != CA -> t_q = nxt[t_q]
				:: else -> break
				od
			:: else
			fi;
			assert(t_safe[CA] == (t_F[CA] != NIL && t_q == t_F[CB]));
#endif
			if
			:: t_safe[CA] -> t_x = CA
			:: t_safe[CB] -> t_x = CB
			:: else ->
				/* only with broken invariants (negative controls run
				 * without the INV asserts): nothing safe, give up */
				t_x = 2
			fi;
			if
			:: t_x < 2 ->
				/* the first node of colour x after the foreign run */
				t_q = nxt[t_F[t_x]];
				do
				:: t_q != NIL && col[t_q] != t_x -> t_q = nxt[t_q]
				:: else -> break
				od;
				if
				:: t_P[t_x] == HEADP ->
					printf("MSC: unzipper: patch head[%c] = %d (was %d)\n",
					       (t_x -> 'b' : 'a'), t_q, t_F[t_x]);
					head[t_x] = t_q          /* THE patch: one store */
				:: else ->
					printf("MSC: unzipper: patch %d%c->next = %d (was %d)\n",
					       t_P[t_x], CH(t_P[t_x]), t_q, t_F[t_x]);
					nxt[t_P[t_x]] = t_q      /* THE patch: one store */
				fi;
				patches++;
				assert(patches < PATCH_BOUND); /* P3: bounded passes   */
				/* unzip_family()'s UNZIP_LAST_PATCH: the patched
				 * crossing now ends x's chain, and (on b's side)
				 * a's prefix had none: the family is clean, and the
				 * unzipper stops without a grace period. */
#if CHECK_INVARIANTS
				/* the first x node after the foreign run is where the
				 * other colour's prefix ends: so on a's side a NIL
				 * patch means b was clean, and on b's side
				 * t_F[CA] == NIL follows from t_q == NIL */
				assert(t_x != CB || t_q == t_F[CA]);
				assert(t_x != CA || t_q == t_F[CB]);
#endif
#ifdef BUG_LAST_PATCH_EARLY
				clean = !GP_AFTER_LAST_PATCH
#else
				clean = !GP_AFTER_LAST_PATCH && t_q == NIL &&
				        (t_x == CA || t_F[CA] == NIL)
#endif
			:: else ->
				clean = 1
			fi
		fi;
		check_invariants();
		lock = 0
	   };
		if
		:: clean -> rest = 1; break
		:: else
		fi;
#if GP_BETWEEN_PATCHES
		grace_period(gpw)
#else
		skip
#endif
	od;

	/* P3: clean means each chain holds only its own colour */
	atomic {
		lock == 0 ->
#if CHECK_INVARIANTS
		t_x = 0;
		do
		:: t_x < 2 ->
			t_p = head[t_x];
			do
			:: t_p != NIL -> assert(col[t_p] == t_x); t_p = nxt[t_p]
			:: else -> break
			od;
			t_x++
		:: else -> break
		od
#else
		skip
#endif
	}
}

/* ------------------------------------------------------------------------
 * Remover: chain_redirect() in src/table/table.c, then the grace period and the
 * reclaim.  Under the family lock, every pointer to the victim r within the
 * family is redirected, one store each:
 *   - head[col(r)], if it is r: = the first node of colour col(r) at or
 *     after r->next (keeps I1; may skip foreign nodes: THE HEAD-SKIP HAZARD)
 *   - every node->next == r (a zipped family can have two): = r->next
 * r->next itself is left alone so that readers standing on r can go on.
 * ------------------------------------------------------------------------ */
#ifdef HEAD_TO_NEXT
/* what chain_redirect() in src/table/table.c does: every head that points to r
 * (either one: a head may point at a foreign node) = r->next */
inline redirect_one_head(x)
{
	d_step {
		if
		:: head[x] == r ->
			printf("MSC: remover: head[%c] = %d\n", (x -> 'b' : 'a'), nxt[r]);
			head[x] = nxt[r]
		:: else
		fi
	}
}
inline redirect_head()
{
	if
	:: atrest -> redirect_one_head(col[r])
	:: else ->
	redirect_one_head(CA);
	redirect_one_head(CB)
	fi
}
#else
inline redirect_head()
{
	d_step {
		if
		:: head[col[r]] == r ->
			t_q = nxt[r];
			do
			:: t_q != NIL && col[t_q] != col[r] -> t_q = nxt[t_q]
			:: else -> break
			od;
			printf("MSC: remover: head[%c] = %d\n", CH(r), t_q);
#if GP_AFTER_HEAD_SKIP
			if
			:: t_q != nxt[r] -> skipped = 1     /* a head skip */
			:: else
			fi;
#endif
			head[col[r]] = t_q
		:: else
		fi
	}
}
#endif

proctype remover()
{
	byte gpw = 0;
	byte cnt = 0;
	byte r = 0;
	byte i = 0;
	bit atrest = 0;

	do
	:: atomic {
			cnt < NREMOVALS && lock == 0 && SOME_LIVE ->
			lock = 1;                         /* spin_lock(bucket)      */
			if
			ANY_LIVE(r)
			fi;
			removed[r] = 1;
			/* After the unzipper stopped, the family is at rest for
			 * updaters (zip_mask cleared): like chain_redirect() with
			 * a view of one bucket, redirect only r's own head and
			 * the predecessors on r's own chain (r_on), while
			 * readers may still follow the last patch's old pointer
			 * (doc/DESIGN.md, "No grace period after the last
			 * patch"). */
			atrest = rest;
			printf("MSC: remover: removes %d%c\n", r, CH(r))
		};
#ifndef REDIRECT_HEAD_LAST
		redirect_head();
#endif
		/* each predecessor's next, one store each, in chain order */
		do
		:: d_step {
			i < NT ->
			r_p = 0;
			do
			:: r_p < NT -> r_on[r_p] = 0; r_p++
			:: else -> break
			od;
			r_p = head[col[r]];
			do
			:: r_p != NIL && r_on[r_p] == 0 -> r_on[r_p] = 1; r_p = nxt[r_p]
			:: else -> break
			od;
			do
			:: i < NT && (removed[i] || nxt[i] != r || (atrest && !r_on[i])) -> i++
			:: else -> break
			od;
			if
			:: i < NT ->
				printf("MSC: remover: %d%c->next = %d\n", i, CH(i), nxt[r]);
				nxt[i] = nxt[r];
#ifdef BUG_FIRST_PRED
				i = NT
#else
				i++
#endif
			:: else
			fi
		   }
		:: i >= NT -> break
		od;
		i = 0;
		atrest = 0;
#ifdef REDIRECT_HEAD_LAST
		redirect_head();
#endif
		d_step {
			check_invariants();
			lock = 0                          /* spin_unlock(bucket)    */
		};
#ifndef BUG_NO_GP_RECLAIM
		grace_period(gpw);
#endif
		printf("MSC: remover: reclaims %d%c\n", r, CH(r));
		reclaimed[r] = 1;                        /* free / poison          */
		r = 0;
		cnt++
	:: break                                         /* remove fewer          */
	od
}

/* ------------------------------------------------------------------------
 * Inserter: insert_node() in src/table/table.c while the family has one array
 * (`placing`): under the family lock, the new node N of bucket x goes into
 * x's clean prefix, at any link L in it: head[x] itself, or the `next` of
 * one of x's own nodes from the head on, the last one included (N then
 * sits just before the crossing).  Never after a foreign node.
 *     N->next = *L;          (N not reachable yet: no reader sees this)
 *     publish(*L, N);        (release)
 * Nothing else stores under the lock in between and no reader can see N
 * before the publication, so the two stores, the choice of L and the
 * invariant check are one atomic step.  The split order that picks L in
 * the C code does not matter here: every L the C code can pick is tried.
 * N is spare node NN + (insertions so far); it is in the table (removed
 * cleared) from its publication on, so lookups begun later must find it,
 * and the remover may remove it.
 * ------------------------------------------------------------------------ */
#if NINSERTS > 0
#ifdef INSERT_PAST_PREFIX
/* walk on past foreign nodes too: L may be any link on x's chain */
#define MAY_PLACE_AFTER(p, x) (p != NIL)
#else
#define MAY_PLACE_AFTER(p, x) (p != NIL && col[p] == x)
#endif

proctype inserter()
{
	byte cnt = 0;
	byte x = 0;       /* N's bucket                                      */
	byte l = 0;       /* the link: HEADP for head[x], else node l's next */
	byte p = 0;       /* *L: what N->next will be                        */
	byte nn = 0;      /* N                                               */

	do
	:: atomic {
		cnt < NINSERTS && lock == 0 ->
		lock = 1;                                 /* spin_lock(bucket) */
		nn = NN + cnt;
		if
		:: x = CA
		:: x = CB
		fi;
#ifdef BUG_INSERT_OTHER_PREFIX
		col[nn] = 1 - x;     /* wrong: N goes into the other bucket's prefix */
#else
		col[nn] = x;
#endif
		l = HEADP;
		p = head[x];
		do
		:: break                                  /* L is here         */
		:: MAY_PLACE_AFTER(p, x) -> l = p; p = nxt[p]
		od;
#ifndef BUG_INSERT_PUBLISH_FIRST
		nxt[nn] = p;                              /* N->next = *L      */
#endif
		if                                        /* publish(*L, N)    */
		:: l == HEADP ->
			printf("MSC: inserter: head[%c] = %d%c -> %d\n",
			       (x -> 'b' : 'a'), nn, CH(nn), p);
			head[x] = nn
		:: else ->
			printf("MSC: inserter: %d%c->next = %d%c -> %d\n",
			       l, CH(l), nn, CH(nn), p);
			nxt[l] = nn
		fi;
		removed[nn] = 0
#ifndef BUG_INSERT_PUBLISH_FIRST
		;
		check_invariants();
		lock = 0;                                 /* spin_unlock       */
		x = 0; l = 0; p = 0; nn = 0;
		cnt++
	   }
#else
	   };
		/* wrong: N was reachable before its next was set */
		d_step {
			printf("MSC: inserter: %d%c->next = %d (late)\n", nn, CH(nn), p);
			nxt[nn] = p;
			check_invariants();
			lock = 0;
			x = 0; l = 0; p = 0; nn = 0;
			cnt++
		}
#endif
	:: cnt >= NINSERTS -> break
	od
}
#endif

/* ------------------------------------------------------------------------
 * Initial state: the zipped chain 0 -> 1 -> ... -> len-1 -> NIL, for every
 * colour pattern with node 0 in bucket a and every len in MINLEN..NN; each
 * head at the first node of its colour.  Nodes len..NN-1 are not in the
 * table (removed and reclaimed: never chosen, never reachable); the spares
 * NN..NT-1 are removed (not in the table) until the inserter publishes them.
 * ------------------------------------------------------------------------ */
init
{
	byte i = 0;
	byte clen = NN;

	atomic {
		do
		:: clen > MINLEN -> clen--
		:: true -> break
		od;
		col[0] = CA;
		i = 1;
		do
		:: i < clen ->
			if
			:: col[i] = CA
			:: col[i] = CB
			fi;
			i++
		:: else -> break
		od;
		head[CA] = NIL;
		head[CB] = NIL;
		i = clen;
		do
		:: i > 0 ->
			i--;
			nxt[i] = (i + 1 < clen -> i + 1 : NIL);
			head[col[i]] = i
		:: else -> break
		od;
		i = clen;
		do
		:: i < NN -> removed[i] = 1; reclaimed[i] = 1; nxt[i] = NIL; i++
		:: else -> break
		od;
		/* the spares NN..NT-1: not in the table yet, never freed */
		do
		:: i < NT -> removed[i] = 1; nxt[i] = NIL; i++
		:: else -> break
		od;
		printf("MSC: zipped chain of %d nodes, NIL = %d, head[a] = %d, head[b] = %d\n",
		       clen, NIL, head[CA], head[CB]);
		i = 0;
		do
		:: i < clen -> printf("MSC:   node %d%c -> %d\n", i, CH(i), nxt[i]); i++
		:: else -> break
		od;
		i = 0;
		clen = 0;

		run unzipper();
		run remover();
#if NINSERTS > 0
		run inserter();
#endif
		run reader(0);
#if NREADERS > 1
		run reader(1)
#endif
	}
}
