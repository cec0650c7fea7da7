/* gemm_load.c — the tiled contraction's data movement in the K loop,
 * printed from the plan.
 *
 * Before: a plan (gemm_plan.c) and an emitter inside the tile loop.  After
 * each function: its part of the K loop's text — the rows a thread loads
 * (global coordinate, in-range flag, decoded indices or the flat row, the
 * row part of the offset), its k coordinates (decoded once per tile, then
 * advanced by BK digit by digit with one carry each: no division in the K
 * loop; or, for flat K, the k-tile base _kb plus each load's local k), the
 * global loads of one k-tile into the staging registers (zero outside M,
 * N, K), the shared k tables, and the stores of the staging registers
 * into the k-major shared tiles (TF32: rounded when stored). */
#include <string.h>

#include "gemm_impl.h"

/* K is one coordinate: one index (each k slot a variable advanced by BK per
 * k-tile), or flat (each load's k is the k-tile base _kb plus its slot's
 * local offset, nothing carried across k-tiles: a carried variable per slot
 * measured slower on flat K, and flat K comes with up to 16 slots). */
static int k_single(const cg_gemm_plan *plan) { return plan->tiling.c.n_k == 1 || plan->kflat; }

/* The C name of digit `id` of k slot ks (single K: its k). */
static const char *kdigit(gemm_emitter *ge, int ks, int id) {
  if (k_single(ge->plan)) return cg_fmt(&ge->emit, "_k%d", ks);
  return cg_fmt(&ge->emit, "_k%d_%s", ks, ge->names[id]);
}

/* The C name of digit `id` of row slot r of o (one index: the row). */
static const char *rowdigit(gemm_emitter *ge, const gemm_operand *o, int r, int id) {
  if (o->n_x == 1) return cg_fmt(&ge->emit, "_%cr%d", o->tag, r);
  return cg_fmt(&ge->emit, "_%cr%d_%s", o->tag, r, ge->names[id]);
}

static int uses_kslot(const gemm_operand *o, int ks) {
  for (int j = 0; j < o->slots; j++)
    if (o->kslot_of[j] == ks) return 1;
  return 0;
}

/* The K indices stand for k slot ks's digits. */
static void bind_k(gemm_emitter *ge, int ks) {
  const cg_contraction *c = &ge->plan->tiling.c;
  for (int i = 0; i < c->n_k; i++) ge->bind[c->k[i]] = kdigit(ge, ks, c->k[i]);
}

/* Row slots: global x coordinate, in-range flag, decoded indices, and
 * (fast path) the row part of the offset. */
void gemm_emit_rows(gemm_emitter *ge, const gemm_operand *o) {
  cg_emit *out = &ge->emit;
  cg_line(out, "// %c rows this thread loads (%s = %s + local row)%s", o->tag == 'a' ? 'A' : 'B',
          gemm_join_names(ge, o->x, o->n_x), o->x0,
          o->n_x == 1 ? "" : o->flat_rows ? ", addressed through the flat row" : ", decoded once per tile");
  for (int r = 0; r < o->n_rows; r++) {
    const char *row = cg_fmt(out, "_%cr%d", o->tag, r);
    cg_line(out, "const long long %s = %s + %s;", row, o->x0, o->row_expr[r]);
    /* (the vector loop's chunks along x test each of their elements) */
    if (!ge->plan->vec || o->kmajor || gemm_float_copies(o)) cg_line(out, "const bool %sok = %s < %s;", row, row, o->X);
    if (o->flat_rows) { /* the row offset is a function of the flat row */
      ge->bind[o->x[o->n_x - 1]] = row;
      cg_line(out, "const long long _%co%d = %s;", o->tag, r, cg_sym(out, o->row_off));
      continue;
    }
    if (o->n_x > 1) {
      const char **dst = KBC_NEW_ARRAY(out->a, const char *, o->n_x);
      for (int i = 0; i < o->n_x; i++) dst[i] = rowdigit(ge, o, r, o->x[i]);
      gemm_declare_decode(ge, row, o->x, o->n_x, dst, "");
    }
    if (o->fast) {
      for (int i = 0; i < o->n_x; i++) ge->bind[o->x[i]] = rowdigit(ge, o, r, o->x[i]);
      cg_line(out, "const long long _%co%d = %s;", o->tag, r, cg_sym(out, o->row_off));
    }
  }
}

/* The k offsets of the fast operands' k slots (not from a table). */
static void emit_k_offsets(gemm_emitter *ge) {
  const cg_gemm_plan *plan = ge->plan;
  for (int ks = 0; ks < plan->n_kslots && plan->kflat; ks++)
    if (uses_kslot(&plan->op[0], ks) || uses_kslot(&plan->op[1], ks))
      cg_line(&ge->emit, "const long long _k%d = _kb + %s;", ks, plan->kslot_expr[ks]);
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    if (!o->fast || o->table) continue;
    for (int ks = 0; ks < plan->n_kslots; ks++) {
      if (!uses_kslot(o, ks)) continue;
      bind_k(ge, ks);
      cg_line(&ge->emit, "const long long _%cq%d = %s;", o->tag, ks, cg_sym(&ge->emit, o->k_off));
    }
  }
}

/* The indices of o's load slot j stand for its row's digits and its k's
 * (from the k table, or the k slot's own). */
static void bind_slot(gemm_emitter *ge, const gemm_operand *o, int j, const char *tbuf) {
  const cg_contraction *c = &ge->plan->tiling.c;
  for (int i = 0; i < o->n_x; i++) ge->bind[o->x[i]] = rowdigit(ge, o, o->row_of[j], o->x[i]);
  if (o->table && ge->plan->ktab)
    for (int i = 0; i < c->n_k; i++) ge->bind[c->k[i]] = cg_fmt(&ge->emit, "_kdk[%d][_kb + (%s)]", i, o->kl[j]);
  else if (o->table)
    for (int i = 0; i < c->n_k; i++) ge->bind[c->k[i]] = cg_fmt(&ge->emit, "_kd[%s][%d][%s]", tbuf, i, o->kl[j]);
  else
    bind_k(ge, o->kslot_of[j]);
}

const char *gemm_guard_test(gemm_emitter *ge, const gemm_operand *o, int j) {
  if (!o->guarded) return "true";
  bind_slot(ge, o, j, NULL);
  return cg_in_bounds(&ge->emit, o->e->u.load.tensor, o->e->u.load.idx);
}

/* The threads that take o's load slot j: all (0), or, for the last slot
 * of a tile that does not fill it, those below the returned count. */
static int slot_threads(gemm_emitter *ge, const gemm_operand *o, int j) {
  return o->partial && j == o->slots - 1 ? o->bx * ge->plan->tiling.cfg.bk - j * GEMM_THREADS : 0;
}

/* The condition under which o's load slot j reads memory (else 0). */
static const char *load_cond(gemm_emitter *ge, const gemm_operand *o, int j, const char *tbuf) {
  cg_emit *out = &ge->emit;
  int r = o->row_of[j], ks = o->kslot_of[j];
  const char *cond = o->table ? cg_fmt(out, "_%cr%dok && _kb + %s < _kend", o->tag, r, o->kl[j])
                              : cg_fmt(out, "_%cr%dok && _k%d < _kend", o->tag, r, ks);
  if (slot_threads(ge, o, j)) cond = cg_fmt(out, "%s && _tid < %d", cond, slot_threads(ge, o, j));
  if (o->guarded) { /* the in-bounds test over the row and k digits */
    bind_slot(ge, o, j, tbuf);
    const char *inb = cg_in_bounds(out, o->e->u.load.tensor, o->e->u.load.idx);
    if (strcmp(inb, "true")) cond = cg_fmt(out, "%s && %s", cond, inb);
  }
  return cond;
}

/* The flat offset of fast operand o's load slot j. */
static const char *fast_offset(gemm_emitter *ge, const gemm_operand *o, int j, const char *tbuf) {
  const char *koff = o->table && ge->plan->ktab ? cg_fmt(&ge->emit, "_%cqk[_kb + (%s)]", o->tag, o->kl[j])
                     : o->table             ? cg_fmt(&ge->emit, "_%cqt[%s][%s]", o->tag, tbuf, o->kl[j])
                                            : cg_fmt(&ge->emit, "_%cq%d", o->tag, o->kslot_of[j]);
  return cg_fmt(&ge->emit, "_%co%d + %s", o->tag, o->row_of[j], koff);
}

/* Load slot j of o into its staging register. */
static void emit_load(gemm_emitter *ge, const gemm_operand *o, int j, const char *tbuf) {
  cg_emit *out = &ge->emit;
  const char *cond = load_cond(ge, o, j, tbuf);
  if (o->fast) {
    const ir_tensor *t = o->e->u.load.tensor;
    cg_line(out, "_%cv[%d] = %s ? %s[%s] : 0.0f;", o->tag, j, cond, ge->ctx->names->tensor[t->id],
            fast_offset(ge, o, j, tbuf));
    return;
  }
  bind_slot(ge, o, j, tbuf);
  cg_line(out, "_%cv[%d] = 0.0f;", o->tag, j);
  cg_line(out, "if (%s) {", cond);
  out->indent++;
  const char *v = cg_float_value(out, o->e, cg_expr(out, o->e));
  cg_line(out, "_%cv[%d] = %s;", o->tag, j, v);
  out->indent--;
  cg_line(out, "}");
}

void gemm_emit_loads(gemm_emitter *ge, const char *tbuf) {
  emit_k_offsets(ge);
  for (int w = 0; w < 2; w++)
    for (int j = 0; j < ge->plan->op[w].slots; j++) emit_load(ge, &ge->plan->op[w], j, tbuf);
}

void gemm_emit_table_write(gemm_emitter *ge, const char *buf) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  if (plan->builder < 0) return;
  cg_line(out, "if (_tid < %d) { // k table: digits / offsets of this k-tile's k = base + _tid", plan->tiling.cfg.bk);
  out->indent++;
  bind_k(ge, plan->builder);
  if (plan->table_digits)
    for (int i = 0; i < c->n_k; i++) cg_line(out, "_kd[%s][%d][_tid] = %s;", buf, i, kdigit(ge, plan->builder, c->k[i]));
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    if (o->table && o->fast) cg_line(out, "_%cqt[%s][_tid] = %s;", o->tag, buf, cg_sym(out, o->k_off));
  }
  out->indent--;
  cg_line(out, "}");
}

void gemm_emit_ktab(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  if (!plan->ktab) return;
  cg_line(out, "// the k tables of the whole K (%s, padded to %d), once per block: each k's %s",
          gemm_join_names(ge, c->k, c->n_k), plan->ktab, plan->table_digits ? "digits and offsets" : "offsets");
  cg_line(out, "for (int _kx = _tid; _kx < %d; _kx += %d) {", plan->ktab, GEMM_THREADS);
  out->indent++;
  cg_line(out, "const bool _kxok = _kx < _K;");
  const char **dst = gemm_declare_digits(ge, "_kx", c->k, c->n_k, "_kx_", "");
  for (int i = 0; i < c->n_k; i++) ge->bind[c->k[i]] = dst[i];
  if (plan->table_digits)
    for (int i = 0; i < c->n_k; i++) cg_line(out, "_kdk[%d][_kx] = _kxok ? %s : 0;", i, dst[i]);
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    if (o->table && o->fast) cg_line(out, "_%cqk[_kx] = _kxok ? %s : 0;", o->tag, cg_sym(out, o->k_off));
  }
  out->indent--;
  cg_line(out, "}");
  cg_line(out, "__syncthreads();");
}

/* The shared tile column of o's load slot j: its local x (FFMA thread
 * tiles of tt % 4 values: each thread's chunk padded to 4k). */
static const char *tile_col(gemm_emitter *ge, const gemm_operand *o, int j) {
  const gemm_cfg *f = &ge->plan->tiling.cfg;
  int tt = o->tag == 'a' ? f->tm : f->tn;
  const char *col = o->xl[j];
  if (!f->mma && tt % 4) col = cg_fmt(&ge->emit, "(%s) / %d * %d + (%s) %% %d", col, tt, (tt + 3) / 4 * 4, col, tt);
  return col;
}

void gemm_emit_copies(gemm_emitter *ge, const char *stage) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  if (plan->vec) {
    gemm_vec_copies(ge, stage);
    return;
  }
  emit_k_offsets(ge);
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    char T = o->tag == 'a' ? 'A' : 'B';
    int ld = o->tag == 'a' ? f->sa + f->pad_a : f->sb + f->pad_b;
    const char *name = ge->ctx->names->tensor[o->e->u.load.tensor->id];
    for (int j = 0; j < o->slots; j++) {
      const char *col = tile_col(ge, o, j);
      int n = slot_threads(ge, o, j);
      cg_line(out, "%s{", n ? cg_fmt(out, "if (_tid < %d) ", n) : "");
      out->indent++;
      cg_line(out, "const bool _ok = %s;", load_cond(ge, o, j, "0"));
      cg_line(out, "kbc_cp_async4(&_%cs[%s][%s][%s], _s%c + 4u * (unsigned)(((%s) * %d + %s) * %d + %s), _ok ? %s + (%s) : %s, _ok);",
              T, stage, o->kl[j], col, T, stage, f->bk, o->kl[j], ld, col, name, fast_offset(ge, o, j, "0"), name);
      out->indent--;
      cg_line(out, "}");
    }
  }
}

void gemm_emit_stores(gemm_emitter *ge, const char *buf) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_cfg *f = &plan->tiling.cfg;
  for (int w = 0; w < 2; w++) {
    const gemm_operand *o = &plan->op[w];
    for (int j = 0; j < o->slots; j++) {
      /* TF32: rounded once when stored; 3xTF32 keeps the fp32 value, split at use */
      const char *v = f->mma && !plan->tiling.split3 ? cg_fmt(out, "kbc_tf32(_%cv[%d])", o->tag, j)
                                                      : cg_fmt(out, "_%cv[%d]", o->tag, j);
      const char *col = tile_col(ge, o, j);
      const char *st = cg_fmt(out, "_%cs[%s][%s][%s] = %s;", o->tag == 'a' ? 'A' : 'B', buf, o->kl[j], col, v);
      if (slot_threads(ge, o, j)) cg_line(out, "if (_tid < %d) %s", slot_threads(ge, o, j), st);
      else
        cg_line(out, "%s", st);
    }
  }
}

/* Advances every k slot by BK: the flat coordinate, and the digits by the
 * digits of BK in the same mixed radix (_kinc_*, computed once), each digit
 * with at most one carry (a digit < extent plus an increment < extent plus
 * a carry stays below twice the extent). */
void gemm_emit_k_advance(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  if (plan->kflat) return;
  for (int ks = 0; ks < plan->n_kslots; ks++) {
    cg_line(out, "_k%d += %d;", ks, plan->tiling.cfg.bk);
    if (c->n_k == 1) continue;
    for (int i = c->n_k - 1; i > 0; i--) {
      const char *d = kdigit(ge, ks, c->k[i]), *ext = cg_sym(out, plan->s->index[c->k[i]].extent);
      cg_line(out, "%s += _kinc_%s;", d, ge->names[c->k[i]]);
      cg_line(out, "if (%s >= %s) { %s -= %s; ++%s; }", d, ext, d, ext, kdigit(ge, ks, c->k[i - 1]));
    }
    cg_line(out, "%s += _kinc_%s;", kdigit(ge, ks, c->k[0]), ge->names[c->k[0]]);
  }
}

/* The digits of BK in the mixed radix of the K indices. */
void gemm_emit_k_increments(gemm_emitter *ge) {
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  if (k_single(plan)) return;
  gemm_declare_digits(ge, cg_fmt(&ge->emit, "%dLL", plan->tiling.cfg.bk), c->k, c->n_k, "_kinc_",
                      cg_fmt(&ge->emit, " // %d as digits of (%s)", plan->tiling.cfg.bk, gemm_join_names(ge, c->k, c->n_k)));
}

/* The k coordinates of the thread's k slots at the tile's first k-tile. */
void gemm_emit_k_init(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  if (plan->kflat) {
    cg_line(out, "// k of each load: the k-tile base _kb plus the load's local k (%s = k, addressed through the flat k)",
            gemm_join_names(ge, c->k, c->n_k));
    return;
  }
  cg_line(out, "// k coordinates this thread loads (%s = k), advanced by %d per k-tile", gemm_join_names(ge, c->k, c->n_k),
          plan->tiling.cfg.bk);
  for (int ks = 0; ks < plan->n_kslots; ks++) {
    cg_line(out, "long long _k%d = _kt0 * %d + %s;", ks, plan->tiling.cfg.bk, plan->kslot_expr[ks]);
    if (c->n_k == 1) continue;
    const char **dst = KBC_NEW_ARRAY(out->a, const char *, c->n_k);
    for (int i = 0; i < c->n_k; i++) dst[i] = kdigit(ge, ks, c->k[i]);
    gemm_declare_decode(ge, cg_fmt(out, "_k%d", ks), c->k, c->n_k, dst, "");
  }
}

void gemm_emit_chunk_copy(cg_emit *out, const char *src, const char *in4, const char *q, const char *in1) {
  cg_line(out, "if (%s && ((unsigned long long)(size_t)(%s + _o) & 15) == 0) {", in4, src);
  cg_line(out, "  kbc_cp_async16(_d, _ds, %s + _o, true);", src);
  cg_line(out, "} else { // at an edge or unaligned: a float at a time, zero outside");
  cg_line(out, "  #pragma unroll");
  cg_line(out, "  for (int %s = 0; %s < 4; ++%s) {", q, q, q);
  cg_line(out, "    const bool _ok = %s;", in1);
  cg_line(out, "    kbc_cp_async4(_d + %s, _ds + 4u * %s, _ok ? %s + _o + %s : %s, _ok);", q, q, src, q, src);
  cg_line(out, "  }");
  cg_line(out, "}");
}
