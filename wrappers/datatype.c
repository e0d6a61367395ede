/* Datatypes: decoding (MPI_Type_get_contents returns datatype handles the application must
 * see as virtual ones, and may free when they are derived) and restart.
 *
 * Restart needs each derived type's recipe: right after MPI makes a type, the stub asks MPI
 * how it was made (MPI_Type_get_envelope_c / get_contents_c), which covers every constructor
 * and every combiner the same way, including types MPI hands out itself.  A record holds the
 * recipe (datatype_recipe.c), its component types as references to their own records, the
 * committed flag, the name and the attributes.  Records are reference counted: a type the
 * application freed lives on in its record while a derived type or a persistent request still
 * needs it, as it does inside MPI.  Records are kept in creation order, which is dependency
 * order, and rebuilt in that order; those the application no longer holds are made only for
 * their dependents and freed again at the end.
 *
 * MPI reports component types by their real handles; a map from real handle to record finds
 * theirs.  A new type replaces whatever the map held for its real handle (that object is dead
 * inside MPI, or the handle would not be new). */
#include <string.h>

#include "datatype_recipe.h"
#include "p2p.h"
#include "records.h"
#include "stub_hooks.h"
#include "u64map.h"

_Static_assert((uint32_t)MPI_FLOAT_INT == 0x8c000000u && (uint32_t)MPI_DOUBLE_INT == 0x8c000001u &&
                   (uint32_t)MPI_LONG_INT == 0x8c000002u &&
                   (uint32_t)MPI_SHORT_INT == 0x8c000003u &&
                   (uint32_t)MPI_LONG_DOUBLE_INT == 0x8c000004u &&
                   MANA_DATATYPE_RESERVED_SLOTS == 5,
               "handles.h: the pair types are the direct datatype handles mana reserves");

struct mana_dt_rec {
  struct mana_dt_rec *prev, *next; /* every record, in creation order */
  uint64_t seq;
  uint32_t refs;   /* slots, dependents, requests, and the map */
  uint32_t in_map; /* how many of those are the real-handle map's */
  int bad;         /* the recipe cannot be replayed */
  int committed;
  char *name;
  struct mana_attr *attrs;
  struct mana_dt_recipe recipe;
  struct mana_dt_arg *types; /* recipe.nd components */
  /* During a rebuild. */
  MPI_Datatype built;
  uint32_t built_epoch, claimed_epoch;
};

static struct mana_dt_rec *first, *last;
static uint64_t next_seq;
static struct mana_u64map by_real;

/* Names and attributes the application gave predefined types. */
struct predefined_rec {
  struct predefined_rec *next;
  MPI_Datatype type;
  char *name;
  struct mana_attr *attrs;
};
static struct predefined_rec *predefined;

/* ---- records ---- */

static void rec_ref(struct mana_dt_rec *r)
{
  r->refs++;
}

static void rec_unref(struct mana_dt_rec *r)
{
  if (!r || --r->refs > 0)
    return;
  for (MPI_Count i = 0; i < r->recipe.nd; i++)
    rec_unref(r->types[i].rec);
  if (r->prev)
    r->prev->next = r->next;
  else
    first = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else
    last = r->prev;
  free(r->types);
  free(r->recipe.ints);
  free(r->recipe.addrs);
  free(r->recipe.counts);
  free(r->name);
  mana_attr_free(&r->attrs);
  free(r);
}

static void map_put(MPI_Datatype real, struct mana_dt_rec *r)
{
  uint64_t old = 0;
  rec_ref(r);
  r->in_map++;
  int had = mana_u64map_put(&by_real, (uint32_t)real, (uint64_t)(uintptr_t)r, &old);
  if (had < 0) { /* out of memory: the map just does not know this type */
    r->in_map--;
    rec_unref(r);
  } else if (had == 1) {
    ((struct mana_dt_rec *)(uintptr_t)old)->in_map--;
    rec_unref((struct mana_dt_rec *)(uintptr_t)old);
  }
}

static struct mana_dt_rec *map_get(MPI_Datatype real)
{
  uint64_t r = 0;
  return mana_u64map_get(&by_real, (uint32_t)real, &r) ? (struct mana_dt_rec *)(uintptr_t)r : NULL;
}

static struct mana_dt_rec *rec_of_real(MPI_Datatype real);

/* A component MPI reported: its record (a new reference), or the predefined handle.  The
 * handle MPI_Type_get_contents returned is freed: it was one more reference inside MPI. */
static void component(MPI_Datatype real, struct mana_dt_arg *arg, int *bad)
{
  arg->predefined = real;
  arg->rec = NULL;
  if (!mana_real_is_created((uint32_t)real))
    return;
  arg->rec = map_get(real);
  if (!arg->rec && (arg->rec = rec_of_real(real)) != NULL)
    map_put(real, arg->rec);
  if (arg->rec)
    rec_ref(arg->rec);
  else
    *bad = 1;
  MANA_LH_CALL_NOPARK(MPI_Type_free, &real);
}

static int read_recipe(MPI_Datatype real, struct mana_dt_recipe *r, MPI_Datatype **types)
{
  if (MANA_LH_CALL_NOPARK(MPI_Type_get_envelope_c, real, &r->ni, &r->na, &r->nl, &r->nd,
                          &r->combiner) != MPI_SUCCESS ||
      r->combiner == MPI_COMBINER_NAMED)
    return -1;
  r->ints = calloc((size_t)r->ni + 1, sizeof(int));
  r->addrs = calloc((size_t)r->na + 1, sizeof(MPI_Aint));
  r->counts = calloc((size_t)r->nl + 1, sizeof(MPI_Count));
  *types = calloc((size_t)r->nd + 1, sizeof(MPI_Datatype));
  if (!r->ints || !r->addrs || !r->counts || !*types)
    return -1;
  return MANA_LH_CALL_NOPARK(MPI_Type_get_contents_c, real, r->ni, r->na, r->nl, r->nd, r->ints,
                             r->addrs, r->counts, *types) == MPI_SUCCESS
             ? 0
             : -1;
}

/* A new record (one reference, the caller's) of the type MPI knows as `real`.  Components
 * are recorded first, so creation order stays dependency order. */
static struct mana_dt_rec *rec_of_real(MPI_Datatype real)
{
  struct mana_dt_rec *r = calloc(1, sizeof(*r));
  MPI_Datatype *types = NULL;
  if (!r || read_recipe(real, &r->recipe, &types) != 0 ||
      !(r->types = calloc((size_t)r->recipe.nd + 1, sizeof(*r->types)))) {
    if (r) {
      free(r->recipe.ints);
      free(r->recipe.addrs);
      free(r->recipe.counts);
    }
    free(types);
    free(r);
    return NULL;
  }
  r->bad = !mana_dt_recipe_valid(&r->recipe);
  for (MPI_Count i = 0; i < r->recipe.nd; i++)
    component(types[i], &r->types[i], &r->bad);
  free(types);
  r->refs = 1;
  r->seq = ++next_seq;
  r->prev = last;
  if (last)
    last->next = r;
  else
    first = r;
  last = r;
  return r;
}

static struct predefined_rec *predefined_rec(MPI_Datatype type, int create)
{
  for (struct predefined_rec *p = predefined; p; p = p->next)
    if (p->type == type)
      return p;
  struct predefined_rec *p = create ? calloc(1, sizeof(*p)) : NULL;
  if (p) {
    p->type = type;
    p->next = predefined;
    predefined = p;
  }
  return p;
}

/* The name and attributes of the type the application calls v, wherever they live. */
static int props_of(MPI_Datatype v, int create, char ***name, struct mana_attr ***attrs)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_DATATYPE, (uint32_t)v);
  if (s) {
    struct mana_dt_rec *r = s->meta;
    if (!r)
      return -1;
    *name = &r->name;
    *attrs = &r->attrs;
    return 0;
  }
  struct predefined_rec *p = predefined_rec(v, create);
  if (!p)
    return -1;
  *name = &p->name;
  *attrs = &p->attrs;
  return 0;
}

void mana_datatype_created(MPI_Datatype v, MPI_Datatype parent)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_DATATYPE, (uint32_t)v);
  if (!s)
    return;
  MPI_Datatype real = (MPI_Datatype)s->real;
  struct mana_dt_rec *r = rec_of_real(real);
  if (!r)
    return;
  s->meta = r;
  map_put(real, r);
  char **parent_name;
  struct mana_attr **parent_attrs;
  if (parent != MPI_DATATYPE_NULL && props_of(parent, 0, &parent_name, &parent_attrs) == 0 &&
      *parent_attrs) /* MPI_Type_dup: the copy callbacks ran */
    mana_attr_inherit(&r->attrs, *parent_attrs, MANA_KIND_DATATYPE, (uint64_t)real);
}

void mana_datatype_referenced(MPI_Datatype v)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_DATATYPE, (uint32_t)v);
  if (!s)
    return;
  struct mana_dt_rec *r = map_get((MPI_Datatype)s->real);
  if (r) {
    rec_ref(r);
    s->meta = r;
  } else if ((r = rec_of_real((MPI_Datatype)s->real)) != NULL) {
    s->meta = r;
    map_put((MPI_Datatype)s->real, r);
  }
}

void mana_after_Type_commit(MPI_Datatype *datatype)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_DATATYPE, (uint32_t)*datatype);
  if (s && s->meta)
    ((struct mana_dt_rec *)s->meta)->committed = 1;
}

void mana_after_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
  char **name;
  struct mana_attr **attrs;
  if (props_of(datatype, 1, &name, &attrs) == 0) {
    free(*name);
    *name = strdup(type_name);
  }
}

void mana_type_attr_set(MPI_Datatype v, int virt_keyval, void *value, int attr_type)
{
  char **name;
  struct mana_attr **attrs;
  if (props_of(v, 1, &name, &attrs) == 0)
    mana_attr_set(attrs, virt_keyval, value, attr_type);
}

void mana_after_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
  mana_type_attr_set(datatype, type_keyval, attribute_val, 0);
}

void mana_after_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
  char **name;
  struct mana_attr **attrs;
  if (props_of(datatype, 0, &name, &attrs) == 0)
    mana_attr_delete(attrs, type_keyval);
}

static void release(struct mana_slot *s)
{
  rec_unref(s->meta);
}

/* ---- datatype arguments of other records ---- */

void mana_dt_arg_get(MPI_Datatype v, struct mana_dt_arg *arg)
{
  struct mana_slot *s = mana_handle_slot(MANA_KIND_DATATYPE, (uint32_t)v);
  arg->predefined = s ? MANA_DT_ARG_NONE : v;
  arg->rec = s ? s->meta : NULL;
  if (arg->rec)
    rec_ref(arg->rec);
}

void mana_dt_arg_put(struct mana_dt_arg *arg)
{
  rec_unref(arg->rec);
  arg->rec = NULL;
}

int mana_dt_arg_ok(const struct mana_dt_arg *arg)
{
  return arg->rec ? !arg->rec->bad : arg->predefined != MANA_DT_ARG_NONE;
}

MPI_Datatype mana_dt_arg_real(const struct mana_dt_arg *arg)
{
  return arg->rec ? arg->rec->built : arg->predefined;
}

/* ---- application decoding ---- */

static void virtualize(MPI_Datatype types[], MPI_Count n, MPI_Count max)
{
  for (MPI_Count i = 0; i < n && i < max; i++) {
    types[i] = MANA_NEW(DATATYPE, MPI_Datatype, types[i]);
    mana_datatype_referenced(types[i]);
  }
}

int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                          int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[],
                          MPI_Datatype array_of_datatypes[])
{
  MPI_Datatype real = MANA_REAL(DATATYPE, MPI_Datatype, datatype);
  int rc =
      MANA_LH_CALL_NOPARK(MPI_Type_get_contents, real, max_integers, max_addresses, max_datatypes,
                          array_of_integers, array_of_addresses, array_of_datatypes);
  int ni, na, nd, combiner;
  if (rc == MPI_SUCCESS &&
      MANA_LH_CALL_NOPARK(MPI_Type_get_envelope, real, &ni, &na, &nd, &combiner) == MPI_SUCCESS)
    virtualize(array_of_datatypes, nd, max_datatypes);
  MANA_PARK_CHECK();
  return rc;
}

int MPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                            MPI_Count max_large_counts, MPI_Count max_datatypes,
                            int array_of_integers[], MPI_Aint array_of_addresses[],
                            MPI_Count array_of_large_counts[], MPI_Datatype array_of_datatypes[])
{
  MPI_Datatype real = MANA_REAL(DATATYPE, MPI_Datatype, datatype);
  int rc = MANA_LH_CALL_NOPARK(MPI_Type_get_contents_c, real, max_integers, max_addresses,
                               max_large_counts, max_datatypes, array_of_integers,
                               array_of_addresses, array_of_large_counts, array_of_datatypes);
  MPI_Count ni, na, nl, nd;
  int combiner;
  if (rc == MPI_SUCCESS && MANA_LH_CALL_NOPARK(MPI_Type_get_envelope_c, real, &ni, &na, &nl, &nd,
                                               &combiner) == MPI_SUCCESS)
    virtualize(array_of_datatypes, nd, max_datatypes);
  MANA_PARK_CHECK();
  return rc;
}

/* ---- restart ---- */

/* The constructors the recipes replay through, in the lower half. */
static int lh_dup(MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_dup, t, o);
}
static int lh_contiguous(int n, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_contiguous, n, t, o);
}
static int lh_vector(int n, int b, int s, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_vector, n, b, s, t, o);
}
static int lh_hvector(int n, int b, MPI_Aint s, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_hvector, n, b, s, t, o);
}
static int lh_indexed(int n, const int b[], const int d[], MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_indexed, n, b, d, t, o);
}
static int lh_hindexed(int n, const int b[], const MPI_Aint d[], MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_hindexed, n, b, d, t, o);
}
static int lh_indexed_block(int n, int b, const int d[], MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_indexed_block, n, b, d, t, o);
}
static int lh_hindexed_block(int n, int b, const MPI_Aint d[], MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_hindexed_block, n, b, d, t, o);
}
static int lh_struct(int n, const int b[], const MPI_Aint d[], const MPI_Datatype t[],
                     MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_struct, n, b, d, t, o);
}
static int lh_subarray(int n, const int sz[], const int sub[], const int st[], int order,
                       MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_subarray, n, sz, sub, st, order, t, o);
}
static int lh_darray(int size, int rank, int n, const int g[], const int dist[], const int arg[],
                     const int p[], int order, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_darray, size, rank, n, g, dist, arg, p, order, t, o);
}
static int lh_resized(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_resized, t, lb, extent, o);
}
static int lh_f90_real(int p, int r, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_f90_real, p, r, o);
}
static int lh_f90_complex(int p, int r, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_f90_complex, p, r, o);
}
static int lh_f90_integer(int r, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_f90_integer, r, o);
}
static int lh_contiguous_c(MPI_Count n, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_contiguous_c, n, t, o);
}
static int lh_vector_c(MPI_Count n, MPI_Count b, MPI_Count s, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_vector_c, n, b, s, t, o);
}
static int lh_hvector_c(MPI_Count n, MPI_Count b, MPI_Count s, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_hvector_c, n, b, s, t, o);
}
static int lh_indexed_c(MPI_Count n, const MPI_Count b[], const MPI_Count d[], MPI_Datatype t,
                        MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_indexed_c, n, b, d, t, o);
}
static int lh_hindexed_c(MPI_Count n, const MPI_Count b[], const MPI_Count d[], MPI_Datatype t,
                         MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_hindexed_c, n, b, d, t, o);
}
static int lh_indexed_block_c(MPI_Count n, MPI_Count b, const MPI_Count d[], MPI_Datatype t,
                              MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_indexed_block_c, n, b, d, t, o);
}
static int lh_hindexed_block_c(MPI_Count n, MPI_Count b, const MPI_Count d[], MPI_Datatype t,
                               MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_hindexed_block_c, n, b, d, t, o);
}
static int lh_struct_c(MPI_Count n, const MPI_Count b[], const MPI_Count d[],
                       const MPI_Datatype t[], MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_struct_c, n, b, d, t, o);
}
static int lh_subarray_c(int n, const MPI_Count sz[], const MPI_Count sub[], const MPI_Count st[],
                         int order, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_subarray_c, n, sz, sub, st, order, t, o);
}
static int lh_darray_c(int size, int rank, int n, const MPI_Count g[], const int dist[],
                       const int arg[], const int p[], int order, MPI_Datatype t, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_darray_c, size, rank, n, g, dist, arg, p, order, t, o);
}
static int lh_resized_c(MPI_Datatype t, MPI_Count lb, MPI_Count extent, MPI_Datatype *o)
{
  return MANA_LH_CALL_NOPARK(MPI_Type_create_resized_c, t, lb, extent, o);
}

static const struct mana_dt_ctors lh_ctors = {
    .dup = lh_dup,
    .contiguous = lh_contiguous,
    .vector = lh_vector,
    .hvector = lh_hvector,
    .indexed = lh_indexed,
    .hindexed = lh_hindexed,
    .indexed_block = lh_indexed_block,
    .hindexed_block = lh_hindexed_block,
    .create_struct = lh_struct,
    .subarray = lh_subarray,
    .darray = lh_darray,
    .resized = lh_resized,
    .f90_real = lh_f90_real,
    .f90_complex = lh_f90_complex,
    .f90_integer = lh_f90_integer,
    .contiguous_c = lh_contiguous_c,
    .vector_c = lh_vector_c,
    .hvector_c = lh_hvector_c,
    .indexed_c = lh_indexed_c,
    .hindexed_c = lh_hindexed_c,
    .indexed_block_c = lh_indexed_block_c,
    .hindexed_block_c = lh_hindexed_block_c,
    .create_struct_c = lh_struct_c,
    .subarray_c = lh_subarray_c,
    .darray_c = lh_darray_c,
    .resized_c = lh_resized_c,
};

/* Held by something besides the real-handle map: a slot, a dependent, a request. */
static int needed(const struct mana_dt_rec *r)
{
  return r->refs > r->in_map;
}

static int check(char *reason, size_t len)
{
  struct mana_table *t = &mana_tables[MANA_KIND_DATATYPE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    if ((s->flags & MANA_SLOT_USED) && !s->meta) {
      mana_reason(reason, len, "no record of", "datatype", mana_handle_make(MANA_KIND_DATATYPE, i));
      return 0;
    }
  }
  for (const struct mana_dt_rec *r = first; r; r = r->next)
    if (needed(r) && r->bad) {
      mana_reason(reason, len, "mana cannot make again a datatype of combiner",
                  "(MPI_COMBINER_ value)", (uint32_t)r->recipe.combiner);
      return 0;
    }
  return 1;
}

static int discard(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_DATATYPE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct mana_dt_rec *r = s->meta;
    MPI_Datatype real = (MPI_Datatype)s->real;
    /* Fortran parameterized types belong to MPI and must not be freed. */
    if ((s->flags & MANA_SLOT_USED) && mana_real_is_created((uint32_t)real) && r &&
        !mana_dt_recipe_is_f90(&r->recipe))
      MANA_LH_CALL_NOPARK(MPI_Type_free, &real);
  }
  for (struct predefined_rec *p = predefined; p; p = p->next)
    mana_attr_remove_all(p->attrs, MANA_KIND_DATATYPE, (uint64_t)p->type);
  return MPI_SUCCESS;
}

/* A --kill checkpoint: the job ends, on the checkpoint thread (lower half's thread pointer: no
 * upper-half libc), with the application parked. */
void mana_datatypes_free_for_exit(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_DATATYPE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    const struct mana_dt_rec *r = s->meta;
    MPI_Datatype real = (MPI_Datatype)s->real;
    if ((s->flags & MANA_SLOT_USED) && mana_real_is_created((uint32_t)real) &&
        !(r && mana_dt_recipe_is_f90(&r->recipe)))
      MANA_LH_ANY(MPI_Type_free, &real);
  }
}

/* One new real type from r's recipe, with its components already built. */
static int make(struct mana_dt_rec *r, MPI_Datatype *out)
{
  MPI_Datatype stack[MANA_STACK_HANDLES] = {0};
  MPI_Datatype *types = r->recipe.nd <= MANA_STACK_HANDLES
                            ? stack
                            : malloc((size_t)r->recipe.nd * sizeof(MPI_Datatype));
  if (!types)
    return MPI_ERR_NO_MEM;
  for (MPI_Count i = 0; i < r->recipe.nd; i++)
    types[i] = mana_dt_arg_real(&r->types[i]);
  int rc = mana_dt_replay(&r->recipe, types, &lh_ctors, out);
  if (types != stack)
    free(types);
  if (rc == MPI_SUCCESS && r->committed)
    rc = MANA_LH_CALL_NOPARK(MPI_Type_commit, out);
  if (rc == MPI_SUCCESS && r->name)
    rc = MANA_LH_CALL_NOPARK(MPI_Type_set_name, *out, r->name);
  return rc;
}

static void unref_old_entry(uint64_t key, uint64_t value, void *ctx)
{
  (void)key;
  (void)ctx;
  struct mana_dt_rec *r = (struct mana_dt_rec *)(uintptr_t)value;
  r->in_map--;
  rec_unref(r);
}

/* Each slot gets a real type of its own: the application frees each handle it holds. */
static int rebuild_slots(void)
{
  struct mana_table *t = &mana_tables[MANA_KIND_DATATYPE];
  for (uint32_t i = 0; i < t->capacity; i++) {
    struct mana_slot *s = mana_slot_at(t, i);
    struct mana_dt_rec *r = s->meta;
    if (!(s->flags & MANA_SLOT_USED) || !r)
      continue;
    uint32_t v = mana_handle_make(MANA_KIND_DATATYPE, i);
    MPI_Datatype real = r->built;
    int rc = MPI_SUCCESS;
    if (r->claimed_epoch == mana_rebuild_epoch) { /* a second handle of one object */
      if ((rc = make(r, &real)) != MPI_SUCCESS)
        return mana_rebuild_error("datatype", v, "its constructor", rc);
      map_put(real, r);
    }
    r->claimed_epoch = mana_rebuild_epoch;
    s->real = (uint32_t)real;
    if ((rc = mana_attr_replay(r->attrs, MANA_KIND_DATATYPE, (uint64_t)real, "datatype", v)))
      return rc;
  }
  return MPI_SUCCESS;
}

/* A type the application freed while a type derived from it lives on stays alive inside MPI,
 * with its attributes: their delete callbacks run when MPI destroys it, with the last of its
 * dependents (MPICH's attr/attr2type counts them).  Its rebuilt twin gets them back too, once
 * every type is made (so that no copy callback runs for a dependent made from it), before
 * finish() frees it as the application did. */
static int replay_freed_attrs(void)
{
  for (struct mana_dt_rec *r = first; r; r = r->next) {
    if (r->built_epoch != mana_rebuild_epoch || r->claimed_epoch == mana_rebuild_epoch || !r->attrs)
      continue;
    int rc = mana_attr_replay(r->attrs, MANA_KIND_DATATYPE, (uint64_t)r->built,
                              "freed datatype of combiner", (uint32_t)r->recipe.combiner);
    if (rc != MPI_SUCCESS)
      return rc;
  }
  return MPI_SUCCESS;
}

static int rebuild(void)
{
  struct mana_u64map old = by_real;
  by_real = (struct mana_u64map){NULL, 0, 0};
  int rc = MPI_SUCCESS;
  for (struct mana_dt_rec *r = first; r && rc == MPI_SUCCESS; r = r->next) {
    if (!needed(r))
      continue;
    if ((rc = make(r, &r->built)) != MPI_SUCCESS) {
      rc = mana_rebuild_error("datatype of combiner", (uint32_t)r->recipe.combiner,
                              "its constructor", rc);
      break;
    }
    r->built_epoch = mana_rebuild_epoch;
    map_put(r->built, r);
  }
  if (rc == MPI_SUCCESS)
    rc = rebuild_slots();
  if (rc == MPI_SUCCESS)
    rc = replay_freed_attrs();
  for (struct predefined_rec *p = predefined; p && rc == MPI_SUCCESS; p = p->next) {
    if (p->name && (rc = MANA_LH_CALL_NOPARK(MPI_Type_set_name, p->type, p->name)) != MPI_SUCCESS)
      rc = mana_rebuild_error("datatype", (uint32_t)p->type, "MPI_Type_set_name", rc);
    if (rc == MPI_SUCCESS)
      rc = mana_attr_replay(p->attrs, MANA_KIND_DATATYPE, (uint64_t)p->type, "datatype",
                            (uint32_t)p->type);
  }
  /* The old real handles mean nothing now; their records may go (after the new map holds
   * the ones still needed). */
  mana_u64map_each(&old, unref_old_entry, NULL);
  mana_u64map_free(&old);
  return rc;
}

/* Types made only for their dependents (the application had freed them) are freed as the
 * application freed them; MPI keeps what the dependents use. */
static void finish(void)
{
  for (struct mana_dt_rec *r = first; r; r = r->next)
    if (r->built_epoch == mana_rebuild_epoch && r->claimed_epoch != mana_rebuild_epoch &&
        !mana_dt_recipe_is_f90(&r->recipe)) {
      MPI_Datatype t = r->built;
      MANA_LH_CALL_NOPARK(MPI_Type_free, &t);
    }
}

const struct mana_kind_ops mana_datatype_ops = {
    .name = "datatype",
    .kind = MANA_KIND_DATATYPE,
    .release = release,
    .check = check,
    .discard = discard,
    .rebuild = rebuild,
    .finish = finish,
};
