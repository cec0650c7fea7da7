/* check.c — the bounds prover pass.
 *
 * Before: a lowered program whose index ranges are inferred.  After: every
 * non-padded load and every scatter target is proven inside its tensor for
 * all values of the var axes that satisfy the spec's asserts (every index
 * i of a statement ranges over [0, extent)), or a located error names the
 * access, the dimension and the range that could not be proven.
 *
 * A load under a where is proven with the indices' ranges its condition
 * leaves (where(i > 0, x[i - 1], 0.0): i >= 1 in the chosen branch; the
 * other branch under the negation): comparisons of one index (coefficient
 * 1 or -1) against an expression of axes and constants, joined by && (||
 * in a negated condition).  A load in bounds only so becomes a zero-padded
 * load (x?[i - 1]): where evaluates the branch it chooses alone, so the
 * values outside are never used, and every later stage (codegen's tile
 * loaders, the interpreter) reads the padded form safely. */
#include <string.h>

#include "passes.h"
#include "ir/subst.h"

typedef struct {
  kbc_arena *a;
  kbc_diag *d;
  const ir_program *p;
  const ir_stmt *s;
  sym **lo, **hi;
  int ok;
} checker;

static void show_access(const checker *c, const ir_tensor *t, sym *const *idx, kbc_buf *b) {
  kbc_buf_puts(b, t->name);
  kbc_buf_putc(b, '[');
  for (int i = 0; i < t->rank; i++) {
    if (i) kbc_buf_puts(b, ", ");
    sym_print(idx[i], b);
  }
  kbc_buf_putc(b, ']');
}

/* Reports an access not proven inside t over the ranges rlo, rhi (the
 * statement's, or those a where around it leaves). */
static void check_access(checker *c, const ir_tensor *t, sym *const *idx, kbc_loc loc, const char *what,
                         sym *const *rlo, sym *const *rhi) {
  for (int d = 0; d < t->rank; d++) {
    sym *lo, *hi;
    int in = ir_index_in_bounds(c->a, c->p->facts, idx[d], c->s->n_index, rlo, rhi, t->shape[d], &lo, &hi);
    if (in == 1) continue;
    int bounded = in == 0;
    kbc_buf b = {0};
    show_access(c, t, idx, &b);
    if (!bounded)
      kbc_error(c->d, loc, "cannot bound %s %s: index %d ('%s') is not quasi-affine in the statement's indices",
                what, kbc_buf_str(&b), d, sym_str(c->a, idx[d]));
    else
      kbc_error(c->d, loc,
                "%s %s may be out of bounds: index %d ('%s') ranges over [%s, %s] but dimension %d of '%s' has "
                "size %s%s",
                what, kbc_buf_str(&b), d, sym_str(c->a, idx[d]), sym_str(c->a, lo), sym_str(c->a, hi), d, t->name,
                sym_str(c->a, t->shape[d]),
                what[0] == 'a' ? kbc_arena_printf(c->a, " (write %s?[...] if reads outside are meant to be 0)", t->name)
                               : "");
    kbc_buf_free(&b);
    c->ok = 0;
    return; /* one message per access */
  }
}

/* Whether every index of load e is in bounds over the ranges lo, hi. */
static int load_in_bounds(const checker *c, const ir_expr *e, sym *const *lo, sym *const *hi) {
  const ir_tensor *t = e->u.load.tensor;
  for (int d = 0; d < t->rank; d++) {
    sym *blo, *bhi;
    if (ir_index_in_bounds(c->a, c->p->facts, e->u.load.idx[d], c->s->n_index, lo, hi, t->shape[d], &blo, &bhi) != 1)
      return 0;
  }
  return 1;
}

/* Narrows [lo, hi] of one index by the comparison cmp (negated: by its
 * negation), where it is `index + rest OP 0` or `-index + rest OP 0` with
 * rest free of indices; a bound replaces the old one only where provably
 * tighter. */
static void narrow_by(const checker *c, const ir_expr *cmp, int negated, sym **lo, sym **hi) {
  ir_op op = cmp->op;
  if (op < IR_OP_EQ || op > IR_OP_GE || cmp->arg[0]->op != IR_OP_INDEX || cmp->arg[1]->op != IR_OP_INDEX) return;
  if (negated) {
    static const ir_op neg[] = {[IR_OP_EQ] = IR_OP_NE, [IR_OP_NE] = IR_OP_EQ, [IR_OP_LT] = IR_OP_GE,
                                [IR_OP_LE] = IR_OP_GT, [IR_OP_GT] = IR_OP_LE, [IR_OP_GE] = IR_OP_LT};
    op = neg[op];
  }
  if (op == IR_OP_NE) return;
  int n = c->s->n_index;
  sym **coeff = KBC_NEW_ARRAY(c->a, sym *, n + 1), *rest;
  sym *d = sym_sub(c->a, cmp->arg[0]->u.index, cmp->arg[1]->u.index); /* the condition: d OP 0 */
  if (!sym_split_affine(c->a, d, n, coeff, &rest) || sym_has_index(rest)) return;
  int id = -1;
  int64_t k = 0;
  for (int i = 0; i < n; i++) {
    int64_t v;
    if (!sym_is_const(coeff[i], &v)) return;
    if (!v) continue;
    if (id >= 0 || (v != 1 && v != -1)) return;
    id = i;
    k = v;
  }
  if (id < 0) return;
  /* d >= m (GT: m = 1) and d <= m (LT: m = -1); EQ both with m = 0 */
  int at_least = op == IR_OP_GT || op == IR_OP_GE || op == IR_OP_EQ;
  int at_most = op == IR_OP_LT || op == IR_OP_LE || op == IR_OP_EQ;
  for (int side = 0; side < 2; side++) {
    if (!(side ? at_most : at_least)) continue;
    sym *m = sym_const(c->a, side ? (op == IR_OP_LT ? -1 : 0) : (op == IR_OP_GT ? 1 : 0));
    /* k*i + rest >= m: i >= m - rest (k = 1), i <= rest - m (k = -1); <= the other way */
    int lower = (side == 0) == (k == 1);
    sym *bound = k == 1 ? sym_sub(c->a, m, rest) : sym_sub(c->a, rest, m);
    if (lower && sym_prove_le(c->a, c->p->facts, lo[id], bound)) lo[id] = bound;
    if (!lower && sym_prove_le(c->a, c->p->facts, bound, hi[id])) hi[id] = bound;
  }
}

/* Narrows lo, hi by condition e holding (negated: failing). */
static void narrow(const checker *c, const ir_expr *e, int negated, sym **lo, sym **hi) {
  if (e->op == IR_OP_NOT) narrow(c, e->arg[0], !negated, lo, hi);
  else if (e->op == (negated ? IR_OP_OR : IR_OP_AND)) {
    narrow(c, e->arg[0], negated, lo, hi);
    narrow(c, e->arg[1], negated, lo, hi);
  } else narrow_by(c, e, negated, lo, hi);
}

static void walk(checker *c, ir_expr *e, sym **lo, sym **hi) {
  if (e->op == IR_OP_LOAD && !e->u.load.padded) {
    if (lo != c->lo && !load_in_bounds(c, e, c->lo, c->hi) && load_in_bounds(c, e, lo, hi))
      e->u.load.padded = 1; /* in bounds where the where chooses it */
    else check_access(c, e->u.load.tensor, e->u.load.idx, e->loc, "access", lo, hi);
    return;
  }
  if (e->op == IR_OP_WHERE) {
    walk(c, e->arg[0], lo, hi);
    int n = c->s->n_index;
    for (int branch = 1; branch <= 2; branch++) {
      sym **blo = KBC_NEW_ARRAY(c->a, sym *, n + 1), **bhi = KBC_NEW_ARRAY(c->a, sym *, n + 1);
      memcpy(blo, lo, sizeof(sym *) * (size_t)n);
      memcpy(bhi, hi, sizeof(sym *) * (size_t)n);
      narrow(c, e->arg[0], branch == 2, blo, bhi);
      walk(c, e->arg[branch], blo, bhi);
    }
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) walk(c, e->arg[i], lo, hi);
}

int ir_check_bounds(ir_program *p, kbc_diag *d) {
  checker c = {.a = p->arena, .d = d, .p = p, .ok = 1};
  for (int i = 0; i < p->stmts.len; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    c.s = s;
    ir_index_ranges(p->arena, s, &c.lo, &c.hi);
    walk(&c, s->rhs, c.lo, c.hi);
    if (s->accumulate) check_access(&c, s->out, s->lhs, s->loc, "scatter target", c.lo, c.hi);
    if (kbc_diag_errors(d) >= KBC_DIAG_MAX_ERRORS) break;
  }
  return c.ok;
}
