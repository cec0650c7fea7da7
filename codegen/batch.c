/* batch.c — whether a program is independent copies of one program, one
 * per *batch point*.
 *
 * Before: a program with no var axes (specialized), after the IR passes.
 * After cg_batch_split(): 1 and the split where every statement has a
 * free (or scatter) index b — its *batch index* — that is its output's
 * first index, plainly, over the same n points in every statement, and
 * mentioned nowhere else but as the plain first index of the loads of
 * tensors every access of which is so (the *batched* tensors: first
 * dimension n; the others, read-only, never see b).  Then batch point i
 * of every batched tensor depends on batch point i of the batched inputs
 * and on the unbatched ones alone, and the program is n copies of the
 * program `one`: every batched tensor's first dimension 1, every batch
 * index's extent 1, the same tensor ids — its point i runs on the slices
 * at stride[t] * i of each batched tensor t.  0 where any of that fails.
 *
 * CViT is one (its batch: every layer mixes the two rows of one image
 * alone); the cluster kernel (cluster.c) runs a point per thread-block
 * cluster on it.  docs/PERSISTENT.md, "Session 41". */
#include "cg_impl.h"

typedef struct {
  int64_t n;            /* the points (0: not known yet) */
  unsigned char *state; /* per tensor id: 1 batched, 2 read without the batch index, 3 both (fails) */
} split_ctx;

/* The loads of e, in a statement whose batch index is b: each reads its
 * tensor at b plainly in the first dimension (batched) or mentions b
 * nowhere (unbatched); no index value mentions b. */
static int scan(split_ctx *S, const ir_expr *e, int b) {
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!scan(S, e->arg[i], b)) return 0;
  if (e->op == IR_OP_INDEX) return !sym_mentions_index(e->u.index, b);
  if (e->op != IR_OP_LOAD) return 1;
  const ir_tensor *t = e->u.load.tensor;
  int id, first = t->rank > 0 && sym_is_index(e->u.load.idx[0], &id) && id == b;
  for (int d = first; d < t->rank; d++)
    if (sym_mentions_index(e->u.load.idx[d], b)) return 0;
  if (first) {
    int64_t n;
    if (!sym_is_const(t->shape[0], &n) || n != S->n) return 0;
  }
  S->state[t->id] |= first ? 1 : 2;
  return S->state[t->id] != 3;
}

/* Statement s's batch index (-1: none): its output's first index, plain,
 * free, over the n points, in no other index of its output. */
static int batch_index(split_ctx *S, const ir_stmt *s) {
  int b;
  int64_t n, size;
  if (s->out->rank < 1 || !sym_is_index(s->lhs[0], &b) || s->index[b].kind == IR_IDX_REDUCE) return -1;
  if (!sym_is_const(s->index[b].extent, &n) || !sym_is_const(s->out->shape[0], &size) || n != size || n < 1)
    return -1;
  if (S->n && n != S->n) return -1;
  S->n = n;
  for (int d = 1; d < s->out->rank; d++)
    if (sym_mentions_index(s->lhs[d], b)) return -1;
  return b;
}

/* A copy of e reading the tensors of `to` (by id). */
static ir_expr *retarget(kbc_arena *a, const ir_expr *e, ir_tensor *const *to) {
  ir_expr *c = KBC_NEW(a, ir_expr);
  *c = *e;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) c->arg[i] = retarget(a, e->arg[i], to);
  if (e->op == IR_OP_LOAD) c->u.load.tensor = to[e->u.load.tensor->id];
  return c;
}

int cg_batch_split(kbc_arena *a, const ir_program *p, cg_batch *out) {
  if (p->vars.len || !p->stmts.len) return 0;
  int nt = p->tensors.len, ns = p->stmts.len;
  split_ctx S = {.state = KBC_NEW_ARRAY(a, unsigned char, nt + 1)};
  int *b = KBC_NEW_ARRAY(a, int, ns);
  for (int i = 0; i < ns; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    if ((b[i] = batch_index(&S, s)) < 0 || !scan(&S, s->rhs, b[i])) return 0;
    S.state[s->out->id] |= 1;
    if (S.state[s->out->id] == 3) return 0;
  }
  /* the program of one point: the same tensors and statements, the batch one long */
  ir_program *one = KBC_NEW(a, ir_program);
  *one = *p;
  one->tensors = (kbc_vec){0};
  one->stmts = (kbc_vec){0};
  ir_tensor **to = KBC_NEW_ARRAY(a, ir_tensor *, nt + 1);
  out->stride = KBC_NEW_ARRAY(a, int64_t, nt + 1);
  for (int i = 0; i < nt; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    ir_tensor *c = to[i] = KBC_NEW(a, ir_tensor);
    *c = *t;
    c->shape = KBC_NEW_ARRAY(a, sym *, t->rank > 0 ? t->rank : 1);
    for (int d = 0; d < t->rank; d++) c->shape[d] = t->shape[d];
    if (S.state[i] == 1) {
      int64_t stride = 1, e;
      for (int d = 1; d < t->rank; d++) {
        if (!sym_is_const(t->shape[d], &e) || (e && stride > INT64_MAX / e)) return 0;
        stride *= e;
      }
      out->stride[i] = stride;
      c->shape[0] = sym_const(a, 1);
    }
    kbc_vec_push(a, &one->tensors, c);
  }
  for (int i = 0; i < ns; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    ir_stmt *c = KBC_NEW(a, ir_stmt);
    *c = *s;
    c->out = to[s->out->id];
    c->index = KBC_NEW_ARRAY(a, ir_index, s->n_index);
    for (int k = 0; k < s->n_index; k++) c->index[k] = s->index[k];
    c->index[b[i]].extent = sym_const(a, 1);
    c->rhs = retarget(a, s->rhs, to);
    kbc_vec_push(a, &one->stmts, c);
  }
  out->points = S.n;
  out->one = one;
  return 1;
}
