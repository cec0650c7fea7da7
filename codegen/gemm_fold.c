/* gemm_fold.c — a contraction and the next statement's reduction of its
 * output, as one kernel (cg_fold, gemm_impl.h).
 *
 * Before: a verified program after the IR passes; statement i a
 * contraction the tiled family takes.  After cg_find_fold(): whether
 * statement i + 1 reduces i's output inside its tiles, and how (the
 * reduction, its load, the indices it reduces, the index maps) — decided
 * from the IR alone:
 *   - s's output is a temporary that no other statement reads or writes,
 *     and t reads it once, inside t's only reduction, at plain indices:
 *     each place of the load holds one index of t, all distinct, so that
 *     t's free indices stand for s's free indices and the reduction's
 *     variables for the indices R it reduces (their extents the same:
 *     every element of s's output is read once);
 *   - R are all M indices of the contraction (or all N: then A and B are
 *     swapped), not all of them (the tile keeps rows);
 *   - it pays (opt.gemm_fold 1) where the fold's tiles, at the estimated
 *     extents and the product's own tile shape, still fill two blocks on
 *     every multiprocessor: the fold trades the output's write and read
 *     for tiles R times as long, as many times fewer.  On the H200
 *     (2026-12-04, conv3d -> min -> softmax at 3 x 24 x 32 x 32): batch
 *     128 (450 tiles of 256 x 24) 531 -> 518 us at fp32, 431 -> 357 at
 *     tf32; batch 16 (57 such tiles: the fold had taken 64 x 32 tiles, 225
 *     of them) 90 -> 137 us, so not there.
 * Emission: gemm_emit.c opens the loop over R around the K loop and
 * gemm_epilogue.c folds and stores (gemm_fold_open / gemm_fold_close). */
#include <math.h>
#include <string.h>

#include "gemm_impl.h"
#include "ir/subst.h"

enum { GEMM_FOLD_WAVES = 2 }; /* block slots per multiprocessor the fold's tiles must fill */

/* The reductions in e (at any depth), the last one in *red. */
static int reductions(const ir_expr *e, const ir_expr **red) {
  int n = e->op == IR_OP_REDUCE;
  if (n) *red = e;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += reductions(e->arg[i], red);
  return n;
}

/* The loads of tensor x in e, the last one in *load. */
static int loads_of(const ir_expr *e, const ir_tensor *x, const ir_expr **load) {
  int n = e->op == IR_OP_LOAD && e->u.load.tensor == x;
  if (n) *load = e;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += loads_of(e->arg[i], x, load);
  return n;
}

static int in_list(int id, const int *ids, int n) {
  for (int i = 0; i < n; i++)
    if (ids[i] == id) return 1;
  return 0;
}

/* s's output read by t alone among p's statements, and written by s alone. */
static int only_t_reads(const ir_program *p, int i) {
  const ir_stmt *s = IR_STMT(p, i);
  if (s->out->role != IR_ROLE_TEMP) return 0;
  for (int j = 0; j < p->stmts.len; j++) {
    const ir_stmt *u = IR_STMT(p, j);
    if (j != i && u->out == s->out) return 0;
    if (j != i + 1 && ir_expr_reads(u->rhs, s->out)) return 0;
  }
  return 1;
}

/* The index maps between s and t through t's load of s's output: each of
 * its places one index of t, distinct, with s's extent there; t's free
 * indices all among them, and the reduction's variables. */
static int map_indices(kbc_arena *a, const ir_stmt *s, const ir_stmt *t, const ir_expr *load, cg_fold *f) {
  f->s_of_t = KBC_NEW_ARRAY(a, int, t->n_index + 1);
  f->t_of_s = KBC_NEW_ARRAY(a, int, s->n_index + 1);
  for (int id = 0; id < t->n_index; id++) f->s_of_t[id] = -1;
  for (int id = 0; id < s->n_index; id++) f->t_of_s[id] = -1;
  for (int d = 0; d < s->out->rank; d++) {
    int sid, tid;
    if (!sym_is_index(s->lhs[d], &sid) || !sym_is_index(load->u.load.idx[d], &tid)) return 0;
    if (f->s_of_t[tid] >= 0 || !sym_equal(s->index[sid].extent, t->index[tid].extent)) return 0;
    f->s_of_t[tid] = sid;
    f->t_of_s[sid] = tid;
  }
  for (int id = 0; id < t->n_index; id++)
    if (t->index[id].kind == IR_IDX_FREE && f->s_of_t[id] < 0) return 0;
  const ir_expr *red = f->red;
  f->n_r = 0;
  for (int v = 0; v < red->u.reduce.n_vars; v++) {
    int sid = f->s_of_t[red->u.reduce.vars[v]];
    if (sid < 0) return 0; /* a reduction variable the load does not take */
    f->r[f->n_r++] = sid;
  }
  /* R in s's order (the loop's digits, the last fastest) */
  for (int x = 1; x < f->n_r; x++)
    for (int y = x; y > 0 && f->r[y - 1] > f->r[y]; y--) {
      int q = f->r[y];
      f->r[y] = f->r[y - 1];
      f->r[y - 1] = q;
    }
  return 1;
}

/* Whether R are all M indices of the contraction, or all N (then swapped). */
static int place_r(kbc_arena *a, const ir_stmt *s, cg_fold *f) {
  cg_contraction c;
  if (!cg_find_contraction(a, s, &c)) return 0;
  int in_m = 1, in_n = 1;
  for (int j = 0; j < f->n_r; j++) {
    in_m &= in_list(f->r[j], c.m, c.n_m);
    in_n &= in_list(f->r[j], c.n, c.n_n);
  }
  f->swap = !in_m && in_n;
  return (in_m && f->n_r < c.n_m) || (in_n && f->n_r < c.n_n);
}

int cg_find_fold(kbc_arena *a, const ir_program *p, const cg_target *t, int i, cg_fold *out) {
  const cg_options *o = &t->opt;
  if (!o->gemm_fold || o->no_fuse || i + 1 >= p->stmts.len) return 0;
  const ir_stmt *s = IR_STMT(p, i), *u = IR_STMT(p, i + 1);
  if (s->accumulate || u->accumulate || u->out == s->out || !only_t_reads(p, i)) return 0;
  cg_fold f = {.t = u};
  if (reductions(u->rhs, &f.red) != 1 || loads_of(u->rhs, s->out, &f.load) != 1 ||
      loads_of(f.red->arg[0], s->out, &f.load) != 1)
    return 0;
  if (!map_indices(a, s, u, f.load, &f) || !f.n_r || !place_r(a, s, &f)) return 0;
  gemm_tiling tl, own;
  if (!gemm_tile_fold(a, t, s, &f, 0, &tl) || !tl.tiles) return 0;
  if (o->gemm_fold == 1) { /* the fold's tiles, at the product's own tile shape, fill two blocks an SM */
    if (!gemm_tile(a, t, s, &own)) return 0;
    const gemm_shape *sh = &tl.shape;
    double tiles = ceil(sh->m / own.cfg.bm) * ceil(sh->n / own.cfg.bn) * sh->batch;
    if (tiles < GEMM_FOLD_WAVES * t->sm_count) return 0;
  }
  *out = f;
  return 1;
}
