/* check.c — the bounds prover pass.
 *
 * Before: a lowered program whose index ranges are inferred.  After: every
 * non-padded load and every scatter target is proven inside its tensor for
 * all values of the var axes that satisfy the spec's asserts (every index
 * i of a statement ranges over [0, extent)), or a located error names the
 * access, the dimension and the range that could not be proven. */
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

static void check_access(checker *c, const ir_tensor *t, sym *const *idx, kbc_loc loc, const char *what) {
  for (int d = 0; d < t->rank; d++) {
    sym *lo, *hi;
    int in = ir_index_in_bounds(c->a, c->p->facts, idx[d], c->s->n_index, c->lo, c->hi, t->shape[d], &lo, &hi);
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

static void walk(checker *c, const ir_expr *e) {
  if (e->op == IR_OP_LOAD && !e->u.load.padded) check_access(c, e->u.load.tensor, e->u.load.idx, e->loc, "access");
  for (int i = 0; i < ir_op_info[e->op].arity; i++) walk(c, e->arg[i]);
}

int ir_check_bounds(ir_program *p, kbc_diag *d) {
  checker c = {.a = p->arena, .d = d, .p = p, .ok = 1};
  for (int i = 0; i < p->stmts.len; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    c.s = s;
    ir_index_ranges(p->arena, s, &c.lo, &c.hi);
    walk(&c, s->rhs);
    if (s->accumulate) check_access(&c, s->out, s->lhs, s->loc, "scatter target");
    if (kbc_diag_errors(d) >= KBC_DIAG_MAX_ERRORS) break;
  }
  return c.ok;
}
