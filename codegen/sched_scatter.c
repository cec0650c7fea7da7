/* sched_scatter.c — `+=` statements that could not become gathers.
 *
 * Before: a SCATTER group (one `t[f(i..)] += e(i..)` statement).  After:
 * a kernel with one thread per point of the scatter indices (grid-stride)
 * that adds its value into the target with atomicAdd.  The runtime zeroes
 * the target first when no earlier statement wrote it.  The order of the
 * additions, and so the rounding, may vary from run to run; gather.c turns
 * every scatter it can solve into a deterministic gather instead. */
#include "cg_impl.h"

int cg_emit_scatter(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  const ir_stmt *s = IR_STMT(C->p, g->first);
  cg_emit E = {.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1, .s = s};
  E.idx = cg_index_names(C->a, C->names, s);
  k->family = CG_FAMILY_SCATTER;
  k->first = g->first;
  k->count = 1;
  k->block = CG_BLOCK;
  k->smem = 0;
  k->per_block = CG_BLOCK;
  k->max_blocks = C->t->sm_count * 16;
  k->n_tensors = cg_collect_tensors(C->a, C->p, g->first, 1, &k->tensors);
  k->zero_tensor = s->out->id;
  for (int i = 0; i < g->first; i++)
    if (IR_STMT(C->p, i)->out == s->out) k->zero_tensor = -1;
  int ids[64], n = 0;
  sym *work = sym_const(C->a, 1);
  for (int i = 0; i < s->n_index && n < 64; i++)
    if (s->index[i].kind == IR_IDX_SCATTER) {
      ids[n++] = i;
      work = sym_mul(C->a, work, s->index[i].extent);
    }
  k->work = work;
  kbc_buf_printf(C->out, "// %s\n// schedule: scatter, one thread per point, atomic adds\n", cg_stmt_comment(C->a, s));
  E.written = cg_signature(C->out, C->a, C->p, C->names, k->name, CG_BLOCK, 0, k->n_tensors, k->tensors, g->first, 1);
  kbc_buf_puts(C->out, "{\n");
  cg_line(&E, "const long long _n = %s;", cg_sym(&E, work));
  cg_line(&E, "for (long long _o = (long long)blockIdx.x * %d + threadIdx.x; _o < _n; _o += (long long)gridDim.x * %d) {",
          CG_BLOCK, CG_BLOCK);
  E.indent++;
  cg_line(&E, "long long _q = _o;");
  for (int i = n - 1; i >= 0; i--) {
    const char *ext = cg_sym(&E, s->index[ids[i]].extent);
    if (i > 0) {
      cg_line(&E, "const long long %s = _q %% %s;", E.idx[ids[i]], ext);
      cg_line(&E, "_q /= %s;", ext);
    } else {
      cg_line(&E, "const long long %s = _q;", E.idx[ids[i]]);
    }
  }
  if (n == 0) cg_line(&E, "(void)_q;");
  const char *v = cg_expr(&E, s->rhs);
  if (s->rhs->type != IR_TY_FLOAT) v = kbc_arena_printf(C->a, "(float)(%s)", v);
  cg_line(&E, "atomicAdd(&%s[%s], %s);", C->names->tensor[s->out->id], cg_offset(&E, s->out, s->lhs), v);
  E.indent--;
  cg_line(&E, "}");
  kbc_buf_puts(C->out, "}\n\n");
  return 1;
}
