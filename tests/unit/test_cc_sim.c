/* The collective-clock safe-point protocol, simulated end to end.
 *
 * N ranks run random valid MPI programs: blocking and non-blocking collectives over
 * overlapping groups (some created during the run by constructors on a parent, some
 * duplicates sharing a group id), eager and synchronous sends, exchanges, computation.  A
 * random scheduler decides who moves next: a rank's next step, the delivery of the next
 * message on one of the rank<->coordinator channels (so raises and target updates are in
 * flight for random times), a release by the coordinator when it believes the ranks are
 * stalled.  Checkpoint requests arrive at random times; some are aborted.  Each rank runs
 * cc_state (wrappers/cc_algorithm.c) exactly as the stub would; the coordinator runs the
 * mana_coordinator's own state machine (coordinator/coord_ckpt.c), fed what the ranks say.
 *
 * Checked for every checkpoint: termination is reached (no deadlock: something can always
 * move), and at termination no collective instance is entered by some members only and every
 * member of every group has the same SEQ, equal to its target.  Checked for every run: after
 * the checkpoints (resumed in place or "restarted" from the saved SEQ tables) every program
 * runs to its end with the results of a run without checkpoints.
 *
 * Programs are valid by construction: a random global sequence of operations, each projected
 * onto its participants.  Running the global sequence in order is a legal execution in which
 * every collective and every synchronous send is a rendezvous, so no schedule can deadlock. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../wrappers/cc_algorithm.h"
#include "coord_ckpt.h"

/* ---------------------------------------------------------------- random numbers ----- */

struct rng {
  uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t below(struct rng *r, uint32_t n)
{
  return (uint32_t)(((rnd(r) >> 32) * n) >> 32);
}

static bool chance(struct rng *r, uint32_t percent)
{
  return below(r, 100) < percent;
}

static uint64_t mix(uint64_t x)
{
  struct rng r = {x};
  return rnd(&r);
}

/* ---------------------------------------------------------------- programs ----------- */

enum op_kind { OP_COMPUTE, OP_COLL, OP_ICOLL, OP_WAIT, OP_CREATE, OP_SEND, OP_SSEND, OP_RECV };

/* COLL/ICOLL/WAIT: comm, inst.  CREATE: comm = parent, inst, arg = child comm (-1: none).
 * SEND/SSEND: arg = destination, inst = message index on that pair; RECV: arg = source. */
struct op {
  uint8_t kind;
  int32_t comm, inst, arg;
};

struct prog {
  struct op *ops;
  int len, cap;
};

struct pending_wait {
  int comm, inst, countdown;
};

struct comm {
  int n;
  int *members;
  bool *in; /* by world rank */
  uint64_t ggid;
  bool created;
  int ninst;
};

struct program_set {
  int nranks, ncomms;
  struct comm *comms;
  struct prog *progs;
  int *pair_msgs; /* messages per (src, dst) */
  /* generation only */
  struct pending_wait **pw;
  int *npw;
};

struct gen_cfg {
  int min_ranks, max_ranks;
  int ops_per_rank; /* global operations per rank, roughly */
  bool p2p;
  int max_comms;    /* communicators besides world (default 8) */
  uint32_t creates; /* percent of operations that are constructors (default 5) */
};

static void push_op(struct prog *p, struct op op)
{
  if (p->len == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 32;
    p->ops = realloc(p->ops, (size_t)p->cap * sizeof *p->ops);
  }
  p->ops[p->len++] = op;
}

/* Appends op to rank r's program, then the waits of its non-blocking collectives whose
 * countdown ran out: a wait lands a random number of the rank's own operations later. */
static void emit(struct program_set *ps, int r, struct op op)
{
  push_op(&ps->progs[r], op);
  for (int i = 0; i < ps->npw[r];) {
    struct pending_wait *w = &ps->pw[r][i];
    if (w->countdown-- > 0) {
      i++;
      continue;
    }
    push_op(&ps->progs[r], (struct op){.kind = OP_WAIT, .comm = w->comm, .inst = w->inst});
    *w = ps->pw[r][--ps->npw[r]];
  }
}

static void flush_waits(struct program_set *ps, int r)
{
  for (int i = 0; i < ps->npw[r]; i++)
    push_op(&ps->progs[r],
            (struct op){.kind = OP_WAIT, .comm = ps->pw[r][i].comm, .inst = ps->pw[r][i].inst});
  ps->npw[r] = 0;
}

static void set_members(struct comm *c, int nranks, const bool *in)
{
  c->in = calloc((size_t)nranks, sizeof *c->in);
  c->members = malloc((size_t)nranks * sizeof *c->members);
  c->n = 0;
  for (int r = 0; r < nranks; r++)
    if (in[r]) {
      c->in[r] = true;
      c->members[c->n++] = r;
    }
  c->ggid = cc_group_id(c->members, (size_t)c->n);
}

/* The member set of a planned communicator: the shapes real codes use. */
static void plan_members(struct program_set *ps, int idx, struct rng *g, bool *in)
{
  int n = ps->nranks;
  memset(in, 0, (size_t)n * sizeof *in);
  switch (below(g, 6)) {
  case 0: { /* random subset */
    uint32_t p = 20 + below(g, 70);
    for (int r = 0; r < n; r++)
      in[r] = chance(g, p);
    break;
  }
  case 1: { /* block */
    int a = (int)below(g, (uint32_t)n), len = 1 + (int)below(g, (uint32_t)(n - a));
    for (int r = a; r < a + len; r++)
      in[r] = true;
    break;
  }
  case 2: { /* stride: a column of a process grid */
    int stride = 2 + (int)below(g, 3), off = (int)below(g, (uint32_t)stride);
    for (int r = off; r < n; r += stride)
      in[r] = true;
    break;
  }
  case 3: /* duplicate of an earlier one: same group id, another communicator */
    if (idx > 1) {
      memcpy(in, ps->comms[1 + below(g, (uint32_t)idx - 1)].in, (size_t)n * sizeof *in);
      break;
    }
    /* fall through */
  case 4: /* a pair */
    in[below(g, (uint32_t)n)] = true;
    in[below(g, (uint32_t)n)] = true;
    break;
  default: /* one rank: like MPI_COMM_SELF */
    in[below(g, (uint32_t)n)] = true;
    break;
  }
  bool any = false;
  for (int r = 0; r < n; r++)
    any |= in[r];
  if (!any)
    in[below(g, (uint32_t)n)] = true;
}

static void gen_collective(struct program_set *ps, struct rng *g, int c, bool nonblocking)
{
  struct comm *cm = &ps->comms[c];
  int inst = cm->ninst++;
  for (int i = 0; i < cm->n; i++) {
    int r = cm->members[i];
    emit(ps, r, (struct op){.kind = nonblocking ? OP_ICOLL : OP_COLL, .comm = c, .inst = inst});
    if (nonblocking) {
      int countdown = (int)below(g, 5);
      if (countdown == 0) {
        push_op(&ps->progs[r], (struct op){.kind = OP_WAIT, .comm = c, .inst = inst});
        continue;
      }
      ps->pw[r][ps->npw[r]++] = (struct pending_wait){c, inst, countdown - 1};
    }
  }
}

/* A constructor on a created parent whose members include all of the child's. */
static void gen_create(struct program_set *ps, struct rng *g, int child)
{
  int cand[64], nc = 0;
  for (int p = 0; p < ps->ncomms && nc < 64; p++) {
    if (!ps->comms[p].created)
      continue;
    bool superset = true;
    for (int i = 0; i < ps->comms[child].n && superset; i++)
      superset = ps->comms[p].in[ps->comms[child].members[i]];
    if (superset)
      cand[nc++] = p;
  }
  int parent = cand[below(g, (uint32_t)nc)]; /* world is always a candidate */
  struct comm *pc = &ps->comms[parent];
  int inst = pc->ninst++;
  for (int i = 0; i < pc->n; i++) {
    int r = pc->members[i];
    emit(ps, r,
         (struct op){.kind = OP_CREATE,
                     .comm = parent,
                     .inst = inst,
                     .arg = ps->comms[child].in[r] ? child : -1});
  }
  ps->comms[child].created = true;
}

static void gen_p2p(struct program_set *ps, struct rng *g)
{
  int n = ps->nranks;
  int a = (int)below(g, (uint32_t)n), b = (int)below(g, (uint32_t)n - 1);
  b += b >= a;
  if (chance(g, 70)) { /* one way, eager or synchronous */
    int idx = ps->pair_msgs[a * n + b]++;
    emit(ps, a, (struct op){.kind = chance(g, 60) ? OP_SEND : OP_SSEND, .arg = b, .inst = idx});
    emit(ps, b, (struct op){.kind = OP_RECV, .arg = a, .inst = idx});
    return;
  }
  /* an exchange: both send (eagerly) then both receive */
  int ab = ps->pair_msgs[a * n + b]++, ba = ps->pair_msgs[b * n + a]++;
  emit(ps, a, (struct op){.kind = OP_SEND, .arg = b, .inst = ab});
  emit(ps, b, (struct op){.kind = OP_SEND, .arg = a, .inst = ba});
  emit(ps, a, (struct op){.kind = OP_RECV, .arg = b, .inst = ba});
  emit(ps, b, (struct op){.kind = OP_RECV, .arg = a, .inst = ab});
}

static void gen_programs(struct program_set *ps, struct rng *g, const struct gen_cfg *cfg)
{
  int n = cfg->min_ranks + (int)below(g, (uint32_t)(cfg->max_ranks - cfg->min_ranks + 1));
  memset(ps, 0, sizeof *ps);
  ps->nranks = n;
  ps->ncomms = 1 + (int)below(g, (uint32_t)(cfg->max_comms ? cfg->max_comms : 8) + 1);
  ps->comms = calloc((size_t)ps->ncomms, sizeof *ps->comms);
  ps->progs = calloc((size_t)n, sizeof *ps->progs);
  ps->pair_msgs = calloc((size_t)n * (size_t)n, sizeof *ps->pair_msgs);
  ps->pw = calloc((size_t)n, sizeof *ps->pw);
  ps->npw = calloc((size_t)n, sizeof *ps->npw);
  int events = n * cfg->ops_per_rank;
  for (int r = 0; r < n; r++)
    ps->pw[r] = malloc((size_t)events * sizeof **ps->pw);
  bool *in = malloc((size_t)n * sizeof *in);
  for (int c = 0; c < ps->ncomms; c++) {
    if (c == 0)
      memset(in, 1, (size_t)n * sizeof *in); /* world */
    else
      plan_members(ps, c, g, in);
    set_members(&ps->comms[c], n, in);
  }
  free(in);
  ps->comms[0].created = true;

  int next_create = 1;
  uint32_t creates = cfg->creates ? cfg->creates : 5;
  for (int e = 0; e < events; e++) {
    uint32_t k = below(g, 100);
    int c = (int)below(g, (uint32_t)next_create);
    if (k < creates) {
      if (next_create < ps->ncomms)
        gen_create(ps, g, next_create++);
    } else if (k < 12)
      emit(ps, (int)below(g, (uint32_t)n), (struct op){.kind = OP_COMPUTE});
    else if (k < 40 || (!cfg->p2p && k < 70))
      gen_collective(ps, g, c, false);
    else if (k < 55 || (!cfg->p2p && k < 97))
      gen_collective(ps, g, c, true);
    else if (!cfg->p2p || n < 2)
      emit(ps, (int)below(g, (uint32_t)n), (struct op){.kind = OP_COMPUTE});
    else
      gen_p2p(ps, g);
  }
  for (int r = 0; r < n; r++)
    flush_waits(ps, r);
  if (chance(g, 50)) /* MPI_Finalize: a collective on world */
    gen_collective(ps, g, 0, false);
  for (int r = 0; r < n; r++)
    flush_waits(ps, r);
}

static void free_programs(struct program_set *ps)
{
  for (int c = 0; c < ps->ncomms; c++) {
    free(ps->comms[c].members);
    free(ps->comms[c].in);
  }
  for (int r = 0; r < ps->nranks; r++) {
    free(ps->progs[r].ops);
    free(ps->pw[r]);
  }
  free(ps->comms);
  free(ps->progs);
  free(ps->pair_msgs);
  free(ps->pw);
  free(ps->npw);
}

/* ---------------------------------------------------------------- messages ----------- */

enum msg_type {
  M_BEGIN,
  M_TARGETS,
  M_END, /* coordinator -> rank */
  M_SEQ,
  M_RAISE,
  M_STATUS /* rank -> coordinator */
};

struct pair {
  uint64_t ggid, value;
};

struct msg {
  enum msg_type type;
  enum cc_status status;
  uint64_t ckpt, epoch, ggid, value;
  struct pair *tab; /* M_SEQ, M_TARGETS */
  size_t ntab;
};

/* FIFO: every channel is a TCP stream. */
struct queue {
  struct msg *m;
  size_t head, tail, cap;
};

static void enqueue(struct queue *q, struct msg m)
{
  if (q->tail == q->cap) {
    if (q->head > 0) {
      memmove(q->m, q->m + q->head, (q->tail - q->head) * sizeof *q->m);
      q->tail -= q->head;
      q->head = 0;
    } else {
      q->cap = q->cap ? 2 * q->cap : 16;
      q->m = realloc(q->m, q->cap * sizeof *q->m);
    }
  }
  q->m[q->tail++] = m;
}

static bool queue_empty(const struct queue *q)
{
  return q->head == q->tail;
}

static struct msg dequeue(struct queue *q)
{
  return q->m[q->head++];
}

static void queue_clear(struct queue *q)
{
  while (!queue_empty(q))
    free(dequeue(q).tab);
  q->head = q->tail = 0;
}

/* ---------------------------------------------------------------- the run ------------ */

/* Where a rank is inside its current operation.  S_TICKED: a fast-path tick counted the
 * collective and the thread has not yet committed to the call (the stub's "window").  S_IN:
 * entered a blocking collective or constructor, or posted a synchronous send. */
enum stage { S_NONE, S_TICKED, S_IN };

struct rank {
  int pc;
  enum stage stage;
  uint64_t v;   /* the program's data: every result flows into it */
  bool parked;  /* held at a collective entry (CC_PARK or CC_WAIT) */
  bool blocked; /* its last step could not complete its operation */
  struct cc_state cc;
  uint64_t ckpt; /* checkpoint it takes part in, 0: none */
  enum cc_status said;
  uint64_t said_epoch;
  struct queue in, out;
  /* The groups the coordinator knows this rank is in (SEQ and RAISE), as mana_lh's link keeps
   * them: the coordinator sends a rank its own groups' targets only. */
  uint64_t *told;
  size_t ntold, told_cap;
};

struct inst {
  int entered;
  uint64_t sum;
};

struct chan {
  uint64_t *vals;
  int sent, consumed;
};

struct stats {
  uint64_t runs, ranks_max, checkpoints, aborted, restarts;
  uint64_t epochs_max, raises_max, raises_sum, releases_max, releases_sum, needed_max;
  uint64_t needed_sum, overshoot, steps, deadlocks;
  uint64_t rank_raises, windows, late_joins, parks; /* how often the subtle paths ran */
  uint64_t joins;    /* groups reported after SEQ (RAISE of the rank's own SEQ) */
  uint64_t catchups; /* collectives started below target while converging */
};

struct sim {
  const struct program_set *ps;
  uint64_t seed;
  struct rng rng;
  int n;
  struct rank *ranks;
  uint32_t *lag; /* percent chance that a rank is not yet back from a completed collective */
  struct inst **inst;
  struct chan *chans;
  struct ckpt *coord; /* the generation in progress (NULL when none) */
  uint64_t ckpt_id;
  bool active;
  uint64_t abort_at; /* step at which the active checkpoint is aborted, 0: never */
  uint64_t *ckpt_at;
  int nckpt, next_ckpt;
  uint64_t needed; /* releases of the active checkpoint made when nothing else could move */
  bool no_release; /* a coordinator without the stall rule: may deadlock */
  bool deadlocked;
  uint64_t steps;
  struct stats *stats;
};

#define SIM_ASSERT(s, cond, fmt, ...)                                                              \
  cr_assert((cond), "seed %llu, %d ranks, step %llu: " fmt, (unsigned long long)(s)->seed, (s)->n, \
            (unsigned long long)(s)->steps, ##__VA_ARGS__)

static const struct op *cur_op(const struct sim *s, int r)
{
  return &s->ps->progs[r].ops[s->ranks[r].pc];
}

static bool finished(const struct sim *s, int r)
{
  return s->ranks[r].pc == s->ps->progs[r].len;
}

static uint64_t result_of(int comm, int inst, uint64_t sum)
{
  return mix(sum ^ ((uint64_t)comm << 32 | (uint32_t)inst));
}

static bool inst_complete(const struct sim *s, int comm, int inst)
{
  return s->inst[comm][inst].entered == s->ps->comms[comm].n;
}

static bool told(const struct rank *R, uint64_t ggid)
{
  for (size_t i = 0; i < R->ntold; i++)
    if (R->told[i] == ggid)
      return true;
  return false;
}

static void note_told(struct rank *R, uint64_t ggid)
{
  if (told(R, ggid))
    return;
  if (R->ntold == R->told_cap) {
    R->told_cap = R->told_cap ? 2 * R->told_cap : 8;
    R->told = realloc(R->told, R->told_cap * sizeof *R->told);
  }
  R->told[R->ntold++] = ggid;
}

static void send_to_coord(struct sim *s, int r, struct msg m)
{
  struct rank *R = &s->ranks[r];
  if (m.type == M_SEQ) {
    R->ntold = 0;
    for (size_t i = 0; i < m.ntab; i++)
      note_told(R, m.tab[i].ggid);
  } else if (m.type == M_RAISE) {
    note_told(R, m.ggid);
  }
  m.ckpt = R->ckpt;
  enqueue(&R->out, m);
}

/* Before a status that says all met, unless the last one did at this epoch (nothing counted
 * since, so nothing joined): a RAISE of its SEQ for each group joined since the coordinator
 * last heard of its groups, as mana_lh's link does. */
static void tell_joined(struct sim *s, int r, enum cc_status st)
{
  struct rank *R = &s->ranks[r];
  bool met = st == CC_ST_PARKED || st == CC_ST_DONE;
  bool was_met = R->said == CC_ST_PARKED || R->said == CC_ST_DONE;
  if (!met || (was_met && R->said_epoch == R->cc.epoch))
    return;
  uint64_t cursor = 0, ggid, seq;
  while (cc_next(&R->cc, &cursor, &ggid, &seq))
    if (!told(R, ggid)) {
      send_to_coord(s, r, (struct msg){.type = M_RAISE, .ggid = ggid, .value = seq});
      s->stats->joins++;
    }
}

/* STATUS when it changed (or always, after new targets: the coordinator needs an answer for
 * every epoch).  Only while converging: before the targets there is nothing to say. */
static void tell_status(struct sim *s, int r, bool always)
{
  struct rank *R = &s->ranks[r];
  if (R->cc.phase != CC_CONVERGE)
    return;
  enum cc_where where = R->parked ? CC_AT_ENTRY : R->blocked ? CC_AT_WAIT : CC_AT_WORK;
  enum cc_status st = cc_status(&R->cc, where);
  if (!always && st == R->said && R->said_epoch == R->cc.epoch)
    return;
  tell_joined(s, r, st);
  struct msg m = {.type = M_STATUS, .status = st, .epoch = R->cc.epoch};
  if (st == CC_ST_PARKED) {
    m.ggid = s->ps->comms[cur_op(s, r)->comm].ggid;
    m.value = cc_seq(&R->cc, m.ggid);
  }
  send_to_coord(s, r, m);
  R->said = st;
  R->said_epoch = R->cc.epoch;
}

static void advance(struct rank *R)
{
  R->pc++;
  R->stage = S_NONE;
  R->blocked = false;
}

static void enter(struct sim *s, int r, const struct op *op)
{
  struct rank *R = &s->ranks[r];
  struct inst *in = &s->inst[op->comm][op->inst];
  in->entered++;
  in->sum += mix(R->v);
  if (op->kind == OP_ICOLL)
    advance(R);
  else
    R->stage = S_IN;
}

/* A blocking collective or constructor this rank entered: it returns once all have entered. */
static void finish_blocking(struct sim *s, int r, const struct op *op)
{
  struct rank *R = &s->ranks[r];
  if (!inst_complete(s, op->comm, op->inst)) {
    R->blocked = true;
    return;
  }
  if (s->lag[r] && chance(&s->rng, s->lag[r]))
    return; /* some ranks come back from MPI late: others run ahead meanwhile */
  R->v = mix(R->v ^ result_of(op->comm, op->inst, s->inst[op->comm][op->inst].sum));
  if (op->kind == OP_CREATE) {
    uint64_t child = op->arg >= 0 ? s->ps->comms[op->arg].ggid : 0;
    cc_constructor_done(&R->cc, child);
  }
  advance(R);
}

static void raise_to_coord(void *ctx, uint64_t ggid, uint64_t target);

/* The wrapper's entry.  While idle the fast path counts (cc_tick_fast) and the thread is then
 * in its "window" until it commits to the call in a later step, so a checkpoint request can
 * fall in between (rank_begin lets the window close first, as the checkpoint thread waits for
 * it).  Otherwise the algorithm decides.  Constructors always take the slow path. */
static void step_collective(struct sim *s, int r, const struct op *op)
{
  struct rank *R = &s->ranks[r];
  uint64_t g = s->ps->comms[op->comm].ggid;
  if (R->stage == S_IN) {
    finish_blocking(s, r, op);
    return;
  }
  if (R->stage == S_TICKED) {
    SIM_ASSERT(s, R->cc.phase == CC_IDLE, "rank %d: a checkpoint began inside the window", r);
    enter(s, r, op);
    return;
  }
  if (R->cc.phase == CC_IDLE && op->kind != OP_CREATE && cc_tick_fast(&R->cc, g)) {
    R->stage = S_TICKED;
    return;
  }
  uint64_t to = 0;
  enum cc_decision d = op->kind == OP_CREATE ? cc_on_constructor_entry(&R->cc, g, &to)
                                             : cc_on_collective_entry(&R->cc, g, &to);
  switch (d) {
  case CC_WAIT:
  case CC_PARK:
    R->parked = true;
    s->stats->parks += d == CC_PARK;
    return;
  case CC_RAISE:
    /* the raise is on its way (same FIFO channel) before the rank enters */
    send_to_coord(s, r, (struct msg){.type = M_RAISE, .ggid = g, .value = to});
    s->stats->rank_raises++;
    __attribute__((fallthrough));
  case CC_PROCEED:
    s->stats->catchups += R->cc.phase == CC_CONVERGE;
    enter(s, r, op);
    return;
  }
}

static void step_p2p(struct sim *s, int r, const struct op *op)
{
  struct rank *R = &s->ranks[r];
  int n = s->n;
  if (op->kind == OP_RECV) {
    struct chan *ch = &s->chans[op->arg * n + r];
    if (ch->sent <= op->inst) {
      R->blocked = true;
      return;
    }
    SIM_ASSERT(s, ch->consumed == op->inst, "messages match in order");
    R->v = mix(R->v ^ ch->vals[ch->consumed++]);
    advance(R);
    return;
  }
  struct chan *ch = &s->chans[r * n + op->arg];
  if (R->stage == S_NONE) {
    SIM_ASSERT(s, ch->sent == op->inst, "sends in order");
    ch->vals[ch->sent++] = R->v;
    R->stage = S_IN;
  }
  if (op->kind == OP_SSEND && ch->consumed <= op->inst) {
    R->blocked = true; /* synchronous: until the receiver has matched it */
    return;
  }
  advance(R);
}

static void rank_step(struct sim *s, int r)
{
  struct rank *R = &s->ranks[r];
  const struct op *op = cur_op(s, r);
  switch (op->kind) {
  case OP_COMPUTE:
    R->v = mix(R->v + (uint64_t)R->pc);
    advance(R);
    break;
  case OP_COLL:
  case OP_ICOLL:
  case OP_CREATE:
    step_collective(s, r, op);
    break;
  case OP_WAIT:
    if (inst_complete(s, op->comm, op->inst)) {
      R->v = mix(R->v ^ result_of(op->comm, op->inst, s->inst[op->comm][op->inst].sum));
      advance(R);
    } else {
      R->blocked = true;
    }
    break;
  default:
    step_p2p(s, r, op);
    break;
  }
  tell_status(s, r, false);
}

/* Could rank r's next step change anything? */
static bool rank_can_move(const struct sim *s, int r)
{
  const struct rank *R = &s->ranks[r];
  if (finished(s, r) || R->parked)
    return false;
  const struct op *op = cur_op(s, r);
  switch (op->kind) {
  case OP_COLL:
  case OP_CREATE:
    return R->stage != S_IN || inst_complete(s, op->comm, op->inst);
  case OP_WAIT:
    return inst_complete(s, op->comm, op->inst);
  case OP_RECV:
    return s->chans[op->arg * s->n + r].sent > op->inst;
  case OP_SSEND:
    return R->stage != S_IN || s->chans[r * s->n + op->arg].consumed > op->inst;
  default:
    return true;
  }
}

/* ---------------------------------------------------------------- rank side messages - */

static void raise_to_coord(void *ctx, uint64_t ggid, uint64_t target)
{
  struct sim *s = ((void **)ctx)[0];
  int r = (int)(intptr_t)((void **)ctx)[1];
  send_to_coord(s, r, (struct msg){.type = M_RAISE, .ggid = ggid, .value = target});
  s->stats->overshoot++;
}

static void rank_begin(struct sim *s, int r, uint64_t ckpt)
{
  struct rank *R = &s->ranks[r];
  if (R->stage == S_TICKED) {
    /* The checkpoint thread has made new fast paths fail and waits until no application
     * thread is between its tick and its commit: this one commits. */
    enter(s, r, cur_op(s, r));
    s->stats->windows++;
  }
  SIM_ASSERT(s, cc_begin(&R->cc) == 0, "rank %d: begin", r);
  R->ckpt = ckpt;
  R->said = CC_ST_NONE;
  struct msg m = {.type = M_SEQ, .tab = malloc((R->cc.groups.count + 1) * sizeof *m.tab)};
  uint64_t cursor = 0;
  while (cc_next(&R->cc, &cursor, &m.tab[m.ntab].ggid, &m.tab[m.ntab].value))
    m.ntab++;
  send_to_coord(s, r, m);
}

static void rank_targets(struct sim *s, int r, const struct msg *m)
{
  struct rank *R = &s->ranks[r];
  if (m->ckpt != R->ckpt)
    return;
  for (size_t i = 0; i < m->ntab; i++)
    SIM_ASSERT(s, cc_set_target(&R->cc, m->tab[i].ggid, m->tab[i].value) == 0, "target");
  void *ctx[2] = {s, (void *)(intptr_t)r};
  cc_targets_done(&R->cc, m->epoch, raise_to_coord, ctx);
  /* A rank held at an entry stays parked only if all its targets are still met; otherwise
   * its next step asks the algorithm again. */
  if (R->parked && !cc_all_targets_met(&R->cc))
    R->parked = false;
  tell_status(s, r, true);
}

static void rank_receive(struct sim *s, int r)
{
  struct rank *R = &s->ranks[r];
  struct msg m = dequeue(&R->in);
  switch (m.type) {
  case M_BEGIN:
    rank_begin(s, r, m.ckpt);
    break;
  case M_TARGETS:
    rank_targets(s, r, &m);
    break;
  case M_END:
    if (m.ckpt == R->ckpt) {
      cc_end(&R->cc);
      R->ckpt = 0;
      R->parked = false;
    }
    break;
  default:
    SIM_ASSERT(s, false, "unexpected message to rank %d", r);
  }
  free(m.tab);
}

/* ---------------------------------------------------------------- coordinator side --- */

static void broadcast(struct sim *s, struct msg m)
{
  for (int r = 0; r < s->n; r++) {
    struct msg copy = m;
    if (m.ntab) {
      copy.tab = malloc(m.ntab * sizeof *m.tab);
      memcpy(copy.tab, m.tab, m.ntab * sizeof *m.tab);
    }
    enqueue(&s->ranks[r].in, copy);
  }
  free(m.tab);
}

/* TARGETS of the current epoch, to each rank what the coordinator's state machine says it
 * gets: its own groups' targets at epoch 1, their changes and its joins' afterwards. */
static void send_targets(struct sim *s)
{
  for (int r = 0; r < s->n; r++) {
    struct msg m = {.type = M_TARGETS, .ckpt = s->ckpt_id, .epoch = s->coord->epoch};
    size_t cap = 0, cursor = 0;
    struct coord_entry e;
    while (ckpt_next_rank_target(s->coord, (size_t)r, &cursor, &e)) {
      if (m.ntab == cap) {
        cap = cap ? 2 * cap : 8;
        m.tab = realloc(m.tab, cap * sizeof *m.tab);
      }
      m.tab[m.ntab++] = (struct pair){.ggid = e.ggid, .value = e.value};
    }
    enqueue(&s->ranks[r].in, m);
  }
}

static void checkpoint_taken(struct sim *s);

/* Carries out what the coordinator's state machine decided, as mana_coordinator does. */
static void act(struct sim *s, enum ckpt_action a)
{
  switch (a) {
  case CKPT_ACT_NONE:
    return;
  case CKPT_ACT_TARGETS_ALL:
  case CKPT_ACT_TARGETS_CHANGED:
    send_targets(s);
    return;
  case CKPT_ACT_DRAIN:
    checkpoint_taken(s);
    return;
  default:
    SIM_ASSERT(s, false, "coordinator action %d: %s", (int)a, s->coord->reason);
  }
}

/* One STATUS, as the coordinator's connection code turns it into an event. */
static enum ckpt_action coord_status(struct sim *s, int r, const struct msg *m)
{
  switch (m->status) {
  case CC_ST_PARKED:
    return ckpt_on_parked(s->coord, (size_t)r, m->epoch,
                          &(struct ckpt_park){.ggid = m->ggid, .seq = m->value});
  case CC_ST_DONE:
    return ckpt_on_parked(s->coord, (size_t)r, m->epoch, NULL);
  case CC_ST_RUNNING:
  case CC_ST_BLOCKED:
    return ckpt_on_running(s->coord, (size_t)r, m->epoch, m->status == CC_ST_BLOCKED);
  case CC_ST_NONE:
    break;
  }
  SIM_ASSERT(s, false, "rank %d sent status %d", r, (int)m->status);
  return CKPT_ACT_NONE;
}

static void coord_receive(struct sim *s, int r)
{
  struct msg m = dequeue(&s->ranks[r].out);
  if (s->active && m.ckpt == s->ckpt_id) {
    switch (m.type) {
    case M_SEQ: {
      struct coord_entry *e = malloc((m.ntab + 1) * sizeof *e);
      for (size_t i = 0; i < m.ntab; i++)
        e[i] = (struct coord_entry){.ggid = m.tab[i].ggid, .value = m.tab[i].value};
      enum ckpt_action a = ckpt_on_seq(s->coord, (size_t)r, e, m.ntab, false);
      free(e);
      act(s, a);
      break;
    }
    case M_RAISE: {
      uint64_t raises = s->coord->raises;
      enum ckpt_action a = ckpt_on_raise(s->coord, (size_t)r, m.ggid, m.value);
      /* a new epoch without a raise: the rank joined a group whose first collectives had
       * started elsewhere, and only it is told the target */
      s->stats->late_joins += a == CKPT_ACT_TARGETS_CHANGED && s->coord->raises == raises;
      act(s, a);
      break;
    }
    case M_STATUS:
      act(s, coord_status(s, r, &m));
      break;
    default:
      SIM_ASSERT(s, false, "unexpected message from rank %d", r);
    }
  }
  free(m.tab);
}

static bool anything_can_move(const struct sim *s);

/* Let the parked ranks pass one collective.  Counted as needed when nothing else could move
 * (a real deadlock through point-to-point), as early otherwise (a stale view). */
static void release(struct sim *s)
{
  s->needed += !anything_can_move(s);
  act(s, ckpt_release(s->coord));
}

static void start_checkpoint(struct sim *s)
{
  s->ckpt_id++;
  s->active = true;
  s->needed = 0;
  s->abort_at = chance(&s->rng, 10) ? s->steps + 1 + below(&s->rng, 200) : 0;
  s->coord = ckpt_new(s->ckpt_id, (size_t)s->n);
  SIM_ASSERT(s, s->coord != NULL, "out of memory");
  broadcast(s, (struct msg){.type = M_BEGIN, .ckpt = s->ckpt_id});
}

static void abort_checkpoint(struct sim *s)
{
  broadcast(s, (struct msg){.type = M_END, .ckpt = s->ckpt_id});
  ckpt_free(s->coord);
  s->coord = NULL;
  s->active = false;
  s->stats->aborted++;
}

/* ---------------------------------------------------------------- the safe point ----- */

static void dump(const struct sim *s)
{
  for (int r = 0; r < s->n; r++) {
    const struct rank *R = &s->ranks[r];
    const struct op *op = finished(s, r) ? NULL : cur_op(s, r);
    fprintf(stderr,
            "rank %d: pc %d/%d op %d comm %d inst %d stage %d parked %d blocked %d phase %d "
            "unmet %llu said %d\n",
            r, R->pc, s->ps->progs[r].len, op ? op->kind : -1, op ? op->comm : -1,
            op ? op->inst : -1, R->stage, R->parked, R->blocked, R->cc.phase,
            (unsigned long long)R->cc.unmet, R->said);
  }
}

/* What the checkpoint may rely on once the coordinator declares termination. */
static void check_safe_point(struct sim *s)
{
  const struct program_set *ps = s->ps;
  for (int c = 0; c < ps->ncomms; c++) {
    const struct comm *cm = &ps->comms[c];
    uint64_t target = 0;
    ckpt_target(s->coord, cm->ggid, &target);
    for (int i = 0; i < cm->n; i++) {
      int r = cm->members[i];
      SIM_ASSERT(s, cc_seq(&s->ranks[r].cc, cm->ggid) == target,
                 "comm %d: rank %d SEQ %llu, target %llu", c, r,
                 (unsigned long long)cc_seq(&s->ranks[r].cc, cm->ggid), (unsigned long long)target);
    }
    for (int k = 0; k < cm->ninst; k++) {
      if (s->inst[c][k].entered != 0 && s->inst[c][k].entered != cm->n)
        dump(s); /* every rank's position, to replay the seed by hand */
      SIM_ASSERT(s, s->inst[c][k].entered == 0 || s->inst[c][k].entered == cm->n,
                 "comm %d instance %d entered by %d of %d members", c, k, s->inst[c][k].entered,
                 cm->n);
    }
  }
  for (int r = 0; r < s->n; r++) {
    const struct rank *R = &s->ranks[r];
    SIM_ASSERT(s, cc_all_targets_met(&R->cc), "rank %d has unmet targets", r);
    for (size_t i = R->out.head; i < R->out.tail; i++)
      SIM_ASSERT(s, R->out.m[i].type != M_RAISE, "rank %d: a raise still in flight", r);
    for (size_t i = R->in.head; i < R->in.tail; i++)
      SIM_ASSERT(s, R->in.m[i].type != M_TARGETS, "rank %d: targets still in flight", r);
  }
}

/* A restart rebuilds each rank's table from the image: only (ggid, SEQ) pairs survive. */
static void restart_rank(struct sim *s, struct rank *R)
{
  size_t n = R->cc.groups.count, k = 0;
  struct pair *saved = malloc((n + 1) * sizeof *saved);
  uint64_t cursor = 0;
  while (cc_next(&R->cc, &cursor, &saved[k].ggid, &saved[k].value))
    k++;
  SIM_ASSERT(s, R->cc.constructing == 0, "a rank saved inside a constructor");
  cc_destroy(&R->cc);
  SIM_ASSERT(s, cc_init(&R->cc, 0, NULL) == 0, "init");
  for (size_t i = 0; i < k; i++)
    cc_restore(&R->cc, saved[i].ggid, saved[i].value);
  free(saved);
}

static void checkpoint_taken(struct sim *s)
{
  check_safe_point(s);
  struct stats *st = s->stats;
  st->checkpoints++;
  const struct ckpt *c = s->coord;
  st->epochs_max = c->epoch > st->epochs_max ? c->epoch : st->epochs_max;
  st->raises_max = c->raises > st->raises_max ? c->raises : st->raises_max;
  st->releases_max = c->releases > st->releases_max ? c->releases : st->releases_max;
  st->needed_max = s->needed > st->needed_max ? s->needed : st->needed_max;
  st->raises_sum += c->raises;
  st->releases_sum += c->releases;
  st->needed_sum += s->needed;
  bool restart = chance(&s->rng, 50);
  st->restarts += restart;
  for (int r = 0; r < s->n; r++) {
    struct rank *R = &s->ranks[r];
    /* A restart has new connections; a resume sees END.  Either way nothing in flight of
     * this checkpoint matters any more. */
    queue_clear(&R->in);
    queue_clear(&R->out);
    if (restart)
      restart_rank(s, R);
    else
      cc_end(&R->cc);
    R->ckpt = 0;
    R->parked = false;
  }
  ckpt_free(s->coord);
  s->coord = NULL;
  s->active = false;
}

/* ---------------------------------------------------------------- scheduler ---------- */

static bool all_finished(const struct sim *s)
{
  for (int r = 0; r < s->n; r++)
    if (!finished(s, r))
      return false;
  return true;
}

static bool anything_can_move(const struct sim *s)
{
  for (int r = 0; r < s->n; r++) {
    const struct rank *R = &s->ranks[r];
    if (rank_can_move(s, r) || !queue_empty(&R->in) || !queue_empty(&R->out))
      return true;
    if (!finished(s, r) && !R->parked && !R->blocked)
      return true; /* about to notice it waits */
  }
  return false;
}

/* Nothing can move: the coordinator must see a stall and release, or the protocol is stuck. */
static void unstick(struct sim *s)
{
  if (s->active && ckpt_stalled(s->coord) && !s->no_release) {
    release(s);
    return;
  }
  if (s->no_release) {
    s->deadlocked = true;
    return;
  }
  dump(s);
  SIM_ASSERT(s, false, "deadlock (checkpoint active: %d)", s->active);
}

/* A rank that cannot complete its operation spins in the wrapper's wait loop: the first
 * time round it says so (BLOCKED, if a target is unmet). */
static bool rank_event(struct sim *s, int r)
{
  struct rank *R = &s->ranks[r];
  if (rank_can_move(s, r)) {
    rank_step(s, r);
    return true;
  }
  if (finished(s, r) || R->parked || R->blocked)
    return false;
  R->blocked = true;
  tell_status(s, r, false);
  return true;
}

/* One random event; false if it changed nothing. */
static bool random_event(struct sim *s)
{
  uint32_t e = below(&s->rng, 3 * (uint32_t)s->n + 1);
  int r = (int)(e % (uint32_t)s->n);
  if (e < (uint32_t)s->n)
    return rank_event(s, r);
  if (e < 2 * (uint32_t)s->n) {
    if (queue_empty(&s->ranks[r].in))
      return false;
    rank_receive(s, r);
    return true;
  }
  if (e < 3 * (uint32_t)s->n) {
    if (queue_empty(&s->ranks[r].out))
      return false;
    coord_receive(s, r);
    return true;
  }
  /* The coordinator's stall timer: it may fire early (its view can be stale), which must be
   * harmless. */
  if (s->active && !s->no_release && ckpt_stalled(s->coord) && chance(&s->rng, 10)) {
    release(s);
    return true;
  }
  return false;
}

static void maybe_start_or_abort(struct sim *s)
{
  if (s->active && s->abort_at && s->steps >= s->abort_at) {
    abort_checkpoint(s);
    return;
  }
  if (!s->active && s->next_ckpt < s->nckpt && s->steps >= s->ckpt_at[s->next_ckpt]) {
    s->next_ckpt++;
    if (!all_finished(s))
      start_checkpoint(s);
  }
}

static void sim_init(struct sim *s, const struct program_set *ps, uint64_t seed, int nckpt,
                     struct stats *stats)
{
  memset(s, 0, sizeof *s);
  s->ps = ps;
  s->seed = seed;
  s->rng.s = seed ^ 0x5eed;
  s->n = ps->nranks;
  s->stats = stats;
  s->ranks = calloc((size_t)s->n, sizeof *s->ranks);
  s->lag = malloc((size_t)s->n * sizeof *s->lag);
  static const uint32_t lags[] = {0, 0, 50, 90};
  for (int r = 0; r < s->n; r++) {
    s->lag[r] = lags[below(&s->rng, 4)];
    cr_assert_eq(cc_init(&s->ranks[r].cc, 4, NULL), 0);
    cc_register(&s->ranks[r].cc, ps->comms[0].ggid); /* MPI_Init: world */
    s->ranks[r].v = mix((uint64_t)r + 1);
  }
  s->inst = calloc((size_t)ps->ncomms, sizeof *s->inst);
  for (int c = 0; c < ps->ncomms; c++)
    s->inst[c] = calloc((size_t)ps->comms[c].ninst + 1, sizeof **s->inst);
  s->chans = calloc((size_t)s->n * (size_t)s->n, sizeof *s->chans);
  for (int i = 0; i < s->n * s->n; i++)
    s->chans[i].vals = malloc(((size_t)ps->pair_msgs[i] + 1) * sizeof(uint64_t));
  int total = 0;
  for (int r = 0; r < s->n; r++)
    total += ps->progs[r].len;
  s->nckpt = nckpt;
  s->ckpt_at = calloc((size_t)nckpt + 1, sizeof *s->ckpt_at);
  for (int i = 0; i < nckpt; i++) /* sorted request times over the likely length of the run */
    s->ckpt_at[i] = (i ? s->ckpt_at[i - 1] : 0) + below(&s->rng, (uint32_t)(4 * total / nckpt + 1));
}

static void sim_free(struct sim *s)
{
  for (int r = 0; r < s->n; r++) {
    cc_destroy(&s->ranks[r].cc);
    free(s->ranks[r].told);
    queue_clear(&s->ranks[r].in);
    queue_clear(&s->ranks[r].out);
    free(s->ranks[r].in.m);
    free(s->ranks[r].out.m);
  }
  for (int c = 0; c < s->ps->ncomms; c++)
    free(s->inst[c]);
  for (int i = 0; i < s->n * s->n; i++)
    free(s->chans[i].vals);
  free(s->inst);
  free(s->chans);
  free(s->ranks);
  free(s->lag);
  free(s->ckpt_at);
  ckpt_free(s->coord);
}

/* Runs the programs to their end with nckpt checkpoint requests; each rank's final data goes
 * to out.  Returns false if it deadlocked (possible only with no_release). */
static bool sim_run(const struct program_set *ps, uint64_t seed, int nckpt, bool no_release,
                    struct stats *stats, uint64_t *out)
{
  struct sim s;
  sim_init(&s, ps, seed, nckpt, stats);
  s.no_release = no_release;
  uint64_t limit = 1000000 + 2000ull * (uint64_t)s.n * (uint64_t)s.n;
  for (int r = 0; r < s.n; r++)
    limit += 200ull * (uint64_t)ps->progs[r].len;
  int idle = 0;
  while ((!all_finished(&s) || s.active) && !s.deadlocked) {
    SIM_ASSERT(&s, ++s.steps < limit, "no termination (livelock?)");
    maybe_start_or_abort(&s);
    if (random_event(&s)) {
      idle = 0;
    } else if (++idle > 8 * s.n) {
      idle = 0;
      if (!anything_can_move(&s))
        unstick(&s);
    }
  }
  for (int r = 0; r < s.n; r++)
    out[r] = s.ranks[r].v;
  stats->steps += s.steps;
  stats->deadlocks += s.deadlocked;
  bool ok = !s.deadlocked;
  sim_free(&s);
  return ok;
}

/* ---------------------------------------------------------------- the tests ---------- */

static void report(const char *name, const struct stats *st)
{
  fprintf(stderr,
          "cc_sim %s: %llu runs (up to %llu ranks), %llu checkpoints (%llu restarted), %llu "
          "aborted; per checkpoint: epochs max %llu, raises max %llu mean %.2f, releases max "
          "%llu mean %.3f (needed: max %llu, total %llu); overshoot raises %llu; "
          "%llu scheduler steps; paths: %llu catch-up collectives, %llu parks, %llu raises at "
          "entry, %llu open windows, %llu late joins, %llu groups reported after SEQ\n",
          name, (unsigned long long)st->runs, (unsigned long long)st->ranks_max,
          (unsigned long long)st->checkpoints, (unsigned long long)st->restarts,
          (unsigned long long)st->aborted, (unsigned long long)st->epochs_max,
          (unsigned long long)st->raises_max,
          st->checkpoints ? (double)st->raises_sum / (double)st->checkpoints : 0.0,
          (unsigned long long)st->releases_max,
          st->checkpoints ? (double)st->releases_sum / (double)st->checkpoints : 0.0,
          (unsigned long long)st->needed_max, (unsigned long long)st->needed_sum,
          (unsigned long long)st->overshoot, (unsigned long long)st->steps,
          (unsigned long long)st->catchups, (unsigned long long)st->parks,
          (unsigned long long)st->rank_raises, (unsigned long long)st->windows,
          (unsigned long long)st->late_joins, (unsigned long long)st->joins);
}

static void run_many(const char *name, uint64_t first_seed, int runs, const struct gen_cfg *cfg,
                     struct stats *st)
{
  memset(st, 0, sizeof *st);
  for (int i = 0; i < runs; i++) {
    uint64_t seed = first_seed + (uint64_t)i;
    struct rng g = {seed};
    struct program_set ps;
    gen_programs(&ps, &g, cfg);
    uint64_t *plain = malloc((size_t)ps.nranks * sizeof *plain);
    uint64_t *ckpt = malloc((size_t)ps.nranks * sizeof *ckpt);
    struct stats scratch = {0};
    cr_assert(sim_run(&ps, seed * 2 + 1, 0, false, &scratch, plain));
    cr_assert(sim_run(&ps, seed, 1 + (int)below(&g, 3), false, st, ckpt));
    for (int r = 0; r < ps.nranks; r++)
      cr_assert_eq(ckpt[r], plain[r], "seed %llu rank %d: result differs from the plain run",
                   (unsigned long long)seed, r);
    st->runs++;
    st->ranks_max = (uint64_t)ps.nranks > st->ranks_max ? (uint64_t)ps.nranks : st->ranks_max;
    free(plain);
    free(ckpt);
    free_programs(&ps);
  }
  report(name, st);
}

Test(cc_sim, small_worlds, .timeout = 60)
{
  struct gen_cfg cfg = {.min_ranks = 2, .max_ranks = 8, .ops_per_rank = 12, .p2p = true};
  struct stats st;
  run_many("2-8 ranks", 1000, 1200, &cfg, &st);
  cr_assert_gt(st.checkpoints, 800);
}

Test(cc_sim, medium_worlds, .timeout = 60)
{
  struct gen_cfg cfg = {.min_ranks = 9, .max_ranks = 24, .ops_per_rank = 8, .p2p = true};
  struct stats st;
  run_many("9-24 ranks", 200000, 300, &cfg, &st);
  cr_assert_gt(st.checkpoints, 200);
}

Test(cc_sim, large_worlds, .timeout = 60)
{
  struct gen_cfg cfg = {.min_ranks = 25, .max_ranks = 64, .ops_per_rank = 6, .p2p = true};
  struct stats st;
  run_many("25-64 ranks", 300000, 60, &cfg, &st);
  cr_assert_gt(st.checkpoints, 40);
}

/* Without point-to-point traffic no rank can wait for a parked one, so the rules alone reach
 * the safe point: a release is never needed (early ones on a stale view may still happen). */
Test(cc_sim, collectives_only_never_need_a_release, .timeout = 60)
{
  struct gen_cfg cfg = {.min_ranks = 2, .max_ranks = 32, .ops_per_rank = 6, .p2p = false};
  struct stats st;
  run_many("collectives only, 2-32 ranks", 400000, 400, &cfg, &st);
  cr_assert_eq(st.needed_sum, 0);
}

/* Many communicators created during the run: ranks join groups whose first collective may
 * already have started elsewhere when the checkpoint request came (constructors in progress):
 * the coordinator, which sends a rank only its own groups' targets, must tell a rank that
 * joins such a group after its SEQ the target it missed (late joins). */
Test(cc_sim, communicators_created_during_convergence, .timeout = 60)
{
  struct gen_cfg cfg = {.min_ranks = 3,
                        .max_ranks = 16,
                        .ops_per_rank = 10,
                        .p2p = true,
                        .max_comms = 40,
                        .creates = 30};
  struct stats st;
  run_many("constructor-heavy, 3-16 ranks", 600000, 500, &cfg, &st);
  cr_assert_gt(st.late_joins, 0);
}

/* The stall rule is necessary: a coordinator that only waits for PARKED/DONE deadlocks on
 * programs where a rank with an unmet target waits for a message that a parked rank sends
 * only after its next collective.  The smallest such program, by hand.  g = {0, 2}, h = {1, 3}:
 *   rank 0: Coll(g); Send(1)        rank 1: Recv(0); Coll(h)
 *   rank 2: Coll(g)                 rank 3: Coll(h)
 * If rank 3 has entered Coll(h) when the SEQ tables are taken, TARGET[h] = 1 and TARGET[g] =
 * 0: ranks 0 and 2 have met all their targets and park at Coll(g); rank 1 must reach Coll(h)
 * but first needs the message rank 0 sends after Coll(g).  Only a release gets out. */
static void build_scenario(struct program_set *ps)
{
  enum { N = 4 };
  memset(ps, 0, sizeof *ps);
  ps->nranks = N;
  ps->ncomms = 3;
  ps->comms = calloc(3, sizeof *ps->comms);
  ps->progs = calloc(N, sizeof *ps->progs);
  ps->pair_msgs = calloc(N * N, sizeof *ps->pair_msgs);
  ps->pw = calloc(N, sizeof *ps->pw);
  ps->npw = calloc(N, sizeof *ps->npw);
  for (int r = 0; r < N; r++)
    ps->pw[r] = malloc(4 * sizeof **ps->pw);
  bool world[N] = {1, 1, 1, 1}, g[N] = {1, 0, 1, 0}, h[N] = {0, 1, 0, 1};
  set_members(&ps->comms[0], N, world);
  set_members(&ps->comms[1], N, g);
  set_members(&ps->comms[2], N, h);
  ps->comms[0].created = true;
  struct rng unused = {0};
  gen_create(ps, &unused, 1);
  gen_create(ps, &unused, 2);
  gen_collective(ps, &unused, 1, false);
  int idx = ps->pair_msgs[0 * N + 1]++;
  emit(ps, 0, (struct op){.kind = OP_SEND, .arg = 1, .inst = idx});
  emit(ps, 1, (struct op){.kind = OP_RECV, .arg = 0, .inst = idx});
  gen_collective(ps, &unused, 2, false);
}

Test(cc_sim, a_parked_rank_owing_a_message_is_released, .timeout = 60)
{
  struct program_set ps;
  build_scenario(&ps);
  struct stats with = {0}, without = {0};
  uint64_t plain[4], out[4];
  cr_assert(sim_run(&ps, 1, 0, false, &with, plain));
  for (uint64_t seed = 1; seed <= 3000; seed++) {
    cr_assert(sim_run(&ps, seed, 1, false, &with, out), "seed %llu", (unsigned long long)seed);
    cr_assert_arr_eq(out, plain, sizeof out);
    sim_run(&ps, seed, 1, true, &without, out);
  }
  fprintf(stderr,
          "cc_sim scenario: %llu checkpoints, %llu needed a release; without releases %llu of "
          "3000 runs deadlocked\n",
          (unsigned long long)with.checkpoints, (unsigned long long)with.needed_sum,
          (unsigned long long)without.deadlocks);
  cr_assert_gt(with.needed_sum, 0);
  cr_assert_gt(without.deadlocks, 0);
  free_programs(&ps);
}
