/* distribute.c — sums reassociated so that a factor is summed once, not
 * once per value of an index it does not depend on.
 *
 * Before/after: a verified program computing the same values (up to the
 * order of floating-point additions).  A sum over H whose body is linear
 * in a nested contraction over K, one of whose factors does not depend on
 * H while the other leaves out an index enclosing the sum,
 *     out[b] = sum(h: sum(k: x[b, k] * w[h, k]) / 2.0 + bias[h])
 * is rewritten with the sums interchanged and that factor taken out of the
 * sum over H:
 *     out[b] = sum(k: x[b, k] * sum(h: w[h, k])) / 2.0 + sum(h2: bias[h2])
 * The inner sum no longer depends on b; hoist (next) computes it once, as
 * a statement of its own (a column sum of w), and the product is |b|·|k|
 * terms: |h|·|k| + |b|·|k| in all instead of |b|·|h|·|k| (KernelBench
 * L2/14 and L2/18 at 1024 x 8192 x 8192: a matrix-vector product instead
 * of a matrix product).
 *
 * Linear means reached from the sum through +, -, negation, and * or / by
 * a factor that does not depend on H; at a + or - the sum splits in two,
 * the right one over fresh copies of H's indices, and a part that reaches
 * no such contraction stays a sum as written.  Nothing
 * changes where no contraction qualifies: a sum of DIST_MIN_TERMS (over H)
 * or more, whose H-dependent factor leaves out an enclosing index of 2
 * values or more (the statement's free indices, or those of reductions
 * around the sum).  += statements are left alone. */
#include "ir/cost.h"
#include "ir/subst.h"
#include "passes.h"

enum { DIST_MIN_TERMS = 16 };

typedef struct {
  ir_program *p;
  ir_stmt *s;
  unsigned char *encl; /* indices enclosing the sum being rewritten (not its own) */
} distributor;

static int mentions_any(const ir_expr *e, const int *h, int nh) {
  for (int k = 0; k < nh; k++)
    if (ir_expr_mentions_index(e, h[k])) return 1;
  return 0;
}

static double terms_of(const ir_stmt *s, const int *h, int nh) {
  double t = 1;
  for (int k = 0; k < nh; k++) t *= ir_estimate(s->index[h[k]].extent);
  return t;
}

/* Of the product a * b in a contraction inside sum(H: ...), the factor to
 * take out (free of H) in *out and the one to sum over H in *in, when the
 * interchange pays: the latter leaves out an enclosing index. */
static int split_product(const distributor *D, const ir_expr *prod, const int *h, int nh, ir_expr **out,
                         ir_expr **in) {
  for (int side = 0; side < 2; side++) {
    ir_expr *o = prod->arg[side], *i = prod->arg[1 - side];
    if (mentions_any(o, h, nh) || !mentions_any(i, h, nh)) continue;
    for (int v = 0; v < D->s->n_index; v++)
      if (D->encl[v] && !ir_expr_mentions_index(i, v) && ir_estimate(D->s->index[v].extent) >= 2) {
        *out = o;
        *in = i;
        return 1;
      }
  }
  return 0;
}

/* Whether sum(H: e) reaches, through linear operations, a contraction that
 * split_product takes apart. */
static int reaches(const distributor *D, const ir_expr *e, const int *h, int nh) {
  ir_expr *o, *in;
  switch (e->op) {
  case IR_OP_ADD:
  case IR_OP_SUB:
    return reaches(D, e->arg[0], h, nh) || reaches(D, e->arg[1], h, nh);
  case IR_OP_NEG:
    return reaches(D, e->arg[0], h, nh);
  case IR_OP_MUL:
    if (!mentions_any(e->arg[0], h, nh)) return reaches(D, e->arg[1], h, nh);
    if (!mentions_any(e->arg[1], h, nh)) return reaches(D, e->arg[0], h, nh);
    return 0;
  case IR_OP_DIV:
    return !mentions_any(e->arg[1], h, nh) && reaches(D, e->arg[0], h, nh);
  case IR_OP_REDUCE:
    return e->u.reduce.op == IR_RED_SUM && e->arg[0]->op == IR_OP_MUL && split_product(D, e->arg[0], h, nh, &o, &in);
  default:
    return 0;
  }
}

/* Fresh copies of s's indices h[0..nh) (appended to s's index list) and
 * e with them in place of h. */
static ir_expr *with_fresh_indices(distributor *D, const ir_expr *e, const int *h, int nh, int *fresh) {
  kbc_arena *a = D->p->arena;
  ir_stmt *s = D->s;
  int n = s->n_index;
  ir_index *idx = KBC_NEW_ARRAY(a, ir_index, n + nh + 1);
  unsigned char *encl = KBC_NEW_ARRAY(a, unsigned char, n + nh + 1);
  for (int i = 0; i < n; i++) {
    idx[i] = s->index[i];
    encl[i] = D->encl[i];
  }
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1);
  for (int i = 0; i < n; i++) {
    by[i] = sym_index(a, i, s->index[i].name);
    red_map[i] = s->index[i].kind == IR_IDX_REDUCE ? i : -1;
  }
  for (int k = 0; k < nh; k++) {
    int v = n + k;
    idx[v] = s->index[h[k]];
    idx[v].name = ir_index_fresh_name(a, idx, v, idx[v].name);
    by[h[k]] = sym_index(a, v, idx[v].name);
    red_map[h[k]] = v;
    fresh[k] = v;
  }
  s->index = idx;
  s->n_index = n + nh;
  D->encl = encl;
  return ir_expr_subst(a, e, n, by, red_map);
}

/* An expression equal to sum(H: e). */
static ir_expr *distribute(distributor *D, ir_expr *e, const int *h, int nh, kbc_loc loc) {
  kbc_arena *a = D->p->arena;
  if (!reaches(D, e, h, nh)) return ir_reduce(a, IR_RED_SUM, nh, h, e, loc);
  ir_expr *o, *in;
  switch (e->op) {
  case IR_OP_ADD:
  case IR_OP_SUB: {
    /* two sums: the right one over fresh copies of H (an index is
     * reduced by one reduction node) */
    int *fresh = KBC_NEW_ARRAY(a, int, nh + 1);
    ir_expr *r = with_fresh_indices(D, e->arg[1], h, nh, fresh);
    ir_expr *sl = distribute(D, e->arg[0], h, nh, loc);
    return ir_binary(a, e->op, sl, distribute(D, r, fresh, nh, loc), e->loc);
  }
  case IR_OP_NEG:
    return ir_unary(a, IR_OP_NEG, distribute(D, e->arg[0], h, nh, loc), e->loc);
  case IR_OP_MUL:
    if (!mentions_any(e->arg[0], h, nh)) return ir_binary(a, IR_OP_MUL, e->arg[0], distribute(D, e->arg[1], h, nh, loc), e->loc);
    return ir_binary(a, IR_OP_MUL, distribute(D, e->arg[0], h, nh, loc), e->arg[1], e->loc);
  case IR_OP_DIV:
    return ir_binary(a, IR_OP_DIV, distribute(D, e->arg[0], h, nh, loc), e->arg[1], e->loc);
  case IR_OP_REDUCE:
    /* sum(H: sum(K: o * in)) = sum(K: o * sum(H: in)) */
    split_product(D, e->arg[0], h, nh, &o, &in);
    return ir_reduce(a, IR_RED_SUM, e->u.reduce.n_vars, e->u.reduce.vars,
                     ir_binary(a, IR_OP_MUL, o, ir_reduce(a, IR_RED_SUM, nh, h, in, loc), e->arg[0]->loc), e->loc);
  default:
    return ir_reduce(a, IR_RED_SUM, nh, h, e, loc); /* unreachable: reaches() said no */
  }
}

/* Rewrites the sums in e (outermost first); encl marks the indices around e. */
static ir_expr *walk(distributor *D, ir_expr *e, int *changed) {
  if (e->op == IR_OP_REDUCE && e->u.reduce.op == IR_RED_SUM &&
      terms_of(D->s, e->u.reduce.vars, e->u.reduce.n_vars) >= DIST_MIN_TERMS &&
      reaches(D, e->arg[0], e->u.reduce.vars, e->u.reduce.n_vars)) {
    *changed = 1;
    return distribute(D, e->arg[0], e->u.reduce.vars, e->u.reduce.n_vars, e->loc);
  }
  if (e->op == IR_OP_REDUCE) {
    for (int k = 0; k < e->u.reduce.n_vars; k++) D->encl[e->u.reduce.vars[k]] = 1;
    e->arg[0] = walk(D, e->arg[0], changed);
    for (int k = 0; k < e->u.reduce.n_vars; k++) D->encl[e->u.reduce.vars[k]] = 0;
    return e;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) e->arg[i] = walk(D, e->arg[i], changed);
  return e;
}

int ir_distribute(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    if (s->accumulate) continue;
    /* one rewrite at a time, from the top, until none applies */
    for (int round = 0; round < 16; round++) {
      distributor D = {.p = p, .s = s, .encl = KBC_NEW_ARRAY(p->arena, unsigned char, s->n_index + 1)};
      for (int k = 0; k < s->n_index; k++) D.encl[k] = s->index[k].kind != IR_IDX_REDUCE;
      int changed = 0;
      s->rhs = walk(&D, s->rhs, &changed);
      if (!changed) break;
    }
  }
  return 1;
}
