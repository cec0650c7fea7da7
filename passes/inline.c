/* inline.c — inlines pointwise temporaries into their readers.
 *
 * Before/after: a verified program computing the same values.  A temporary
 * written by exactly one plain statement without reductions (an
 * elementwise producer: `e = exp(x - m)`, `r = x + attn`) is substituted
 * into every statement that reads it: the load `e[a, b]` becomes the
 * producer's expression with its free indices replaced by `a, b`.  The
 * producer then has no readers and dce removes it (a reduction left over a
 * variable its body no longer reads drops it: simplify.c's rule, rerun
 * here).  Elementwise chains
 * thereby fuse into their consumers before kernels are formed.  Padded
 * loads are not inlined (outside the tensor they read 0, not the
 * expression), an inlining that would grow a statement beyond MAX_NODES
 * nodes is skipped, and a producer of more than MAX_IN_REDUCTION nodes is
 * not inlined where it is read inside a reduction (each element would be
 * recomputed for every point that reads it).  Such a producer, kept for
 * one reader, is inlined into none: computed and stored anyway, it would
 * be computed again for each other reader to save a load (a residual
 * stream's layer norms, each recomputed from the first layer's in every
 * later one: CViT's `ret` statements held five layers of them).  Nothing
 * is inlined (or absorbed, below) past a statement that writes a tensor
 * the moved expression reads: `g = x; t = g * 2; g += y; out = t + 1`
 * keeps t (tests/codegen/specs/rewrite_order.kb). */
#include "passes.h"
#include "ir/cost.h"
#include "ir/subst.h"

enum { MAX_NODES = 256, MAX_IN_REDUCTION = 4 };

static int padded_reads(const ir_expr *e, const ir_tensor *t) {
  int n = e->op == IR_OP_LOAD && e->u.load.tensor == t && e->u.load.padded;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += padded_reads(e->arg[i], t);
  return n;
}

/* Whether a load of t sits inside a reduction of e. */
static int read_in_reduction(const ir_expr *e, const ir_tensor *t, int inside) {
  if (e->op == IR_OP_LOAD) return inside && e->u.load.tensor == t;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (read_in_reduction(e->arg[i], t, inside || e->op == IR_OP_REDUCE)) return 1;
  return 0;
}

/* The producer's rhs at the consumer's load, or the load itself. */
static ir_expr *replace(kbc_arena *a, ir_expr *e, const ir_stmt *prod) {
  if (e->op == IR_OP_LOAD && e->u.load.tensor == prod->out) {
    /* Producer free index lhs[d] (an index id) becomes the load's idx[d]. */
    sym **by = KBC_NEW_ARRAY(a, sym *, prod->n_index > 0 ? prod->n_index : 1);
    for (int d = 0; d < prod->out->rank; d++) {
      int id;
      sym_is_index(prod->lhs[d], &id);
      by[id] = e->u.load.idx[d];
    }
    ir_expr *r = ir_expr_subst(a, prod->rhs, prod->n_index, by, NULL);
    return r ? r : e;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) e->arg[i] = replace(a, e->arg[i], prod);
  return e;
}

static int inlinable(const ir_program *p, const ir_stmt *s) {
  if (s->accumulate || s->out->role != IR_ROLE_TEMP || ir_expr_has_reduce(s->rhs)) return 0;
  if (ir_expr_size(s->rhs) > MAX_NODES / 4) return 0;
  for (int i = 0; i < p->stmts.len; i++) {
    const ir_stmt *o = IR_STMT(p, i);
    if (o != s && o->out == s->out) return 0; /* several writers */
    if (padded_reads(o->rhs, s->out)) return 0;
  }
  return 1;
}

/* Whether a statement after prod, up to and including statement `to`,
 * writes a tensor prod reads: prod's expression evaluated there would read
 * other values (`g = x; t = g * 2; g += y; out = t + 1` must not become
 * `out = g * 2 + 1`). */
static int inputs_change(const ir_program *p, int from, int to) {
  const ir_stmt *prod = IR_STMT(p, from);
  for (int k = from + 1; k <= to && k < p->stmts.len; k++)
    if (ir_expr_reads(prod->rhs, IR_STMT(p, k)->out)) return 1;
  return 0;
}

/* Consumer cons's rhs with prod inlined, or NULL where it should keep the
 * load: inside a reduction an element is read by many of the consumer's
 * points, so only trivial producers (x + y) are worth recomputing there;
 * and no statement grows beyond MAX_NODES. */
static ir_expr *inlined(ir_program *p, const ir_stmt *prod, int size, const ir_stmt *cons) {
  if (!ir_expr_reads(cons->rhs, prod->out)) return NULL;
  if (size > MAX_IN_REDUCTION && read_in_reduction(cons->rhs, prod->out, 0)) return NULL;
  ir_expr *r = replace(p->arena, ir_expr_subst(p->arena, cons->rhs, 0, NULL, NULL), prod);
  return ir_expr_size(r) <= MAX_NODES || size <= 1 ? r : NULL;
}

/* ---- epilogues ------------------------------------------------------------- */

/* The load of t in e, when there is exactly one (else NULL; *n counts them). */
static ir_expr *only_load(ir_expr *e, const ir_tensor *t, int *n) {
  ir_expr *found = NULL;
  if (e->op == IR_OP_LOAD && e->u.load.tensor == t) {
    ++*n;
    return e;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    ir_expr *f = only_load(e->arg[i], t, n);
    if (f) found = f;
  }
  return *n == 1 ? found : NULL;
}

/* Whether load ld reads its tensor at cons's free indices, each once (the
 * element cons computes at each point, and no other). */
static int reads_own_point(const ir_stmt *cons, const ir_expr *ld) {
  int n_free = 0;
  for (int i = 0; i < cons->n_index; i++) n_free += cons->index[i].kind == IR_IDX_FREE;
  if (ld->u.load.padded || ld->u.load.tensor->rank != n_free) return 0;
  unsigned char seen[64] = {0};
  for (int d = 0; d < ld->u.load.tensor->rank; d++) {
    int id;
    if (!sym_is_index(ld->u.load.idx[d], &id) || id >= 64 || seen[id] || cons->index[id].kind != IR_IDX_FREE) return 0;
    seen[id] = 1;
  }
  return 1;
}

/* An elementwise statement reading, once and at its own point, a temporary
 * that a reduction statement writes and nothing else reads
 *     h[i, o]   = sum(k: x[i, k] * w[o, k]) + b[o]
 *     h.1[i, o] = sigmoid(h[i, o])
 * takes the reduction in (h.1 = sigmoid(sum(..) + b[o]): the contraction's
 * epilogue; dce drops h).  The work is the same, a temporary's store and
 * load fewer, and h.1 is then no elementwise producer to inline into its
 * readers: inlined into a contraction's operand it would be recomputed for
 * every tile of the other operand and make the operand's loads
 * non-plain (KernelBench L2/45: the second GEMM on FFMA, 0.66x eager). */
static int absorb_one(ir_program *p, int at) {
  ir_stmt *cons = IR_STMT(p, at);
  if (cons->accumulate || ir_expr_has_reduce(cons->rhs)) return 0;
  for (int i = 0; i < at; i++) {
    const ir_stmt *prod = IR_STMT(p, i);
    if (prod->accumulate || prod->out->role != IR_ROLE_TEMP || !ir_expr_has_reduce(prod->rhs)) continue;
    int n = 0;
    ir_expr *ld = only_load(cons->rhs, prod->out, &n);
    if (!ld || !reads_own_point(cons, ld)) continue;
    int alone = 1;
    for (int j = 0; j < p->stmts.len; j++) {
      const ir_stmt *o = IR_STMT(p, j);
      if (j != at && (o->out == prod->out ? o != prod : ir_expr_reads(o->rhs, prod->out))) alone = 0;
    }
    /* computed at cons instead, prod must read what it read before */
    if (!alone || inputs_change(p, i, at) || ir_expr_size(cons->rhs) + ir_expr_size(prod->rhs) > MAX_NODES) continue;
    /* cons's rhs with the load replaced by prod's rhs at cons's indices:
     * prod's free indices by the load's, its reduction indices appended to
     * cons's */
    kbc_arena *a = p->arena;
    int n_cons = cons->n_index, m = n_cons;
    ir_index *idx = KBC_NEW_ARRAY(a, ir_index, n_cons + prod->n_index + 1);
    for (int k = 0; k < n_cons; k++) idx[k] = cons->index[k];
    sym **by = KBC_NEW_ARRAY(a, sym *, prod->n_index + 1);
    int *red_map = KBC_NEW_ARRAY(a, int, prod->n_index + 1);
    for (int k = 0; k < prod->n_index; k++) red_map[k] = -1;
    for (int d = 0; d < prod->out->rank; d++) {
      int id;
      sym_is_index(prod->lhs[d], &id);
      by[id] = ld->u.load.idx[d];
    }
    for (int k = 0; k < prod->n_index; k++) {
      if (prod->index[k].kind != IR_IDX_REDUCE) continue;
      idx[m] = prod->index[k];
      idx[m].name = ir_index_fresh_name(a, idx, m, idx[m].name);
      by[k] = sym_index(a, m, idx[m].name);
      red_map[k] = m++;
    }
    ir_expr *body = ir_expr_subst(a, prod->rhs, prod->n_index, by, red_map);
    if (!body) continue;
    *ld = *body;
    cons->index = idx;
    cons->n_index = m;
    return 1;
  }
  return 0;
}

int ir_absorb(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++)
    while (absorb_one(p, i)) {
    }
  return 1;
}

/* ---- operands read through their function --------------------------------- */

/* Whether the load covers every free index of s (an element of its own
 * per point). */
static int covers(const ir_stmt *s, const ir_expr *ld) {
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_FREE && !ir_expr_mentions_index(ld, i)) return 0;
  return 1;
}

/* The loads of e covering s's free indices, counted in *n; the last. */
static const ir_expr *main_load(const ir_stmt *s, const ir_expr *e, int *n) {
  const ir_expr *found = NULL;
  if (e->op == IR_OP_LOAD) {
    if (covers(s, e)) ++*n, found = e;
    return found;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    const ir_expr *f = main_load(s, e->arg[i], n);
    if (f) found = f;
  }
  return found;
}

/* Whether the loads of t in e all sit outside reductions, or are factors
 * of the product under e's top sum `top` (an operand of a contraction:
 * read once per element and column tile), not inside any other
 * reduction. */
static int read_as_operand(const ir_expr *e, const ir_tensor *t, const ir_expr *top, int in_red, int factor) {
  if (e->op == IR_OP_LOAD) return e->u.load.tensor != t || !in_red || factor;
  if (e->op == IR_OP_REDUCE) {
    int mine = e == top && e->u.reduce.op == IR_RED_SUM;
    return read_as_operand(e->arg[0], t, top, 1, mine);
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!read_as_operand(e->arg[i], t, top, in_red, factor && e->op == IR_OP_MUL)) return 0;
  return 1;
}

/* An elementwise temporary whose value is a function of one load of all
 * its indices and of loads of fewer (SAM-HQ's p = exp(s - mx) / p.red,
 * after hoist): inlined into every reader where each reads it outside
 * reductions or as a factor of a contraction's product, so that it is
 * never stored; the contractions then read it through their A operand's
 * function (codegen/gemm_xform.c), the others recompute it per element.
 * Under KBC_GEMM_XFORM=1 (the target's GEMMs apply that function only on
 * wgmma with A from registers; elsewhere the operand would be evaluated
 * per element). */
int ir_inline_operands(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *prod = IR_STMT(p, i);
    int n_main = 0;
    if (!inlinable(p, prod) || !main_load(prod, prod->rhs, &n_main) || n_main != 1) continue;
    ir_expr **r = KBC_NEW_ARRAY(p->arena, ir_expr *, p->stmts.len);
    int ok = 1, readers = 0;
    for (int j = i + 1; j < p->stmts.len && ok; j++) {
      const ir_stmt *cons = IR_STMT(p, j);
      if (!ir_expr_reads(cons->rhs, prod->out)) continue;
      readers++;
      ok = !inputs_change(p, i, j) && read_as_operand(cons->rhs, prod->out, ir_main_sum(cons, cons->rhs), 0, 0);
      if (ok) r[j] = replace(p->arena, ir_expr_subst(p->arena, cons->rhs, 0, NULL, NULL), prod);
      ok = ok && r[j] && ir_expr_size(r[j]) <= MAX_NODES;
    }
    if (!ok || !readers) continue;
    for (int j = i + 1; j < p->stmts.len; j++)
      if (r[j]) IR_STMT(p, j)->rhs = r[j];
  }
  return 1;
}

int ir_inline(ir_program *p, kbc_diag *d) {
  ir_absorb(p, d);
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *prod = IR_STMT(p, i);
    if (!inlinable(p, prod)) continue;
    int size = ir_expr_size(prod->rhs);
    /* A producer some reader keeps loading stays computed and stored:
     * inlined into the others, it would be computed again for them (a
     * residual stream's layer norm, recomputed from the first layer in
     * every later one) to save one load each — unless trivial. */
    ir_expr **r = KBC_NEW_ARRAY(p->arena, ir_expr *, p->stmts.len);
    int everywhere = 1;
    for (int j = i + 1; j < p->stmts.len; j++) {
      const ir_stmt *cons = IR_STMT(p, j);
      r[j] = inputs_change(p, i, j) ? NULL : inlined(p, prod, size, cons);
      everywhere &= r[j] || !ir_expr_reads(cons->rhs, prod->out);
    }
    if (!everywhere && size > MAX_IN_REDUCTION) continue;
    for (int j = i + 1; j < p->stmts.len; j++)
      if (r[j]) IR_STMT(p, j)->rhs = r[j];
  }
  /* a reduction whose body read its variable only through an inlined
   * tensor (`sum(r: t[r, i])`, t free of r) no longer ranges over it */
  ir_drop_unused_reduce_vars(p);
  return 1;
}
