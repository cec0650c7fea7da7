/* simplify.c — constant folding and copy forwarding.
 *
 * Before/after: a verified program computing the same values.
 *  - Arithmetic on constants folds (2.0 * 3.0 -> 6.0); x * 1, 1 * x, x + 0,
 *    0 + x, x - 0 and x / 1 become x.
 *  - A copy `out[i..] = t[i..]` into a tensor whose only other writer is
 *    none, from a temporary t written by exactly one plain statement and read
 *    by nothing else, is forwarded: t's statement writes out directly and the
 *    copy disappears (whole-tensor assignments to outputs lower to such
 *    copies).  The dead temporary is left for dce. */
#include <math.h>

#include "passes.h"
#include "ir/subst.h"

static int is_const(const ir_expr *e, double v) { return e->op == IR_OP_CONST && e->u.value == v; }

static ir_expr *fold(kbc_arena *a, ir_expr *e) {
  for (int i = 0; i < ir_op_info[e->op].arity; i++) e->arg[i] = fold(a, e->arg[i]);
  ir_expr *x = e->arg[0], *y = e->arg[1];
  if (ir_op_info[e->op].arity == 2 && x->op == IR_OP_CONST && y->op == IR_OP_CONST) {
    double u = x->u.value, v = y->u.value, r;
    switch (e->op) {
    case IR_OP_ADD: r = u + v; break;
    case IR_OP_SUB: r = u - v; break;
    case IR_OP_MUL: r = u * v; break;
    case IR_OP_DIV: r = u / v; break;
    default: return e;
    }
    return ir_const(a, r, e->loc);
  }
  switch (e->op) {
  case IR_OP_MUL:
    if (is_const(x, 1.0) && y->type == IR_TY_FLOAT) return y;
    if (is_const(y, 1.0) && x->type == IR_TY_FLOAT) return x;
    break;
  case IR_OP_ADD:
    if (is_const(x, 0.0) && y->type == IR_TY_FLOAT) return y;
    if (is_const(y, 0.0) && x->type == IR_TY_FLOAT) return x;
    break;
  case IR_OP_SUB:
  case IR_OP_DIV:
    if (is_const(y, e->op == IR_OP_SUB ? 0.0 : 1.0) && x->type == IR_TY_FLOAT) return x;
    break;
  case IR_OP_NEG:
    if (x->op == IR_OP_CONST) return ir_const(a, -x->u.value, e->loc);
    break;
  default:
    break;
  }
  return e;
}

/* s copies a whole temporary into its target, index for index. */
static ir_tensor *copy_source(const ir_stmt *s) {
  const ir_expr *e = s->rhs;
  if (s->accumulate || e->op != IR_OP_LOAD || e->u.load.padded) return NULL;
  ir_tensor *t = e->u.load.tensor;
  if (t->role != IR_ROLE_TEMP || t->rank != s->out->rank) return NULL;
  for (int i = 0; i < t->rank; i++)
    if (!sym_equal(e->u.load.idx[i], s->lhs[i]) || !sym_equal(t->shape[i], s->out->shape[i])) return NULL;
  return t;
}

static void forward_copies(ir_program *p) {
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    ir_tensor *t = copy_source(s);
    if (!t) continue;
    ir_stmt *writer = NULL;
    int n_writers = 0, other_readers = 0, out_used_before = 0;
    for (int j = 0; j < p->stmts.len; j++) {
      ir_stmt *o = IR_STMT(p, j);
      if (o->out == t) {
        writer = o;
        n_writers++;
      }
      if (o != s && ir_expr_reads(o->rhs, t)) other_readers++;
      if (j < i && (o->out == s->out || ir_expr_reads(o->rhs, s->out))) out_used_before = 1;
    }
    if (n_writers != 1 || writer->accumulate || other_readers || out_used_before) continue;
    writer->out = s->out;
    for (int j = i; j + 1 < p->stmts.len; j++) p->stmts.items[j] = p->stmts.items[j + 1];
    p->stmts.len--;
    i--;
  }
  for (int i = 0; i < p->stmts.len; i++) IR_STMT(p, i)->id = i;
}

int ir_simplify(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *s = IR_STMT(p, i);
    s->rhs = fold(p->arena, s->rhs);
  }
  forward_copies(p);
  return 1;
}
