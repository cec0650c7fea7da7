/* sched_scatter.c — `+=` statements that could not become gathers.
 *
 * Before: a SCATTER group (one `t[f(i..)] += e(i..)` statement).  After
 * cg_plan_scatter(): the plan (its scatter indices; whether the target is
 * zeroed first: when no earlier statement wrote it).  After
 * cg_emit_scatter(): a kernel with one thread per point of the scatter
 * indices (grid-stride) that adds its value into the target with
 * atomicAdd.  The order of the additions, and so the rounding, may vary
 * from run to run; gather.c turns every scatter it can solve into a
 * deterministic gather instead. */
#include "cg_impl.h"

struct cg_scatter_plan {
  const ir_stmt *s;
  int n, ids[64]; /* the scatter indices, a thread per point of them */
  sym *work;      /* their points */
};

cg_scatter_plan *cg_plan_scatter(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  cg_scatter_plan *plan = KBC_NEW(C->a, cg_scatter_plan);
  const ir_stmt *s = plan->s = IR_STMT(C->p, g->first);
  plan->work = sym_const(C->a, 1);
  for (int i = 0; i < s->n_index && plan->n < 64; i++)
    if (s->index[i].kind == IR_IDX_SCATTER) {
      plan->ids[plan->n++] = i;
      plan->work = sym_mul(C->a, plan->work, s->index[i].extent);
    }
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
  k->work = plan->work;
  return plan;
}

void cg_emit_scatter(cg_ctx *C, const cg_scatter_plan *plan, const cg_kernel *k) {
  const ir_stmt *s = plan->s;
  cg_emit E = {.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1, .s = s};
  E.idx = cg_index_names(C->a, C->names, s);
  kbc_buf_printf(C->out, "// %s\n// schedule: scatter, one thread per point, atomic adds\n", cg_stmt_comment(C->a, s));
  E.written = cg_signature(C, k->name, CG_BLOCK, 0, k->n_tensors, k->tensors, k->first, 1);
  cg_line(&E, "const long long _n = %s;", cg_sym(&E, plan->work));
  cg_line(&E, "for (long long _o = (long long)blockIdx.x * %d + threadIdx.x; _o < _n; _o += (long long)gridDim.x * %d) {",
          CG_BLOCK, CG_BLOCK);
  E.indent++;
  cg_line(&E, "long long _q = _o;");
  for (int i = plan->n - 1; i >= 0; i--) {
    const char *ext = cg_sym(&E, s->index[plan->ids[i]].extent);
    if (i > 0) {
      cg_line(&E, "const long long %s = _q %% %s;", E.idx[plan->ids[i]], ext);
      cg_line(&E, "_q /= %s;", ext);
    } else {
      cg_line(&E, "const long long %s = _q;", E.idx[plan->ids[i]]);
    }
  }
  if (plan->n == 0) cg_line(&E, "(void)_q;");
  const char *v = cg_float_value(&E, s->rhs, cg_expr(&E, s->rhs));
  cg_line(&E, "atomicAdd(&%s[%s], %s);", C->names->tensor[s->out->id], cg_offset(&E, s->out, s->lhs), v);
  E.indent--;
  cg_line(&E, "}");
  kbc_buf_puts(C->out, "}\n\n");
}
