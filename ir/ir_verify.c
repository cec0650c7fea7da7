/* ir_verify.c — checks the invariants listed in ir.h.
 *
 * Run after every pass.  A failure is a bug in kbc, never in the user's
 * spec, so it is reported as an internal error naming the pass after which
 * it was found. */
#include <stdlib.h>

#include "ir.h"

typedef struct {
  const ir_program *p;
  kbc_diag *d;
  const char *pass;
  const ir_stmt *s;
  int *reduced;      /* per index id: times bound by a reduction node */
  int *in_scope;     /* per index id: inside its reduction node now */
  unsigned char *written; /* per tensor id */
  int ok;
} verifier;

static void fail(verifier *v, kbc_loc loc, const char *what) {
  kbc_internal(v->d, loc, "IR invariant broken after pass '%s' in statement for '%s': %s", v->pass,
               v->s ? v->s->out->name : "?", what);
  v->ok = 0;
}

/* An index sym may mention only iterated indices and reduction indices in scope. */
static void check_sym(verifier *v, const sym *x, kbc_loc loc) {
  if (!x) {
    fail(v, loc, "missing (overflowed) index expression");
    return;
  }
  for (int i = 0; i < v->s->n_index; i++)
    if (v->s->index[i].kind == IR_IDX_REDUCE && !v->in_scope[i] && sym_mentions_index(x, i))
      fail(v, loc, "reduction index used outside its reduction");
}

static int is_arith(ir_type t) { return t == IR_TY_FLOAT || t == IR_TY_INT; }

static void check_expr(verifier *v, const ir_expr *e) {
  if (!e) {
    fail(v, v->s->loc, "missing expression");
    return;
  }
  int arity = ir_op_info[e->op].arity;
  for (int i = 0; i < arity; i++)
    if (!e->arg[i]) {
      fail(v, e->loc, "operand missing");
      return;
    }
  switch (e->op) {
  case IR_OP_LOAD: {
    const ir_tensor *t = e->u.load.tensor;
    if (!t) {
      fail(v, e->loc, "load of no tensor");
      return;
    }
    for (int i = 0; i < t->rank; i++) check_sym(v, e->u.load.idx[i], e->loc);
    if (t->role != IR_ROLE_INPUT && !v->written[t->id]) fail(v, e->loc, "tensor read before it is written");
    return;
  }
  case IR_OP_INDEX:
    check_sym(v, e->u.index, e->loc);
    if (e->type != IR_TY_INT) fail(v, e->loc, "index value not typed int");
    return;
  case IR_OP_CONST:
    return;
  case IR_OP_REDUCE:
    for (int i = 0; i < e->u.reduce.n_vars; i++) {
      int id = e->u.reduce.vars[i];
      if (id < 0 || id >= v->s->n_index || v->s->index[id].kind != IR_IDX_REDUCE) {
        fail(v, e->loc, "reduction over an index that is not a reduction index");
        return;
      }
      if (v->reduced[id]++) fail(v, e->loc, "index reduced twice");
      v->in_scope[id] = 1;
    }
    check_expr(v, e->arg[0]);
    for (int i = 0; i < e->u.reduce.n_vars; i++) v->in_scope[e->u.reduce.vars[i]] = 0;
    if (!is_arith(e->arg[0]->type)) fail(v, e->loc, "reduction of a condition");
    return;
  default:
    break;
  }
  for (int i = 0; i < arity; i++) check_expr(v, e->arg[i]);
  switch (e->op) {
  case IR_OP_AND: case IR_OP_OR: case IR_OP_NOT:
    for (int i = 0; i < arity; i++)
      if (e->arg[i]->type != IR_TY_BOOL) fail(v, e->loc, "logical operator on a non-condition");
    break;
  case IR_OP_WHERE:
    if (e->arg[0]->type != IR_TY_BOOL) fail(v, e->loc, "where() condition is not a condition");
    if (!is_arith(e->arg[1]->type) || !is_arith(e->arg[2]->type)) fail(v, e->loc, "where() of conditions");
    break;
  default:
    for (int i = 0; i < arity; i++)
      if (!is_arith(e->arg[i]->type)) fail(v, e->loc, "arithmetic on a condition");
    break;
  }
}

static void check_stmt(verifier *v, const ir_stmt *s) {
  v->s = s;
  const ir_tensor *t = s->out;
  if (t->role == IR_ROLE_INPUT) fail(v, s->loc, "statement writes an input");
  for (int i = 0; i < s->n_index; i++) {
    v->reduced[i] = v->in_scope[i] = 0;
    if (!s->index[i].extent) fail(v, s->loc, "index without extent");
  }
  if (!s->accumulate) {
    int n_free = 0;
    for (int i = 0; i < s->n_index; i++) n_free += s->index[i].kind == IR_IDX_FREE;
    if (n_free != t->rank) fail(v, s->loc, "plain statement's free indices do not match the tensor's rank");
    for (int i = 0; i < t->rank && v->ok; i++) {
      int id;
      if (!s->lhs[i] || !sym_is_index(s->lhs[i], &id) || id < 0 || id >= s->n_index ||
          s->index[id].kind != IR_IDX_FREE)
        fail(v, s->loc, "plain statement's left side is not its free indices");
      else if (!sym_equal(s->index[id].extent, t->shape[i]))
        fail(v, s->loc, "free index extent differs from the tensor's shape");
    }
  } else {
    for (int i = 0; i < s->n_index; i++)
      if (s->index[i].kind == IR_IDX_FREE) fail(v, s->loc, "+= statement with a free index");
    for (int i = 0; i < t->rank; i++) check_sym(v, s->lhs[i], s->loc);
  }
  check_expr(v, s->rhs);
  if (v->ok && !is_arith(s->rhs->type)) fail(v, s->loc, "statement assigns a condition");
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_REDUCE && v->reduced[i] != 1) fail(v, s->loc, "reduction index not reduced");
  v->written[t->id] = 1;
}

int ir_verify(const ir_program *p, kbc_diag *d, const char *after_pass) {
  verifier v = {.p = p, .d = d, .pass = after_pass, .ok = 1};
  int max_index = 1;
  for (int i = 0; i < p->stmts.len; i++)
    if (IR_STMT(p, i)->n_index > max_index) max_index = IR_STMT(p, i)->n_index;
  v.reduced = calloc((size_t)max_index, sizeof(int));
  v.in_scope = calloc((size_t)max_index, sizeof(int));
  v.written = calloc((size_t)p->tensors.len + 1, 1);
  if (!v.reduced || !v.in_scope || !v.written) abort();
  for (int i = 0; i < p->tensors.len; i++)
    if (IR_TENSOR(p, i)->id != i) {
      kbc_internal(d, IR_TENSOR(p, i)->loc, "after pass '%s': tensor ids out of order", after_pass);
      v.ok = 0;
    }
  for (int i = 0; i < p->stmts.len && v.ok; i++) check_stmt(&v, IR_STMT(p, i));
  v.s = NULL;
  for (int i = 0; i < p->tensors.len && v.ok; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    if (t->role == IR_ROLE_OUTPUT && !v.written[t->id]) {
      kbc_internal(d, t->loc, "after pass '%s': output '%s' is never written", after_pass, t->name);
      v.ok = 0;
    }
  }
  free(v.reduced);
  free(v.in_scope);
  free(v.written);
  return v.ok;
}
