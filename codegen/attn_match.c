/* attn_match.c — the fused attention chain, found by analysing the IR.
 *
 * Before: a verified program after the IR passes.  After
 * cg_find_attention(): for a statement that starts an attention chain
 * (attn_impl.h), the chain's statements with every index of each mapped
 * onto the scores statement's indices, each statement's role, the
 * rescaling row and the consumer's factors split into E and F; 0 for
 * anything else, so that every other program is planned as before.
 *
 * With ATTN_FIND_RECOMPUTE, a chain without rows, with S2 statements and
 * either sweep (attn_impl.h); with ATTN_FIND_OPEN, s and the pointwise
 * tiles may be read after the chain.
 *
 * Nothing here looks at names: the chain is what its loads say.  Every
 * load of a chain tensor must index it with plain indices (one index
 * variable per dimension), which maps the reader's indices onto the
 * scores' B, R and C, consistently across all its loads. */
#include <string.h>

#include "attn_impl.h"
#include "ir/subst.h"

typedef struct {
  kbc_arena *a;
  const ir_program *p;
  cg_attention *ch;
  int n;           /* chain positions found so far */
  int *pos_of;     /* by tensor id: chain position of its writer, or -1 */
  int c_side;      /* which of S's contraction sides holds C: 0 unknown, 1 c1.n, 2 c1.m */
  int how;         /* ATTN_FIND_* */
} matcher;

/* ---- index maps ----------------------------------------------------------- */

static int in_ids(int id, const int *ids, int n) {
  for (int i = 0; i < n; i++)
    if (ids[i] == id) return 1;
  return 0;
}

/* Maps statement st's indices through its loads of chain tensors: 0 when a
 * load is not plain or two loads disagree. */
/* Whether x is floor(index / c) of a free index of st whose extent is c
 * times that of S's batch index `to` (recorded in x's split list). */
static int split_index(matcher *M, const ir_stmt *st, attn_stmt *x, const sym *idx, int to, const int *map) {
  const cg_contraction *c1 = &M->ch->c1;
  const sym *eh = M->ch->S->index[to].extent;
  if (!in_ids(to, c1->bat, c1->n_b)) return 0;
  for (int id = 0; id < st->n_index; id++) {
    if (st->index[id].kind != IR_IDX_FREE || map[id] >= 0) continue;
    double ratio = ir_estimate(st->index[id].extent) / ir_estimate(eh);
    int64_t c = (int64_t)ratio;
    if (c < 2 || ratio != (double)c || !sym_equal(st->index[id].extent, sym_scale(M->a, eh, c)) ||
        !sym_equal(idx, sym_div(M->a, sym_index(M->a, id, st->index[id].name), c)))
      continue;
    for (int k = 0; k < x->n_split; k++)
      if (x->split[k].id == id || x->split[k].frame == to) return x->split[k].id == id && x->split[k].frame == to;
    if (x->n_split >= CG_MAX_OUTER) return 0;
    x->split[x->n_split].id = id, x->split[x->n_split].frame = to, x->split[x->n_split++].c = c;
    return 1;
  }
  return 0;
}

/* Maps statement st's indices through its loads of chain tensors: 0 when a
 * load is neither plain nor a split (split_index), or two loads disagree. */
static int map_loads(matcher *M, const ir_stmt *st, const ir_expr *e, attn_stmt *x) {
  int *map = x->map;
  if (e->op == IR_OP_LOAD) {
    int q = M->pos_of[e->u.load.tensor->id];
    if (q < 0) return 1;
    const attn_stmt *w = &M->ch->st[q];
    if (w->role == ATTN_S2 && !w->mapped) return 1; /* resolve_s2 maps it from this reader's indices */
    for (int d = 0; d < e->u.load.tensor->rank; d++) {
      int id, wid;
      if (!sym_is_index(w->s->lhs[d], &wid) || w->map[wid] < 0) return 0;
      int to = w->map[wid];
      if (!sym_is_index(e->u.load.idx[d], &id)) {
        if (!split_index(M, st, x, e->u.load.idx[d], to, map)) return 0;
        continue;
      }
      if (map[id] >= 0 && map[id] != to) return 0;
      if (!sym_equal(st->index[id].extent, M->ch->S->index[to].extent)) return 0;
      map[id] = to;
    }
    return 1;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!map_loads(M, st, e->arg[i], x)) return 0;
  return 1;
}

/* Whether e mentions index id outside its loads of chain tensors. */
static int mentions_outside_chain(const matcher *M, const ir_expr *e, int id) {
  if (e->op == IR_OP_LOAD && M->pos_of[e->u.load.tensor->id] >= 0) return 0;
  if (e->op == IR_OP_LOAD || e->op == IR_OP_INDEX) return ir_expr_mentions_index(e, id);
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (mentions_outside_chain(M, e->arg[i], id)) return 1;
  return 0;
}

/* Whether the mapped ids of st (of kind `kind`, or all with kind < 0)
 * are exactly the S ids want[0..nw), each once. */
static int maps_onto(const ir_stmt *st, const int *map, int kind, const int *want, int nw) {
  int seen = 0;
  for (int id = 0; id < st->n_index; id++) {
    if (kind >= 0 && (int)st->index[id].kind != kind) continue;
    if (map[id] < 0 || !in_ids(map[id], want, nw)) return 0;
    for (int j = 0; j < id; j++)
      if ((kind < 0 || (int)st->index[j].kind == kind) && map[j] == map[id]) return 0;
    seen++;
  }
  return seen == nw;
}

/* Whether x[0..nx) and y[0..ny) hold the same ids, each once. */
static int same_set(const int *x, int nx, const int *y, int ny) {
  if (nx != ny) return 0;
  for (int i = 0; i < nx; i++) {
    if (!in_ids(x[i], y, ny)) return 0;
    for (int j = 0; j < i; j++)
      if (x[j] == x[i]) return 0;
  }
  return 1;
}

/* Whether e, outside the node `skip`, reads s or a wide tensor. */
static int reads_tiles(const matcher *M, const ir_expr *e, const ir_expr *skip) {
  if (e == skip) return 0;
  if (e->op == IR_OP_LOAD) {
    int q = M->pos_of[e->u.load.tensor->id];
    return q >= 0 && M->ch->st[q].role != ATTN_ROW;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (reads_tiles(M, e->arg[i], skip)) return 1;
  return 0;
}

static int reads_chain(const matcher *M, const ir_expr *e) {
  if (e->op == IR_OP_LOAD) return M->pos_of[e->u.load.tensor->id] >= 0;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (reads_chain(M, e->arg[i])) return 1;
  return 0;
}

/* ---- dependencies and factors --------------------------------------------- */

/* Chain positions e (in statement `at`) reads, through the wide
 * statements it reads; *cvary set when it varies along C. */
static unsigned deps(const matcher *M, int at, const ir_expr *e, int *cvary) {
  const cg_attention *ch = M->ch;
  int q = e->op == IR_OP_LOAD ? M->pos_of[e->u.load.tensor->id] : -1;
  if (q >= 0) {
    if (ch->st[q].role == ATTN_S || ch->st[q].role == ATTN_S2) *cvary = 1;
    if (ch->st[q].role != ATTN_WIDE) return 1u << q;
    *cvary = 1;
    return 1u << q | deps(M, q, ch->st[q].s->rhs, cvary);
  }
  const ir_stmt *st = ch->st[at].s;
  for (int id = 0; id < st->n_index; id++)
    if (ch->st[at].map[id] >= 0 && in_ids(ch->st[at].map[id], ch->c1.n, ch->c1.n_n) && ir_expr_mentions_index(e, id))
      *cvary = 1;
  unsigned d = 0;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) d |= deps(M, at, e->arg[i], cvary);
  return d;
}

static unsigned row_mask(const cg_attention *ch, int n) {
  unsigned m = 0;
  for (int q = 0; q < n; q++)
    if (ch->st[q].role == ATTN_ROW) m |= 1u << q;
  return m;
}

/* e's factors (through * and /, and into the wide statements it reads). */
static int factorize(const matcher *M, int at, const ir_expr *e, int inv, attn_factor *f, int *n) {
  if (e->type == IR_TY_FLOAT && (e->op == IR_OP_MUL || e->op == IR_OP_DIV))
    return factorize(M, at, e->arg[0], inv, f, n) &&
           factorize(M, at, e->arg[1], e->op == IR_OP_DIV ? !inv : inv, f, n);
  if (e->op == IR_OP_LOAD) {
    int q = M->pos_of[e->u.load.tensor->id];
    if (q >= 0 && M->ch->st[q].role == ATTN_WIDE) return factorize(M, q, M->ch->st[q].s->rhs, inv, f, n);
  }
  if (*n >= ATTN_MAX_FACTORS) return 0;
  f[(*n)++] = (attn_factor){.e = e, .at = at, .inv = inv};
  return 1;
}

/* The text of e in statement `at` with every index named after the S
 * index it stands for and chain tensors by their tile names: two
 * expressions of different statements with the same text compute the
 * same value at a point. */
static const char *frame_text(const matcher *M, int at, const ir_expr *e) {
  kbc_arena *a = M->a;
  const cg_attention *ch = M->ch;
  const ir_stmt *st = ch->st[at].s;
  cg_names *names = cg_names_make(a, M->p);
  const char **value = KBC_NEW_ARRAY(a, const char *, M->p->tensors.len + 1);
  for (int q = 0; q < M->n; q++) value[ch->st[q].s->out->id] = kbc_arena_printf(a, "_t%d", q);
  const char **idx = KBC_NEW_ARRAY(a, const char *, st->n_index + 1);
  for (int id = 0; id < st->n_index; id++)
    idx[id] = ch->st[at].map[id] >= 0 ? kbc_arena_printf(a, "_f%d", ch->st[at].map[id]) : "_unmapped";
  kbc_buf scratch = {0};
  cg_options opt = cg_options_default();
  cg_emit E = {.a = a, .p = M->p, .opt = &opt, .names = names, .out = &scratch, .s = st, .idx = idx};
  cg_expr_ctx x = {.value_of = value};
  const char *t = cg_expr_in(&E, e, &x);
  kbc_buf_free(&scratch);
  return t;
}

/* Whether e (in statement `at`) is exp(X - m), m the one rescaling max row
 * and X its body (the same text), seen through the wide tensors e reads,
 * or such a value masked: where(cond, it, 0) or where(cond, 0, it) with a
 * condition that reads no row (a causal mask written on the
 * probabilities).  Records m as the chain's rescaling row. */
static int scaled_form(matcher *M, int at, const ir_expr *e) {
  cg_attention *ch = M->ch;
  int cv = 0;
  if (e->op == IR_OP_LOAD) {
    int q = M->pos_of[e->u.load.tensor->id];
    return q >= 0 && ch->st[q].role == ATTN_WIDE && scaled_form(M, q, ch->st[q].s->rhs);
  }
  if (e->op == IR_OP_WHERE) {
    if (deps(M, at, e->arg[0], &cv) & row_mask(ch, M->n)) return 0;
    for (int b = 1; b <= 2; b++) {
      const ir_expr *z = e->arg[3 - b];
      if (z->op == IR_OP_CONST && z->u.value == 0.0 && scaled_form(M, at, e->arg[b])) return 1;
    }
    return 0;
  }
  if (e->op != IR_OP_EXP || e->arg[0]->op != IR_OP_SUB || e->arg[0]->arg[1]->op != IR_OP_LOAD) return 0;
  int q = M->pos_of[e->arg[0]->arg[1]->u.load.tensor->id];
  const attn_stmt *m = q >= 0 ? &ch->st[q] : NULL;
  if (!m || m->role != ATTN_ROW || m->op != IR_RED_MAX || m->scaled || (ch->m_row >= 0 && ch->m_row != q) ||
      (deps(M, at, e->arg[0]->arg[0], &cv) & row_mask(ch, M->n)) ||
      strcmp(frame_text(M, at, e->arg[0]->arg[0]), frame_text(M, q, m->s->rhs->arg[0])))
    return 0;
  ch->m_row = q;
  return 1;
}

/* Classifies factor f: 0 when it cannot be had in one sweep.  A factor
 * reading rows must be scaled_form (then rescaled when the max grows) or
 * (allow_rows) constant along C. */
static int classify(matcher *M, attn_factor *f, int allow_rows) {
  int cvary = 0;
  unsigned rows = deps(M, f->at, f->e, &cvary) & row_mask(M->ch, M->n);
  f->row_const = !cvary;
  if (!rows) return 1;
  if (!f->inv && scaled_form(M, f->at, f->e)) {
    f->scaled = 1;
    return 1;
  }
  return allow_rows && f->row_const;
}

/* ---- the statements of the chain ------------------------------------------- */

/* The S ids of B and R (all but C), and C's. */
static int not_c(const cg_attention *ch, int *out) {
  int n = 0;
  for (int id = 0; id < ch->S->n_index; id++)
    if (ch->S->index[id].kind == IR_IDX_FREE && !in_ids(id, ch->c1.n, ch->c1.n_n)) out[n++] = id;
  return n;
}

/* c with its operands exchanged: a and its free ids m for b and n. */
static void swap_sides(cg_contraction *c) {
  cg_contraction t = *c;
  c->a = t.b, c->b = t.a;
  c->n_m = t.n_n, c->n_n = t.n_m;
  memcpy(c->m, t.n, sizeof c->m);
  memcpy(c->n, t.m, sizeof c->n);
}

/* Fixes which side of S's contraction holds C: the side whose free ids are
 * exactly cs[0..n) (swapping A and B where it is the first). */
static int fix_c(matcher *M, const int *cs, int n) {
  cg_contraction *c = &M->ch->c1;
  int side = 0;
  if (same_set(cs, n, c->n, c->n_n)) side = 1;
  else if (same_set(cs, n, c->m, c->n_m)) side = 2;
  if (!side || (M->c_side && M->c_side != side)) return 0;
  if (side == 2 && M->c_side == 0) swap_sides(c);
  M->c_side = side;
  return 1;
}

/* The S ids that statement st's ids of kind `kind` map to. */
static int mapped_of_kind(const ir_stmt *st, const int *map, int kind, int *out) {
  int n = 0;
  for (int id = 0; id < st->n_index; id++)
    if ((int)st->index[id].kind == kind) out[n++] = map[id];
  return n;
}

static int row_stmt(matcher *M, int q) {
  cg_attention *ch = M->ch;
  attn_stmt *r = &ch->st[q];
  const ir_stmt *st = r->s;
  int cs[64], n = mapped_of_kind(st, r->map, IR_IDX_REDUCE, cs);
  for (int i = 0; i < n; i++)
    if (cs[i] < 0) return 0;
  if (!fix_c(M, cs, n)) return 0;
  int br[64], nbr = not_c(ch, br);
  if (!maps_onto(st, r->map, IR_IDX_FREE, br, nbr) || !maps_onto(st, r->map, IR_IDX_REDUCE, ch->c1.n, ch->c1.n_n))
    return 0;
  r->role = ATTN_ROW;
  r->op = st->rhs->u.reduce.op;
  attn_factor f[ATTN_MAX_FACTORS];
  int nf = 0, scaled = 0;
  if (!factorize(M, q, st->rhs->arg[0], 0, f, &nf)) return 0;
  for (int i = 0; i < nf; i++) {
    if (!classify(M, &f[i], 0)) return 0;
    scaled += f[i].scaled;
  }
  if (scaled > 1 || (scaled && r->op != IR_RED_SUM)) return 0;
  r->scaled = scaled;
  r->n_factors = nf;
  return 1;
}

static int wide_stmt(matcher *M, int q) {
  cg_attention *ch = M->ch;
  attn_stmt *w = &ch->st[q];
  if (w->n_split) return 0;
  int all[64], n = 0;
  for (int id = 0; id < ch->S->n_index; id++)
    if (ch->S->index[id].kind == IR_IDX_FREE) all[n++] = id;
  if (!maps_onto(w->s, w->map, -1, all, n)) return 0;
  w->role = ATTN_WIDE;
  return 1;
}

/* Once the rescaling row is known (a later row or the consumer finds it):
 * which wide tensors read it (computed after the max), and which read
 * another row (never computed: their readers expand them). */
static void wide_phases(matcher *M) {
  cg_attention *ch = M->ch;
  for (int q = 1; q < ch->count; q++) {
    attn_stmt *w = &ch->st[q];
    if (w->role != ATTN_WIDE) continue;
    int cvary = 0;
    unsigned rows = deps(M, q, w->s->rhs, &cvary) & row_mask(ch, q);
    w->late = ch->m_row >= 0 && (rows >> ch->m_row & 1);
    w->on_sums = (rows & ~(ch->m_row >= 0 ? 1u << ch->m_row : 0u)) != 0;
  }
}

/* The consumer's main sum split into its operands: a, the factors that
 * read the chain or vary along R (the probabilities, a mask), and b, the
 * rest (the values).  Only a, k and reduce of c are set. */
static int consumer_operands(matcher *M, int q, cg_contraction *c) {
  const ir_stmt *st = M->ch->st[q].s;
  memset(c, 0, sizeof *c);
  c->reduce = ir_main_sum(st, st->rhs);
  if (!c->reduce || c->reduce->u.reduce.n_vars > CG_MAX_OUTER) return 0;
  /* the side of S the sum runs over is the sweep (C; the scores' rows in a
   * recomputing chain's transposed kernel): fixed before the factors are
   * told apart by what they vary along */
  int cs[CG_MAX_OUTER];
  for (int i = 0; i < c->reduce->u.reduce.n_vars; i++)
    if ((cs[i] = M->ch->st[q].map[c->reduce->u.reduce.vars[i]]) < 0) return 0;
  if (!fix_c(M, cs, c->reduce->u.reduce.n_vars)) return 0;
  const ir_expr *f[16];
  int nf = 0;
  const ir_expr *stack[16];
  int top = 0;
  stack[top++] = c->reduce->arg[0];
  while (top) {
    const ir_expr *e = stack[--top];
    if (e->op == IR_OP_MUL && e->type == IR_TY_FLOAT && top + 2 <= 16) {
      stack[top++] = e->arg[1];
      stack[top++] = e->arg[0];
    } else if (nf < 16) {
      f[nf++] = e;
    } else {
      return 0;
    }
  }
  ir_expr *A = NULL, *B = NULL;
  for (int i = 0; i < nf; i++) {
    int to_a = reads_chain(M, f[i]);
    for (int id = 0; id < st->n_index && !to_a; id++)
      to_a = M->ch->st[q].map[id] >= 0 && in_ids(M->ch->st[q].map[id], M->ch->c1.m, M->ch->c1.n_m) &&
             ir_expr_mentions_index(f[i], id);
    ir_expr **side = to_a ? &A : &B;
    *side = *side ? ir_binary(M->a, IR_OP_MUL, *side, (ir_expr *)f[i], f[i]->loc) : (ir_expr *)f[i];
  }
  if (!A || !B || !reads_chain(M, A)) return 0;
  c->a = A;
  c->b = B;
  for (int i = 0; i < c->reduce->u.reduce.n_vars; i++) c->k[c->n_k++] = c->reduce->u.reduce.vars[i];
  return 1;
}

/* The consumer: a contraction over exactly C whose first operand reads the
 * chain at (B, R, C) and whose second (the values) reads none of it. */
static int out_stmt(matcher *M, int q) {
  cg_attention *ch = M->ch;
  attn_stmt *o = &ch->st[q];
  const ir_stmt *st = o->s;
  cg_contraction *c = &ch->c2;
  if (ir_expr_count_reduce(st->rhs) != 1 || !consumer_operands(M, q, c) || reads_tiles(M, st->rhs, c->reduce)) return 0;
  if (!maps_onto(st, o->map, IR_IDX_REDUCE, ch->c1.n, ch->c1.n_n)) return 0;
  /* free ids: mapped ones are B and R, each once, and the batch indices
   * split ones stand for; the rest (N2) only in the values (a split one
   * also in the loads of the chain) */
  int br[64], nbr = not_c(ch, br), mapped = o->n_split;
  ch->n_n2 = 0;
  for (int id = 0; id < st->n_index; id++) {
    if (st->index[id].kind != IR_IDX_FREE) continue;
    if (o->map[id] >= 0) {
      if (!in_ids(o->map[id], br, nbr)) return 0;
      for (int k = 0; k < o->n_split; k++)
        if (o->split[k].frame == o->map[id]) return 0;
      mapped++;
    } else {
      if (mentions_outside_chain(M, c->a, id) || ch->n_n2 >= CG_MAX_OUTER) return 0;
      int split = 0;
      for (int k = 0; k < o->n_split; k++) split |= o->split[k].id == id;
      if (!split && ir_expr_mentions_index(c->a, id)) return 0;
      ch->n2[ch->n_n2++] = id;
    }
  }
  if (mapped != nbr || !ch->n_n2) return 0;
  for (int k = 0; k < o->n_split; k++)
    if (o->map[o->split[k].id] >= 0) return 0; /* read plainly too */
  /* the values may not vary along R */
  for (int id = 0; id < st->n_index; id++)
    if (o->map[id] >= 0 && in_ids(o->map[id], ch->c1.m, ch->c1.n_m) && ir_expr_mentions_index(c->b, id)) return 0;
  o->role = ATTN_OUT;
  attn_factor f[ATTN_MAX_FACTORS];
  int nf = 0, scaled = 0;
  if (!factorize(M, q, c->a, 0, f, &nf)) return 0;
  for (int i = 0; i < nf; i++) {
    if (!classify(M, &f[i], 1)) return 0;
    scaled += f[i].scaled;
    if (f[i].row_const) ch->f[ch->n_f++] = f[i];
    else ch->e[ch->n_e++] = f[i];
  }
  return scaled <= 1 && ch->n_e > 0;
}

/* Whether statement j reads tensor t. */
static int stmt_reads(const ir_program *p, int j, const ir_tensor *t) { return ir_expr_reads(IR_STMT(p, j)->rhs, t); }

/* s and the wide tensors are read only inside the chain and written only
 * by it; rows say whether they are needed after it. */
static int closed(matcher *M) {
  const ir_program *p = M->p;
  cg_attention *ch = M->ch;
  int end = ch->first + ch->count;
  for (int q = 0; q < ch->count; q++) {
    attn_stmt *x = &ch->st[q];
    const ir_tensor *t = x->s->out;
    int read_after = 0;
    for (int j = 0; j < p->stmts.len; j++) {
      if (j >= ch->first && j < end) continue;
      /* the consumer's tensor may be added to later (a recomputing chain
       * split off a sum's other terms: recompute.c) */
      if (IR_STMT(p, j)->out == t && !(x->role == ATTN_OUT && j >= end && IR_STMT(p, j)->accumulate)) return 0;
      if (stmt_reads(p, j, t)) {
        if (j < ch->first) return 0;
        read_after = 1;
      }
    }
    if (x->role == ATTN_OUT || x->role == ATTN_PART) continue; /* written out (PART: keep) */
    if (x->role == ATTN_ROW) x->keep = read_after || t->role == IR_ROLE_OUTPUT;
    else if ((read_after && !(M->how & ATTN_FIND_OPEN)) || t->role != IR_ROLE_TEMP) return 0;
  }
  return 1;
}

double cg_attn_n2_estimate(const cg_attention *ch, int i) {
  const attn_stmt *o = &ch->st[ch->count - 1];
  for (int k = 0; k < o->n_split; k++)
    if (o->split[k].id == ch->n2[i]) return (double)o->split[k].c;
  return ir_estimate(ch->O->index[ch->n2[i]].extent);
}

cg_attention *cg_attention_new(kbc_arena *a) { return KBC_NEW(a, cg_attention); }

/* Maps the S2 tensors statement st reads (plainly, every index of the
 * load mapped through its other loads) from st's map; 0 where one cannot
 * be, or it does not cover B, R and C once each. */
static int resolve_s2(matcher *M, const ir_stmt *st, const ir_expr *e, const attn_stmt *x) {
  if (e->op == IR_OP_LOAD) {
    int q = M->pos_of[e->u.load.tensor->id];
    if (q < 0 || M->ch->st[q].role != ATTN_S2 || M->ch->st[q].mapped) return 1;
    attn_stmt *w = &M->ch->st[q];
    for (int d = 0; d < e->u.load.tensor->rank; d++) {
      int id, wid;
      if (!sym_is_index(e->u.load.idx[d], &id) || x->map[id] < 0 || !sym_is_index(w->s->lhs[d], &wid) ||
          !sym_equal(w->s->index[wid].extent, st->index[id].extent))
        return 0;
      w->map[wid] = x->map[id];
    }
    int all[64], n = 0;
    for (int id = 0; id < M->ch->S->n_index; id++)
      if (M->ch->S->index[id].kind == IR_IDX_FREE) all[n++] = id;
    if (!maps_onto(w->s, w->map, IR_IDX_FREE, all, n)) return 0;
    w->mapped = 1;
    return 1;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!resolve_s2(M, st, e->arg[i], x)) return 0;
  return 1;
}

/* Statement st as the chain's next S2 (RECOMPUTE: a contraction reading
 * nothing of the chain), its map pending. */
static int s2_stmt(matcher *M, const ir_stmt *st, int q) {
  cg_attention *ch = M->ch;
  if (!(M->how & ATTN_FIND_RECOMPUTE) || ch->n_s2 >= ATTN_MAX_S2 || st->out->role != IR_ROLE_TEMP ||
      ir_expr_count_reduce(st->rhs) != 1 || !cg_find_contraction(M->a, st, &ch->s2[ch->n_s2]))
    return 0;
  attn_stmt *x = &ch->st[q];
  x->role = ATTN_S2;
  x->s2 = ch->n_s2;
  ch->s2_at[ch->n_s2++] = q;
  return 1;
}

/* Each S2's sides as S's: a carries the kernel's rows, b its columns, its
 * batch the chain's, and its D the extent of S's. */
static int orient_s2(matcher *M) {
  cg_attention *ch = M->ch;
  for (int i = 0; i < ch->n_s2; i++) {
    const attn_stmt *w = &ch->st[ch->s2_at[i]];
    cg_contraction *c = &ch->s2[i];
    if (!w->mapped) return 0;
    int m[CG_MAX_OUTER], n[CG_MAX_OUTER], b[CG_MAX_OUTER];
    for (int k = 0; k < c->n_m; k++) m[k] = w->map[c->m[k]];
    for (int k = 0; k < c->n_n; k++) n[k] = w->map[c->n[k]];
    for (int k = 0; k < c->n_b; k++) b[k] = w->map[c->bat[k]];
    if (!same_set(b, c->n_b, ch->c1.bat, ch->c1.n_b)) return 0;
    if (same_set(m, c->n_m, ch->c1.n, ch->c1.n_n) && same_set(n, c->n_n, ch->c1.m, ch->c1.n_m)) {
      swap_sides(c);
    } else if (!same_set(m, c->n_m, ch->c1.m, ch->c1.n_m) || !same_set(n, c->n_n, ch->c1.n, ch->c1.n_n)) {
      return 0;
    }
    if (!sym_equal(cg_extent_sym(M->a, w->s, c->k, c->n_k), cg_extent_sym(M->a, ch->S, ch->c1.k, ch->c1.n_k))) return 0;
  }
  return 1;
}

/* Whether e reads a PART of the chain (nothing in it may). */
static int reads_part(const matcher *M, const ir_expr *e) {
  if (e->op == IR_OP_LOAD) {
    int q = M->pos_of[e->u.load.tensor->id];
    return q >= 0 && M->ch->st[q].role == ATTN_PART;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (reads_part(M, e->arg[i])) return 1;
  return 0;
}

/* Statement q as a PART (RECOMPUTE: a sum whose body reads the chain,
 * every index mapped), checked once the sweep's sides are fixed
 * (check_parts). */
static int part_stmt(matcher *M, int q) {
  cg_attention *ch = M->ch;
  attn_stmt *x = &ch->st[q];
  if (x->n_split || x->s->rhs->u.reduce.op != IR_RED_SUM || ch->n_part >= ATTN_MAX_PART) return 0;
  x->role = ATTN_PART;
  x->keep = 1;
  ch->part[ch->n_part++].at = q;
  return 1;
}

/* Each PART sums over C ids only, each once, and keeps B, R and the rest
 * of C, each once; its groups (the kept C ids, in c1.n's order) known and
 * at most ATTN_MAX_GROUPS; a plain load of the same tensor as an earlier
 * PART's body shares its staging tile. */
static int check_parts(matcher *M) {
  cg_attention *ch = M->ch;
  const cg_contraction *c1 = &ch->c1;
  for (int k = 0; k < ch->n_part; k++) {
    const attn_stmt *x = &ch->st[ch->part[k].at];
    const ir_stmt *st = x->s;
    /* its indices by the S ids they stand for: summed (C), kept C, and B
     * and R (the free ids outside C), each S id once */
    int br[64], nbr = not_c(ch, br);
    int rd[64], nrd = 0, kept[64], nk = 0, fb[64], nfb = 0;
    for (int id = 0; id < st->n_index; id++) {
      int to = x->map[id], in_c = to >= 0 && in_ids(to, c1->n, c1->n_n);
      if (to < 0 || in_ids(to, rd, nrd) || in_ids(to, kept, nk) || in_ids(to, fb, nfb)) return 0;
      if (st->index[id].kind == IR_IDX_REDUCE) {
        if (!in_c) return 0;
        rd[nrd++] = to;
      } else if (in_c) {
        kept[nk++] = to;
      } else {
        if (!in_ids(to, br, nbr)) return 0;
        fb[nfb++] = to;
      }
    }
    if (!nrd || nrd + nk != c1->n_n || nfb != nbr) return 0;
    int64_t groups = 1, v;
    ch->part[k].n_g = 0;
    for (int i = 0; i < c1->n_n; i++) {
      if (!in_ids(c1->n[i], kept, nk)) continue;
      if (!sym_is_const(ch->S->index[c1->n[i]].extent, &v)) return 0;
      groups *= v;
      ch->part[k].g[ch->part[k].n_g++] = c1->n[i];
    }
    if (groups > ATTN_MAX_GROUPS) return 0;
    ch->part[k].groups = (int)groups;
    ch->part[k].stage = k;
    const ir_expr *b = st->rhs->arg[0];
    for (int j = 0; j < k; j++) {
      const ir_expr *bj = ch->st[ch->part[j].at].s->rhs->arg[0];
      if (b->op == IR_OP_LOAD && bj->op == IR_OP_LOAD && b->u.load.tensor == bj->u.load.tensor &&
          ir_load_plain(b, NULL) && ir_load_plain(bj, NULL)) {
        ch->part[k].stage = ch->part[j].stage;
        break;
      }
    }
  }
  return 1;
}

/* D and the consumer's N2 known when compiling (the pipelined kernel). */
static int known_sizes(matcher *M) {
  const cg_attention *ch = M->ch;
  int64_t v;
  sym *n2 = sym_const(M->a, 1);
  for (int i = 0; i < ch->n_n2; i++) n2 = sym_mul(M->a, n2, attn_n2_extent(M->a, ch, i));
  return sym_is_const(cg_extent_sym(M->a, ch->S, ch->c1.k, ch->c1.n_k), &v) && sym_is_const(n2, &v);
}

int cg_find_attention(kbc_arena *a, const ir_program *p, const cg_options *o, int first, int how, cg_attention *out) {
  if (o->no_attn || o->no_gemm || o->no_fuse) return 0;
  const ir_stmt *S = IR_STMT(p, first);
  cg_attention local;
  cg_attention *ch = out ? out : &local;
  memset(ch, 0, sizeof *ch);
  ch->m_row = -1;
  ch->first = first;
  ch->S = S;
  ch->recompute = (how & ATTN_FIND_RECOMPUTE) != 0;
  if (S->accumulate || S->out->role != IR_ROLE_TEMP || ir_expr_count_reduce(S->rhs) != 1 ||
      !cg_find_contraction(a, S, &ch->c1))
    return 0;
  matcher M = {.a = a, .p = p, .ch = ch, .n = 1, .how = how};
  M.pos_of = KBC_NEW_ARRAY(a, int, p->tensors.len + 1);
  for (int i = 0; i < p->tensors.len; i++) M.pos_of[i] = -1;
  M.pos_of[S->out->id] = 0;
  ch->st[0] = (attn_stmt){.role = ATTN_S, .s = S, .map = KBC_NEW_ARRAY(a, int, S->n_index + 1)};
  for (int id = 0; id < S->n_index; id++) ch->st[0].map[id] = S->index[id].kind == IR_IDX_FREE ? id : -1;
  for (int j = first + 1; j < p->stmts.len && M.n < ATTN_MAX_STMTS; j++) {
    const ir_stmt *st = IR_STMT(p, j);
    if (st->accumulate || M.pos_of[st->out->id] >= 0) return 0;
    int q = M.n;
    attn_stmt *x = &ch->st[q];
    *x = (attn_stmt){.s = st, .map = KBC_NEW_ARRAY(a, int, st->n_index + 1)};
    for (int id = 0; id < st->n_index; id++) x->map[id] = -1;
    if (!reads_chain(&M, st->rhs)) {
      if (!s2_stmt(&M, st, q)) return 0;
      M.pos_of[st->out->id] = q;
      M.n++;
      continue;
    }
    /* S2 tensors first mapped by this reader: map it, then map again
     * through them (every load must agree) */
    if (!map_loads(&M, st, st->rhs, x) || !resolve_s2(&M, st, st->rhs, x) || !map_loads(&M, st, st->rhs, x)) return 0;
    int ok, all_mapped = !x->n_split; /* a row maps every free index; the consumer has its N2 */
    for (int id = 0; id < st->n_index; id++) all_mapped &= st->index[id].kind != IR_IDX_FREE || x->map[id] >= 0;
    if (reads_part(&M, st->rhs)) return 0;
    if (st->rhs->op == IR_OP_REDUCE && !ir_expr_has_reduce(st->rhs->arg[0]) && all_mapped && !ch->recompute)
      ok = row_stmt(&M, q);
    else if (st->rhs->op == IR_OP_REDUCE && !ir_expr_has_reduce(st->rhs->arg[0]) && all_mapped)
      ok = part_stmt(&M, q);
    else if (!ir_expr_has_reduce(st->rhs)) ok = wide_stmt(&M, q);
    else {
      if (!out_stmt(&M, q)) return 0;
      ch->O = st;
      ch->count = q + 1;
      break;
    }
    if (!ok) return 0;
    M.pos_of[st->out->id] = q;
    M.n++;
  }
  if (!ch->O || !closed(&M) || !orient_s2(&M) || !check_parts(&M)) return 0;
  wide_phases(&M);
  /* The consumer's N2 must be one tile (at most 128, estimated): every
   * further N2 tile would compute the scores again. */
  double n2 = 1;
  for (int i = 0; i < ch->n_n2; i++) n2 *= cg_attn_n2_estimate(ch, i);
  if (n2 > 128) return 0;
  /* An attention normalises its rows: two contractions back to back
   * without a row statement (an MLP) are left to the GEMM family.  A
   * recomputing chain has read its rows from memory: the pipelined
   * kernel, which needs D and N2 known, takes it. */
  if (ch->recompute) return known_sizes(&M) ? ch->count : 0;
  return row_mask(ch, ch->count) ? ch->count : 0;
}
