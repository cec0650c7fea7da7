/* attn_pipe.c — the fused attention family's pipelined kernel (mma.sync,
 * TF32 or 3xTF32), printed from its plan.
 *
 * Before: a plan whose layout is pipelined (attn_plan.c: D and N2 known
 * when compiling; attn_impl.h).  After attn_emit_pipe_body(): the kernel's
 * body — a block of 4 warps per (batch point, 64 rows), all of N2 at once:
 *   - the rows' operand for all of D into shared memory once (_Qs);
 *   - the sweep over the columns, 64 at a time, where step c's column
 *     operand (_Ks) and values (_Vs) were requested by cp.async during step
 *     c - 1 (one commit group each, awaited with wait_group 1):
 *       scores from _Qs and _Ks; _Ks released and the next step's
 *       requested; the row statistics and the probabilities in registers
 *       (attn_emit.c's phases); the accumulator += P . _Vs, P read from
 *       the scores' registers; _Vs released and the next step's requested;
 *   - the finish (attn_emit.c).
 * An operand that is not a plain load (or is written by the kernel) is
 * computed and stored synchronously where the copy would be requested.
 * Where the mask lets wholly masked tiles be skipped, the next step is
 * chosen past them before its copies are requested (exact: the running max
 * only grows).  At 3xTF32 the tensor cores' own sums run over at most 32
 * terms of D and the 64 columns of a step; the partial sums are added in
 * fp32, which keeps long sums within fp32 accuracy (their accumulation
 * rounds toward zero). */
#include "attn_impl.h"

/* A tile copy into the row-major dst[o * ld + i], for the outer space o
 * (its digits decoded once per thread and outer coordinate) and the inner
 * space i; li threads side by side along the inner space (the outer
 * coordinates spread over the rest), or, where !inner_fast, the threads
 * side by side along the outer space.  vec: 16 bytes at a time where the
 * tensor's address is 16-byte aligned (attn_plan.c proved the rest). */
typedef struct {
  const char *dst;
  int ld;
  tile_space o, i;
  int inner_fast, vec;
  int i_exact; /* the inner space is exactly the tile's count (no range check) */
  const ir_expr *value;
} tile_copy;

static int async_load(const attn_emitter *ae, const ir_expr *e) {
  return e->op == IR_OP_LOAD && !e->u.load.padded && !(ae->E.written && ae->E.written[e->u.load.tensor->id] == 1);
}

/* The largest power of two <= min(32, n). */
static int lanes_for(int n) {
  int l = 1;
  while (l < 32 && 2 * l <= n) l *= 2;
  return l;
}

/* The copy's loops, w floats (1 or 4) per copy. */
static void copy_loops(attn_emitter *ae, int q, const tile_copy *tc, int w) {
  cg_emit *E = &ae->E;
  int threads = ae->plan->lay.threads, chunks = tc->i.count / w;
  int lo = 1;
  while (2 * lo <= threads && 2 * lo <= tc->o.count) lo *= 2;
  int li = tc->inner_fast ? lanes_for(chunks) : threads / lo;
  lo = threads / li;
  const char *a0 = tc->inner_fast ? cg_fmt(E, "_tid / %d", li) : cg_fmt(E, "_tid %% %d", lo);
  const char *b0 = tc->inner_fast ? cg_fmt(E, "_tid %% %d", li) : cg_fmt(E, "_tid / %d", lo);
  int na = (tc->o.count + lo - 1) / lo, nb = (chunks + li - 1) / li;
  cg_line(E, "#pragma unroll 1");
  cg_line(E, "for (int _ai = 0; _ai < %d; ++_ai) {", na);
  E->indent++;
  cg_line(E, "const int _a = _ai * %d + %s;", lo, a0);
  if (tc->o.count % lo) cg_line(E, "if (_a >= %d) break;", tc->o.count);
  cg_line(E, "const long long _go = %s + _a;", tc->o.base);
  cg_line(E, "const bool _ook = _go < %s;", tc->o.extent);
  attn_declare_digits(E, &tc->o);
  attn_decode_into(ae, "_qo", "_go", &tc->o);
  cg_line(E, "#pragma unroll 4");
  cg_line(E, "for (int _bi = 0; _bi < %d; ++_bi) {", nb);
  E->indent++;
  cg_line(E, w == 1 ? "const int _b = _bi * %d + %s;" : "const int _b = (_bi * %d + %s) * 4;", li, b0);
  if (chunks % li) cg_line(E, "if (_b >= %d) break;", tc->i.count);
  cg_line(E, "const long long _gi = %s + _b;", tc->i.base);
  if (tc->i_exact) cg_line(E, "const bool _ok = _ook; // the tile is exactly %s", tc->i.extent);
  else cg_line(E, "const bool _ok = _ook && _gi < %s;", tc->i.extent);
  attn_declare_digits(E, &tc->i);
  attn_decode_into(ae, "_qi", "_gi", &tc->i);
  const char *ix = cg_fmt(E, "_a * %d + _b", tc->ld);
  const char *at = cg_fmt(E, "%s[%s]", tc->dst, ix);
  if (async_load(ae, tc->value)) {
    const ir_tensor *t = tc->value->u.load.tensor;
    const char *name = E->names->tensor[t->id];
    cg_line(E, "kbc_cp_async%d(&%s, %s_s + 4 * (%s), _ok ? &%s[%s] : %s, _ok);", 4 * w, at, tc->dst, ix, name,
            cg_offset(E, t, tc->value->u.load.idx), name);
  } else {
    cg_line(E, "float _x = 0.0f;");
    cg_line(E, "if (_ok) _x = %s;", attn_expr_at(ae, q, tc->value, NULL));
    cg_line(E, "%s = _x;", at);
  }
  E->indent--;
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
}

static void emit_copy(attn_emitter *ae, int q, const tile_copy *tc) {
  cg_emit *E = attn_at(ae, q);
  int async = async_load(ae, tc->value);
  if (!(async && tc->vec)) {
    cg_line(E, "// %s: %s", tc->dst, async ? "cp.async" : "computed and stored");
    copy_loops(ae, q, tc, 1);
    return;
  }
  const char *name = E->names->tensor[tc->value->u.load.tensor->id];
  cg_line(E, "if (((unsigned long long)%s & 15) == 0) { // %s: cp.async, 16 bytes at a time", name, tc->dst);
  E->indent++;
  copy_loops(ae, q, tc, 4);
  E->indent--;
  cg_line(E, "} else { // %s: cp.async, a float at a time", tc->dst);
  E->indent++;
  copy_loops(ae, q, tc, 1);
  E->indent--;
  cg_line(E, "}");
}

/* The rows' operand (all of D), or the column operand of the step at
 * base, of product pi (attn_product): its indices are its own
 * statement's, m and n standing for the kernel's rows and columns. */
static void copy_operand(attn_emitter *ae, int pi, int rows, const char *base) {
  const cg_attn_plan *plan = ae->plan;
  const attn_layout *L = &plan->lay;
  const cg_contraction *c = attn_product(ae->ch, pi);
  tile_copy tc = {.dst = attn_product_name(ae, rows ? "_Q" : "_K", pi), .ld = rows ? L->ldq : L->ldk,
                  .value = rows ? c->a : c->b, .inner_fast = rows ? plan->opd[pi].q_fast : plan->opd[pi].k_fast,
                  .vec = rows ? plan->opd[pi].q_vec : plan->opd[pi].k_vec, .i_exact = L->dp == plan->d};
  tc.i = (tile_space){.ids = c->k, .n = c->n_k, .base = "0", .extent = "_D", .count = L->dp};
  tc.o = rows ? (tile_space){.ids = c->m, .n = c->n_m, .base = "_r0", .extent = "_R", .count = L->br}
              : (tile_space){.ids = c->n, .n = c->n_n, .base = base, .extent = "_C", .count = L->bc};
  emit_copy(ae, attn_product_at(ae->ch, pi), &tc);
}

/* Every product's operand tile (rows: resident; else the step's at base). */
static void copy_operands(attn_emitter *ae, int rows, const char *base) {
  for (int pi = 0; pi <= ae->ch->n_s2; pi++) copy_operand(ae, pi, rows, base);
}

static void copy_values(attn_emitter *ae, const char *base) {
  const cg_attention *ch = ae->ch;
  const cg_attn_plan *plan = ae->plan;
  const attn_layout *L = &plan->lay;
  tile_copy tc = {.dst = "_Vs", .ld = L->ldv, .value = ch->c2.b, .inner_fast = plan->v_n_fast, .vec = plan->v_vec,
                  .i_exact = L->nt == plan->n2};
  tc.o = (tile_space){.ids = ch->c2.k, .n = ch->c2.n_k, .base = base, .extent = "_C", .count = L->bc};
  tc.i = (tile_space){.ids = ch->n2, .n = ch->n_n2, .base = "0", .extent = "_N2", .count = L->nt, .n2 = 1};
  emit_copy(ae, ch->count - 1, &tc);
}

/* The next step's start _cn: past the tiles the mask selects K on
 * wholly, once every row's running max is far above K (attn_mask). */
static void emit_next_step(attn_emitter *ae) {
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  cg_line(E, "long long _cn = _c0 + %d; // the next step", L->bc);
  if (!ae->plan->mask.on) return;
  cg_open_block(E, "while (_cn < _C)");
  const char *always = attn_emit_mask_test(ae, "_cn");
  cg_line(E, "if (!(%s) || !__syncthreads_and(_far)) break; // the first test the same in every thread", always);
  cg_line(E, "_cn += %d;", L->bc);
  cg_close_block(E);
}

/* ---- partial row sums (ATTN_PART) -------------------------------------- */

/* Their shared memory after the tiles from float `at` (attn_part_floats). */
static void declare_parts(attn_emitter *ae, long long at) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  for (int k = 0; k < ch->n_part; k++)
    if (ch->part[k].stage == k) {
      cg_line(E, "float *const _T%d = _sm + %lld; // [%d][%d]: the step's values summed into %s", k, at, L->br,
              attn_part_ldt(L->bc), ch->st[ch->part[k].at].s->out->name);
      at += (long long)L->br * attn_part_ldt(L->bc);
    }
  for (int k = 0; k < ch->n_part; k++) {
    int G = ch->part[k].groups;
    if (ch->part[k].stage != k) cg_line(E, "float *const _T%d = _T%d; // the same values", k, ch->part[k].stage);
    cg_line(E, "float *const _X%d = _sm + %lld; // [%d][%d]: the rows' sums of %s, by group", k, at, L->br,
            attn_part_ldg(G), ch->st[ch->part[k].at].s->out->name);
    at += (long long)L->br * attn_part_ldg(G);
    cg_line(E, "int *const _G%d = (int *)(_sm + %lld); // [%d]: the step's columns' groups (-1: past _C)", k, at, L->bc);
    at += L->bc;
  }
}

static void zero_parts(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  for (int k = 0; k < ch->n_part; k++)
    cg_line(&ae->E, "for (int _e = _tid; _e < %d; _e += %d) _X%d[_e] = 0.0f;", L->br * attn_part_ldg(ch->part[k].groups),
            L->threads, k);
}

/* The flat index of PART k's group from the C digits in scope. */
static const char *group_of(attn_emitter *ae, int k) {
  const cg_attention *ch = ae->ch;
  cg_emit *E = attn_at(ae, 0);
  const char *g = NULL;
  for (int i = 0; i < ch->part[k].n_g; i++) {
    int id = ch->part[k].g[i];
    const char *d = ae->plan->idx[0][id];
    g = g ? cg_fmt(E, "(%s) * %s + %s", g, cg_sym(E, ch->S->index[id].extent), d) : d;
  }
  return g ? g : "0";
}

/* At a step's start: each column's group (a thread a column). */
static void part_groups(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  if (!ch->n_part) return;
  cg_emit *E = attn_at(ae, 0);
  cg_open_block(E, cg_fmt(E, "if (_tid < %d)", L->bc));
  cg_line(E, "const long long _gc = _c0 + _tid;");
  tile_space c = {.ids = ch->c1.n, .n = ch->c1.n_n};
  attn_declare_digits(E, &c);
  attn_decode_into(ae, "_qg", "_gc", &c);
  for (int k = 0; k < ch->n_part; k++) cg_line(E, "_G%d[_tid] = _gc < _C ? (int)(%s) : -1;", k, group_of(ae, k));
  cg_close_block(E);
}

/* After phase B staged the step's values: lane l of each warp adds row
 * _wr + l % 16's values into PART (l / 16)'s sums (the second PART's in
 * the other half-warp, in the same loop), column by column, a run of
 * columns of one group summed in a register first (grh's kx runs): every
 * sum has one owner adding in a fixed order, so the result is the same
 * run to run. */
static void reduce_parts(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  if (!ch->n_part) return;
  cg_line(E, "__syncwarp(); // the warp's rows staged");
  cg_line(E, "{");
  E->indent++;
  cg_line(E, "const int _pr = _wr + (_tid %% 32) %% 16, _ph = (_tid %% 32) / 16;");
  int two = ch->n_part > 1;
  cg_line(E, "float *const _Xp = %s;", two ? "_ph == 0 ? _X0 : _X1" : "_X0");
  cg_line(E, "const float *const _Tp = %s;", two ? "_ph == 0 ? _T0 : _T1" : "_T0");
  cg_line(E, "const int *const _Gp = %s;", two ? "_ph == 0 ? _G0 : _G1" : "_G0");
  int g0 = attn_part_ldg(ch->part[0].groups), g1 = two ? attn_part_ldg(ch->part[1].groups) : g0;
  cg_line(E, "const int _lg = %s;", g0 == g1 ? cg_fmt(E, "%d", g0) : cg_fmt(E, "_ph == 0 ? %d : %d", g0, g1));
  if (!two) cg_line(E, "if (_ph == 0) {");
  else cg_line(E, "{");
  E->indent++;
  cg_line(E, "int _cg = -1;");
  cg_line(E, "float _ca = 0.0f;");
  cg_line(E, "#pragma unroll 8");
  cg_line(E, "for (int _c = 0; _c < %d; ++_c) {", L->bc);
  E->indent++;
  cg_line(E, "const int _g = _Gp[_c];");
  cg_line(E, "const float _v = _Tp[_pr * %d + _c];", attn_part_ldt(L->bc));
  cg_line(E, "if (_g != _cg) { // a new run: the last one's sum added");
  cg_line(E, "  if (_cg >= 0) _Xp[_pr * _lg + _cg] += _ca;");
  cg_line(E, "  _cg = _g;");
  cg_line(E, "  _ca = 0.0f;");
  cg_line(E, "}");
  cg_line(E, "_ca += _v; // past _C (_g < 0): never added");
  E->indent--;
  cg_line(E, "}");
  cg_line(E, "if (_cg >= 0) _Xp[_pr * _lg + _cg] += _ca;");
  E->indent--;
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
}

/* After the sweep: each warp stores its rows' sums. */
static void store_parts(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  cg_emit *E = &ae->E;
  if (!ch->n_part) return;
  cg_line(E, "__syncwarp(); // the warp's sums done");
  for (int k = 0; k < ch->n_part; k++) {
    int q = ch->part[k].at, G = ch->part[k].groups;
    const ir_stmt *st = ch->st[q].s;
    attn_at(ae, 0);
    cg_open_block(E, cg_fmt(E, "for (int _e = _tid %% 32; _e < %d; _e += 32)", 16 * G));
    cg_line(E, "const int _lr = _wr + _e / %d, _g = _e %% %d;", G, G);
    cg_line(E, "const long long _gr = _r0 + _lr;");
    cg_line(E, "if (_gr >= _R) continue;");
    tile_space r = {.ids = ch->c1.m, .n = ch->c1.n_m}, g = {.ids = ch->part[k].g, .n = ch->part[k].n_g};
    attn_declare_digits(E, &r);
    attn_decode_into(ae, "_qr", "_gr", &r);
    if (g.n) {
      attn_declare_digits(E, &g);
      attn_decode_into(ae, "_qp", "_g", &g);
    }
    cg_emit *Eq = attn_at(ae, q);
    cg_line(Eq, "%s[%s] = _X%d[_lr * %d + _g];", Eq->names->tensor[st->out->id], cg_offset(Eq, st->out, st->lhs), k,
            attn_part_ldg(G));
    cg_close_block(E);
  }
}

void attn_emit_pipe_body(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  cg_line(E, "KBC_DYNAMIC_SMEM(_sm); // %d bytes", L->smem);
  cg_line(E, "float *const _Qs = _sm; // [%d][%d]: the rows' operand, D contiguous, for the whole sweep", L->br, L->ldq);
  cg_line(E, "float *const _Ks = _sm + %d; // [%d][%d]: the step's column operand, D contiguous", L->br * L->ldq, L->bc,
          L->ldk);
  cg_line(E, "float *const _Vs = _sm + %d; // [%d][%d]: the step's values", L->br * L->ldq + L->bc * L->ldk, L->bc,
          L->ldv);
  cg_line(E, "const unsigned _Qs_s = kbc_smem_u32(_Qs), _Ks_s = kbc_smem_u32(_Ks), _Vs_s = kbc_smem_u32(_Vs);");
  int at = L->br * L->ldq + L->bc * L->ldk + L->bc * L->ldv; /* past the tiles laid out so far */
  for (int pi = 1; pi <= ch->n_s2; pi++) {
    const char *q = attn_product_name(ae, "_Q", pi), *k = attn_product_name(ae, "_K", pi);
    const char *of = ch->st[attn_product_at(ch, pi)].s->out->name;
    cg_line(E, "float *const %s = _sm + %d; // [%d][%d]: the rows' operand of %s", q, at, L->br, L->ldq, of);
    at += L->br * L->ldq;
    cg_line(E, "float *const %s = _sm + %d; // [%d][%d]: the step's column operand of %s", k, at, L->bc, L->ldk, of);
    at += L->bc * L->ldk;
    cg_line(E, "const unsigned %s_s = kbc_smem_u32(%s), %s_s = kbc_smem_u32(%s);", q, q, k, k);
  }
  declare_parts(ae, at);
  attn_emit_extents(ae);
  cg_line(E, "const long long _tiles_r = (_R + %d) / %d;", L->br - 1, L->br);
  cg_line(E, "const int _tid = threadIdx.x;");
  attn_emit_thread_ids(ae);
  cg_open_block(E, "for (long long _tile = blockIdx.x; _tile < _B * _tiles_r; _tile += gridDim.x)");
  cg_line(E, "const long long _r0 = (_tile %% _tiles_r) * %d, _n0 = 0;", L->br);
  cg_line(E, "const long long _bb = _tile / _tiles_r;");
  attn_emit_tile_start(ae);
  attn_at(ae, 0);
  cg_line(E, "__syncthreads(); // the last tile's readers of the shared tiles are done");
  zero_parts(ae);
  copy_operands(ae, 1, NULL);
  copy_operands(ae, 0, "0LL");
  cg_line(E, "kbc_cp_commit();");
  copy_values(ae, "0LL");
  cg_line(E, "kbc_cp_commit();");
  attn_emit_accumulators(ae);
  cg_open_block(E, "for (long long _c0 = 0; _c0 < _C;)");
  emit_next_step(ae);
  attn_emit_lines(ae, "c", ch->c1.n, ch->c1.n_n, L->nc, "_c0", attn_col(ae, "_l"), "_C");
  part_groups(ae);
  cg_line(E, "kbc_cp_wait<1>();");
  cg_line(E, "__syncthreads(); // _Qs and the step's _Ks in place");
  attn_emit_pipe_scores_math(ae);
  cg_line(E, "__syncthreads(); // _Ks read by every warp");
  cg_open_block(E, "if (_cn < _C)");
  copy_operands(ae, 0, "_cn");
  cg_close_block(E);
  cg_line(E, "kbc_cp_commit();");
  attn_emit_phase_a(ae);
  attn_emit_rescale(ae);
  attn_emit_phase_b(ae);
  reduce_parts(ae);
  cg_line(E, "kbc_cp_wait<1>();");
  cg_line(E, "__syncthreads(); // the step's _Vs in place");
  attn_emit_pipe_pv_math(ae);
  cg_line(E, "__syncthreads(); // _Vs read by every warp");
  cg_open_block(E, "if (_cn < _C)");
  copy_values(ae, "_cn");
  cg_close_block(E);
  cg_line(E, "kbc_cp_commit();");
  cg_line(E, "_c0 = _cn;");
  cg_close_block(E);
  cg_line(E, "kbc_cp_wait<0>();");
  attn_emit_finish(ae);
  store_parts(ae);
  cg_close_block(E);
}
