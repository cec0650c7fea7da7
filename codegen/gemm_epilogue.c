/* gemm_epilogue.c — the tiled contraction's fused epilogue, printed from
 * the plan.
 *
 * Before: the K loop of a tile is done: each thread holds its outputs'
 * sums in _acc.  After gemm_emit_epilogue(): per output element of the
 * thread, in range, the statement's rhs with the main sum given as the
 * accumulator (cg_expr_ctx.known), stored (under split-K by the tile's
 * last slice, with the slices' sum: gemm_emit.c's emit_slices_combined).
 * Direct (plan.epilogue.staged = 0):
 * loads no output coordinate moves read once per tile (hoisted), row and
 * column digits decoded only where an address needs them (flat M / N:
 * offsets through _m / _n), a thread's columns decoded once per run of
 * consecutive columns and carried — or, with column groups
 * (plan.epilogue.group), the outer digits once per group and the values
 * no innermost column digit moves read once per row and group —, float4 /
 * float2 stores where the output is contiguous along n and the address
 * aligned.  Staged: through shared
 * memory, per group of columns: the threads write their accumulators to
 * _Cs, then each takes one row (m = _m0 + _tid % BM, decoded once) and
 * strides over the group's columns, so that a warp stores 32 consecutive
 * m (the output is contiguous along m: convolutions); with a tail
 * (gemm_tail.c) a team of threads a row computes the tail's statements
 * over it: a warp for rows of GEMM_TAIL_WARP_COLUMNS columns or more, else
 * 256 / BM threads (one at BM 256), the team's lanes over the columns
 * (emit_tail).  Staged along n (the output contiguous along n, an operand
 * read per element): each thread takes one column and strides over the
 * rows (emit_staged_n). */
#include "gemm_impl.h"
#include "ir/subst.h"

/* ---- the fold's statement ---------------------------------------------- */

/* With a fold, t's expressions are printed under t (its indices standing
 * for s's names, ge->tbind) and s's again after. */
static void enter_t(gemm_emitter *ge, int on) {
  ge->emit.s = on ? ge->plan->fold->t : ge->plan->s;
  ge->emit.idx = on ? ge->tbind : ge->bind;
}

/* The flat offset of the stored element: s's output, or with a fold t's. */
static const char *out_offset(gemm_emitter *ge, const cg_flat_spaces *flat) {
  const ir_stmt *st = gemm_stored_stmt(ge->plan);
  if (ge->plan->fold) enter_t(ge, 1);
  const char *off = cg_offset_in(&ge->emit, st->out, st->lhs, flat);
  if (ge->plan->fold) enter_t(ge, 0);
  return off;
}

/* The name of the stored tensor. */
static const char *out_name(gemm_emitter *ge) {
  return ge->ctx->names->tensor[gemm_stored_stmt(ge->plan)->out->id];
}

/* t's expression e with its node `known` given as value. */
static const char *t_value(gemm_emitter *ge, const ir_expr *e, const ir_expr *known, const char *value) {
  enter_t(ge, 1);
  cg_expr_ctx x = {.known = known, .known_value = value};
  const char *v = cg_float_value(&ge->emit, e, cg_expr_in(&ge->emit, e, &x));
  enter_t(ge, 0);
  return v;
}

/* The output element's store of v, addressed through the flat spaces (or
 * NULL).  (Under split-K only the tile's last slice gets here, with the
 * whole sum: gemm_emit.c, emit_slices_combined.) */
static void emit_store(gemm_emitter *ge, const char *v, const cg_flat_spaces *flat) {
  cg_line(&ge->emit, "%s[%s] = %s;", out_name(ge), out_offset(ge, flat), v);
}

/* s's output element's value, the main sum being acc. */
static const char *s_value(gemm_emitter *ge, const char *acc, const cg_flat_spaces *flat) {
  const ir_stmt *s = ge->plan->s;
  const ir_expr *r = ge->plan->tiling.c.reduce;
  cg_expr_ctx x = {.known = r, .known_value = acc, .flat = flat};
  return cg_float_value(&ge->emit, s->rhs, cg_expr_in(&ge->emit, s->rhs, &x));
}

/* The stored element's value: s's (s_value), or with a fold t's, its
 * reduction's value being acc. */
static const char *element_value(gemm_emitter *ge, const char *acc, const cg_flat_spaces *flat) {
  if (ge->plan->fold) return t_value(ge, ge->plan->fold->t->rhs, ge->plan->fold->red, acc);
  return s_value(ge, acc, flat);
}

/* The thread's outputs: rows and columns. */
static void thread_outputs(const gemm_cfg *f, int *rows, int *cols) {
  *rows = f->mma ? f->mi * 2 : f->tm;
  *cols = f->mma ? f->ni * 2 : f->tn;
}

/* The thread's output (_i, _j): its accumulator (acc_of), or with a fold
 * its running value (acc_at). */
static const char *acc_of(gemm_emitter *ge) {
  return ge->plan->tiling.cfg.mma ? "_acc[_i / 2][_j / 2][(_i % 2) * 2 + _j % 2]" : "_acc[_i][_j]";
}

static const char *acc_at(gemm_emitter *ge) { return ge->plan->fold ? "_red[_i][_j]" : acc_of(ge); }

/* The tile row of the thread's output row _i. */
static const char *tile_row(gemm_emitter *ge) {
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  if (f->mma) return "_wm0 + (_i / 2) * 16 + (_i % 2) * 8 + _g";
  return f->vm == 4 ? cg_fmt(&ge->emit, "(_i / 4) * %d + _ty * 4 + _i %% 4", f->bm / (f->tm / 4))
                    : cg_fmt(&ge->emit, "_ty * %d + _i", f->tm);
}

/* ---- staged --------------------------------------------------------------- */

/* Pass p of the staged epilogue: its columns of the thread's accumulators
 * [j0, j1), their row and column in _Cs, and the tile column of _Cs's
 * column _c. */
typedef struct {
  int j0, j1;
  const char *row, *cidx, *col;
} staged_pass;

static staged_pass staged_pass_of(gemm_emitter *ge, int p) {
  cg_emit *out = &ge->emit;
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  int passes = ge->plan->epilogue.passes;
  staged_pass sp;
  if (!f->mma) {
    int rn = f->tn / f->vn;
    sp.row = f->vm == 4 ? cg_fmt(out, "(_i / 4) * %d + _ty * 4 + _i %% 4", f->bm / (f->tm / 4)) : cg_fmt(out, "_ty * %d + _i", f->tm);
    if (f->vn == 4) {
      sp.j0 = 4 * p, sp.j1 = 4 * p + 4;
      sp.cidx = "_tx * 4 + _j % 4";
      sp.col = cg_fmt(out, "%d + _c", p * (f->bn / rn));
    } else {
      int q = f->tn / passes;
      sp.j0 = p * q, sp.j1 = (p + 1) * q;
      sp.cidx = p ? cg_fmt(out, "_tx * %d + _j - %d", q, sp.j0) : cg_fmt(out, "_tx * %d + _j", q);
      sp.col = passes == 1 ? "_c" : cg_fmt(out, "(_c / %d) * %d + %d + _c %% %d", q, f->tn, sp.j0, q);
    }
  } else if (passes == 1) {
    sp.j0 = 0, sp.j1 = 2 * f->ni;
    sp.row = "_wm0 + (_i / 2) * 16 + (_i % 2) * 8 + _g";
    sp.cidx = "_wn0 + (_j / 2) * 8 + _t4 * 2 + _j % 2";
    sp.col = "_c";
  } else {
    sp.j0 = 2 * p, sp.j1 = 2 * p + 2;
    sp.row = "_wm0 + (_i / 2) * 16 + (_i % 2) * 8 + _g";
    /* the warp's column of warp tiles: wgmma's warpgroups along n */
    sp.cidx = ge->plan->wgmma ? cg_fmt(out, "(_wn0 / %d) * 8 + _t4 * 2 + _j %% 2", f->ni * 8)
                              : cg_fmt(out, "(_warp %% %d) * 8 + _t4 * 2 + _j %% 2", f->wn);
    sp.col = cg_fmt(out, "(_c / 8) * %d + %d + _c %% 8", f->ni * 8, p * 8);
  }
  return sp;
}

/* The tail (gemm_tail.c), after the tile's values (a fold's running
 * values, else the contraction's sums) are in _Cs: a thread a row, the
 * stored statement's value per column into _Cs (stored where read later),
 * then each statement of the tail over the row — its loads of T read _Cs,
 * of an earlier statement's value its register. */
static void emit_tail(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_fold *fd = plan->fold;
  const cg_tail *tl = plan->tail;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const ir_program *p = ge->ctx->p;
  const ir_stmt *t = gemm_stored_stmt(plan);
  /* A team of ts threads a row, its lanes over the columns and its sums
   * by shuffles.  Rows of GEMM_TAIL_WARP_COLUMNS columns or more: a warp
   * (128 columns: 4 steps a lane, not 128).  Shorter ones (conv3d's 24
   * channels): as many threads a row as the block has for each of the
   * tile's rows — one where BM is the block (conv3d), 4 at BM 64, where
   * a thread a row had left three quarters of the block idle and, for
   * rows contiguous along the columns, each warp store touching 32 rows. */
  int ts = tl->ncol >= GEMM_TAIL_WARP_COLUMNS ? 32 : 1;
  while (ts < 32 && ts * 2 * f->bm <= GEMM_THREADS) ts *= 2;
  int team = ts > 1; /* (else a thread a row) */
  const char *lane = team ? "_wl" : "0";
  if (team) {
    if (ts == 32)
      cg_line(out, "// the tail (%d statement%s): a warp a row of the tile, its lanes over the row's %lld columns in _Cs",
              tl->n, tl->n == 1 ? "" : "s", (long long)tl->ncol);
    else
      cg_line(out, "// the tail (%d statement%s): %d threads a row of the tile, their lanes over the row's %lld columns in _Cs",
              tl->n, tl->n == 1 ? "" : "s", ts, (long long)tl->ncol);
    cg_line(out, "for (int _ml = _tid / %d; _ml < %d; _ml += %d) {", ts, f->bm, GEMM_THREADS / ts);
    out->indent++;
    cg_line(out, "const int _wl = _tid %% %d;", ts);
    if (ts < 32)
      cg_line(out, "const unsigned _tmask = 0x%xu << (_tid %% 32 - _wl); // the row's team in the warp", (1u << ts) - 1);
    cg_line(out, "const long long _m = _m0 + _ml;");
    cg_line(out, "if (_m >= %s) break; // (the same for the %s's lanes)", gemm_mlimit(plan), ts == 32 ? "warp" : "team");
    gemm_decode_named(ge, "_m", c->m, c->n_m, "");
  } else {
    cg_line(out, "// the tail (%d statement%s): a thread a row of the tile, its %lld columns in _Cs", tl->n,
            tl->n == 1 ? "" : "s", (long long)tl->ncol);
    cg_line(out, "if (%s_mok) {", GEMM_THREADS > f->bm ? cg_fmt(out, "_tid < %d && ", f->bm) : "");
    out->indent++;
  }
  /* T's values over the running ones or the sums (none to compute where
   * T is a fold's reduction itself and not stored) */
  if (tl->store_t || !fd || t->rhs != fd->red) {
    cg_line(out, "for (int _c = %s; _c < %lld; %s) { // %s's values", lane, (long long)tl->ncol,
            team ? cg_fmt(out, "_c += %d", ts) : "++_c", t->out->name);
    out->indent++;
    cg_line(out, "const long long _n = _n0 + _c;");
    gemm_decode_named(ge, "_n", c->n, c->n_n, "");
    cg_line(out, "const float _v = %s;", element_value(ge, "_Cs[_ml][_c]", NULL));
    cg_line(out, "_Cs[_ml][_c] = _v;");
    if (tl->store_t) emit_store(ge, "_v", NULL);
    out->indent--;
    cg_line(out, "}");
    if (team) cg_line(out, "__syncwarp(%s); // the row's values, for every lane", ts == 32 ? "" : "_tmask");
  }
  /* T's places: the names of s's indices there (the column: _tc) */
  const char **at = KBC_NEW_ARRAY(out->a, const char *, t->out->rank + 1);
  for (int d = 0; d < t->out->rank; d++) {
    int tid;
    sym_is_index(t->lhs[d], &tid);
    at[d] = d == tl->tcol ? "_tc" : ge->names[fd ? fd->s_of_t[tid] : tid];
  }
  const char **value_of = KBC_NEW_ARRAY(out->a, const char *, p->tensors.len + 1);
  value_of[t->out->id] = "_Cs[_ml][_tc]";
  const ir_stmt *saved_s = out->s;
  const char **saved_idx = out->idx;
  for (int k = 0; k < tl->n; k++) {
    const ir_stmt *u = tl->u[k];
    const char **names = KBC_NEW_ARRAY(out->a, const char *, u->n_index + 1);
    for (int id = 0; id < u->n_index; id++)
      names[id] = id == tl->col[k] ? "_tc" : tl->idx_pos[k][id] >= 0 ? at[tl->idx_pos[k][id]] : "0";
    out->s = u;
    out->idx = names;
    /* a team's row value: its one reduction split across the lanes, every
     * lane left with the whole (shuffles by xor) */
    cg_split split = {.reduce = cg_top_reduce(u->rhs),
                      .team = {.size = ts, .lane = "_wl", .mask = ts == 32 ? "0xffffffffu" : "_tmask"}};
    cg_expr_ctx x = {.value_of = value_of, .split = team && !tl->col_free[k] ? &split : NULL};
    cg_line(out, "// %s", cg_stmt_comment(out->a, u));
    int saved = out->n_hoisted;
    if (tl->col_free[k]) {
      int hoisted = cg_hoist_invariants_in(out, u->rhs, &tl->col[k], 1, &x); /* (a division by a row's value: its reciprocal) */
      cg_line(out, "for (long long _tc = %s; _tc < %lld; %s) {", lane, (long long)tl->ncol,
              team ? cg_fmt(out, "_tc += %d", ts) : "++_tc");
      out->indent++;
      const char *v = cg_float_value(out, u->rhs, cg_expr_in(out, u->rhs, &x));
      cg_line(out, "%s[%s] = %s;", ge->ctx->names->tensor[u->out->id], cg_offset(out, u->out, u->lhs), v);
      out->indent--;
      cg_line(out, "}");
      out->n_hoisted = hoisted;
    } else {
      cg_line(out, "float _tl%d;", k);
      cg_line(out, "{");
      out->indent++;
      cg_line(out, "_tl%d = %s;", k, cg_float_value(out, u->rhs, cg_expr_in(out, u->rhs, &x)));
      out->indent--;
      cg_line(out, "}");
      if (tl->store[k])
        cg_line(out, "%s%s[%s] = _tl%d;", team ? "if (_wl == 0) " : "", ge->ctx->names->tensor[u->out->id],
                cg_offset(out, u->out, u->lhs), k);
      value_of[u->out->id] = cg_fmt(out, "_tl%d", k);
    }
    out->n_hoisted = saved;
  }
  out->s = saved_s;
  out->idx = saved_idx;
  out->indent--;
  cg_line(out, "}");
}

/* The epilogue's loads that no output coordinate moves, read once per
 * tile (hoisted); the count of hoisted values before, to restore. */
static int hoist_tile_invariants(gemm_emitter *ge) {
  const cg_contraction *c = &ge->plan->tiling.c;
  int free_ids[2 * CG_MAX_OUTER + 64], n_free = 0;
  for (int i = 0; i < c->n_m; i++) free_ids[n_free++] = c->m[i];
  for (int i = 0; i < c->n_n; i++) free_ids[n_free++] = c->n[i];
  return cg_hoist_invariants(&ge->emit, ge->plan->s->rhs, free_ids, n_free);
}

/* Pass p's accumulators into _Cs, under its comment, then the barrier
 * after which any thread may read any of them. */
static void emit_pass_to_cs(gemm_emitter *ge, const staged_pass *sp, int p, int n_rows) {
  cg_emit *out = &ge->emit;
  int passes = ge->plan->epilogue.passes;
  cg_line(out, "// %s", passes == 1 ? "all columns of the tile" : cg_fmt(out, "column group %d of %d", p, passes));
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i)", n_rows);
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int _j = %d; _j < %d; ++_j) _Cs[%s][%s] = %s;", sp->j0, sp->j1, sp->row, sp->cidx, acc_at(ge));
  cg_line(out, "__syncthreads();");
}

/* Along n (ep->along_n, the output contiguous along n): per group of
 * columns, the accumulators into _Cs, then each thread takes one column
 * (_c = _tid % nc, its digits decoded once) and strides over the tile's
 * rows, so that a warp reads 32 consecutive columns of every operand
 * indexed along them and stores 32 consecutive floats. */
static void emit_staged_n(gemm_emitter *ge, int n_rows) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_epilogue *ep = &plan->epilogue;
  int hoisted = hoist_tile_invariants(ge);
  cg_line(out, "// epilogue through shared memory (the output is contiguous along n): each thread takes column");
  cg_line(out, "// _tid %% %d of each group of %d and strides over the tile's rows, %d at a time", ep->nc, ep->nc,
          GEMM_THREADS / ep->nc);
  cg_line(out, "const int _c = _tid %% %d;", ep->nc);
  for (int p = 0; p < ep->passes; p++) {
    staged_pass sp = staged_pass_of(ge, p);
    emit_pass_to_cs(ge, &sp, p, n_rows);
    cg_line(out, "const long long _n = _n0 + %s;", sp.col);
    cg_line(out, "if (_n < _N) {");
    out->indent++;
    gemm_decode_named(ge, "_n", c->n, c->n_n, "");
    cg_line(out, "#pragma unroll 4");
    cg_line(out, "for (int _ml = _tid / %d; _ml < %d; _ml += %d) {", ep->nc, f->bm, GEMM_THREADS / ep->nc);
    out->indent++;
    cg_line(out, "const long long _m = _m0 + _ml;");
    cg_line(out, "if (_m >= %s) break;", gemm_mlimit(plan));
    gemm_decode_named(ge, "_m", c->m, c->n_m, "");
    emit_store(ge, element_value(ge, "_Cs[_ml][_c]", NULL), NULL);
    out->indent--;
    cg_line(out, "}");
    out->indent--;
    cg_line(out, "}");
    cg_line(out, "__syncthreads();");
  }
  out->n_hoisted = hoisted;
}

static void emit_staged(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_epilogue *ep = &plan->epilogue;
  for (int id = 0; id < plan->s->n_index; id++) ge->bind[id] = ge->names[id];
  int n_rows, n_cols;
  thread_outputs(f, &n_rows, &n_cols);
  if (ep->along_n) {
    emit_staged_n(ge, n_rows);
    return;
  }
  cg_line(out, "// epilogue through shared memory (the output is contiguous along m): each thread takes row");
  cg_line(out, "// _m0 + _tid %% %d and strides over %d column%s at a time", f->bm, ep->nc, ep->nc == 1 ? "" : "s");
  cg_line(out, "const int _ml = _tid %% %d;", f->bm);
  cg_line(out, "const long long _m = _m0 + _ml;");
  cg_line(out, "const bool _mok = _m < %s;", gemm_mlimit(plan));
  gemm_decode_named(ge, "_m", c->m, c->n_m, "");
  for (int p = 0; p < ep->passes; p++) {
    staged_pass sp = staged_pass_of(ge, p);
    emit_pass_to_cs(ge, &sp, p, n_rows);
    if (plan->tail) {
      emit_tail(ge);
      cg_line(out, "__syncthreads();");
      continue;
    }
    cg_line(out, "for (int _c = _tid / %d; _c < %d; _c += %d) {", f->bm, ep->nc, GEMM_THREADS / f->bm);
    out->indent++;
    cg_line(out, "const long long _n = _n0 + %s;", sp.col);
    cg_line(out, "if (!_mok || _n >= _N) continue;");
    gemm_decode_named(ge, "_n", c->n, c->n_n, "");
    emit_store(ge, element_value(ge, "_Cs[_ml][_c]", NULL), NULL);
    out->indent--;
    cg_line(out, "}");
    cg_line(out, "__syncthreads();");
  }
}

/* ---- direct --------------------------------------------------------------- */

/* The tile column of the thread's output j (a C expression in j). */
static const char *column(gemm_emitter *ge, const char *j) {
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  if (f->mma) return cg_fmt(&ge->emit, "_wn0 + (%s / 2) * 8 + _t4 * 2 + %s %% 2", j, j);
  if (f->vn == 4) return cg_fmt(&ge->emit, "(%s / 4) * %d + _tx * 4 + %s %% 4", j, f->bn / (f->tn / 4), j);
  return cg_fmt(&ge->emit, "_tx * %d + %s", f->tn, j);
}

/* The column digits of output j into dst: decoded at the start of each
 * run, else the previous column's plus one, carried. */
static void emit_column_carry(gemm_emitter *ge, const char *const *dst) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  cg_line(out, "if (_j %% %d == 0) {", plan->epilogue.run);
  out->indent++;
  gemm_decode(ge, "_n", c->n, c->n_n, dst);
  out->indent--;
  cg_line(out, "} else { // the previous column plus one");
  out->indent++;
  for (int i = 0; i < c->n_n; i++)
    cg_line(out, "%s = _col_%s[_j - 1]%s;", dst[i], ge->names[c->n[i]], i == c->n_n - 1 ? " + 1" : "");
  for (int i = c->n_n - 1; i > 0; i--) {
    cg_line(out, "if (%s >= %s) {", dst[i], cg_sym(out, plan->s->index[c->n[i]].extent));
    out->indent++;
    cg_line(out, "%s = 0;", dst[i]);
    cg_line(out, "++%s;", dst[i - 1]);
  }
  for (int i = c->n_n - 1; i > 0; i--) {
    out->indent--;
    cg_line(out, "}");
  }
  out->indent--;
  cg_line(out, "}");
}

/* Per column of the thread: in range (_colok), and unless N is flat its
 * digits (_col_*), once per tile. */
static void emit_columns(gemm_emitter *ge, int n_cols) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_epilogue *ep = &plan->epilogue;
  cg_line(out, "bool _colok[%d];", n_cols);
  int G = ep->group, grouped = G && c->n_n > 1; /* (one digit: no outer digits to share) */
  const char *inner = ge->names[c->n[c->n_n - 1]];
  if (grouped) {
    const char *outer = gemm_join_names(ge, c->n, c->n_n - 1);
    cg_line(out, "// the thread's columns in groups of %d sharing %s (decoded once a group), %s carried", G, outer, inner);
    for (int i = 0; i < c->n_n - 1; i++) cg_line(out, "long long _c_%s[%d];", ge->names[c->n[i]], n_cols / G);
  } else if (!ep->nflat && c->n_n > 1) {
    cg_line(out, "// columns decoded at the start of each run of %d, then carried", ep->run);
  }
  for (int i = G ? c->n_n - 1 : 0; i < c->n_n && !ep->nflat; i++)
    cg_line(out, "long long _col_%s[%d];", ge->names[c->n[i]], n_cols);
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _j = 0; _j < %d; ++_j) {", n_cols);
  out->indent++;
  cg_line(out, "const long long _n = _n0 + %s;", column(ge, "_j"));
  cg_line(out, "_colok[_j] = _n < _N;");
  if (grouped) {
    const char **dst = KBC_NEW_ARRAY(out->a, const char *, c->n_n);
    for (int i = 0; i < c->n_n - 1; i++) dst[i] = cg_fmt(out, "_c_%s[_j / %d]", ge->names[c->n[i]], G);
    dst[c->n_n - 1] = cg_fmt(out, "_col_%s[_j]", inner);
    cg_line(out, "if (_j %% %d == 0) {", G);
    out->indent++;
    gemm_decode(ge, "_n", c->n, c->n_n, dst);
    out->indent--;
    /* mma: the next column of the run, or the next n8 tile's first */
    cg_line(out, "} else {");
    cg_line(out, "  _col_%s[_j] = _col_%s[_j - 1] + %s;", inner, inner,
            plan->tiling.cfg.mma ? "(_j % 2 ? 1 : 7)" : "1");
    cg_line(out, "}");
  } else if (!ep->nflat) {
    const char **dst = KBC_NEW_ARRAY(out->a, const char *, c->n_n);
    for (int i = 0; i < c->n_n; i++) dst[i] = cg_fmt(out, "_col_%s[_j]", ge->names[c->n[i]]);
    if (c->n_n > 1 && ep->run > 1) emit_column_carry(ge, dst);
    else gemm_decode(ge, "_n", c->n, c->n_n, dst);
  }
  out->indent--;
  cg_line(out, "}");
}

/* The column indices of output `j` (a C expression): _n, or the digits. */
static void emit_column_indices(gemm_emitter *ge, const char *j) {
  const cg_contraction *c = &ge->plan->tiling.c;
  if (ge->plan->epilogue.nflat) {
    cg_line(&ge->emit, "const long long _n = _n0 + %s;", column(ge, j));
    return;
  }
  for (int i = ge->plan->epilogue.group ? c->n_n - 1 : 0; i < c->n_n; i++)
    cg_line(&ge->emit, "const long long %s = _col_%s[%s];", ge->names[c->n[i]], ge->names[c->n[i]], j);
}

/* The run's values _v stored from the address of its first element (its
 * column indices bound): one vector store when the whole run is in range
 * (element k is where `pre k post` holds) and aligned, else one by one. */
static void emit_run_store(gemm_emitter *ge, const cg_flat_spaces *flat, const char *pre, const char *post) {
  cg_emit *out = &ge->emit;
  int vec = ge->plan->epilogue.vec;
  cg_line(out, "float *_p = &%s[%s];", out_name(ge), out_offset(ge, flat));
  cg_line(out, "if (%s && ((unsigned long long)_p & %dULL) == 0) {", cg_fmt(out, "%s%d%s", pre, vec - 1, post), 4 * vec - 1);
  if (vec == 4) cg_line(out, "  *(float4 *)_p = make_float4(_v[0], _v[1], _v[2], _v[3]);");
  else cg_line(out, "  *(float2 *)_p = make_float2(_v[0], _v[1]);");
  cg_line(out, "} else { // one by one, each in range (columns in range form a prefix of the run)");
  for (int k = 0; k < vec; k++) cg_line(out, "  if (%s%d%s) _p[%d] = _v[%d];", pre, k, post, k, k);
  cg_line(out, "}");
}

/* A run of vec outputs: its first element's column indices, then the
 * store. */
static void emit_vector_store(gemm_emitter *ge, const cg_flat_spaces *flat) {
  cg_line(&ge->emit, "if (!_colok[_j0]) continue;");
  emit_column_indices(ge, "_j0");
  emit_run_store(ge, flat, "_colok[_j0 + ", "]");
}

/* With groups (a run's columns then differ in the innermost column digit
 * only, by one from one to the next): the epilogue's loads of read-only
 * tensors contiguous along that digit, read once per run as a vector
 * where aligned (else element by element, each in range) into _e<k>[vec],
 * and printed as _e<k>[_j - _j0] inside the run's loop.  A warp's load of
 * a thread tile's run touches the sectors a scalar load does, for vec
 * elements instead of one. */
static void vector_operands(gemm_emitter *ge, const ir_expr *e, const cg_flat_spaces *flat) {
  cg_emit *out = &ge->emit;
  const cg_contraction *c = &ge->plan->tiling.c;
  int vec = ge->plan->epilogue.vec, inner = c->n[c->n_n - 1];
  if (!cg_hoist_open(out, e)) return;
  if (e->op == IR_OP_LOAD) {
    const ir_tensor *t = e->u.load.tensor;
    if (e->u.load.padded || (out->written && out->written[t->id]) ||
        !cg_offset_contiguous(out->a, ge->plan->s, ir_flat_offset(out->a, t, e->u.load.idx), &inner, 1))
      return;
    const char *name = cg_fmt(out, "_e%d", out->n_hoisted), *kind = vec == 4 ? "float4" : "float2";
    cg_line(out, "float %s[%d]; // %s along the run", name, vec, t->name);
    cg_line(out, "{");
    out->indent++;
    cg_line(out, "const long long %s = _col_%s[_j0];", ge->names[inner], ge->names[inner]);
    cg_line(out, "const float *_q = &%s[%s];", ge->ctx->names->tensor[t->id], cg_offset_in(out, t, e->u.load.idx, flat));
    cg_line(out, "if (_colok[_j0 + %d] && ((unsigned long long)_q & %dULL) == 0) {", vec - 1, 4 * vec - 1);
    cg_line(out, "  const %s _t = *(const %s *)_q;", kind, kind);
    for (int k = 0; k < vec; k++) cg_line(out, "  %s[%d] = _t.%c;", name, k, "xyzw"[k]);
    cg_line(out, "} else {");
    for (int k = 0; k < vec; k++) cg_line(out, "  %s[%d] = _colok[_j0 + %d] ? _q[%d] : 0.0f;", name, k, k, k);
    cg_line(out, "}");
    out->indent--;
    cg_line(out, "}");
    cg_substitute(out, e, cg_fmt(out, "%s[_j - _j0]", name));
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) vector_operands(ge, e->arg[i], flat);
}

/* The run of columns from _j0 of the thread's row: each element's value
 * stored, or gathered into _v for a vector store. */
static void emit_run(gemm_emitter *ge, const cg_flat_spaces *flat) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_epilogue *ep = &plan->epilogue;
  /* zeroed: columns past the edge leave their slot unwritten, and ptxas
   * (sm_90) keeps a partly written array in a stack frame */
  if (ep->vec > 1) cg_line(out, "float _v[%d] = {};", ep->vec);
  int saved = out->n_hoisted;
  if (ep->group && ep->vec > 1 && ge->ctx->t->opt.gemm_ep_vec) {
    cg_line(out, "if (!_colok[_j0]) continue;");
    vector_operands(ge, plan->s->rhs, flat);
  }
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _j = _j0; _j < _j0 + %d; ++_j) {", ep->vec);
  out->indent++;
  cg_line(out, "if (!_colok[_j]) continue;");
  emit_column_indices(ge, "_j");
  if (ep->nflat) ge->bind[c->n[c->n_n - 1]] = "_n";
  const char *v = element_value(ge, acc_at(ge), flat);
  if (ep->vec == 1) emit_store(ge, v, flat);
  else cg_line(out, "_v[_j - _j0] = %s;", v);
  out->indent--;
  cg_line(out, "}");
  if (ep->vec > 1) emit_vector_store(ge, flat);
  out->n_hoisted = saved;
}

/* Whether e reads memory, outside where() branches, padded loads and
 * reductions (so that reading it early reads nothing e would not). */
static int plain_reads(const ir_expr *e, int *unsafe) {
  if (e->op == IR_OP_WHERE || e->op == IR_OP_REDUCE || (e->op == IR_OP_LOAD && e->u.load.padded)) *unsafe = 1;
  int n = e->op == IR_OP_LOAD;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += plain_reads(e->arg[i], unsafe);
  return n;
}

/* With periodic groups: e's largest float subexpressions that read memory
 * and that the innermost column digit moves but no other column digit
 * (outside where() branches, padded loads and reductions), computed for
 * the first group's columns into _w<k>[group] once a row and printed as
 * _w<k>[_j % group] (SAM-HQ's rel_w[.., kx] in s: the same for every ky). */
static void hoist_periodic(gemm_emitter *ge, const ir_expr *e, const cg_flat_spaces *flat) {
  cg_emit *out = &ge->emit;
  const cg_contraction *c = &ge->plan->tiling.c;
  int G = ge->plan->epilogue.group, inner = c->n[c->n_n - 1];
  if (!cg_hoist_open(out, e)) return;
  int unsafe = 0, outer = 0;
  for (int i = 0; i < c->n_n - 1; i++) outer |= ir_expr_mentions_index(e, c->n[i]);
  if (e->type == IR_TY_FLOAT && !outer && ir_expr_mentions_index(e, inner) && plain_reads(e, &unsafe) && !unsafe) {
    const char *name = cg_fmt(out, "_w%d", out->n_hoisted), *iname = ge->names[inner];
    cg_expr_ctx x = {.flat = flat};
    cg_line(out, "float %s[%d]; // the same in every group of columns", name, G);
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _j = 0; _j < %d; ++_j) {", G);
    cg_line(out, "  const long long %s = _col_%s[_j];", iname, iname);
    cg_line(out, "  %s[_j] = %s;", name, cg_float_value(out, e, cg_expr_in(out, e, &x)));
    cg_line(out, "}");
    cg_substitute(out, e, cg_fmt(out, "%s[_j %% %d]", name, G));
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) hoist_periodic(ge, e->arg[i], flat);
}

/* The thread's rows, and per row its runs of columns (emit_run); with
 * groups (plan->epilogue.group), the runs of each group after its values
 * that the innermost column digit leaves alone, read once. */
static void emit_elements(gemm_emitter *ge, int n_rows, int n_cols, const cg_flat_spaces *flat) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_epilogue *ep = &plan->epilogue;
  int G = ep->group;
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i) {", n_rows);
  out->indent++;
  cg_line(out, "const long long _m = _m0 + %s;", tile_row(ge));
  cg_line(out, "if (_m >= %s) continue;", gemm_mlimit(ge->plan));
  if (!ep->mflat) gemm_decode_named(ge, "_m", c->m, c->n_m, "");
  int saved = out->n_hoisted;
  if (ep->periodic) hoist_periodic(ge, plan->s->rhs, flat);
  if (G) {
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _g0 = 0; _g0 < %d; _g0 += %d) {", n_cols, G);
    out->indent++;
    /* the group's values read before any column's range test: only where
     * its first column is in range (the columns in range form a prefix) */
    cg_line(out, "if (!_colok[_g0]) continue;");
    for (int i = 0; i < c->n_n - 1; i++) ge->bind[c->n[i]] = cg_fmt(out, "_c_%s[_g0 / %d]", ge->names[c->n[i]], G);
    cg_expr_ctx x = {.flat = flat};
    cg_hoist_invariants_in(out, plan->s->rhs, &c->n[c->n_n - 1], 1, &x);
  }
  cg_line(out, "#pragma unroll");
  if (G) cg_line(out, "for (int _j0 = _g0; _j0 < _g0 + %d; _j0 += %d) {", G, ep->vec);
  else cg_line(out, "for (int _j0 = 0; _j0 < %d; _j0 += %d) {", n_cols, ep->vec);
  out->indent++;
  emit_run(ge, flat);
  out->indent--;
  cg_line(out, "}");
  if (G) {
    out->indent--;
    cg_line(out, "}");
  }
  out->n_hoisted = saved;
  out->indent--;
  cg_line(out, "}");
}

/* The parked form (plan->epilogue.park, wgmma tiles): the accumulators
 * into the free stages (_sp, float q of thread t at q * 256 + t: no bank
 * conflict), then per row a rolled loop over the thread's runs of columns,
 * each column's range test and digits computed where used; a barrier after
 * it, before the next tile's copies overwrite the stages. */
static void emit_parked(gemm_emitter *ge, int n_rows, int n_cols, const cg_flat_spaces *flat) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const gemm_epilogue *ep = &plan->epilogue;
  int nacc = f->mi * f->ni * 4, vec = ep->vec;
  cg_line(out, "// the accumulators parked in the free stages, read back by a rolled loop (small code)");
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _q = 0; _q < %d; ++_q) _sp[_q * %d + _tid] = _ap[_q];", nacc, GEMM_THREADS);
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i) {", n_rows);
  out->indent++;
  cg_line(out, "const long long _m = _m0 + _wm0 + (_i / 2) * 16 + (_i %% 2) * 8 + _g;");
  cg_line(out, "if (_m >= %s) continue;", gemm_mlimit(ge->plan));
  if (!ep->mflat) gemm_decode_named(ge, "_m", c->m, c->n_m, "");
  cg_line(out, "#pragma unroll 1");
  cg_line(out, "for (int _j0 = 0; _j0 < %d; _j0 += %d) {", n_cols, vec);
  out->indent++;
  cg_line(out, "const long long _nr = _n0 + %s; // the run's first column", column(ge, "_j0"));
  cg_line(out, "if (_nr >= _N) continue;");
  if (vec > 1) cg_line(out, "float _v[%d] = {};", vec);
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _j = _j0; _j < _j0 + %d; ++_j) {", vec);
  out->indent++;
  cg_line(out, "const long long _n = _nr + (_j - _j0);");
  cg_line(out, "if (_n >= _N) continue;");
  if (!ep->nflat) gemm_decode_named(ge, "_n", c->n, c->n_n, "");
  else ge->bind[c->n[c->n_n - 1]] = "_n";
  const char *acc = cg_fmt(out, "_sp[(((_i / 2) * %d + _j / 2) * 4 + (_i %% 2) * 2 + _j %% 2) * %d + _tid]", f->ni,
                           GEMM_THREADS);
  const char *v = element_value(ge, acc, flat);
  if (vec == 1) emit_store(ge, v, flat);
  else cg_line(out, "_v[_j - _j0] = %s;", v);
  out->indent--;
  cg_line(out, "}");
  if (vec > 1) {
    if (!ep->nflat) gemm_decode_named(ge, "_nr", c->n, c->n_n, "");
    else ge->bind[c->n[c->n_n - 1]] = "_nr";
    emit_run_store(ge, flat, "_nr + ", " < _N");
  }
  out->indent--;
  cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "__syncthreads(); // the parked accumulators read: the stages free for the next tile");
}

static void emit_direct(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  const cg_contraction *c = &plan->tiling.c;
  const ir_stmt *s = plan->s;
  int n_rows, n_cols;
  thread_outputs(f, &n_rows, &n_cols);
  for (int id = 0; id < s->n_index; id++) ge->bind[id] = ge->names[id];
  cg_line(out, "// epilogue: each output element of the thread (the main sum is the accumulator)");
  int hoisted = plan->fold ? 0 : hoist_tile_invariants(ge);
  if (!plan->epilogue.park) emit_columns(ge, n_cols);
  cg_flat_spaces flat = {0};
  if (plan->epilogue.mflat) {
    flat.ids[flat.n] = c->m;
    flat.len[flat.n++] = c->n_m;
    ge->bind[c->m[c->n_m - 1]] = "_m";
  }
  if (plan->epilogue.nflat) {
    flat.ids[flat.n] = c->n;
    flat.len[flat.n++] = c->n_n;
  }
  if (plan->epilogue.park) emit_parked(ge, n_rows, n_cols, &flat);
  else emit_elements(ge, n_rows, n_cols, &flat);
  out->n_hoisted = hoisted;
}

void gemm_emit_epilogue(gemm_emitter *ge) {
  if (ge->plan->epilogue.staged) emit_staged(ge);
  else emit_direct(ge);
}

/* ---- the fold ------------------------------------------------------------ */

/* The largest float subexpressions of s's epilogue (outside where()
 * branches and the contraction) that read memory and mention no M index
 * nor the fold's (its R are M's, or N's where the fold swaps A and B) —
 * a bias along the columns: the same for every row and step of the
 * fold — loaded once per column of the thread before the fold's loop, into
 * _hf<k>[cols] (0 past N), and printed as _hf<k>[_j] inside it. */
static void hoist_columns(gemm_emitter *ge, const ir_expr *e, int cols) {
  cg_emit *out = &ge->emit;
  const cg_contraction *c = &ge->plan->tiling.c;
  if (e->op == IR_OP_WHERE || e->op == IR_OP_REDUCE || out->n_hoisted + 2 > CG_MAX_HOISTED) return;
  int unsafe = 0, free_of_m = e->type == IR_TY_FLOAT;
  const cg_fold *fd = ge->plan->fold;
  for (int i = 0; i < c->n_m && free_of_m; i++) free_of_m = !ir_expr_mentions_index(e, c->m[i]);
  for (int i = 0; i < fd->n_r && free_of_m; i++) free_of_m = !ir_expr_mentions_index(e, fd->r[i]);
  if (free_of_m && plain_reads(e, &unsafe) && !unsafe) {
    const char *name = cg_fmt(out, "_hf%d", out->n_hoisted);
    cg_line(out, "float %s[%d]; // %s, the same for every row and step of the fold", name, cols,
            cg_expr(out, e));
    cg_line(out, "#pragma unroll");
    cg_line(out, "for (int _j = 0; _j < %d; ++_j) {", cols);
    out->indent++;
    cg_line(out, "const long long _n = _n0 + %s;", column(ge, "_j"));
    cg_line(out, "%s[_j] = 0.0f;", name);
    cg_line(out, "if (_n >= _N) continue;");
    gemm_decode_named(ge, "_n", c->n, c->n_n, "");
    cg_line(out, "%s[_j] = %s;", name, cg_float_value(out, e, cg_expr(out, e)));
    out->indent--;
    cg_line(out, "}");
    cg_substitute(out, e, cg_fmt(out, "%s[_j]", name));
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) hoist_columns(ge, e->arg[i], cols);
}

void gemm_fold_open(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_fold *fd = ge->plan->fold;
  int rows, cols;
  thread_outputs(&ge->plan->tiling.cfg, &rows, &cols);
  ir_red op = fd->red->u.reduce.op;
  const char *r = gemm_join_names(ge, fd->r, fd->n_r);
  ge->fold_saved = out->n_hoisted;
  for (int id = 0; id < ge->plan->s->n_index; id++) ge->bind[id] = ge->names[id];
  hoist_columns(ge, ge->plan->s->rhs, cols);
  cg_line(out, "// the fold: the %s over %s of each output of the thread, running in _red", ir_red_name[op], r);
  cg_line(out, "float _red[%d][%d];", rows, cols);
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i)", rows);
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int _j = 0; _j < %d; ++_j) _red[_i][_j] = %s;", cols, cg_float_literal(out->a, ir_red_identity(op)));
  cg_line(out, "for (long long _r = 0; _r < _R; ++_r) { // each %s: a whole K loop", r);
  out->indent++;
  gemm_decode_named(ge, "_r", fd->r, fd->n_r, "");
}

void gemm_fold_close(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_fold *fd = plan->fold;
  const cg_contraction *c = &plan->tiling.c;
  int rows, cols;
  thread_outputs(&plan->tiling.cfg, &rows, &cols);
  for (int id = 0; id < plan->s->n_index; id++) ge->bind[id] = ge->names[id];
  cg_line(out, "// this %s's outputs folded into _red (digits no value reads are left to the compiler)",
          gemm_join_names(ge, fd->r, fd->n_r));
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _i = 0; _i < %d; ++_i) {", rows);
  out->indent++;
  cg_line(out, "const long long _m = _m0 + %s;", tile_row(ge));
  gemm_decode_named(ge, "_m", c->m, c->n_m, "");
  cg_line(out, "#pragma unroll");
  cg_line(out, "for (int _j = 0; _j < %d; ++_j) {", cols);
  out->indent++;
  cg_line(out, "const long long _n = _n0 + %s;", column(ge, "_j"));
  cg_line(out, "if (_m >= %s || _n >= _N) continue;", gemm_mlimit(plan));
  gemm_decode_named(ge, "_n", c->n, c->n_n, "");
  /* s's element (its epilogue on the accumulator), as t's load of it */
  const char *term = t_value(ge, fd->red->arg[0], fd->load, cg_fmt(out, "(%s)", s_value(ge, acc_of(ge), NULL)));
  cg_line(out, "_red[_i][_j] = %s;", cg_combine(out, fd->red->u.reduce.op, "_red[_i][_j]", term));
  out->indent--;
  cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
  out->indent--;
  cg_line(out, "}");
  out->n_hoisted = ge->fold_saved;
}
