/* gemm_plan.c — the tiled contraction's plan: every decision of the
 * kernel, made before any of it is printed.
 *
 * Before: a GEMM group (cg_group_family found the statement's tiling,
 * gemm_tile, and kept it in the tiled family).  After cg_plan_gemm(): the
 * plan (cg_gemm_plan, gemm_impl.h) — per operand (A, B): whether
 * consecutive threads load along k or along m / n (from its loads' unit
 * strides), whether it is one plain load addressed as row offset + k
 * offset (its flat offset splits into a part without K indices plus one
 * with only K indices, checked symbolically) or evaluated per element,
 * whether its rows are addressed through the flat row (cg_collapse), and
 * which tile element each of its load slots covers; whether K is one flat
 * coordinate; the k slots and the shared k tables; split-K; the epilogue
 * (through shared memory or direct, flat M / N, vector stores); whether
 * the K loop is the vector one (plan_vec: 16-byte chunks, and at known
 * sizes the tile chosen again; under KBC_GEMM_GATHER a convolution's input
 * gathered through a whole-K table on wgmma, plan_gather) — and the
 * kernel's launch fields. */
#include <math.h>
#include <string.h>

#include "gemm_impl.h"
#include "ir/subst.h"

/* ---- operands ------------------------------------------------------------ */

/* Unit-stride runs of the loads in e along index kid and index xid:
 * *run_k (*run_x) grows by the estimated extent of kid (xid) for each load
 * whose flat offset steps by +-1 with it. */
static void stride_runs(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int kid, int xid, double *run_k,
                        double *run_x) {
  if (e->op == IR_OP_LOAD) {
    if (ir_load_unit_step(a, s, e, kid)) *run_k += ir_estimate(s->index[kid].extent);
    if (ir_load_unit_step(a, s, e, xid)) *run_x += ir_estimate(s->index[xid].extent);
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) stride_runs(a, s, e->arg[i], kid, xid, run_k, run_x);
}

/* Whether e is one load whose flat offset is (terms without K indices) +
 * (terms with only K indices); if so, the two parts.  A padded load's
 * offset splits the same way (a convolution's x?[n, c, i + ky - 1, ...]):
 * its reads outside the tensor are cut by a test, not by the offset. */
static int split_offset(kbc_arena *a, const ir_stmt *s, const cg_contraction *c, const ir_expr *e, sym **row,
                        sym **kpart) {
  if (e->op != IR_OP_LOAD) return 0;
  sym *off = ir_flat_offset(a, e->u.load.tensor, e->u.load.idx);
  if (!off) return 0;
  sym *zero = sym_const(a, 0);
  unsigned char *is_k = KBC_NEW_ARRAY(a, unsigned char, s->n_index + 1);
  for (int i = 0; i < c->n_k; i++) is_k[c->k[i]] = 1;
  sym *r = off, *q = off;
  for (int id = 0; id < s->n_index; id++) {
    if (is_k[id]) r = sym_subst_index(a, r, id, zero);
    else q = sym_subst_index(a, q, id, zero);
  }
  sym *z = r; /* the offset at every index 0 */
  for (int id = 0; id < s->n_index; id++) z = sym_subst_index(a, z, id, zero);
  sym *kq = sym_sub(a, q, z);
  if (!r || !kq || !sym_equal(off, sym_add(a, r, kq))) return 0;
  *row = r;
  *kpart = kq;
  return 1;
}

int gemm_mentions_any(const ir_expr *e, const int *ids, int n) {
  for (int i = 0; i < n; i++)
    if (ir_expr_mentions_index(e, ids[i])) return 1;
  return 0;
}

/* The loads of e (at most max) into ld; their count, or -1 for more. */
static int loads_of(const ir_expr *e, const ir_expr **ld, int n, int max) {
  if (n < 0) return n;
  if (e->op == IR_OP_LOAD) return n < max ? (ld[n] = e, n + 1) : -1;
  for (int i = 0; i < ir_op_info[e->op].arity && n >= 0; i++) n = loads_of(e->arg[i], ld, n, max);
  return n;
}

enum { XFORM_MAX_LOADS = 8, XFORM_MAX_NODES = 64 };

/* The load A factor e is an elementwise function of (gemm_operand.xform):
 * its one load that mentions both M and K indices, unpadded, whose tensor
 * no other load of e reads; every other load mentions M (and batch) or K
 * (and batch) indices, not both; no reduction; at most XFORM_MAX_NODES
 * nodes.  NULL where e is a load or not such a function. */
static const ir_expr *xform_load(const cg_contraction *c, const ir_expr *e) {
  if (e->op == IR_OP_LOAD || ir_expr_has_reduce(e) || ir_expr_size(e) > XFORM_MAX_NODES) return NULL;
  const ir_expr *ld[XFORM_MAX_LOADS], *main = NULL;
  int n = loads_of(e, ld, 0, XFORM_MAX_LOADS);
  if (n < 1) return NULL;
  for (int i = 0; i < n; i++) {
    int m = gemm_mentions_any(ld[i], c->m, c->n_m), k = gemm_mentions_any(ld[i], c->k, c->n_k);
    if (!(m && k)) continue;
    if (main) return NULL;
    main = ld[i];
  }
  if (!main || main->u.load.padded) return NULL;
  for (int i = 0; i < n; i++)
    if (ld[i] != main && ld[i]->u.load.tensor == main->u.load.tensor) return NULL;
  return main;
}

static void plan_operand(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan, gemm_operand *o, char tag) {
  const ir_stmt *s = plan->s;
  const cg_contraction *c = &plan->tiling.c;
  int is_a = tag == 'a';
  o->tag = tag;
  o->e = is_a ? c->a : c->b;
  o->xform = NULL;
  const ir_expr *main = is_a && t->opt.gemm_xform ? xform_load(c, o->e) : NULL;
  if (main && t->opt.gemm_xform == 1) { /* planned as its load; kept only on wgmma with A from registers
                                           (cg_plan_gemm) */
    o->xform = o->e;
    o->e = main;
  }
  o->n_x = is_a ? c->n_m : c->n_n;
  o->x = is_a ? c->m : c->n;
  o->bx = is_a ? plan->tiling.cfg.bm : plan->tiling.cfg.bn;
  o->X = is_a ? "_M" : "_N";
  o->x0 = is_a ? "_m0" : "_n0";
  double run_k = 0, run_x = 0;
  /* (evaluated per element where it fell back: loaded along its load's
   * contiguous index, not its terms') */
  stride_runs(a, s, main ? main : o->e, c->k[c->n_k - 1], o->x[o->n_x - 1], &run_k, &run_x);
  o->kmajor = run_k >= run_x;
  o->fast = split_offset(a, s, c, o->e, &o->row_off, &o->k_off);
  o->guarded = o->fast && o->e->u.load.padded;
  /* a guarded operand's test reads the row digits: rows decoded */
  sym *rows = o->fast && !o->guarded && o->n_x > 1 ? cg_collapse(a, s, o->row_off, o->x, o->n_x) : NULL;
  o->flat_rows = rows != NULL;
  if (rows) o->row_off = rows;
}

/* ---- load slots ---------------------------------------------------------- */

/* The k slot of local k expression expr (a new one if none has it). */
static int kslot(cg_gemm_plan *plan, const char *expr) {
  for (int i = 0; i < plan->n_kslots; i++)
    if (!strcmp(plan->kslot_expr[i], expr)) return i;
  plan->kslot_expr[plan->n_kslots] = expr;
  return plan->n_kslots++;
}

/* The local x (*xl) and k (*kl) of load slot j of o, which takes kp
 * consecutive k per row when k-major. */
static void slot_coords(kbc_arena *a, const gemm_operand *o, int bk, int kp, int j, const char **xl,
                        const char **kl) {
  int T = GEMM_THREADS, bx = o->bx;
  const char *e = j ? kbc_arena_printf(a, "(_tid + %d)", j * T) : "_tid";
  if (o->kmajor && kp > 1) {
    /* kp consecutive k of each of slots / kp rows */
    int tr = bk / kp, r = j / kp, q = j % kp;
    *kl = q ? kbc_arena_printf(a, "_tid %% %d * %d + %d", tr, kp, q) : kbc_arena_printf(a, "_tid %% %d * %d", tr, kp);
    *xl = r ? kbc_arena_printf(a, "_tid / %d + %d", tr, r * T / tr) : kbc_arena_printf(a, "_tid / %d", tr);
  } else if (o->kmajor) {
    *kl = T % bk == 0 ? kbc_arena_printf(a, "_tid %% %d", bk) : kbc_arena_printf(a, "%s %% %d", e, bk);
    *xl = T % bk == 0 ? (j ? kbc_arena_printf(a, "_tid / %d + %d", bk, j * T / bk) : kbc_arena_printf(a, "_tid / %d", bk))
                      : kbc_arena_printf(a, "%s / %d", e, bk);
  } else if (T == bx) {
    *xl = "_tid";
    *kl = kbc_arena_printf(a, "%d", j);
  } else {
    *xl = T % bx == 0 ? kbc_arena_printf(a, "_tid %% %d", bx) : kbc_arena_printf(a, "%s %% %d", e, bx);
    *kl = T % bx == 0 ? (j ? kbc_arena_printf(a, "_tid / %d + %d", bx, j * T / bx) : kbc_arena_printf(a, "_tid / %d", bx))
                      : kbc_arena_printf(a, "%s / %d", e, bx);
  }
}

/* Which element of the tile each load slot of o covers.  An operand
 * whose slots have several k coordinates per thread and K several indices
 * reads its k offsets (fast path) or k digits (generic) from a per-k-tile
 * table in shared memory instead of decoding them itself. */
static void plan_loads(kbc_arena *a, cg_gemm_plan *plan, gemm_operand *o) {
  int T = GEMM_THREADS, bk = plan->tiling.cfg.bk, total = o->bx * bk;
  o->slots = (total + T - 1) / T;
  o->partial = total % T != 0;
  o->n_rows = 0;
  const char *kls[GEMM_MAX_SLOTS];
  int n_kls = 0;
  /* k-major: at most 4 rows per thread (each costs a 64-bit offset and a
   * flag for the whole K loop), so each thread takes kp consecutive k */
  int kp = 1;
  while (o->kmajor && !o->partial && o->slots / kp > 4 && kp < 4 && o->slots % (2 * kp) == 0 && bk % (2 * kp) == 0)
    kp *= 2;
  for (int j = 0; j < o->slots; j++) {
    const char *xl, *kl;
    slot_coords(a, o, bk, kp, j, &xl, &kl);
    o->xl[j] = xl;
    o->kl[j] = kl;
    int r;
    for (r = 0; r < o->n_rows; r++)
      if (!strcmp(o->row_expr[r], xl)) break;
    if (r == o->n_rows) o->row_expr[o->n_rows++] = xl;
    o->row_of[j] = r;
    int q;
    for (q = 0; q < n_kls; q++)
      if (!strcmp(kls[q], kl)) break;
    if (q == n_kls) kls[n_kls++] = kl;
  }
  o->table = plan->tiling.c.n_k > 1 && !plan->kflat && n_kls > 1;
  if (o->table) {
    plan->table_digits |= !o->fast || o->guarded;
    plan->builder = kslot(plan, kbc_arena_printf(a, "_tid %% %d", bk));
  }
  for (int j = 0; j < o->slots; j++) o->kslot_of[j] = o->table ? -1 : kslot(plan, o->kl[j]);
}

/* K is one flat coordinate when both operands' k offsets depend on its
 * indices only through their flattening (p[.., ky, kx] with K = ky*kx) —
 * unless the thread's loads then cover many distinct k: each flat load
 * computes its own offset, where the k table computes each k-tile's
 * offsets once for the block.  Measured on the H200 (SAM-HQ 64x64 b4):
 * flat K took o and dq (8 distinct k per thread) from 3.6 / 4.4 ms to
 * 3.1 / 2.9 ms, but dk and dv (20: m-contiguous loads of all 16 k of a
 * row, plus B's) from 3.1 / 3.3 ms to 3.9 / 3.6 ms. */
enum { GEMM_KFLAT_MAX_SLOTS = 16 };
static void plan_operand_loads(kbc_arena *a, cg_gemm_plan *plan) {
  const cg_contraction *c = &plan->tiling.c;
  sym *ka = NULL, *kb = NULL;
  /* (a guarded operand's test reads the k digits: K not flat) */
  if (c->n_k > 1 && plan->op[0].fast && plan->op[1].fast && !plan->op[0].guarded && !plan->op[1].guarded) {
    ka = cg_collapse(a, plan->s, plan->op[0].k_off, c->k, c->n_k);
    kb = cg_collapse(a, plan->s, plan->op[1].k_off, c->k, c->n_k);
  }
  if (ka && kb) {
    cg_gemm_plan flat = *plan;
    flat.kflat = 1;
    flat.op[0].k_off = ka;
    flat.op[1].k_off = kb;
    plan_loads(a, &flat, &flat.op[0]);
    plan_loads(a, &flat, &flat.op[1]);
    if (flat.n_kslots <= GEMM_KFLAT_MAX_SLOTS) {
      *plan = flat;
      return;
    }
  }
  plan_loads(a, plan, &plan->op[0]);
  plan_loads(a, plan, &plan->op[1]);
}

/* Bytes of static shared memory besides the tiles: the k tables, of
 * `entries` each (two k-tiles' of the per-k-tile tables). */
static int table_bytes_of(const cg_gemm_plan *plan, int64_t entries) {
  int e = gemm_ktab_int(plan) ? 4 : 8;
  int64_t b = plan->table_digits ? plan->tiling.c.n_k * entries * e : 0;
  for (int w = 0; w < 2; w++)
    if (plan->op[w].table && plan->op[w].fast) b += entries * e;
  return b > INT32_MAX ? INT32_MAX : (int)b;
}

static int table_bytes(const cg_gemm_plan *plan) {
  return table_bytes_of(plan, plan->ktab ? plan->ktab : 2 * plan->tiling.cfg.bk);
}

int gemm_ktab_bytes(const cg_gemm_plan *plan) { return plan->ktab ? table_bytes(plan) : 0; }

int gemm_ktab_int(const cg_gemm_plan *plan) { return plan->op[0].gather || plan->op[1].gather; }

/* Whole-K tables (plan->ktab) where K is known and they take at most
 * GEMM_KTAB_BYTES, beside the register-staged loop's tiles within the
 * static shared memory: an implicit-GEMM convolution's offsets (and
 * digits, for a padded operand's test) computed once per block, not per
 * k-tile (the builder's digit carries and a table write a k-tile ahead),
 * which also frees the K loop for cp.async stages.  The builder's k slot
 * goes where no load takes it. */
enum { GEMM_KTAB_BYTES = 16 * 1024 };
/* A gathered operand's tables beside wgmma's stages (plan_gather): static
 * shared memory, the stages' count leaving room for them. */
enum { GEMM_GATHER_TAB_BYTES = 32 * 1024 };
static void plan_ktab(cg_gemm_plan *plan) {
  int64_t K;
  if (plan->builder < 0 || !sym_is_const(plan->tiling.K, &K)) return;
  int bk = plan->tiling.cfg.bk;
  /* whole k-tiles, and one more: the register-staged loop's loads of the
   * k-tile past the end read the table before their test fails */
  int64_t kp = (K + bk - 1) / bk * bk + bk;
  int bytes = table_bytes_of(plan, kp);
  if (bytes > GEMM_KTAB_BYTES || bytes + gemm_smem_bytes(&plan->tiling.cfg) > GEMM_SMEM_STATIC) return;
  plan->ktab = (int)kp;
  int used = 0;
  for (int w = 0; w < 2; w++)
    for (int j = 0; j < plan->op[w].slots; j++) used |= plan->op[w].kslot_of[j] == plan->builder;
  if (!used && plan->builder == plan->n_kslots - 1) plan->n_kslots--;
  plan->builder = -1;
}

/* ---- epilogue ------------------------------------------------------------ */

/* Whether e, outside the main sum, loads a tensor at an address that
 * moves with both a row (M) and a column (N) index: an operand read once
 * per output element (a residual, SAM-HQ's rel_w[b, n, y, x, kx]), which
 * the thread tiles read 8 rows a warp instruction. */
static int reads_per_element(const cg_contraction *c, const ir_expr *e) {
  if (e == c->reduce) return 0;
  if (e->op == IR_OP_LOAD) {
    int rows = 0, cols = 0;
    for (int i = 0; i < c->n_m; i++) rows |= ir_expr_mentions_index(e, c->m[i]);
    for (int i = 0; i < c->n_n; i++) cols |= ir_expr_mentions_index(e, c->n[i]);
    if (rows && cols) return 1;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (reads_per_element(c, e->arg[i])) return 1;
  return 0;
}

/* Whether the epilogue goes through shared memory: when the output is
 * contiguous along m (a convolution's spatial positions) rather than n,
 * the thread tiles' stores would hit a separate sector per lane; if so,
 * its passes over groups of columns.  Along n (ep->along_n,
 * KBC_GEMM_STAGE_N): an output contiguous along n whose epilogue reads an
 * operand per element — the thread tiles' loads touch 8 rows a warp
 * instruction (8 L1 wavefronts), a thread a column reads 32 consecutive
 * floats (one); 2 stages every such output. */
static void plan_staging(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  const cg_contraction *c = &plan->tiling.c;
  const gemm_cfg *f = &plan->tiling.cfg;
  gemm_epilogue *ep = &plan->epilogue;
  if (plan->tail) { /* the tail reads whole rows of the tile: all columns at once */
    ep->staged = 1, ep->passes = 1, ep->nc = f->bn;
    return;
  }
  ep->staged = ep->along_n = 0;
  double run_m = 0, run_n = 0;
  const ir_stmt *st = gemm_stored_stmt(plan); /* (with a fold, t's output along t's indices) */
  ir_expr probe = cg_store_as_load(st);
  stride_runs(a, st, &probe, gemm_stored_index(plan, c->m[c->n_m - 1]), gemm_stored_index(plan, c->n[c->n_n - 1]),
              &run_m, &run_n);
  int along_n = run_n > 0 && t->opt.gemm_stage_n && !plan->win && !plan->fold &&
                (t->opt.gemm_stage_n == 2 || reads_per_element(c, plan->s->rhs));
  if (!along_n && (run_m <= 0 || run_n > 0 || GEMM_THREADS % f->bm)) return;
  /* the K loop's tiles: static (<= 48 KB), or the vector loop's dynamic stages */
  /* (the window loop: its plan checks the epilogue's tile again, gemm_win.c) */
  int tiles = plan->win   ? 0
              : plan->vec ? (plan->ring ? plan->ring : plan->stages) * gemm_plan_stage_bytes(plan)
                          : gemm_smem_bytes(f);
  int extra = plan->win ? 0 : table_bytes(plan);
  int limit = plan->vec ? t->smem_per_block : GEMM_SMEM_STATIC;
  for (int passes = 1; passes <= (f->mma ? f->ni : f->tn); passes++) {
    if (f->mma) {
      /* all columns at once, else a pass per n8 tile of the warps */
      if (passes != 1 && passes != f->ni) continue;
      ep->passes = passes;
      ep->nc = passes == 1 ? f->bn : f->wn * 8;
    } else {
      /* 4-wide column chunks: a pass per chunk; contiguous thread columns:
       * the smallest split of tn that fits */
      if (f->vn == 4 ? passes != f->tn / 4 : f->tn % passes) continue;
      ep->passes = passes;
      ep->nc = f->bn / passes;
    }
    if (along_n && GEMM_THREADS % ep->nc) continue; /* a thread a column: the block's threads over whole groups */
    int cs = f->bm * (ep->nc + 1) * 4;
    if ((tiles > cs ? tiles : cs) + extra <= limit) {
      ep->staged = 1;
      ep->along_n = along_n;
      return;
    }
    if (!f->mma && f->vn == 4) return;
  }
}

/* Whether every address of the epilogue (its loads outside the main sum,
 * and the output) depends on the indices ids only through their
 * flattening, and no value uses them: then they need no decoding. */
static int collapses(kbc_arena *a, const cg_gemm_plan *plan, const ir_expr *e, const int *ids, int n) {
  if (e == plan->tiling.c.reduce) return 1;
  int mentions = 0;
  if (e->op == IR_OP_LOAD || e->op == IR_OP_INDEX)
    for (int i = 0; i < n; i++) mentions |= ir_expr_mentions_index(e, ids[i]);
  if (e->op == IR_OP_INDEX) return !mentions;
  if (e->op == IR_OP_LOAD)
    return !mentions ||
           (!e->u.load.padded && cg_collapse(a, plan->s, ir_flat_offset(a, e->u.load.tensor, e->u.load.idx), ids, n));
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!collapses(a, plan, e->arg[i], ids, n)) return 0;
  return 1;
}

static int epilogue_collapses(kbc_arena *a, const cg_gemm_plan *plan, const int *ids, int n) {
  const ir_stmt *s = plan->s;
  return collapses(a, plan, s->rhs, ids, n) && cg_collapse(a, s, ir_flat_offset(a, s->out, s->lhs), ids, n);
}

/* Library calls (and divisions) in e outside the reduction r. */
static int calls(const ir_expr *e, const ir_expr *r) {
  if (e == r) return 0;
  int n = 0;
  switch (e->op) {
  case IR_OP_EXP: case IR_OP_LOG: case IR_OP_TANH: case IR_OP_ERF: case IR_OP_SIGMOID: case IR_OP_GELU:
  case IR_OP_LOG1P: case IR_OP_EXPM1: case IR_OP_SOFTPLUS: case IR_OP_SILU: case IR_OP_POW: case IR_OP_DIV: n = 1; break;
  default: break;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += calls(e->arg[i], r);
  return n;
}

enum { GEMM_PARK_CALLS = 64 }; /* library calls per thread from which the epilogue is rolled */

/* The epilogue's groups of a thread's columns sharing their outer digits
 * (gemm_epilogue.group), the innermost digit's extent being E (0: N has
 * one digit).  The tile's and the warp's origins along n are multiples of
 * the span of the thread's columns.  mma (and wgmma): the warp's n8 tile t
 * gives the thread columns 8t + 2 t4 and one more, so g tiles from a
 * multiple of g lie in an aligned window of 8g columns; FFMA: tn
 * consecutive columns (d of them from a multiple of d aligned alike), or
 * runs of 4 (interleaved).  At least 2, whole runs of the vector store
 * (whose columns are consecutive). */
static int shared_group(const gemm_cfg *f, const gemm_epilogue *ep, int64_t E) {
  int n_cols = f->mma ? 2 * f->ni : f->tn, best = 0;
  if (E == 0) best = n_cols; /* no outer digit: one group */
  else if (f->mma) {
    for (int g = 1; g <= f->ni; g++)
      if (f->ni % g == 0 && E % (8 * g) == 0) best = 2 * g;
    if (!best && E % 2 == 0) best = 2;
  } else if (f->vn == 4) {
    best = E % 4 == 0 ? 4 : 0;
  } else {
    for (int d = 1; d <= f->tn; d++)
      if (f->tn % d == 0 && E % d == 0) best = d;
  }
  return best >= 2 && best % ep->vec == 0 ? best : 0;
}

/* Whether the groups would change anything in e, the epilogue outside
 * the main sum, where() branches and padded loads: a load that the
 * innermost column index leaves alone but a row or another column index
 * moves (read once a row and group instead of per element), or one
 * contiguous along that index (read a run at a time, opt.gemm_ep_vec). */
static int group_gains(kbc_arena *a, const cg_target *t, const cg_gemm_plan *plan, const ir_expr *e) {
  const cg_contraction *c = &plan->tiling.c;
  int inner = c->n[c->n_n - 1];
  if (e == c->reduce || e->op == IR_OP_WHERE || e->op == IR_OP_REDUCE) return 0;
  if (e->op == IR_OP_LOAD) {
    if (e->u.load.padded) return 0;
    if (ir_expr_mentions_index(e, inner))
      return plan->epilogue.vec > 1 && t->opt.gemm_ep_vec &&
             cg_offset_contiguous(a, plan->s, ir_flat_offset(a, e->u.load.tensor, e->u.load.idx), &inner, 1);
    int moves = 0;
    for (int i = 0; i < c->n_m; i++) moves |= ir_expr_mentions_index(e, c->m[i]);
    for (int i = 0; i < c->n_n - 1; i++) moves |= ir_expr_mentions_index(e, c->n[i]);
    return moves;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (group_gains(a, t, plan, e->arg[i])) return 1;
  return 0;
}

/* The direct epilogue: row and column digits decoded only where some
 * address needs them (flat spaces: offsets through _m / _n); a thread's
 * columns in runs (4 for FFMA tiles of 4-wide chunks, 2 for mma
 * fragments, else its tn contiguous columns); vector stores where the
 * output's flat offset steps by exactly one along the flattened N indices
 * (a thread's consecutive columns are consecutive floats) and the sum is
 * not split; the column groups (shared_group, where group_gains; their
 * period, opt.gemm_ep_periodic). */
static void plan_direct(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  const cg_contraction *c = &plan->tiling.c;
  const gemm_cfg *f = &plan->tiling.cfg;
  const ir_stmt *s = plan->s;
  gemm_epilogue *ep = &plan->epilogue;
  /* (a fold stores t's output: its indices' digits, not flat spaces) */
  ep->mflat = !plan->fold && c->n_m > 1 && epilogue_collapses(a, plan, c->m, c->n_m);
  ep->nflat = !plan->fold && c->n_n > 1 && epilogue_collapses(a, plan, c->n, c->n_n);
  ep->run = f->mma ? 2 : f->vn == 4 ? 4 : f->tn;
  ep->vec = f->mma ? 2 : f->vn == 4 ? 4 : 1;
  const ir_stmt *st = gemm_stored_stmt(plan);
  int nids[CG_MAX_OUTER];
  for (int i = 0; i < c->n_n; i++) nids[i] = gemm_stored_index(plan, c->n[i]);
  if (plan->split || !cg_offset_contiguous(a, st, ir_flat_offset(a, st->out, st->lhs), nids, c->n_n)) ep->vec = 1;
  ep->park = plan->wgmma && calls(s->rhs, c->reduce) * (f->mi * 2) * (f->ni * 2) >= GEMM_PARK_CALLS;
  int64_t inner = 1;
  if (!ep->nflat && !ep->park && !plan->fold && (c->n_n == 1 || sym_is_const(s->index[c->n[c->n_n - 1]].extent, &inner)) &&
      group_gains(a, t, plan, s->rhs))
    ep->group = shared_group(f, ep, c->n_n == 1 ? 0 : inner);
  /* the tile columns a group spans: a warp's n8 tiles give a thread 2 of 8 */
  int window = f->mma ? 4 * ep->group : ep->group, n_cols = f->mma ? 2 * f->ni : f->tn;
  ep->periodic = t->opt.gemm_ep_periodic && ep->group && c->n_n > 1 && n_cols > ep->group && window == inner;
}

/* ---- the K loop ---------------------------------------------------------- */

/* Stages of the K loop (opt.gemm_stages, default GEMM_STAGES_DEFAULT):
 * cp.async stages where the GPU has them (sm_80+) and both operands are
 * plain loads (row offset + k offset, padded ones under their test) with
 * no per-k-tile k tables (whole-K ones, plan->ktab, are read-only) —
 * each load slot one 4-byte copy straight into shared memory, zero-filled
 * outside M, N, K; else the register-staged double buffer. */
enum { GEMM_STAGES_DEFAULT = 2 };
static int plan_stages(const cg_target *t, const cg_gemm_plan *plan) {
  int want = t->opt.gemm_stages ? t->opt.gemm_stages : GEMM_STAGES_DEFAULT;
  if (want < 3 || t->sm < 80 || plan->builder >= 0) return 2;
  for (int w = 0; w < 2; w++)
    if (!plan->op[w].fast || (plan->op[w].table && !plan->ktab)) return 2;
  return want;
}

/* The vector K loop (gemm_vec.c) where the GPU has cp.async, the tile is
 * on tensor cores and both operands are copied in 16-byte chunks: k-tiles
 * of 32 (where K is not better cut by 16), 3 stages (opt.gemm_stages asks
 * for more), fewer k per tile where the stages would not fit.  On the H200
 * (a stand-alone kernel of this loop, 2026-12-03, 1024 x 8192 x 8192 and
 * 4096^3 at 3xTF32, 64 x 128 tiles of 32 x 32 warp tiles): BK 32 in 3
 * stages 2,323 / 2,349 us, BK 16 in 4 stages 2,465 / 2,441, 4 stages of 32
 * 2,362 / 2,325; cuBLAS's FFMA SGEMM 2,699 / 2,723.  In kbc (KernelBench's
 * L2/12 at 1024 x 8192 x 8192): the staged 64 x 128 tile 2,358 us, the
 * tile chosen again at known sizes (128 x 128, one block per SM) 2,230. */
/* A thread's chunks per k-tile at most GEMM_VEC_MAX_CHUNKS (each holds a
 * 64-bit row offset for the whole K loop): SAM-HQ's 64 x 256 tile at 32-k
 * tiles (10 chunks) spilled 20 bytes at 255 registers. */
enum { GEMM_VEC_STAGES = 3, GEMM_VEC_MAX_CHUNKS = 8 };
static int sizes_known(const gemm_tiling *tl) {
  return sym_is_const(tl->M, NULL) && sym_is_const(tl->N, NULL) && sym_is_const(tl->K, NULL) && sym_is_const(tl->B, NULL);
}

/* A gathered operand for wgmma's transposed copies (opt.gemm_gather; the
 * vector loop then requires wgmma to take it so): both operands single
 * loads addressed as row offset + k offset, K of several indices
 * and known; one operand's k offset collapses to the flat k and it is
 * k-major (kflat: a convolution's weights), the other's does not (the input, x[n, ci, i +
 * ki, j + kj]: rows (n, i, j) decoded per tile, each k's offset ci H W +
 * ki W + kj from the whole-K table, written once per block; copied a float
 * at a time, whichever way it runs: a strided convolution's steps along
 * neither; padded, x?[...], each element tested over its row's digits
 * and its k's, from a second table).  Where it applies the operands and
 * plan->ktab are set. */
static int plan_gather(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  const cg_contraction *c = &plan->tiling.c;
  int64_t K;
  if (!t->opt.gemm_gather || !t->arch_a || !t->opt.gemm_wgmma || plan->kflat || c->n_k < 2 || plan->fold ||
      plan->tail || !sym_is_const(plan->tiling.K, &K))
    return 0;
  int gathered = -1;
  sym *flat[2] = {NULL, NULL};
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    if (!o->fast || o->e->op != IR_OP_LOAD) return 0;
    flat[w] = o->guarded ? NULL : cg_collapse(a, plan->s, o->k_off, c->k, c->n_k);
    if ((!flat[w] && gathered >= 0) || (flat[w] && !o->kmajor)) return 0; /* the flat one k-major */
    if (!flat[w]) gathered = w;
  }
  int64_t kp = (K + 31) / 32 * 32 + 32, numel = 1; /* whole k-tiles of wgmma's 32, and one more */
  if (gathered < 0) return 0;
  const ir_tensor *T = plan->op[gathered].e->u.load.tensor;
  for (int d = 0; d < T->rank && numel < ((int64_t)1 << 31); d++) {
    int64_t e;
    numel = sym_is_const(T->shape[d], &e) ? numel * e : ((int64_t)1 << 31);
  }
  int guarded = plan->op[gathered].guarded;
  /* Measured on the H100 (2026-12-06, against the mma.sync loop, bench/
   * ab_cases_gather.txt): L1/55 0.53x (fp32) and 0.62x (tf32), L1/76 0.55x,
   * L1/67 0.76x and 0.79x, L1/63 0.64x; padded, L1/80 0.58x at tf32 but
   * 1.13x at fp32 (3xTF32, its element tests and two tables beside three
   * stages): a padded operand at 3xTF32 stays on mma.sync by default. */
  if (guarded && plan->tiling.split3 && t->opt.gemm_gather < 2) return 0;
  /* int entries (offsets inside the tensor), the digits too where its test reads them */
  if (numel >= ((int64_t)1 << 31) || kp * 4 * (1 + (guarded ? c->n_k : 0)) > GEMM_GATHER_TAB_BYTES) return 0;
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &plan->op[w];
    o->gather = w == gathered;
    o->table = w == gathered;
    o->kflat = w != gathered;
    if (o->kflat) o->k_off = flat[w];
  }
  plan->ktab = (int)kp; /* (int entries: gemm_ktab_int) */
  plan->table_digits = guarded;
  return 1;
}

static int plan_vec_try(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan);

/* The vector K loop where it applies (plan_vec_try), a gathered operand's
 * wgmma plan first (plan_gather); plan left as it was where neither does. */
static void plan_vec(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  if (!t->opt.gemm_vec || !plan->tiling.mma || t->sm < 80) return;
  cg_gemm_plan before = *plan;
  if (plan_gather(a, t, plan) && plan_vec_try(a, t, plan)) return;
  *plan = before;
  plan_vec_try(a, t, plan);
}

static int plan_vec_try(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  /* a known misaligned operand (most chunks would go a float at a time)
   * keeps the staged loop, unless wgmma reads it from a pack (gemm_pack.c:
   * rows padded to 16 bytes) or copies it transposed anyway */
  int misaligned = 0, wg = t->arch_a && t->opt.gemm_wgmma;
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &plan->op[w];
    int ok = gemm_vec_operand_ok(a, plan, o);
    if (ok == 2 && wg && (t->opt.gemm_pack || (!o->kmajor && t->opt.gemm_wgmma_t))) misaligned = o->misaligned = 1;
    else if (ok != 1 && !(ok == 0 && o->gather)) return 0;
  }
  cg_gemm_plan v = *plan;
  gemm_cfg *f = &v.tiling.cfg;
  /* Where the sizes are known (constants, a specialized binding), the tile
   * again without the staging registers' limit; with var axes the 64-bit
   * index arithmetic leaves no room for it (ptxas: 128 x 128 3xTF32 tiles
   * spilled up to 612 bytes at 255 registers), nor for 32-k tiles' chunk
   * offsets. */
  int known = sizes_known(&v.tiling);
  if (known) {
    if (!gemm_choose_cfg(t, &v.tiling.shape, v.tiling.split3 ? 2 : 1, 0, f)) return 0;
    gemm_count_tiles(a, &v.tiling);
    v.op[0].bx = f->bm;
    v.op[1].bx = f->bn;
  }
  double k = v.tiling.shape.k;
  int bk = known && k >= 64 && ceil(k / 32) * 32 <= ceil(k / 16) * 16 ? 32 : 16;
  int stages = t->opt.gemm_stages >= 3 ? t->opt.gemm_stages : GEMM_VEC_STAGES;
  v.vec = 1;
  v.stages = stages;
  for (; bk >= 8; bk /= 2) {
    f->bk = bk;
    for (int w = 0; w < 2; w++) gemm_vec_plan(a, &v.op[w], bk);
    int chunks = v.op[0].chunks + v.op[1].chunks;
    if ((bk == 8 || chunks <= GEMM_VEC_MAX_CHUNKS) && stages * gemm_plan_stage_bytes(&v) <= t->smem_per_block) break;
  }
  if (bk < 8) return 0;
  /* sm_90a, both operands k-major: wgmma (gemm_wgmma.c) — not under a fold,
   * whose running values would double its 64 to 128 accumulators a thread,
   * nor with a tail (its staged epilogue is mma.sync's) */
  if (!v.fold && !v.tail) gemm_wgmma_plan(a, t, &v);
  for (int w = 0; w < 2 && misaligned; w++)
    if (!v.wgmma || (v.op[w].misaligned && !v.op[w].pack && !v.op[w].tr)) return 0;
  for (int w = 0; w < 2; w++) /* a gathered operand only on wgmma, copied transposed */
    if (v.op[w].gather && (!v.wgmma || !v.op[w].tr)) return 0;
  /* mma.sync at 3xTF32, both operands k-major (ldmatrix fragments): the
   * stages split once as they land, where their twin fits */
  if (!v.wgmma && v.tiling.split3 && t->opt.gemm_low_stage && v.op[0].kmajor && v.op[1].kmajor && !v.op[0].tr &&
      !v.op[1].tr) {
    v.low_stage = 1;
    if (v.stages * gemm_plan_stage_bytes(&v) > t->smem_per_block) v.low_stage = 0;
  }
  v.n_kslots = 0; /* k from the k-tile base: no k slots, tables or carries */
  v.builder = -1;
  v.table_digits = v.op[0].gather || v.op[1].gather ? v.table_digits : 0; /* (a guarded gather's test) */
  *plan = v;
  return 1;
}

/* ---- the plan ------------------------------------------------------------ */

/* Both operands single loads addressed as row offset + k offset, neither
 * padded nor through k tables. */
static int plain_operands(const cg_gemm_plan *plan) {
  for (int w = 0; w < 2; w++)
    if (!plan->op[w].fast || plan->op[w].guarded || plan->op[w].table) return 0;
  return 1;
}

/* The tiling for target t and the operands' load plans. */
static int plan_tiles_and_loads(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan) {
  if (!gemm_tile_fold(a, t, plan->s, plan->fold, plan->tail ? (int)plan->tail->ncol : 0, &plan->tiling) ||
      !plan->tiling.tiles)
    return 0;
  plan->builder = -1;
  plan_operand(a, t, plan, &plan->op[0], 'a');
  plan_operand(a, t, plan, &plan->op[1], 'b');
  plan_operand_loads(a, plan);
  if (t->opt.gemm_ktab) plan_ktab(plan);
  return 1;
}

int gemm_ring(int stages, int64_t K, int bk) {
  int64_t kt = (K + bk - 1) / bk;
  return kt >= stages ? stages : kt > 1 ? (int)kt : 1;
}

static cg_gemm_plan *plan_gemm(cg_ctx *C, const cg_group *g, cg_kernel *k);

/* The plan, where an output-bound product may take a tile of two blocks a
 * multiprocessor (opt.gemm_occ; gemm_wgmma.c, output_bound) but its
 * one-block tile's epilogue reads operands once a period (periodic column
 * groups, opt.gemm_ep_periodic): the one-block tile.  Measured on the H100
 * (session 43, bench/ab.sh against the default before either): SAM-HQ
 * 64x64 b4 periodic alone 0.940x, two blocks alone 0.957x, both (the
 * narrower tile, no period left) 0.955x; on gemm_lowrank 4096 x 64 x 64
 * the other way round (0.855x, 0.811x) — kept to the workload's side. */
static cg_gemm_plan *plan_periodic(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  if (!C->t->opt.gemm_occ || !C->t->opt.gemm_ep_periodic) return plan_gemm(C, g, k);
  const cg_target *t = C->t;
  cg_target one = *t;
  one.opt.gemm_occ = 0;
  cg_kernel before = *k;
  C->t = &one;
  cg_gemm_plan *p = plan_gemm(C, g, k);
  C->t = t;
  if (!p || p->epilogue.periodic) return p;
  *k = before;
  return plan_gemm(C, g, k);
}

/* The plan; an A computed from its load (opt.gemm_xform) kept where wgmma
 * takes A from registers, the only K loop that applies its function to
 * the staged elements, else planned again as the factor it is (each
 * element evaluated where loaded). */
cg_gemm_plan *cg_plan_gemm(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  cg_kernel before = *k;
  cg_gemm_plan *p = plan_periodic(C, g, k);
  if (!p || !p->op[0].xform || (p->wgmma && p->areg && !p->win)) return p;
  const cg_target *t = C->t;
  cg_target plain = *t;
  plain.opt.gemm_xform = 2; /* (the factor evaluated per element, laid out as its load) */
  *k = before;
  C->t = &plain;
  p = plan_periodic(C, g, k);
  C->t = t;
  return p;
}

static cg_gemm_plan *plan_gemm(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  kbc_arena *a = C->a;
  if (g->count != 1 + (g->fold ? 1 : 0) + (g->tail ? g->tail->n : 0)) return NULL;
  cg_gemm_plan *plan = KBC_NEW(a, cg_gemm_plan);
  plan->s = IR_STMT(C->p, g->first);
  plan->fold = g->fold;
  plan->tail = g->tail;
  gemm_tiling *tl = &plan->tiling;
  if (!plan_tiles_and_loads(a, C->t, plan)) return NULL;
  /* 3xTF32 at fp32 for every contraction.  On the H200 (2026-12-02,
   * against the FFMA tile) matrix products were 1.12-1.28x faster, SAM-HQ's
   * contractions up to 1.32x and the MLP 1.26x, but convolutions (padded
   * operands under their test, k tables) mixed: conv2d AlexNet 1.49x
   * slower, conv3d 1.06x, conv_transpose1d 1.07x, dilated 1.02x faster; so
   * they stayed FFMA.  With the k tables, packs and stages since, the
   * suite's 35 convolution problems on the H100 (2026-12-06, fp32, all
   * correct) ran 1.077x faster on 3xTF32 (geomean; L1/80 1.70x, L1/74
   * 1.53x, L1/50 1.46x; worst L1/76 and L2/73 0.95x): KBC_CONV_FFMA=1 keeps
   * gathered and padded operands on FFMA. */
  /* a gathered A read from a box of its tensor (gemm_win.c): on tensor
   * cores, 3xTF32 at fp32 */
  if (g->tail) plan_staging(a, C->t, plan); /* its tile in the window's shared memory from the start */
  int win = gemm_win_plan(a, C->t, plan);
  if (win) plan->ktab = 0; /* (the window loop's own k table: _wak) */
  if (!win && tl->split3 && C->t->opt.fp32_mma < 0 && !plain_operands(plan) && C->t->opt.conv_ffma) {
    cg_target ffma = *C->t;
    ffma.opt.fp32_mma = 0;
    memset(plan, 0, sizeof *plan);
    plan->s = IR_STMT(C->p, g->first);
    plan->fold = g->fold;
    plan->tail = g->tail;
    if (!plan_tiles_and_loads(a, &ffma, plan)) return NULL;
  }
  const gemm_cfg *f = &tl->cfg;
  plan->stages = win ? 2 : plan_stages(C->t, plan);
  if (!win) plan_vec(a, C->t, plan);
  int64_t K_known;
  plan->ring = plan->stages > 2 && sym_is_const(tl->K, &K_known) ? gemm_ring(plan->stages, K_known, f->bk)
                                                                 : plan->stages;
  plan_staging(a, C->t, plan);
  if (win && !gemm_win_plan(a, C->t, plan)) { /* again with the epilogue's tile: the box may no longer fit */
    plan->epilogue.staged = 0;
    if (!gemm_win_plan(a, C->t, plan)) return NULL;
  }
  /* Split-K when K may be long enough to cut and the output tiles may be
   * fewer than two waves of block slots (one where an epilogue follows the
   * sum): the slice count is decided at run time, or here where the sizes
   * are known — no split (and no scratch) where it would be 1. */
  plan->slots = 2 * C->t->sm_count;
  plan->split_below = plan->s->rhs == tl->c.reduce ? 2 * plan->slots : plan->slots;
  plan->split_min = C->t->opt.gemm_split == 2      ? 1
                    : C->t->opt.gemm_split_min > 0 ? C->t->opt.gemm_split_min
                                                   : GEMM_SPLIT_MIN_KTILES;
  int64_t M, N, B, K, items = 0; /* items: tiles x slices, where the sizes are known */
  if (sym_is_const(tl->M, &M) && sym_is_const(tl->N, &N) && sym_is_const(tl->B, &B) && sym_is_const(tl->K, &K)) {
    int64_t out_tiles = (M + f->bm - 1) / f->bm * ((N + f->bn - 1) / f->bn) * B;
    long long splits = gemm_split_count(out_tiles, (K + f->bk - 1) / f->bk, plan->slots, plan->split_below, plan->split_min);
    plan->split = tl->shape.splittable && !win && splits > 1;
    items = out_tiles * splits;
  } else {
    double me = ir_estimate(tl->M), ne = ir_estimate(tl->N), be = ir_estimate(tl->B);
    int known = sym_is_const(tl->M, NULL) && sym_is_const(tl->N, NULL) && sym_is_const(tl->B, NULL);
    plan->split = tl->shape.splittable && !win && !(known && ceil(me / f->bm) * ceil(ne / f->bn) * be >= plan->split_below);
  }
  if (!plan->epilogue.staged) plan_direct(a, C->t, plan);
  /* Two blocks per multiprocessor (__launch_bounds__(256, 2): registers
   * capped at 128) for an FFMA matrix product of one index per M, N and K
   * (batched or not) with plainly addressed operands: one block's barrier
   * and shared-memory stores then overlap the other's math.  On the H200
   * (2026-12-02, KernelBench's matmuls at fp32: 145 registers -> 128 and 16
   * bytes spilled) 1.05-1.31x: 4096^3 3,607 -> 3,200 us, 8205x2949x5921
   * 8,765 -> 6,664 us.  Convolutions (k tables, guarded operands), the
   * flattened spaces and the tensor-core tiles keep theirs (unmeasured;
   * their kernels hold up to 255 registers).  Asked from sm_90 on only
   * (KBC_BLOCKS_SM90 in the text, which is compiled for other GPUs too):
   * at sm_80 ptxas spilled 68 bytes under the cap (the nvcc tests).
   * opt.gemm_min_blocks (KBC_GEMM_MIN_BLOCKS) overrides: 1 no bound, 2..4
   * that many on every GPU. */
  const cg_contraction *ct = &tl->c;
  int plain = (!f->mma || tl->split3) && ct->n_m == 1 && ct->n_n == 1 && ct->n_k == 1 && plain_operands(plan) &&
              !(plan->vec && f->mi * f->ni > 4); /* the vector loop: two blocks for small warp tiles only */
  int mb = C->t->opt.gemm_min_blocks;
  /* an override the wgmma tile cannot take falls back to the plan's own:
   * its accumulators (BN / wgn / 2 a thread) live through the whole K loop,
   * and ptxas fails rather than spill them ("Insufficient registers" at
   * 4096^3 TF32, m64n256 under two blocks: `kbc tune`, 2026-12-04) */
  while (plan->wgmma && mb >= 2 && 65536 / (mb * GEMM_THREADS) < plan->tiling.cfg.bn / plan->wgn / 2 + 48) mb--;
  if (plan->wgmma && mb == 1 && C->t->opt.gemm_min_blocks >= 2) mb = 0;
  /* the vector loop's other tiles: one block at least, said (without it
   * ptxas aimed at more and spilled a few bytes: SAM-HQ's o at 128
   * registers, the MLP's second product at 80); so does a fold, whose
   * running values double the thread's outputs (conv3d's FFMA fold: 128
   * registers and 8 bytes spilled, 165 without the cap).  The window loop
   * (gemm_win.c), measured at two blocks: two from sm_90 on (conv3d's fold
   * at batch 128: 124 / 127 registers, no spill; at sm_80 32 bytes spilled
   * under the cap) */
  plan->min_blocks = mb >= 2    ? mb
                     : mb == 1 ? 0
                     : plan->win                 ? -2
                     : plan->occ >= 2            ? plan->occ
                     : plan->wgmma || plan->fold ? 1
                     : plain                     ? -2
                     : plan->vec                 ? 1
                                                 : 0;

  k->family = CG_FAMILY_GEMM;
  k->first = g->first;
  k->count = g->count; /* (with a fold, t and its tail) */
  k->block = GEMM_THREADS;
  k->smem = 0; /* register-staged: static __shared__, <= 48 KB */
  int cs = plan->epilogue.staged ? f->bm * (plan->epilogue.nc + 1) * 4 : 0; /* the epilogue's tile */
  if (plan->win && plan->win->pipe) { /* two boxes, then the epilogue's tile (under it the boxes' low parts) */
    int twin = (int)plan->win->box * 8;
    k->smem = twin + (plan->win->a_split && twin > cs ? twin : cs);
  } else if (plan->stages > 2) {
    k->smem = plan->ring * gemm_plan_stage_bytes(plan) + (plan->wgmma ? GEMM_WGMMA_ALIGN : 0); /* aligned up */
    if (cs > k->smem) k->smem = cs;
    /* the parked accumulators (a float a thread and accumulator) from the aligned stages on: the
     * stages the ring touches may be fewer */
    int park = plan->epilogue.park ? f->bm * f->bn * 4 + GEMM_WGMMA_ALIGN : 0;
    if (park > k->smem) k->smem = park;
  }
  /* an output-bound tile's two blocks, unless the epilogue's tile took
   * their room */
  if (plan->min_blocks == plan->occ && plan->occ >= 2 &&
      plan->occ * (k->smem + GEMM_SMEM_RESERVED) > C->t->smem_per_block + GEMM_SMEM_RESERVED)
    plan->min_blocks = 1;
  /* split: the items exactly where the sizes are known, else up to
   * GEMM_SPLIT_MAX slices a tile (the capped grid strides over them) */
  k->work = !plan->split ? tl->tiles : items ? sym_const(a, items) : sym_scale(a, tl->tiles, GEMM_SPLIT_MAX);
  k->per_block = 1;
  k->max_blocks = plan->split ? plan->slots : 0;
  k->zero_tensor = -1;
  if (plan->split) { /* the slices' partial sums in scratch (gemm_emit.c, emit_slices_combined) */
    k->scratch_tiles = tl->tiles;
    k->scratch_ktiles = sym_div(a, sym_add(a, tl->K, sym_const(a, f->bk - 1)), f->bk);
    k->scratch_slots = plan->slots;
    k->scratch_below = (int)plan->split_below;
    k->scratch_min = plan->split_min;
    k->scratch_tile = f->bm * f->bn;
  }
  gemm_wgmma_prep(a, C->t, plan, k);
  k->n_tensors = cg_collect_tensors(a, C->p, g->first, k->count, &k->tensors);
  if (plan->fold || plan->tail) { /* s's output stays in the tiles (a fold's); with a tail, the values it keeps in registers too */
    const cg_tail *tail = plan->tail;
    unsigned char *kept = KBC_NEW_ARRAY(a, unsigned char, C->p->tensors.len + 1);
    if (plan->fold) kept[plan->s->out->id] = 1;
    if (tail && !tail->store_t) kept[gemm_stored_stmt(plan)->out->id] = 1;
    for (int j = 0; tail && j < tail->n; j++)
      if (!tail->store[j] && !tail->col_free[j]) kept[tail->u[j]->out->id] = 1;
    int n = 0;
    for (int i = 0; i < k->n_tensors; i++)
      if (!kept[k->tensors[i]]) k->tensors[n++] = k->tensors[i];
    k->n_tensors = n;
  }
  return plan;
}
