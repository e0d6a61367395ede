/*
 * std_attr_cache.c - attribute caching on communicators, datatypes and windows, with copy
 * and delete callbacks that keep a reference count.
 *
 * Source: MPI-3.1, section 6.7.6 "Attributes Example": a collective operation that caches
 * per-communicator "gop_stuff" under a keyval created on first use
 * (MPI_Comm_create_keyval(gop_stuff_copier, gop_stuff_destructor, ...)), finds it again with
 * MPI_Comm_get_attr, stores it with MPI_Comm_set_attr; the copier adds a reference when a
 * communicator is duplicated, the destructor drops one when a communicator is freed and
 * frees the storage with the last one.  The same pattern is applied, following sections
 * 6.7.3 (Windows) and 6.7.4 (Datatypes), to datatype attributes (copied by MPI_Type_dup) and
 * window attributes (deleted by MPI_Win_free), and MPI_Comm_delete_attr and replacing a
 * value with MPI_Comm_set_attr (which calls the delete callback for the old value) are used.
 * Adaptations: the "global op" is an MPI_Allreduce whose result is checked, counting how
 * often the cached stuff was found; each of ROUNDS rounds duplicates, splits and frees
 * communicators, and the number of callback invocations, allocations and frees is checked
 * against the number the standard's semantics require.
 * Ranks: 2 or more.
 */
#include "../programs/mpitest.h"

#define ROUNDS 6

/* key for this module's stuff: */
static int gop_key = MPI_KEYVAL_INVALID;

typedef struct {
  int ref_count; /* reference count */
  int size;      /* the communicator's size when cached */
  int uses;      /* how often the cached stuff was used */
} gop_stuff_type;

static int n_alloc, n_free, n_copy, n_delete, n_hits, n_bad_key;

static int gop_stuff_destructor(MPI_Comm comm, int keyval, void *gop_stuffP, void *extra)
{
  (void)comm;
  (void)extra;
  gop_stuff_type *gop_stuff = (gop_stuff_type *)gop_stuffP;
  if (keyval != gop_key)
    n_bad_key++;
  n_delete++;
  /* The group's being freed removes one reference to gop_stuff */
  gop_stuff->ref_count -= 1;
  /* If no references remain, then free the storage */
  if (gop_stuff->ref_count == 0) {
    free((void *)gop_stuff);
    n_free++;
  }
  return MPI_SUCCESS;
}

static int gop_stuff_copier(MPI_Comm comm, int keyval, void *extra, void *gop_stuff_inP,
                            void *gop_stuff_outP, int *flag)
{
  (void)comm;
  (void)extra;
  gop_stuff_type *gop_stuff_in = (gop_stuff_type *)gop_stuff_inP;
  gop_stuff_type **gop_stuff_out = (gop_stuff_type **)gop_stuff_outP;
  if (keyval != gop_key)
    n_bad_key++;
  n_copy++;
  /* The new group adds one reference to this gop_stuff */
  gop_stuff_in->ref_count += 1;
  *gop_stuff_out = gop_stuff_in;
  *flag = 1;
  return MPI_SUCCESS;
}

/* Returns the sum of v over comm. */
static int Efficient_Collective_Op(MPI_Comm comm, int v)
{
  gop_stuff_type *gop_stuff;
  MPI_Group group;
  int foundflag;
  MPI_Comm_group(comm, &group);
  if (gop_key == MPI_KEYVAL_INVALID) { /* get a key on first call ever */
    if (MPI_Comm_create_keyval(gop_stuff_copier, gop_stuff_destructor, &gop_key, (void *)0))
      MPI_Abort(comm, 99);
  }
  MPI_Comm_get_attr(comm, gop_key, &gop_stuff, &foundflag);
  if (foundflag) {
    /* This module has executed in this group before. We will use the cached information */
    n_hits++;
  } else {
    gop_stuff = (gop_stuff_type *)malloc(sizeof(gop_stuff_type));
    if (gop_stuff == NULL)
      MPI_Abort(comm, 98);
    n_alloc++;
    gop_stuff->ref_count = 1;
    gop_stuff->uses = 0;
    MPI_Group_size(group, &gop_stuff->size);
    MPI_Comm_set_attr(comm, gop_key, gop_stuff);
  }
  MPI_Group_free(&group);
  gop_stuff->uses++;
  int sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
  return sum;
}

/* datatype and window attributes */
static int type_key = MPI_KEYVAL_INVALID, win_key = MPI_KEYVAL_INVALID;
static int t_copy, t_delete, w_delete;
typedef struct {
  int refs;
  int tag;
} shared_t;

static int type_copier(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag)
{
  (void)t;
  (void)key;
  (void)extra;
  shared_t *s = in;
  s->refs++;
  *(shared_t **)out = s;
  *flag = 1;
  t_copy++;
  return MPI_SUCCESS;
}
static int type_deleter(MPI_Datatype t, int key, void *val, void *extra)
{
  (void)t;
  (void)key;
  (void)extra;
  shared_t *s = val;
  t_delete++;
  if (--s->refs == 0)
    free(s);
  return MPI_SUCCESS;
}
static int win_deleter(MPI_Win w, int key, void *val, void *extra)
{
  (void)w;
  (void)key;
  *(int *)extra += *(int *)val;
  w_delete++;
  return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("std_attr_cache");
  int rank = mt_.rank, size = mt_.size;
  int bad = 0;
  int win_extra = 0;

  MPI_Type_create_keyval(type_copier, type_deleter, &type_key, NULL);
  MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_deleter, &win_key, &win_extra);

  for (int round = 0; round < ROUNDS; round++) {
    MPI_Comm c1, c2, c3;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    for (int k = 0; k < 3; k++)
      bad += Efficient_Collective_Op(c1, rank + k) != size * (size - 1) / 2 + size * k;
    MPI_Comm_dup(c1, &c2); /* the copier shares the stuff */
    bad += Efficient_Collective_Op(c2, round) != size * round;
    MPI_Comm_split(c1, rank % 2, rank, &c3); /* no attributes propagate */
    int n3;
    MPI_Comm_size(c3, &n3);
    bad += Efficient_Collective_Op(c3, 1) != n3;

    gop_stuff_type *s1, *s2, *s3;
    int f1, f2, f3;
    MPI_Comm_get_attr(c1, gop_key, &s1, &f1);
    MPI_Comm_get_attr(c2, gop_key, &s2, &f2);
    MPI_Comm_get_attr(c3, gop_key, &s3, &f3);
    bad += !f1 || !f2 || !f3 || s1 != s2 || s1 == s3;
    bad += s1->ref_count != 2 || s1->uses != 4 || s1->size != size;
    bad += s3->ref_count != 1 || s3->uses != 1 || s3->size != n3;

    /* replace c3's value by a fresh one: the old one is deleted (and freed) */
    gop_stuff_type *fresh = malloc(sizeof *fresh);
    n_alloc++;
    fresh->ref_count = 1;
    fresh->uses = 100;
    fresh->size = n3;
    MPI_Comm_set_attr(c3, gop_key, fresh);
    MPI_Comm_get_attr(c3, gop_key, &s3, &f3);
    bad += !f3 || s3 != fresh;
    /* explicitly delete it again: the destructor frees it */
    MPI_Comm_delete_attr(c3, gop_key);
    MPI_Comm_get_attr(c3, gop_key, &s3, &f3);
    bad += f3 != 0;

    MPI_Comm_free(&c1); /* one reference left */
    bad += Efficient_Collective_Op(c2, 2) != 2 * size;
    MPI_Comm_get_attr(c2, gop_key, &s2, &f2);
    bad += !f2 || s2->ref_count != 1 || s2->uses != 5;
    MPI_Comm_free(&c2); /* the last one: freed */
    MPI_Comm_free(&c3);

    /* a datatype attribute, copied by MPI_Type_dup, deleted by MPI_Type_free */
    MPI_Datatype t1, t2;
    MPI_Type_contiguous(3 + round, MPI_INT, &t1);
    shared_t *sh = malloc(sizeof *sh);
    sh->refs = 1;
    sh->tag = 40 + round;
    MPI_Type_set_attr(t1, type_key, sh);
    MPI_Type_dup(t1, &t2);
    shared_t *g;
    int tf;
    MPI_Type_get_attr(t2, type_key, &g, &tf);
    bad += !tf || g != sh || g->refs != 2 || g->tag != 40 + round;
    int tsz;
    MPI_Type_size(t2, &tsz);
    bad += tsz != (3 + round) * (int)sizeof(int);
    /* MPICH keeps t1 (and runs its delete callback) until t2, made from it, is freed too,
     * so the count is checked only after both frees */
    MPI_Type_free(&t1);
    MPI_Type_get_attr(t2, type_key, &g, &tf);
    bad += !tf || g != sh;
    MPI_Type_free(&t2);

    /* a window attribute, deleted when the window is freed; predefined attributes */
    int wbuf[4];
    MPI_Win win;
    MPI_Win_create(wbuf, sizeof wbuf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    static int wval[ROUNDS];
    wval[round] = round + 1;
    MPI_Win_set_attr(win, win_key, &wval[round]);
    void *base;
    MPI_Aint *wsize;
    int wf1, wf2;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &wf1);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &wf2);
    bad += !wf1 || !wf2 || base != (void *)wbuf || *wsize != (MPI_Aint)sizeof wbuf;
    MPI_Win_free(&win);
  }

  int *tag_ub, tf;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &tf);
  bad += !tf || *tag_ub < 32767;

  mt_check_int("attribute values and operation results: wrong", bad, 0);
  mt_check_int("gop_stuff allocations", n_alloc, 3 * ROUNDS);
  mt_check_int("gop_stuff frees (by the destructor)", n_free, 3 * ROUNDS);
  mt_check_int("copier calls", n_copy, ROUNDS);
  mt_check_int("destructor calls", n_delete, 4 * ROUNDS);
  mt_check_int("cached stuff found", n_hits, 4 * ROUNDS);
  mt_check_int("callbacks with a wrong keyval", n_bad_key, 0);
  mt_check_int("datatype copy callbacks", t_copy, ROUNDS);
  mt_check_int("datatype delete callbacks", t_delete, 2 * ROUNDS);
  mt_check_int("window delete callbacks", w_delete, ROUNDS);
  mt_check_int("window delete callbacks' sum in extra_state", win_extra, ROUNDS * (ROUNDS + 1) / 2);

  MPI_Comm_free_keyval(&gop_key);
  MPI_Type_free_keyval(&type_key);
  MPI_Win_free_keyval(&win_key);
  mt_allreduce_steps(4);
  return mt_end();
}
