/* gemm_tail.c — a GEMM's tail: the statements after it that work a row
 * of its output at a time, computed in its epilogue (cg_tail,
 * gemm_impl.h).
 *
 * The GEMM's staged epilogue can hold a tile row in shared memory: one
 * thread a row, with all of the stored output T's columns (s's N, in one
 * tile).  T is the contraction's output, or behind a fold (gemm_fold.c)
 * the fold's (`m[n, c, i, j] = min(z: ...)`).  The statements that follow
 * often only finish such rows — a softmax over conv3d's channels after
 * the fold,
 *   mx[n, i, j] = max(k: m[n, k, i, j])
 *   sm[n, i, j] = sum(k: exp(m[n, k, i, j] - mx[n, i, j]))
 *   out[n, c, i, j] = exp(m[n, c, i, j] - mx[n, i, j]) / sm[n, i, j]
 * or a linear layer's layer norm over its features — and then they run
 * there too, each row's values in registers, and T (and their
 * temporaries) are written only where something after the group reads
 * them.
 *
 * Before: statement i is a GEMM (with fold f: of statements i and i + 1).
 * After cg_find_tail(): the statements after it that qualify, each
 * decided from the IR alone:
 *   - not a contraction, a `+=`, or an attention chain's head;
 *   - its free indices: one per row place of T (T's places but the
 *     column's), and at most the column's besides; its loads of T take
 *     those at T's row places and at the column place one index of its own
 *     (the column: free, or the variable of its every reduction — over
 *     the column alone);
 *   - its loads of an earlier tail statement's output: of one without the
 *     column (a value per row), at the same row places;
 *   - no load of a fold's s output, of a column statement's output, or
 *     padded;
 *   - the columns are the tiles' N, one index (s's N, or its M where the
 *     fold swaps A and B) of constant extent at most
 *     GEMM_TAIL_MAX_COLUMNS: the tiling then takes tiles of at least that
 *     many columns (gemm_shape.min_bn), whose staged tile must fit (the
 *     plan then stages it, gemm_plan.c's plan_staging).  Such a GEMM is
 *     planned without wgmma; with split-K the tile's last slice adds the
 *     parts and then runs the tail.  (Under KBC_GEMM_TAIL=2 a contraction
 *     too small for the GEMM family becomes one where a tail would join
 *     it: group.c's small_with_tail.)
 * opt.gemm_tail switches it (KBC_GEMM_TAIL): 1 (the default) behind a fold
 * (conv3d -> min -> softmax 0.977-0.994x at b128 and b256, fp32 and tf32)
 * and behind a plain contraction where group.c's tail_pays says so (the
 * GEMM not on wgmma without it, its tiles filling a wave), 2 behind any
 * plain contraction (the GPU fuzzer's row_tail and tail variants). */
#include <string.h>

#include "gemm_impl.h"
#include "ir/subst.h"

enum { GEMM_TAIL_MAX_COLUMNS = 128 };

/* Whether tensor x is read by a statement of p outside [first, last]. */
static int read_outside(const ir_program *p, const ir_tensor *x, int first, int last) {
  for (int j = 0; j < p->stmts.len; j++)
    if ((j < first || j > last) && (ir_expr_reads(IR_STMT(p, j)->rhs, x) || IR_STMT(p, j)->out == x)) return 1;
  return 0;
}

typedef struct {
  const cg_tail *tail;
  const ir_stmt *const *u; /* the tail's statements so far */
  int k;                   /* this statement's number in the tail */
  const ir_tensor *T, *S;  /* the fold's output, the contraction's */
  int *pos;                /* this statement's index -> T's place (-1: none) */
  int col;                 /* its column index, or -1 */
} scan;

/* Index id of the statement at T's place d (the column place: as the
 * column): consistent with what was seen before. */
static int place(scan *sc, int id, int d) {
  if (d == sc->tail->tcol) {
    if (sc->col >= 0 && sc->col != id) return 0;
    sc->col = id;
    return sc->pos[id] < 0;
  }
  if (sc->pos[id] >= 0 && sc->pos[id] != d) return 0;
  if (id == sc->col) return 0;
  sc->pos[id] = d;
  return 1;
}

static int scan_expr(scan *sc, const ir_expr *e) {
  if (e->op == IR_OP_LOAD) {
    const ir_tensor *x = e->u.load.tensor;
    if (x == sc->S) return 0;
    int from = -1; /* an earlier tail statement's output */
    for (int k = 0; k < sc->k; k++)
      if (sc->u[k]->out == x) from = k;
    if (x == sc->T || from >= 0) {
      if (e->u.load.padded) return 0;
      if (from >= 0 && sc->tail->col_free[from]) return 0;
      for (int d = 0; d < x->rank; d++) {
        int id;
        if (!sym_is_index(e->u.load.idx[d], &id)) return 0;
        /* an earlier statement's output: its place d stands at the T place of its lhs index there */
        int tp = x == sc->T ? d : sc->tail->pos[from][d];
        if (!place(sc, id, tp)) return 0;
      }
    }
  }
  if (e->op == IR_OP_REDUCE && (e->u.reduce.n_vars != 1 || (sc->col >= 0 && e->u.reduce.vars[0] != sc->col)))
    return 0;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!scan_expr(sc, e->arg[i])) return 0;
  return 1;
}

/* The column index of the reductions of e (-1: none). */
static int reduce_var(const ir_expr *e) {
  if (e->op == IR_OP_REDUCE) return e->u.reduce.vars[0];
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    int v = reduce_var(e->arg[i]);
    if (v >= 0) return v;
  }
  return -1;
}

/* Whether statement u qualifies as the tail's statement k (its places
 * into tail->pos[k], its column into tail->col[k]). */
static int qualifies(kbc_arena *a, cg_tail *tail, const ir_stmt *const *us, int k,
                     const ir_tensor *T, const ir_tensor *S, const sym *ncol) {
  const ir_stmt *u = us[k];
  cg_contraction c;
  if (u->accumulate || cg_find_contraction(a, u, &c) || u->out == T || u->out == S) return 0;
  int *pos = KBC_NEW_ARRAY(a, int, u->n_index + 1);
  for (int id = 0; id < u->n_index; id++) pos[id] = -1;
  scan sc = {.tail = tail, .u = us, .k = k, .T = T, .S = S, .pos = pos, .col = reduce_var(u->rhs)};
  if (!scan_expr(&sc, u->rhs)) return 0;
  /* its own output: written at plain free indices, each at a row place or the column */
  int col_free = sc.col >= 0 && u->index[sc.col].kind == IR_IDX_FREE;
  int rows = 0;
  for (int id = 0; id < u->n_index; id++) {
    if (u->index[id].kind != IR_IDX_FREE) continue;
    if (id == sc.col) continue;
    if (pos[id] < 0 || !sym_equal(u->index[id].extent, T->shape[pos[id]])) return 0;
    rows++;
  }
  if (rows != T->rank - 1) return 0;
  if (sc.col >= 0 && !sym_equal(u->index[sc.col].extent, ncol)) return 0;
  if (col_free && reduce_var(u->rhs) >= 0) return 0;
  for (int d = 0; d < u->out->rank; d++) {
    int id;
    if (!sym_is_index(u->lhs[d], &id) || u->index[id].kind != IR_IDX_FREE) return 0;
  }
  tail->pos[k] = KBC_NEW_ARRAY(a, int, u->out->rank + 1);
  for (int d = 0; d < u->out->rank; d++) {
    int id;
    sym_is_index(u->lhs[d], &id);
    tail->pos[k][d] = id == sc.col ? T->rank : pos[id]; /* T->rank: the column */
  }
  tail->idx_pos[k] = pos;
  tail->col[k] = sc.col;
  tail->col_free[k] = col_free;
  return 1;
}

const cg_tail *cg_find_tail(kbc_arena *a, const ir_program *p, const cg_target *t, int i, const unsigned char *heads,
                            const cg_fold *f) {
  int first = i + (f ? 2 : 1); /* the tail's first statement */
  if (!t->opt.gemm_tail || first >= p->stmts.len) return NULL;
  const ir_stmt *s = IR_STMT(p, i), *ts = f ? f->t : s; /* the contraction, the stored statement */
  const ir_tensor *T = ts->out;
  /* the columns: the tiles' N (the contraction's M where the fold swaps
   * A and B), one index of constant extent */
  cg_contraction c;
  if (!cg_find_contraction(a, s, &c)) return NULL;
  int ncol_id = f && f->swap ? (c.n_m == 1 ? c.m[0] : -1) : (c.n_n == 1 ? c.n[0] : -1);
  int64_t ncol = 0;
  if (ncol_id < 0 || !sym_is_const(s->index[ncol_id].extent, &ncol) || ncol > GEMM_TAIL_MAX_COLUMNS) return NULL;
  /* tiles that hold every column (gemm_tile_fold's min_bn), whose staged
   * tile fits (at fp32 the plan may fall back to FFMA tiles: both must) */
  cg_target ffma = *t;
  ffma.opt.fp32_mma = 0;
  for (int pass = 0; pass < 2; pass++) {
    gemm_tiling tl;
    if (!gemm_tile_fold(a, pass ? &ffma : t, s, f, (int)ncol, &tl) || tl.c.n_n != 1 || tl.c.n[0] != ncol_id ||
        tl.cfg.bn < ncol || GEMM_THREADS % tl.cfg.bm || tl.cfg.bm * (tl.cfg.bn + 1) * 4 > GEMM_SMEM_TILES)
      return NULL;
    c = tl.c;
  }
  cg_tail *tail = KBC_NEW(a, cg_tail);
  tail->tcol = -1;
  int tid = f ? f->t_of_s[c.n[0]] : c.n[0];
  for (int d = 0; d < T->rank; d++) {
    int id;
    if (!sym_is_index(ts->lhs[d], &id)) return NULL;
    if (id == tid) tail->tcol = d;
  }
  if (tail->tcol < 0) return NULL;
  tail->ncol = ncol;
  int room = p->stmts.len - first;
  const ir_stmt **us = KBC_NEW_ARRAY(a, const ir_stmt *, room + 1);
  tail->col = KBC_NEW_ARRAY(a, int, room + 1);
  tail->col_free = KBC_NEW_ARRAY(a, int, room + 1);
  tail->pos = KBC_NEW_ARRAY(a, int *, room + 1);
  tail->idx_pos = KBC_NEW_ARRAY(a, int *, room + 1);
  tail->store = KBC_NEW_ARRAY(a, unsigned char, room + 1);
  int n = 0;
  while (n < room && !(heads && heads[first + n])) {
    us[n] = IR_STMT(p, first + n);
    if (!qualifies(a, tail, us, n, T, f ? s->out : NULL, s->index[c.n[0]].extent)) break;
    n++;
  }
  if (!n) return NULL;
  int last = first + n - 1;
  tail->n = n;
  tail->u = us;
  tail->store_t = T->role != IR_ROLE_TEMP || read_outside(p, T, i, last);
  for (int k = 0; k < n; k++) tail->store[k] = us[k]->out->role != IR_ROLE_TEMP || read_outside(p, us[k]->out, i, last);
  return tail;
}
