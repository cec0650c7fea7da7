/* recompute.c — the attention backward's scores-sized tensors recomputed
 * by each contraction that reads them, never kept in memory.
 *
 * Before: a verified program after the IR passes (rowsum.c has taken the
 * softmax backward's row sums through the forward's p . v).  After
 * cg_recompute(): the program codegen plans — p itself, or a copy in which
 *   - every consumer (a contraction reading, through pointwise statements,
 *     tensors of the scores' shape computed from scores-shaped contractions
 *     of narrow operands: dq = sum(j: ds * k), dk = sum(i: ds * q), dv =
 *     sum(i: p * go)) reads its own copies of the statements computing them,
 *     placed right before it, contractions first: a recomputing attention
 *     chain (attn_impl.h, ATTN_FIND_RECOMPUTE) whose row statistics (the
 *     softmax's max and sum, the backward's row sums) are loads;
 *   - a plain sum over some of the scores' columns whose body reads one
 *     consumer's members only (SAM-HQ's grh = sum(kx: ds)) moves into the
 *     first such consumer's chain as a partial row sum (ATTN_PART), the
 *     chain's own output besides the consumer's; where a statement
 *     between that sum and the consumer reads the sum, the chain goes at
 *     the sum with the consumer's term holding its main sum, and the
 *     consumer's other terms are added at its place (`y += rest`);
 *   - the originals, read by nothing else any more, are dropped; those a
 *     forward attention chain computes (s and p, for its p . v) stay in it.
 * FlashAttention-2's backward, found by analysis: nothing of the scores'
 * size reaches memory.  All or nothing: every copy must be an attention
 * chain that pays (attn_cost.c) and takes the pipelined kernel, every
 * forward chain must still match, and no original scores-sized statement
 * may be left outside one; else p is planned as it is.  The copy shares
 * p's tensors (their ids are the runtime's), the copies' own appended
 * after them (on chip only: no kernel takes them).  Off unless
 * KBC_ATTN_RECOMPUTE (opt.attn_recompute). */
#include <string.h>

#include "attn_impl.h"
#include "ir/subst.h"

typedef struct {
  kbc_arena *a;
  const ir_program *p;
  const cg_target *t;
  int n;              /* statements of p */
  int *writer;        /* by tensor id: its one writer (plain, not +=), else -1 */
  unsigned char *fwd; /* by statement: inside a forward attention chain */
  unsigned char **mem; /* by candidate consumer: its members (statements of p) */
  int *last_write;    /* by tensor id: the last statement writing it, or -1 */
  int *extra_of;      /* by statement: the candidate whose chain takes it as a PART, or -1 */
  int *split_at;      /* by candidate: where its chain goes when split (y = its main term there,
                         y += the rest at y: place_chain), or -1 */
  const ir_expr **main_term; /* by split candidate: the term holding its main sum (split_terms) */
  ir_expr **rest_terms;      /* by split candidate: its other terms, added up */
} recomputer;

/* Whether statement j computes a scores-shaped tensor of rank `rank` a
 * chain may recompute: pointwise, or one contraction (1: pointwise, 2:
 * contraction, 0: neither). */
static int member_kind(recomputer *R, int j, int rank) {
  const ir_stmt *X = IR_STMT(R->p, j);
  if (X->accumulate || X->out->role != IR_ROLE_TEMP || X->out->rank != rank) return 0;
  if (!ir_expr_has_reduce(X->rhs)) return 1;
  cg_contraction c;
  return ir_expr_count_reduce(X->rhs) == 1 && cg_find_contraction(R->a, X, &c) ? 2 : 0;
}

/* The members statement y's value needs: the writers of the tensors e
 * loads plainly that are members, through the pointwise ones (a
 * contraction's operands are read from memory). */
static void collect(recomputer *R, const ir_expr *e, int rank, int y, unsigned char *in) {
  if (e->op == IR_OP_LOAD) {
    int w = R->writer[e->u.load.tensor->id];
    if (w < 0 || w >= y || in[w] || !ir_load_plain(e, NULL)) return;
    int kind = member_kind(R, w, rank);
    if (!kind) return;
    in[w] = 1;
    if (kind == 1) collect(R, IR_STMT(R->p, w)->rhs, rank, y, in);
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) collect(R, e->arg[i], rank, y, in);
}

/* The rank of the scores-shaped tensor consumer y sums: of its main sum's
 * first plain load of a temporary over all the summed indices; 0 if none. */
static int summed_rank(const ir_expr *body, const ir_expr *sum) {
  if (body->op == IR_OP_LOAD) {
    if (body->u.load.tensor->role != IR_ROLE_TEMP || !ir_load_plain(body, NULL)) return 0;
    for (int v = 0; v < sum->u.reduce.n_vars; v++)
      if (!ir_expr_mentions_index(body, sum->u.reduce.vars[v])) return 0;
    return body->u.load.tensor->rank;
  }
  for (int i = 0; i < ir_op_info[body->op].arity; i++) {
    int r = summed_rank(body->arg[i], sum);
    if (r) return r;
  }
  return 0;
}

/* Statement y's members (NULL where it is no candidate consumer). */
static unsigned char *members(recomputer *R, int y) {
  const ir_stmt *Y = IR_STMT(R->p, y);
  if (Y->accumulate || R->fwd[y] || ir_expr_count_reduce(Y->rhs) != 1) return NULL;
  const ir_expr *sum = ir_main_sum(Y, Y->rhs);
  int rank = sum ? summed_rank(sum->arg[0], sum) : 0;
  if (!rank) return NULL;
  unsigned char *in = KBC_NEW_ARRAY(R->a, unsigned char, R->n + 1);
  collect(R, sum->arg[0], rank, y, in);
  int contractions = 0;
  for (int j = 0; j < y; j++) contractions += in[j] && member_kind(R, j, rank) == 2;
  return contractions ? in : NULL;
}

/* In the copy x, the loads of tensors in `to` (by id, NULL: kept) retargeted. */
static void retarget_in(ir_expr *x, ir_tensor **to) {
  if (x->op == IR_OP_LOAD && to[x->u.load.tensor->id]) x->u.load.tensor = to[x->u.load.tensor->id];
  for (int i = 0; i < ir_op_info[x->op].arity; i++) retarget_in(x->arg[i], to);
}

/* e copied with its loads of tensors in `to` retargeted. */
static ir_expr *retarget(kbc_arena *a, const ir_expr *e, ir_tensor **to) {
  ir_expr *c = ir_expr_subst(a, e, 0, NULL, NULL);
  retarget_in(c, to);
  return c;
}

/* ---- partial sums taken along (attn_impl.h, ATTN_PART) ------------------ */

/* Whether e reads, plainly, a member of y, and no statement that is
 * another candidate's member but not y's (-1: reads such a one). */
static int reads_members_of(recomputer *R, const ir_expr *e, int y, const unsigned char *any_member) {
  if (e->op == IR_OP_LOAD) {
    int w = R->writer[e->u.load.tensor->id];
    if (w < 0 || !any_member[w]) return 0;
    return R->mem[y][w] && ir_load_plain(e, NULL) ? 1 : -1;
  }
  int hit = 0;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    int r = reads_members_of(R, e->arg[i], y, any_member);
    if (r < 0) return -1;
    hit |= r;
  }
  return hit;
}

/* The candidate whose chain may take statement z as a partial row sum
 * (a plain sum of a pointwise body reading that candidate's members, as
 * SAM-HQ's grh = sum(kx: ds)): the first later one; -1 for none. */
static int extra_owner(recomputer *R, const unsigned char *cand, const unsigned char *any_member, int z) {
  const ir_stmt *Z = IR_STMT(R->p, z);
  if (cand[z] || R->fwd[z] || any_member[z] || R->writer[Z->out->id] != z || Z->out->role == IR_ROLE_INPUT ||
      Z->rhs->op != IR_OP_REDUCE || Z->rhs->u.reduce.op != IR_RED_SUM || ir_expr_has_reduce(Z->rhs->arg[0]))
    return -1;
  for (int y = z + 1; y < R->n; y++) {
    if (!cand[y] || reads_members_of(R, Z->rhs->arg[0], y, any_member) != 1) continue;
    for (int j = 0; j < y; j++) /* a member reading it (a row statistic: ds = p * (dp - sum(dp * p))) */
      if (R->mem[y][j] && ir_expr_reads(IR_STMT(R->p, j)->rhs, Z->out)) return -1;
    return y;
  }
  return -1;
}

/* Whether every tensor e reads outside y's chain was last written before
 * statement `pos`. */
static int inputs_before(recomputer *R, const ir_expr *e, int y, int pos) {
  if (e->op == IR_OP_LOAD) {
    int t = e->u.load.tensor->id, w = R->writer[t];
    if (w >= 0 && (R->mem[y][w] || R->extra_of[w] == y)) return 1;
    return R->last_write[t] < pos;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!inputs_before(R, e->arg[i], y, pos)) return 0;
  return 1;
}

/* Y's right side split at its top-level sums into the term holding its
 * main sum (*main) and the rest (*rest, the other terms added up, or NULL
 * where there are none); 0 where the main sum is under a minus. */
static int split_terms(kbc_arena *a, const ir_expr *e, const ir_expr *sum, int neg, const ir_expr **main,
                       ir_expr **rest) {
  if (e->op == IR_OP_ADD || e->op == IR_OP_SUB)
    return split_terms(a, e->arg[0], sum, neg, main, rest) &&
           split_terms(a, e->arg[1], sum, e->op == IR_OP_SUB ? !neg : neg, main, rest);
  if (ir_expr_holds(e, sum)) {
    *main = e;
    return !neg;
  }
  ir_expr *t = ir_expr_subst(a, e, 0, NULL, NULL);
  if (neg) t = ir_unary(a, IR_OP_NEG, t, e->loc);
  *rest = *rest ? ir_binary(a, IR_OP_ADD, *rest, t, e->loc) : t;
  return 1;
}

/* Where candidate y's chain goes: before y (-1), or, where a statement
 * between its first PART and y reads a PART, at that first PART, y split:
 * the term holding its main sum computed by the chain, its other terms
 * added at y (`y += rest`), which needs everything the chain reads from
 * outside written before it; where only y's other terms read a PART, y
 * split with its chain right before it.  0 where none holds: y's PARTs
 * are given up. */
static int place_chain(recomputer *R, int y, int *at) {
  int first = -1;
  for (int z = 0; z < y; z++)
    if (R->extra_of[z] == y && first < 0) first = z;
  *at = -1;
  if (first < 0) return 1;
  int read_early = 0;
  for (int j = first + 1; j < y; j++) {
    if (R->extra_of[j] == y) continue;
    for (int z = first; z < j; z++)
      read_early |= R->extra_of[z] == y && ir_expr_reads(IR_STMT(R->p, j)->rhs, IR_STMT(R->p, z)->out);
  }
  int read_by_y = 0; /* y's own other terms read a PART: y is split, its chain stays before it */
  for (int z = first; z < y; z++)
    read_by_y |= R->extra_of[z] == y && ir_expr_reads(IR_STMT(R->p, y)->rhs, IR_STMT(R->p, z)->out);
  /* a PART moves to where the chain goes: what it reads must be there */
  int pos = read_early ? first : y;
  for (int z = first; z < y; z++)
    if (R->extra_of[z] == y && !inputs_before(R, IR_STMT(R->p, z)->rhs, y, first)) return 0;
  if (!read_early && !read_by_y) return 1;
  /* split: y = main + rest becomes y = main in the chain, y += rest at y */
  const ir_stmt *Y = IR_STMT(R->p, y);
  const ir_expr *main = NULL;
  ir_expr *rest = NULL;
  if (!split_terms(R->a, Y->rhs, ir_main_sum(Y, Y->rhs), 0, &main, &rest) || !main || !rest ||
      !inputs_before(R, main, y, pos))
    return 0;
  R->main_term[y] = main;
  R->rest_terms[y] = rest;
  for (int j = 0; j < y; j++)
    if (R->mem[y][j] && !inputs_before(R, IR_STMT(R->p, j)->rhs, y, pos)) return 0;
  for (int j = pos; j < y; j++) /* nothing between reads or writes y's tensor, written early now */
    if (IR_STMT(R->p, j)->out == Y->out || ir_expr_reads(IR_STMT(R->p, j)->rhs, Y->out)) return 0;
  *at = pos;
  return 1;
}

typedef struct {
  ir_program *np;
  unsigned char *heads; /* by statement of np */
  int *head_of;         /* by statement of p (a consumer): its chain's first statement in np, or -1 */
  int *count_of;        /* by statement of p: its chain's length */
  int *from;            /* by statement of np: the statement of p it copies or is */
} rebuilt;

/* The program with the consumers marked in cand recomputing their members,
 * dead statements dropped. */
static rebuilt rebuild(recomputer *R, const unsigned char *cand) {
  kbc_arena *a = R->a;
  const ir_program *p = R->p;
  rebuilt b = {0};
  ir_program *np = KBC_NEW(a, ir_program);
  *np = *p;
  np->arena = a;
  np->stmts = (kbc_vec){0};
  np->tensors = (kbc_vec){0};
  for (int i = 0; i < p->tensors.len; i++) kbc_vec_push(a, &np->tensors, IR_TENSOR(p, i));
  int cap = 2 * R->n;
  for (int y = 0; y < R->n; y++)
    if (cand[y])
      for (int j = 0; j < y; j++) cap += R->mem[y][j];
  int *from = KBC_NEW_ARRAY(a, int, cap + 1), nst = 0;
  unsigned char *head = KBC_NEW_ARRAY(a, unsigned char, cap + 1);
  b.head_of = KBC_NEW_ARRAY(a, int, R->n + 1);
  b.count_of = KBC_NEW_ARRAY(a, int, R->n + 1);
  ir_stmt **all = KBC_NEW_ARRAY(a, ir_stmt *, cap + 1);
  for (int y = 0; y < R->n; y++) b.head_of[y] = -1;
  for (int at = 0; at < R->n; at++) {
    /* the chains that go here: those split off to this statement, then
     * this one's own */
    for (int y = at; y < R->n; y++) {
      int split = R->split_at[y] == at;
      if (!cand[y] || (!split && (y != at || R->split_at[y] >= 0))) continue;
      const ir_stmt *Y = IR_STMT(p, y);
      ir_tensor **to = KBC_NEW_ARRAY(a, ir_tensor *, p->tensors.len + 1);
      b.head_of[y] = nst;
      for (int pass = 2; pass >= 1; pass--) /* contractions first, then the pointwise statements */
        for (int j = 0; j < y; j++) {
          if (!R->mem[y][j] || member_kind(R, j, IR_STMT(p, j)->out->rank) != pass) continue;
          const ir_stmt *X = IR_STMT(p, j);
          ir_stmt *c = KBC_NEW(a, ir_stmt);
          *c = *X;
          c->out = ir_tensor_add(np, ir_tensor_fresh_name(np, kbc_arena_printf(a, "%s.%s", X->out->name, Y->out->name)),
                                 IR_ROLE_TEMP, X->out->dtype, X->out->rank, X->out->shape, X->loc);
          to[X->out->id] = c->out;
          from[nst] = j;
          all[nst++] = c;
        }
      for (int z = 0; z < y; z++) /* its PARTs, reading the copies */
        if (R->extra_of[z] == y) {
          ir_stmt *c = KBC_NEW(a, ir_stmt);
          *c = *IR_STMT(p, z);
          from[nst] = z;
          all[nst++] = c;
        }
      /* retargeted once every copy exists (a pointwise member reads later ones' copies only through to[]) */
      for (int k = b.head_of[y]; k < nst; k++) all[k]->rhs = retarget(a, all[k]->rhs, to);
      ir_stmt *c = KBC_NEW(a, ir_stmt);
      *c = *Y;
      c->rhs = retarget(a, split ? R->main_term[y] : Y->rhs, to); /* split: the rest added at y */
      from[nst] = y;
      all[nst++] = c;
      head[b.head_of[y]] = 1;
      b.count_of[y] = nst - b.head_of[y];
    }
    const ir_stmt *X = IR_STMT(p, at);
    if (R->extra_of[at] >= 0 || (cand[at] && R->split_at[at] < 0)) continue; /* in a chain */
    ir_stmt *c = KBC_NEW(a, ir_stmt);
    *c = *X;
    if (cand[at]) { /* split: the rest of its terms added to what its chain wrote */
      sym **lhs = KBC_NEW_ARRAY(a, sym *, X->out->rank + 1);
      memcpy(lhs, X->lhs, sizeof *lhs * (size_t)X->out->rank);
      c->lhs = lhs;
      c->rhs = R->rest_terms[at];
      c->accumulate = 1;
      c->index = KBC_NEW_ARRAY(a, ir_index, X->n_index + 1); /* a `+=` statement's indices are scatter indices */
      for (int id = 0; id < X->n_index; id++) {
        c->index[id] = X->index[id];
        if (c->index[id].kind == IR_IDX_FREE) c->index[id].kind = IR_IDX_SCATTER;
      }
      ir_stmt_drop_stale_indices(a, c);
    }
    from[nst] = at;
    all[nst++] = c;
  }
  /* dead statements dropped (backwards: a statement lives when its target does) */
  unsigned char *live = KBC_NEW_ARRAY(a, unsigned char, np->tensors.len + 1);
  unsigned char *keep = KBC_NEW_ARRAY(a, unsigned char, nst + 1);
  for (int i = 0; i < np->tensors.len; i++) live[i] = IR_TENSOR(np, i)->role != IR_ROLE_TEMP;
  for (int k = nst - 1; k >= 0; k--) {
    if (!live[all[k]->out->id]) continue;
    keep[k] = 1;
    ir_expr_mark_loads(all[k]->rhs, live);
  }
  b.from = KBC_NEW_ARRAY(a, int, nst + 1);
  b.heads = KBC_NEW_ARRAY(a, unsigned char, nst + 1);
  int m = 0, *newpos = KBC_NEW_ARRAY(a, int, nst + 1);
  for (int k = 0; k < nst; k++) {
    newpos[k] = keep[k] ? m : -1;
    if (!keep[k]) continue;
    all[k]->id = m;
    b.from[m] = from[k];
    b.heads[m] = head[k];
    kbc_vec_push(a, &np->stmts, all[k]);
    m++;
  }
  for (int y = 0; y < R->n; y++)
    if (b.head_of[y] >= 0) b.head_of[y] = newpos[b.head_of[y]];
  b.np = np;
  return b;
}

/* Whether np's statement k is p's own (not a copy a chain recomputes). */
static int original(const rebuilt *b, const ir_program *p, int k) {
  return IR_STMT(b->np, k)->out == IR_STMT(p, b->from[k])->out;
}

/* Whether the chain at np's statement h of length n matches (how), pays
 * and, recomputing, takes the pipelined kernel. */
static int chain_ok(recomputer *R, const ir_program *np, int h, int n, int how) {
  cg_attention *ch = cg_attention_new(R->a);
  if (h < 0 || cg_find_attention(R->a, np, &R->t->opt, h, how, ch) != n) return 0;
  if (!R->t->opt.attn_always && !cg_attn_pays(ch, R->t)) return 0;
  return !(how & ATTN_FIND_RECOMPUTE) || cg_attn_pipelined(R->a, ch, R->t);
}

const ir_program *cg_recompute(kbc_arena *a, const ir_program *p, const cg_target *t, unsigned char **heads) {
  *heads = NULL;
  const cg_options *o = &t->opt;
  if (!o->attn_recompute || o->no_attn || o->no_gemm || o->no_fuse) return p;
  recomputer R = {.a = a, .p = p, .t = t, .n = p->stmts.len};
  R.writer = KBC_NEW_ARRAY(a, int, p->tensors.len + 1);
  for (int i = 0; i < p->tensors.len; i++) R.writer[i] = -1;
  for (int j = 0; j < R.n; j++) {
    const ir_stmt *s = IR_STMT(p, j);
    int *w = &R.writer[s->out->id];
    *w = *w == -1 && !s->accumulate ? j : -2;
  }
  for (int i = 0; i < p->tensors.len; i++)
    if (R.writer[i] < 0) R.writer[i] = -1;
  R.last_write = KBC_NEW_ARRAY(a, int, p->tensors.len + 1);
  for (int i = 0; i < p->tensors.len; i++) R.last_write[i] = -1;
  for (int j = 0; j < R.n; j++) R.last_write[IR_STMT(p, j)->out->id] = j;
  R.extra_of = KBC_NEW_ARRAY(a, int, R.n + 1);
  R.split_at = KBC_NEW_ARRAY(a, int, R.n + 1);
  R.main_term = KBC_NEW_ARRAY(a, const ir_expr *, R.n + 1);
  R.rest_terms = KBC_NEW_ARRAY(a, ir_expr *, R.n + 1);
  /* the forward chains, as they would match once their later readers recompute */
  R.fwd = KBC_NEW_ARRAY(a, unsigned char, R.n + 1);
  int *fwd_len = KBC_NEW_ARRAY(a, int, R.n + 1);
  for (int i = 0; i < R.n;) {
    int n = cg_find_attention(a, p, o, i, ATTN_FIND_OPEN, NULL);
    if (!n) {
      i++;
      continue;
    }
    fwd_len[i] = n;
    for (int k = i; k < i + n; k++) R.fwd[k] = 1;
    i += n;
  }
  R.mem = KBC_NEW_ARRAY(a, unsigned char *, R.n + 1);
  unsigned char *cand = KBC_NEW_ARRAY(a, unsigned char, R.n + 1);
  int any = 0;
  for (int y = 0; y < R.n; y++) any |= cand[y] = (R.mem[y] = members(&R, y)) != NULL;
  unsigned char *no_parts = KBC_NEW_ARRAY(a, unsigned char, R.n + 1); /* by candidate: its PARTs given up */
  unsigned char *any_member = KBC_NEW_ARRAY(a, unsigned char, R.n + 1);
  while (any) {
    /* the partial sums each chain takes along, and where it goes */
    for (int j = 0; j < R.n; j++) {
      any_member[j] = 0;
      for (int y = 0; y < R.n; y++) any_member[j] |= cand[y] && R.mem[y][j];
    }
    for (int z = 0; z < R.n; z++) {
      R.extra_of[z] = extra_owner(&R, cand, any_member, z);
      if (R.extra_of[z] >= 0 && no_parts[R.extra_of[z]]) R.extra_of[z] = -1;
    }
    for (int y = 0; y < R.n; y++) {
      R.split_at[y] = -1;
      if (cand[y] && !place_chain(&R, y, &R.split_at[y])) {
        no_parts[y] = 1;
        for (int z = 0; z < R.n; z++)
          if (R.extra_of[z] == y) R.extra_of[z] = -1;
      }
    }
    rebuilt b = rebuild(&R, cand);
    int dropped = 0;
    for (int y = 0; y < R.n && !dropped; y++) {
      if (!cand[y] || chain_ok(&R, b.np, b.head_of[y], b.count_of[y], ATTN_FIND_RECOMPUTE)) continue;
      dropped = 1;
      int parts = 0; /* without its PARTs first, then not at all */
      for (int z = 0; z < R.n; z++) parts |= R.extra_of[z] == y;
      if (parts) no_parts[y] = 1;
      else cand[y] = 0;
    }
    if (dropped) {
      any = 0;
      for (int y = 0; y < R.n; y++) any |= cand[y];
      continue;
    }
    /* every forward chain still matches, now closed; no original member
     * outside one */
    unsigned char *covered = KBC_NEW_ARRAY(a, unsigned char, b.np->stmts.len + 1);
    for (int k = 0; k < b.np->stmts.len; k++) {
      int j = b.from[k], n = fwd_len[j];
      if (!n || !original(&b, p, k)) continue; /* a copy of a chain's first statement starts no forward chain */
      if (!chain_ok(&R, b.np, k, n, 0)) return p;
      for (int q = k; q < k + n; q++) covered[q] = 1;
    }
    for (int k = 0; k < b.np->stmts.len; k++) {
      int j = b.from[k], member = 0;
      if (!original(&b, p, k)) continue;
      for (int y = 0; y < R.n; y++) member |= cand[y] && R.mem[y][j];
      if (member && !covered[k]) return p;
    }
    *heads = b.heads;
    return b.np;
  }
  return p;
}
