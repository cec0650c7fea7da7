/* sched_point.c — the point family: a rows group's single point, its
 * reduction split across the grid.
 *
 * Before: a POINT group (cg_group_family: a rows group of one statement
 * without free indices — a scalar: `loss = -sum(b, k: t[b, k] * logp[b,
 * k]) / bsz` — whose value is built on a reduction, cg_top_reduce, with a
 * block-wide team).  After cg_plan_point(): the plan (the team, the grid
 * cap).  After cg_emit_point(): one kernel
 * in which every block reduces its share of the flattened reduction space
 * (block b, thread l takes terms b*T + l, b*T + l + G*T, ... for G blocks
 * of T threads; or, where rows_pay, the block takes rows b, b + G, ... of
 * the space, every index but the last, its threads l, l + T, ... along
 * each), combines it across the block, and writes it to a part
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

struct cg_point_plan {
  const ir_stmt *s;
  const ir_expr *reduce; /* the reduction split across the grid */
  int team;              /* threads per block */
  int max_parts;         /* at most this many blocks, each a part */
  int rows;              /* blocks take rows, the team along each (rows_pay) */
};

/* Whether the blocks take whole rows of the reduction space (every index
 * but the last), the team strided along the last: a space of rows enough
 * for every block (estimated) and at least POINT_ROW_MIN long, read
 * contiguously along it.  Each thread then reads float4s along its rows
 * (vec_loop.c) instead of a float at a time with every index's digits
 * carried term by term: KernelBench's hinge loss, 2^15 rows of 2^15
 * (predictions[i, j] * targets[j]), ran 3,034 us on the H200 as one flat
 * loop, 3.2x torch.compile's 942. */
enum { POINT_ROW_MIN = 1024 };

static int rows_pay(cg_ctx *C, const ir_stmt *s, const ir_expr *r, int max_parts) {
  int n = r->u.reduce.n_vars;
  if (n < 2) return 0;
  double rows = 1;
  for (int i = 0; i < n - 1; i++) rows *= ir_estimate(s->index[r->u.reduce.vars[i]].extent);
  int last = r->u.reduce.vars[n - 1];
  return rows >= max_parts && ir_estimate(s->index[last].extent) >= POINT_ROW_MIN &&
         ir_reads_contiguously(C->a, s, r->arg[0], last);
}

sym *cg_point_blocks(kbc_arena *a, const ir_stmt *s) {
  const ir_expr *r = cg_top_reduce(s->rhs);
  sym *terms = sym_const(a, 1);
  for (int i = 0; i < r->u.reduce.n_vars; i++) terms = sym_mul(a, terms, s->index[r->u.reduce.vars[i]].extent);
  return sym_div(a, sym_add(a, terms, sym_const(a, POINT_CHUNK - 1)), POINT_CHUNK);
}

cg_point_plan *cg_plan_point(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  kbc_arena *a = C->a;
  cg_point_plan *plan = KBC_NEW(a, cg_point_plan);
  plan->s = IR_STMT(C->p, g->first);
  plan->reduce = cg_top_reduce(plan->s->rhs);
  plan->team = g->team;
  plan->max_parts = C->t->sm_count * POINT_BLOCKS_PER_SM;
  if (plan->max_parts > POINT_MAX_PARTS || plan->max_parts < 1) plan->max_parts = POINT_MAX_PARTS;
  if (C->t->opt.one_block_points) plan->max_parts = 1;
  plan->rows = rows_pay(C, plan->s, plan->reduce, plan->max_parts);
  k->family = CG_FAMILY_POINT;
  k->first = g->first;
  k->count = 1;
  k->block = plan->team;
  k->smem = 0;
  k->per_block = 1;
  k->max_blocks = plan->max_parts;
  k->zero_tensor = -1;
  k->n_tensors = cg_collect_tensors(a, C->p, g->first, 1, &k->tensors);
  k->work = cg_point_blocks(a, plan->s);
  return k->work ? plan : NULL;
}

/* The kernel's module state: the parts array and the blocks-done counter. */
static void emit_module_state(cg_ctx *C, const cg_point_plan *plan, const char *parts, const char *done) {
  kbc_buf_printf(C->out, "// %s\n", cg_stmt_comment(C->a, plan->s));
  kbc_buf_printf(C->out,
                 "// schedule: rows, one point: its reduction split across the grid (a block of %d threads per %d "
                 "terms, at most %d blocks%s), the blocks' parts combined in block order by the last block\n",
                 plan->team, POINT_CHUNK, plan->max_parts,
                 plan->rows ? "; each block whole rows, its threads along them" : "");
  kbc_buf_printf(C->out, "__device__ float %s[%d]; // each block's part\n", parts, plan->max_parts);
  kbc_buf_printf(C->out, "__device__ unsigned %s = 0; // blocks finished; the last resets it for the next launch\n",
                 done);
}

/* The last block to finish combines the parts (after this, acc holds the
 * total in every thread of that block; the other blocks have returned). */
static void emit_combine_parts(cg_emit *E, const cg_point_plan *plan, const cg_team *team, const char *acc,
                               const char *parts, const char *done) {
  ir_red op = plan->reduce->u.reduce.op;
  cg_line(E, "if (gridDim.x > 1) { // the parts, combined by the last block to finish");
  E->indent++;
  cg_line(E, "if (_lane == 0) {");
  cg_line(E, "  %s[blockIdx.x] = %s;", parts, acc);
  cg_line(E, "  __threadfence(); // the part is visible to the grid before the count says so");
  cg_line(E, "  _last = atomicAdd(&%s, 1u) == gridDim.x - 1u;", done);
  cg_line(E, "}");
  cg_line(E, "__syncthreads();");
  cg_line(E, "if (!_last) return;");
  cg_line(E, "%s = %s;", acc, cg_float_literal(E->a, ir_red_identity(op)));
  cg_line(E, "for (unsigned _b = _lane; _b < gridDim.x; _b += %du) %s = %s;", plan->team, acc,
          cg_combine(E, op, acc, cg_fmt(E, "((volatile float *)%s)[_b]", parts)));
  cg_team_combine(E, team, op, acc);
  cg_line(E, "if (_lane == 0) %s = 0u;", done);
  E->indent--;
  cg_line(E, "}");
}

void cg_emit_point(cg_ctx *C, const cg_point_plan *plan, const cg_kernel *k) {
  kbc_arena *a = C->a;
  const ir_stmt *s = plan->s;
  const ir_expr *r = plan->reduce;
  int T = plan->team;
  cg_emit E = {.a = a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1, .s = s};
  E.idx = cg_index_names(a, C->names, s);
  const char *parts = kbc_arena_printf(a, "_%s_parts", k->name), *done = kbc_arena_printf(a, "_%s_done", k->name);
  emit_module_state(C, plan, parts, done);
  E.written = cg_signature(C, k->name, T, 0, k->n_tensors, k->tensors, k->first, 1);
  cg_line(&E, "const int _lane = threadIdx.x;");
  cg_line(&E, "__shared__ float _red[32];");
  cg_line(&E, "__shared__ bool _last;");
  cg_line(&E, "{ // %s", cg_stmt_comment(a, s));
  E.indent++;
  /* this block's share of the terms, then the block's value in every thread */
  cg_team team = {.size = T};
  cg_split split = {.reduce = r, .team = team, .rows = plan->rows};
  split.part_start = plan->rows ? "(long long)blockIdx.x" : kbc_arena_printf(a, "((long long)blockIdx.x * %d + _lane)", T);
  split.part_step = plan->rows ? "(long long)gridDim.x" : kbc_arena_printf(a, "((long long)gridDim.x * %d)", T);
  const char *acc = cg_expr_in(&E, r, &(cg_expr_ctx){.split = &split});
  cg_team_combine(&E, &team, r->u.reduce.op, acc);
  emit_combine_parts(&E, plan, &team, acc, parts, done);
  const char *v = cg_float_value(&E, s->rhs, cg_expr_in(&E, s->rhs, &(cg_expr_ctx){.known = r, .known_value = acc}));
  cg_line(&E, "if (_lane == 0) %s[0] = %s;", C->names->tensor[s->out->id], v);
  E.indent--;
  cg_line(&E, "}");
  kbc_buf_puts(C->out, "}\n\n");
}
