/* Communicators that some members had freed at the checkpoint while others still held them.
 *
 * MPICH's MPI_Comm_free does not wait for the other members, and programs free shared
 * communicators at different places: MPICH's comm/cmfree frees a duplicate of world on one
 * rank, then all ranks make a thousand communicators, then the others free it.  Counting the
 * free on the collective clock would make every member go on to its own free before the job
 * could park, at one raise per collective on the way, so frees are not counted (the clock
 * keeps the freeing member's count, so the others still finish the collectives it made
 * there).  A checkpoint can therefore find a communicator that some of its members freed and
 * others hold, live or freed with requests still pinning it (comm_freed.c).
 *
 * A restart makes every communicator collectively over all its members, so a member that
 * holds no record of one must take part anyway: the holders describe it (members and
 * topology constructor, which every member passes alike), and each member without a record
 * makes it as a "ghost" with them, in the same order, and frees it at once.  Nothing of the
 * application reaches a ghost: the member had freed it.
 *
 * The common case costs one reduction: each holder adds a hash per position it holds in a
 * communicator, its first member (of an intercommunicator: the first of the side with the
 * lower first world rank) adds the hashes of all positions, and the two sums are equal when
 * every member holds every communicator.  Only when they differ are the lists gathered:
 * (group id, index, member count) of every communicator held, then the descriptions of the
 * ones fewer members hold than it has, each given by its holder of lowest world rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_algorithm.h"
#include "comm_rec.h"

static int error(const char *call, int rc)
{
  return mana_rebuild_error("communicators", 0, call, rc);
}

/* ---- the check ---- */

/* An intercommunicator's sides number their members alike: the side whose first member has
 * the higher world rank counts its positions apart. */
static uint64_t side_of(const struct comm_rec *r)
{
  return r->inter && r->remote_size > 0 && r->ranks[0] > r->remote_ranks[0];
}

static uint64_t position_hash(uint64_t id, uint64_t side, int p)
{
  return cc_id_mix(id, side << 32 | (uint64_t)p);
}

/* sums[0]: a hash per position this process holds.  sums[1]: the hashes of every position of
 * both sides, added by one member, the first of side 0.  An intercommunicator's two sides are
 * both counted by that member: were each side's first member to count its own side only, a
 * side whose members had all freed it would be missing from both sums, and the holders would
 * wait at restart for a side that never comes (MPICH's pt2pt/icprobe). */
static void add_sums(const struct comm_rec *r, int me, uint64_t sums[2])
{
  uint64_t id = cc_id_mix(r->ggid, r->index), side = side_of(r);
  for (int p = 0; p < r->size; p++)
    if (r->ranks[p] == me)
      sums[0] += position_hash(id, side, p);
  if (side != 0 || r->size == 0 || r->ranks[0] != me)
    return;
  for (int p = 0; p < r->size; p++)
    sums[1] += position_hash(id, 0, p);
  for (int p = 0; r->inter && p < r->remote_size; p++)
    sums[1] += position_hash(id, 1, p);
}

/* Whether every member holds every communicator that any member holds. */
static int agreed(const struct comm_rec *const *held, size_t n, struct comm_rec *const *ghosts,
                  size_t nghosts, int me, int *ok)
{
  uint64_t sums[2] = {0, 0};
  for (size_t k = 0; k < n; k++)
    add_sums(held[k], me, sums);
  for (size_t k = 0; k < nghosts; k++)
    add_sums(ghosts[k], me, sums);
  int rc = MANA_LH_CALL_NOPARK(MPI_Allreduce, MPI_IN_PLACE, sums, 2, MPI_UINT64_T, MPI_SUM,
                               MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    return error("MPI_Allreduce (agreement)", rc);
  *ok = sums[0] == sums[1];
  return MPI_SUCCESS;
}

/* ---- gathering ---- */

/* MPI_Allgatherv of n uint64 values from every rank into a malloc'd *all of *total values. */
static int gather(const uint64_t *mine, int n, int nranks, uint64_t **all, int *total, int **from)
{
  int *counts = calloc((size_t)nranks, sizeof(int)), *displs = calloc((size_t)nranks, sizeof(int));
  int rc = counts && displs ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  *all = NULL;
  if (rc == MPI_SUCCESS)
    rc = MANA_LH_CALL_NOPARK(MPI_Allgather, &n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    free(counts);
    free(displs);
    return error(rc == MPI_ERR_NO_MEM ? "allocating the lists" : "MPI_Allgather", rc);
  }
  *total = 0;
  for (int r = 0; r < nranks; r++) {
    displs[r] = *total;
    *total += counts[r];
  }
  *all = malloc(((size_t)*total + 1) * sizeof(uint64_t));
  rc = *all ? MANA_LH_CALL_NOPARK(MPI_Allgatherv, mine, n, MPI_UINT64_T, *all, counts, displs,
                                  MPI_UINT64_T, MPI_COMM_WORLD)
            : MPI_ERR_NO_MEM;
  free(counts);
  if (rc != MPI_SUCCESS) {
    free(displs);
    free(*all);
    *all = NULL;
    return error(rc == MPI_ERR_NO_MEM ? "allocating the lists" : "MPI_Allgatherv", rc);
  }
  if (from)
    *from = displs; /* where each rank's values start */
  else
    free(displs);
  return MPI_SUCCESS;
}

/* One communicator as one rank holds it. */
struct holding {
  uint64_t ggid, index, members;
  int rank;
};

static int by_key_then_rank(const void *a, const void *b)
{
  const struct holding *x = a, *y = b;
  if (x->ggid != y->ggid)
    return x->ggid < y->ggid ? -1 : 1;
  if (x->index != y->index)
    return x->index < y->index ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Every rank's holdings, sorted by communicator and then by rank. */
static int gather_holdings(const struct comm_rec *const *held, size_t n, int nranks,
                           struct holding **out, size_t *nout)
{
  uint64_t *mine = malloc((3 * n + 1) * sizeof(uint64_t)), *all = NULL;
  int total = 0, *from = NULL;
  if (!mine)
    return error("allocating the lists", MPI_ERR_NO_MEM);
  for (size_t k = 0; k < n; k++) {
    mine[3 * k] = held[k]->ggid;
    mine[3 * k + 1] = held[k]->index;
    mine[3 * k + 2] = (uint64_t)(held[k]->size + held[k]->remote_size);
  }
  int rc = gather(mine, (int)(3 * n), nranks, &all, &total, &from);
  free(mine);
  if (rc != MPI_SUCCESS)
    return rc;
  struct holding *h = malloc(((size_t)total / 3 + 1) * sizeof(*h));
  if (!h) {
    free(all);
    free(from);
    return error("allocating the lists", MPI_ERR_NO_MEM);
  }
  int rank = 0;
  for (int i = 0; i < total / 3; i++) {
    while (rank + 1 < nranks && from[rank + 1] <= 3 * i)
      rank++;
    h[i] = (struct holding){all[3 * i], all[3 * i + 1], all[3 * i + 2], rank};
  }
  free(all);
  free(from);
  qsort(h, (size_t)total / 3, sizeof(*h), by_key_then_rank);
  *out = h;
  *nout = (size_t)total / 3;
  return MPI_SUCCESS;
}

/* ---- descriptions ---- */

struct list {
  uint64_t *v;
  size_t n, cap;
};

/* Appends v; -1 when out of memory. */
static int put(struct list *l, uint64_t v)
{
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    uint64_t *grown = realloc(l->v, cap * sizeof(uint64_t));
    if (!grown)
      return -1;
    l->v = grown;
    l->cap = cap;
  }
  l->v[l->n++] = v;
  return 0;
}

static int put_ints(struct list *l, const int *a, int n)
{
  for (int i = 0; i < n; i++)
    if (put(l, (uint64_t)(int64_t)a[i]) != 0)
      return -1;
  return 0;
}

/* What a member without a record needs to make the communicator with its holders: the
 * members and the topology constructor's global arguments.  A distributed graph's are each
 * process's own neighbours: a ghost gives none (MPICH does not compare them, and nothing is
 * ever exchanged on a ghost). */
static int describe(struct list *l, const struct comm_rec *r)
{
  const struct comm_topo *t = &r->topo;
  if (put(l, r->ggid) || put(l, r->index) || put(l, (uint64_t)r->inter) ||
      put(l, (uint64_t)r->size) || put(l, (uint64_t)r->remote_size) ||
      put_ints(l, r->ranks, r->size) || put_ints(l, r->remote_ranks, r->remote_size) ||
      put(l, (uint64_t)(int64_t)t->kind))
    return -1;
  if (t->kind == MPI_CART)
    return put(l, (uint64_t)t->ndims) || put_ints(l, t->dims, t->ndims) ||
           put_ints(l, t->periods, t->ndims);
  if (t->kind == MPI_GRAPH)
    return put(l, (uint64_t)t->nnodes) || put(l, (uint64_t)t->nedges) ||
           put_ints(l, t->index, t->nnodes) || put_ints(l, t->edges, t->nedges);
  return 0;
}

/* Reads n ints of a description; NULL at its end (a malformed list) or out of memory. */
static int *take_ints(const uint64_t *v, size_t len, size_t *at, int n)
{
  if (n < 0 || *at + (size_t)n > len)
    return NULL;
  int *a = calloc(n > 0 ? (size_t)n : 1, sizeof(int));
  if (!a)
    return NULL;
  for (int i = 0; i < n; i++)
    a[i] = (int)(int64_t)v[(*at)++];
  return a;
}

static int take(const uint64_t *v, size_t len, size_t *at, uint64_t *out)
{
  if (*at >= len)
    return -1;
  *out = v[(*at)++];
  return 0;
}

/* The record a description gives, as its holder sees it; NULL if malformed or out of
 * memory. */
static struct comm_rec *read_description(const uint64_t *v, size_t len, size_t *at)
{
  struct comm_rec *r = calloc(1, sizeof(*r));
  uint64_t inter, size, remote, kind, a, b;
  if (!r)
    return NULL;
  struct comm_topo *t = &r->topo;
  if (take(v, len, at, &r->ggid) || take(v, len, at, &r->index) || take(v, len, at, &inter) ||
      take(v, len, at, &size) || take(v, len, at, &remote))
    goto bad;
  r->inter = (int)inter;
  r->size = (int)size;
  r->remote_size = (int)remote;
  if (!(r->ranks = take_ints(v, len, at, r->size)) ||
      !(r->remote_ranks = take_ints(v, len, at, r->remote_size)) || take(v, len, at, &kind))
    goto bad;
  t->kind = (int)(int64_t)kind;
  if (t->kind == MPI_CART) {
    if (take(v, len, at, &a))
      goto bad;
    t->ndims = (int)a;
    if (!(t->dims = take_ints(v, len, at, t->ndims)) ||
        !(t->periods = take_ints(v, len, at, t->ndims)))
      goto bad;
  } else if (t->kind == MPI_GRAPH) {
    if (take(v, len, at, &a) || take(v, len, at, &b))
      goto bad;
    t->nnodes = (int)a;
    t->nedges = (int)b;
    if (!(t->index = take_ints(v, len, at, t->nnodes)) ||
        !(t->edges = take_ints(v, len, at, t->nedges)))
      goto bad;
  } else if (t->kind == MPI_DIST_GRAPH) {
    t->sources = calloc(1, sizeof(int));
    t->sourceweights = calloc(1, sizeof(int));
    t->destinations = calloc(1, sizeof(int));
    t->destweights = calloc(1, sizeof(int));
    if (!t->sources || !t->sourceweights || !t->destinations || !t->destweights)
      goto bad;
  }
  return r;
bad:
  mana_comm_rec_free(r);
  return NULL;
}

static int member_side(const struct comm_rec *r, int me)
{
  for (int p = 0; p < r->size; p++)
    if (r->ranks[p] == me)
      return 1;
  for (int p = 0; p < r->remote_size; p++)
    if (r->remote_ranks[p] == me)
      return 2;
  return 0;
}

static void swap_sides(struct comm_rec *r)
{
  int *ranks = r->ranks, size = r->size;
  r->ranks = r->remote_ranks;
  r->size = r->remote_size;
  r->remote_ranks = ranks;
  r->remote_size = size;
}

/* Whether rank `me` is among the holders h[first..last). */
static int holds(const struct holding *h, size_t first, size_t last, int me)
{
  for (size_t i = first; i < last; i++)
    if (h[i].rank == me)
      return 1;
  return 0;
}

static const struct holding *find(const struct holding *h, size_t n, uint64_t ggid, uint64_t index,
                                  size_t *first, size_t *last)
{
  struct holding key = {ggid, index, 0, -1};
  size_t lo = 0, hi = n;
  while (lo < hi) { /* the first holding not below (ggid, index, -1) */
    size_t mid = lo + (hi - lo) / 2;
    if (by_key_then_rank(&h[mid], &key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *first = *last = lo;
  while (*last < n && h[*last].ggid == ggid && h[*last].index == index)
    (*last)++;
  return *first < *last ? &h[*first] : NULL;
}

/* The descriptions this process gives: of each communicator fewer members hold than it has,
 * if this process is its holder of lowest world rank. */
static int describe_mine(const struct comm_rec *const *held, size_t n, const struct holding *h,
                         size_t nh, int me, struct list *out)
{
  for (size_t k = 0; k < n; k++) {
    size_t first, last;
    const struct holding *x = find(h, nh, held[k]->ggid, held[k]->index, &first, &last);
    if (!x || x->rank != me || last - first >= x->members)
      continue;
    if (describe(out, held[k]) != 0)
      return error("describing a communicator", MPI_ERR_NO_MEM);
  }
  return MPI_SUCCESS;
}

static int add_ghost(struct comm_rec ***ghosts, size_t *n, struct comm_rec *r)
{
  struct comm_rec **grown = realloc(*ghosts, (*n + 1) * sizeof(*grown));
  if (!grown)
    return -1;
  grown[(*n)++] = r;
  *ghosts = grown;
  return 0;
}

static int read_ghosts(const uint64_t *all, size_t len, const struct holding *h, size_t nh, int me,
                       struct comm_rec ***ghosts, size_t *nghosts)
{
  size_t at = 0;
  while (at < len) {
    struct comm_rec *r = read_description(all, len, &at);
    if (!r) {
      fprintf(stderr, "mana: rebuilding MPI objects: a description of a communicator freed "
                      "by some of its members is malformed or does not fit in memory\n");
      return MPI_ERR_INTERN;
    }
    size_t first, last;
    int side = member_side(r, me);
    if (side == 0 || (find(h, nh, r->ggid, r->index, &first, &last) && holds(h, first, last, me))) {
      mana_comm_rec_free(r);
      continue;
    }
    if (side == 2)
      swap_sides(r);
    if (add_ghost(ghosts, nghosts, r) != 0) {
      mana_comm_rec_free(r);
      return error("allocating the ghosts", MPI_ERR_NO_MEM);
    }
  }
  return MPI_SUCCESS;
}

static void free_ghosts(struct comm_rec **ghosts, size_t n)
{
  for (size_t k = 0; k < n; k++)
    mana_comm_rec_free(ghosts[k]);
  free(ghosts);
}

int mana_comm_orphans(const struct comm_rec *const *held, size_t n, struct comm_rec ***ghosts,
                      size_t *nghosts)
{
  int me = 0, nranks = 0, ok = 0;
  *ghosts = NULL;
  *nghosts = 0;
  MANA_LH_CALL_NOPARK(MPI_Comm_rank, MPI_COMM_WORLD, &me);
  MANA_LH_CALL_NOPARK(MPI_Comm_size, MPI_COMM_WORLD, &nranks);
  int rc = agreed(held, n, NULL, 0, me, &ok);
  if (rc != MPI_SUCCESS || ok)
    return rc;

  struct holding *h = NULL;
  size_t nh = 0;
  struct list mine = {0};
  uint64_t *all = NULL;
  int total = 0;
  if ((rc = gather_holdings(held, n, nranks, &h, &nh)) != MPI_SUCCESS)
    return rc;
  rc = describe_mine(held, n, h, nh, me, &mine);
  if (rc == MPI_SUCCESS && mine.n > (size_t)INT32_MAX)
    rc = error("describing the communicators (too many)", MPI_ERR_NO_MEM);
  if (rc == MPI_SUCCESS)
    rc = gather(mine.v, (int)mine.n, nranks, &all, &total, NULL);
  if (rc == MPI_SUCCESS)
    rc = read_ghosts(all, (size_t)total, h, nh, me, ghosts, nghosts);
  free(h);
  free(mine.v);
  free(all);
  /* The same check with the ghosts: a guard against images of different checkpoints, whose
   * holders disagree on more than frees. */
  if (rc == MPI_SUCCESS && (rc = agreed(held, n, *ghosts, *nghosts, me, &ok)) == MPI_SUCCESS &&
      !ok) {
    fprintf(stderr, "mana: rebuilding MPI objects: the ranks do not hold the same "
                    "communicators, even counting the ones some members freed; the images are "
                    "not of one checkpoint\n");
    rc = MPI_ERR_COMM;
  }
  if (rc != MPI_SUCCESS) {
    free_ghosts(*ghosts, *nghosts);
    *ghosts = NULL;
    *nghosts = 0;
  }
  return rc;
}
