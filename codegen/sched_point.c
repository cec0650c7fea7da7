/* sched_point.c — the rows family's single point split across the grid.
 *
 * Before: a rows group of one statement without free indices (a scalar:
 * `loss = -sum(b, k: t[b, k] * logp[b, k]) / bsz`) whose value is built on
 * a reduction (cg_top_reduce), with a block-wide team.  After: one kernel
 * in which every block reduces its share of the flattened reduction space
 * (block b, thread l takes terms b*T + l, b*T + l + G*T, ... for G blocks
 * of T threads), combines it across the block, and writes it to a part
 * array of the module (`__device__`); the last block to finish (a counter
 * of the module, counted up atomically after a __threadfence and reset by
 * that block for the next launch) combines the parts in block order and
 * stores the statement's value.  The grid is one block per POINT_CHUNK
 * terms, at most POINT_BLOCKS_PER_SM per multiprocessor (and the parts
 * array's size); with one block there are no parts.  For a given grid the
 * order of the additions is fixed, so the result is deterministic.
 * The module's part array and counter are shared by every launch of the
 * kernel: launches of one program must not overlap (they share its
 * workspace already). */
#include "cg_impl.h"

enum { POINT_CHUNK = 8192, POINT_BLOCKS_PER_SM = 4, POINT_MAX_PARTS = 1024 };

int cg_emit_point(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  if (g->n_outer != 0 || g->count != 1 || g->team <= 32) return 0;
  const ir_stmt *s = IR_STMT(C->p, g->first);
  const ir_expr *r = cg_top_reduce(s->rhs);
  for (int i = 0; i < s->n_index; i++)
    if (s->index[i].kind == IR_IDX_FREE) return 0;
  if (!r || s->accumulate) return 0;
  kbc_arena *a = C->a;
  int T = g->team;
  int max_parts = C->t->sm_count * POINT_BLOCKS_PER_SM;
  if (max_parts > POINT_MAX_PARTS || max_parts < 1) max_parts = POINT_MAX_PARTS;
  cg_emit E = {.a = a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1, .team = T};
  E.s = s;
  E.idx = cg_index_names(a, C->names, s);
  k->family = CG_FAMILY_ROWS;
  k->first = g->first;
  k->count = 1;
  k->block = T;
  k->smem = 0;
  k->per_block = 1;
  k->max_blocks = max_parts;
  k->zero_tensor = -1;
  k->n_tensors = cg_collect_tensors(a, C->p, g->first, 1, &k->tensors);
  sym *terms = sym_const(a, 1);
  for (int i = 0; i < r->u.reduce.n_vars; i++) terms = sym_mul(a, terms, s->index[r->u.reduce.vars[i]].extent);
  k->work = sym_div(a, sym_add(a, terms, sym_const(a, POINT_CHUNK - 1)), POINT_CHUNK); /* blocks */
  if (!k->work) return 0;

  const char *comment = cg_stmt_comment(a, s);
  const char *parts = kbc_arena_printf(a, "_%s_parts", k->name), *done = kbc_arena_printf(a, "_%s_done", k->name);
  kbc_buf_printf(C->out, "// %s\n", comment);
  kbc_buf_printf(C->out,
                 "// schedule: rows, one point: its reduction split across the grid (a block of %d threads per %d "
                 "terms, at most %d blocks), the blocks' parts combined in block order by the last block\n",
                 T, POINT_CHUNK, max_parts);
  kbc_buf_printf(C->out, "__device__ float %s[%d]; // each block's part\n", parts, max_parts);
  kbc_buf_printf(C->out, "__device__ unsigned %s = 0; // blocks finished; the last resets it for the next launch\n",
                 done);
  E.written = cg_signature(C->out, a, C->p, C->names, k->name, T, 0, k->n_tensors, k->tensors, g->first, 1);
  kbc_buf_puts(C->out, "{\n");
  cg_line(&E, "const int _lane = threadIdx.x;");
  cg_line(&E, "__shared__ float _red[32];");
  cg_line(&E, "__shared__ bool _last;");
  cg_line(&E, "{ // %s", comment);
  E.indent++;
  /* this block's share of the terms, then the block's value in every thread */
  E.coop = r;
  E.part_start = kbc_arena_printf(a, "((long long)blockIdx.x * %d + _lane)", T);
  E.part_step = kbc_arena_printf(a, "((long long)gridDim.x * %d)", T);
  const char *acc = cg_expr(&E, r);
  E.coop = NULL;
  E.part_start = E.part_step = NULL;
  ir_red op = r->u.reduce.op;
  cg_team_combine(&E, op, acc);
  cg_line(&E, "if (gridDim.x > 1) { // the parts, combined by the last block to finish");
  E.indent++;
  cg_line(&E, "if (_lane == 0) {");
  cg_line(&E, "  %s[blockIdx.x] = %s;", parts, acc);
  cg_line(&E, "  __threadfence(); // the part is visible to the grid before the count says so");
  cg_line(&E, "  _last = atomicAdd(&%s, 1u) == gridDim.x - 1u;", done);
  cg_line(&E, "}");
  cg_line(&E, "__syncthreads();");
  cg_line(&E, "if (!_last) return;");
  cg_line(&E, "%s = %s;", acc, cg_float_literal(a, ir_red_identity(op)));
  cg_line(&E, "for (unsigned _b = _lane; _b < gridDim.x; _b += %du) %s = %s;", T, acc,
          cg_combine(&E, op, acc, kbc_arena_printf(a, "((volatile float *)%s)[_b]", parts)));
  cg_team_combine(&E, op, acc);
  cg_line(&E, "if (_lane == 0) %s = 0u;", done);
  E.indent--;
  cg_line(&E, "}");
  E.known = r;
  E.known_value = acc;
  const char *v = cg_expr(&E, s->rhs);
  E.known = NULL;
  if (s->rhs->type != IR_TY_FLOAT) v = kbc_arena_printf(a, "(float)(%s)", v);
  cg_line(&E, "if (_lane == 0) %s[0] = %s;", C->names->tensor[s->out->id], v);
  E.indent--;
  cg_line(&E, "}");
  kbc_buf_puts(C->out, "}\n\n");
  return 1;
}
