/* attn_emit.c — the fused attention family's kernel, printed from its plan.
 *
 * Before: the plan (attn_plan.c).  After cg_emit_attn(): one kernel, a
 * block per (batch point, row tile, N2 tile), 256 threads, sweeping the
 * columns a tile at a time (the layout's numbers: attn_impl.h):
 *   1. the scores tile over D in chunks of 32 through shared memory
 *      (attn_math.c: FFMA, or mma.sync), then S's epilogue per element,
 *      guarded so that nothing outside the extents is read;
 *   2. the row statistics: the running max m (reduced across the row's
 *      threads at every tile), the other rows per thread;
 *   3. alpha = exp(m_old - m_new) rescales the sums and the accumulator;
 *   4. the consumer's varying factors E per element into shared memory,
 *      and the accumulator += E . V over the tile's columns.
 * At the end the rows are combined across their threads, those needed
 * later are stored, and the consumer's epilogue is applied to F times the
 * accumulator.  s and the pointwise tiles never reach memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_impl.h"

/* Emits in the context of chain statement q. */
cg_emit *attn_at(attn_emitter *ae, int q) {
  ae->E.s = ae->ch->st[q].s;
  ae->E.idx = ae->plan->idx[q];
  return &ae->E;
}

const char *attn_expr_at(attn_emitter *ae, int q, const ir_expr *e, const char *known_value) {
  cg_emit *E = attn_at(ae, q);
  cg_expr_ctx x = {.value_of = ae->value};
  if (known_value) {
    const attn_stmt *st = &ae->ch->st[q];
    x.known = q == 0 ? ae->ch->c1.reduce : st->role == ATTN_S2 ? ae->ch->s2[st->s2].reduce : ae->ch->c2.reduce;
    x.known_value = known_value;
  }
  return cg_float_value(E, e, cg_expr_in(E, e, &x));
}

void attn_declare_digits(cg_emit *E, const tile_space *sp) {
  for (int i = 0; i < sp->n; i++) cg_line(E, "long long %s;", E->idx[sp->ids[i]]);
}

/* The digits of flat over the space, into its indices' names; the N2's
 * split indices over [0, c), then offset by c times their batch index. */
void attn_decode_into(attn_emitter *ae, const char *q, const char *flat, const tile_space *sp) {
  cg_emit *E = &ae->E;
  if (!sp->n2) {
    const char *dst[CG_MAX_OUTER];
    for (int i = 0; i < sp->n; i++) dst[i] = E->idx[sp->ids[i]];
    cg_decode(E, q, flat, sp->ids, sp->n, dst);
    return;
  }
  cg_line(E, "{");
  E->indent++;
  cg_line(E, "long long %s = %s;", q, flat);
  for (int i = sp->n - 1; i >= 0; i--) {
    const char *nm = E->idx[sp->ids[i]];
    const char *ext = cg_sym(E, attn_n2_extent(E->a, ae->ch, i));
    if (i > 0) {
      cg_line(E, "%s = %s %% %s;", nm, q, ext);
      cg_line(E, "%s /= %s;", q, ext);
    } else {
      cg_line(E, "%s = %s;", nm, q);
    }
    int frame;
    const int64_t *c = attn_split_c(ae->ch, i, &frame);
    if (c) cg_line(E, "%s += %lldLL * %s; // the batch index it splits into", nm, (long long)*c, ae->plan->idx[0][frame]);
  }
  E->indent--;
  cg_line(E, "}");
}

/* dst[r * ld + c] = value at (row r of space row, column c of space col),
 * 0 outside the extents; consecutive threads along the columns where
 * col_fast, else along the rows. */
static void emit_tile_load(attn_emitter *ae, int q, const char *dst, int ld, const tile_space *row,
                           const tile_space *col, int col_fast, const ir_expr *value) {
  cg_emit *E = attn_at(ae, q);
  int n = row->count * col->count;
  cg_line(E, "for (int _e = _tid; _e < %d; _e += %d) {", n, AT_THREADS);
  E->indent++;
  if (col_fast) cg_line(E, "const int _u = _e / %d, _v = _e %% %d;", col->count, col->count);
  else cg_line(E, "const int _u = _e %% %d, _v = _e / %d;", row->count, row->count);
  cg_line(E, "const long long _gu = %s + _u, _gv = %s + _v;", row->base, col->base);
  cg_line(E, "float _x = 0.0f;");
  cg_line(E, "if (_gu < %s && _gv < %s) {", row->extent, col->extent);
  E->indent++;
  attn_declare_digits(E, row);
  attn_declare_digits(E, col);
  attn_decode_into(ae, "_qu", "_gu", row);
  attn_decode_into(ae, "_qv", "_gv", col);
  cg_line(E, "_x = %s;", attn_expr_at(ae, q, value, NULL));
  E->indent--;
  cg_line(E, "}");
  cg_line(E, "%s[_u * %d + _v] = _x;", dst, ld);
  E->indent--;
  cg_line(E, "}");
}

/* const long long <digit> = _<pfx>_<digit>[sub]; for the ids of S. */
static void bind_digits(attn_emitter *ae, const char *pfx, const int *ids, int n, const char *sub) {
  for (int i = 0; i < n; i++) {
    const char *nm = ae->plan->idx[0][ids[i]];
    cg_line(&ae->E, "const long long %s = _%s_%s[%s];", nm, pfx, nm, sub);
  }
}

/* Per thread: its `count` rows (or columns) of the tile, at base + pos(_l),
 * their digits and whether each is inside the extent. */
void attn_emit_lines(attn_emitter *ae, const char *pfx, const int *ids, int n, int count, const char *base,
                       const char *pos, const char *extent) {
  cg_emit *E = attn_at(ae, 0);
  for (int i = 0; i < n; i++) cg_line(E, "long long _%s_%s[%d];", pfx, E->idx[ids[i]], count);
  cg_line(E, "bool _%sok[%d];", pfx, count);
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _l = 0; _l < %d; ++_l) {", count);
  E->indent++;
  cg_line(E, "const long long _gl = %s + %s;", base, pos);
  cg_line(E, "_%sok[_l] = _gl < %s;", pfx, extent);
  const char *dst[CG_MAX_OUTER];
  for (int i = 0; i < n; i++) dst[i] = cg_fmt(E, "_%s_%s[_l]", pfx, E->idx[ids[i]]);
  cg_decode(E, "_q", "_gl", ids, n, dst);
  E->indent--;
  cg_line(E, "}");
}

static const char *C_name(const attn_emitter *ae, const ir_tensor *t) { return ae->E.names->tensor[t->id]; }

/* "{x, x, ...}", one x per row of the thread. */
static const char *all_of(attn_emitter *ae, const char *x) {
  const char *s = x;
  for (int i = 1; i < ae->plan->lay.nr; i++) s = cg_fmt(&ae->E, "%s, %s", s, x);
  return cg_fmt(&ae->E, "{%s}", s);
}

/* The row statistics' accumulator names. */
static const char *row_name(attn_emitter *ae, int q) { return cg_fmt(&ae->E, "_row%d", q); }

static void set_wide_values(attn_emitter *ae, int on) {
  const cg_attention *ch = ae->ch;
  const char **v = ae->value;
  for (int q = 1; q < ch->count; q++)
    if (ch->st[q].role == ATTN_WIDE) v[ch->st[q].s->out->id] = on ? cg_fmt(&ae->E, "_w%d", q) : NULL;
}

/* The scores products' values at the element (after their epilogues). */
static void set_product_values(attn_emitter *ae, int on) {
  const cg_attention *ch = ae->ch;
  for (int pi = 0; pi <= ch->n_s2; pi++)
    ae->value[ch->st[attn_product_at(ch, pi)].s->out->id] = on ? attn_product_name(ae, "_sv", pi) : NULL;
}

/* Per element (_i, _j) of the thread's 4 x 4, inside `if (_ok)`: the
 * pointwise tiles of the phase (late: those reading the running max too). */
static void emit_wides(attn_emitter *ae, int late) {
  const cg_attention *ch = ae->ch;
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *w = &ch->st[q];
    if (w->role != ATTN_WIDE || w->on_sums || (w->late && !late)) continue;
    const char *v = attn_expr_at(ae, q, w->s->rhs, NULL);
    cg_line(&ae->E, "const float _w%d = %s;", q, v);
  }
}

/* The element loop's head: digits of row _i and column _j, _ok. */
static void element_loop(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  cg_emit *E = &ae->E;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _i = 0; _i < %d; ++_i)", ae->plan->lay.nr);
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _j = 0; _j < %d; ++_j) {", ae->plan->lay.nc);
  E->indent++;
  bind_digits(ae, "r", ch->c1.m, ch->c1.n_m, "_i");
  bind_digits(ae, "c", ch->c1.n, ch->c1.n_n, "_j");
  cg_line(E, "const bool _ok = _rok[_i] && _cok[_j];");
}

static void close_block(attn_emitter *ae) {
  ae->E.indent--;
  cg_line(&ae->E, "}");
}

/* Phase A: the scores tile's epilogue, the plain rows (the running max's
 * tile max). */
void attn_emit_phase_a(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  cg_emit *E = &ae->E;
  if (ch->m_row >= 0) cg_line(E, "float _tmax[%d] = %s;", ae->plan->lay.nr, all_of(ae, "_ninf"));
  element_loop(ae);
  for (int pi = 0; pi <= ch->n_s2; pi++) cg_line(E, "float %s = 0.0f;", attn_product_name(ae, "_sv", pi));
  cg_line(E, "if (_ok) {");
  E->indent++;
  for (int pi = 0; pi <= ch->n_s2; pi++) {
    int q = attn_product_at(ch, pi);
    cg_line(E, "%s = %s;", attn_product_name(ae, "_sv", pi),
            attn_expr_at(ae, q, ch->st[q].s->rhs, attn_reg_at(ae, attn_product_name(ae, "_s", pi), "_i", "_j")));
  }
  set_product_values(ae, 1);
  set_wide_values(ae, 1);
  emit_wides(ae, 0);
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *r = &ch->st[q];
    if (r->role != ATTN_ROW || r->scaled) continue;
    const char *acc = q == ch->m_row ? "_tmax[_i]" : cg_fmt(E, "%s[_i]", row_name(ae, q));
    const char *body = attn_expr_at(ae, q, r->s->rhs->arg[0], NULL);
    cg_line(E, "%s = %s;", acc, cg_combine(E, r->op, acc, body));
  }
  close_block(ae);
  for (int pi = 0; pi <= ch->n_s2; pi++)
    cg_line(E, "%s = %s;", attn_reg_at(ae, attn_product_name(ae, "_s", pi), "_i", "_j"),
            attn_product_name(ae, "_sv", pi));
  close_block(ae);
  set_wide_values(ae, 0);
  set_product_values(ae, 0);
}

/* The running max: the tile's max across the row's threads, the new
 * max, alpha, and _mu the max the exponentials subtract (0 while no
 * column was finite: exp(-inf - 0) = 0 where exp(-inf + inf) is NaN).
 * While nothing was summed (the old max -inf) alpha is 0, not exp(0 -
 * _mu), which overflows for a very negative first max (found by the
 * kernel emulator on CViT's attention with inputs in [-30, 30)). */
void attn_emit_rescale(attn_emitter *ae) {
  cg_emit *E = &ae->E;
  if (ae->ch->m_row < 0) return;
  const attn_layout *L = &ae->plan->lay;
  cg_line(E, "float _alpha[%d], _mu[%d];", L->nr, L->nr);
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _i = 0; _i < %d; ++_i) {", L->nr);
  E->indent++;
  cg_line(E, "float _t = _tmax[_i];");
  cg_line(E, "for (int _x = %d; _x > 0; _x >>= 1) _t = fmaxf(_t, __shfl_xor_sync(0xffffffffu, _t, _x));", L->lanes / 2);
  cg_line(E, "const float _mn = fmaxf(_m[_i], _t);");
  cg_line(E, "_mu[_i] = _mn == _ninf ? 0.0f : _mn;");
  cg_line(E, "_alpha[_i] = _m[_i] == _ninf ? 0.0f : expf(_m[_i] - _mu[_i]); // nothing summed yet: 0");
  cg_line(E, "_m[_i] = _mn;");
  close_block(ae);
}

static int e_scaled(const cg_attention *ch) {
  for (int i = 0; i < ch->n_e; i++)
    if (ch->e[i].scaled) return 1;
  return 0;
}

static const char *product(attn_emitter *ae, const attn_factor *f, int n) {
  const char *p = NULL;
  for (int i = 0; i < n; i++) {
    const char *x = attn_expr_at(ae, f[i].at, f[i].e, NULL);
    if (!p) p = f[i].inv ? cg_fmt(&ae->E, "(1.0f / %s)", x) : x;
    else p = cg_fmt(&ae->E, f[i].inv ? "(%s / %s)" : "(%s * %s)", p, x);
  }
  return p ? p : "1.0f";
}

/* Phase B: the rescaled sums and E into _Ps (column-major). */
void attn_emit_phase_b(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  cg_emit *E = &ae->E;
  const char **v = ae->value;
  int any_scaled = 0;
  for (int q = 1; q < ch->count; q++) any_scaled |= ch->st[q].role == ATTN_ROW && ch->st[q].scaled;
  const attn_layout *L = &ae->plan->lay;
  if (ch->m_row >= 0 && (any_scaled || e_scaled(ch))) {
    cg_line(E, "#pragma unroll");
    cg_line(E, "for (int _i = 0; _i < %d; ++_i) {", L->nr);
    E->indent++;
    for (int q = 1; q < ch->count; q++)
      if (ch->st[q].role == ATTN_ROW && ch->st[q].scaled) cg_line(E, "%s[_i] *= _alpha[_i];", row_name(ae, q));
    if (e_scaled(ch)) {
      cg_line(E, "#pragma unroll");
      cg_line(E, "for (int _n = 0; _n < %d; ++_n) %s *= _alpha[_i];", L->no, attn_o_at(ae, "_i", "_n"));
    }
    close_block(ae);
  }
  element_loop(ae);
  cg_line(E, "float _pv = 0.0f;");
  for (int k = 0; k < ch->n_part; k++)
    if (ch->part[k].stage == k) cg_line(E, "float _x%d = 0.0f; // staged for %s", k, ch->st[ch->part[k].at].s->out->name);
  cg_line(E, "if (_ok) {");
  E->indent++;
  for (int pi = 0; pi <= ch->n_s2; pi++)
    cg_line(E, "const float %s = %s;", attn_product_name(ae, "_sv", pi),
            attn_reg_at(ae, attn_product_name(ae, "_s", pi), "_i", "_j"));
  set_product_values(ae, 1);
  if (ch->m_row >= 0) v[ch->st[ch->m_row].s->out->id] = "_mu[_i]";
  set_wide_values(ae, 1);
  emit_wides(ae, 1);
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *r = &ch->st[q];
    if (r->role != ATTN_ROW || !r->scaled) continue;
    cg_line(E, "%s[_i] += %s;", row_name(ae, q), attn_expr_at(ae, q, r->s->rhs->arg[0], NULL));
  }
  cg_line(E, "_pv = %s;", product(ae, ch->e, ch->n_e));
  for (int k = 0; k < ch->n_part; k++)
    if (ch->part[k].stage == k) {
      int q = ch->part[k].at;
      cg_line(E, "_x%d = %s;", k, attn_expr_at(ae, q, ch->st[q].s->rhs->arg[0], NULL));
    }
  close_block(ae);
  for (int k = 0; k < ch->n_part; k++)
    if (ch->part[k].stage == k)
      cg_line(E, "_T%d[%s * %d + %s] = _x%d;", k, attn_row(ae, "_i"), attn_part_ldt(L->bc), attn_col(ae, "_j"), k);
  if (L->pipe) cg_line(E, "%s = _pv; // P stays in the scores' registers", attn_s_at(ae, "_i", "_j"));
  else cg_line(E, "_Ps[%s * %d + %s] = _pv;", attn_col(ae, "_j"), L->ldp, attn_row(ae, "_i"));
  close_block(ae);
  set_wide_values(ae, 0);
  set_product_values(ae, 0);
  if (ch->m_row >= 0) v[ch->st[ch->m_row].s->out->id] = NULL;
}

/* The scores tile over D in chunks through _Qs / _Ks (attn_math.c). */
static void emit_scores(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const cg_attn_plan *plan = ae->plan;
  const attn_layout *L = &plan->lay;
  cg_emit *E = attn_at(ae, 0);
  if (L->mma) cg_line(E, "float _s[%d][4] = {}; // per n8 tile: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)", L->bc / 8);
  else cg_line(E, "float _s[4][4] = {};");
  cg_line(E, "for (long long _d0 = 0; _d0 < _D; _d0 += %d) {", AT_DK);
  E->indent++;
  cg_line(E, "__syncthreads(); // the tiles' last readers are done");
  tile_space d = {.ids = ch->c1.k, .n = ch->c1.n_k, .base = "_d0", .extent = "_D", .count = AT_DK};
  tile_space r = {.ids = ch->c1.m, .n = ch->c1.n_m, .base = "_r0", .extent = "_R", .count = L->br};
  tile_space c = {.ids = ch->c1.n, .n = ch->c1.n_n, .base = "_c0", .extent = "_C", .count = L->bc};
  emit_tile_load(ae, 0, "_Qs", L->ldq, &d, &r, !plan->opd[0].q_fast, ch->c1.a);
  emit_tile_load(ae, 0, "_Ks", L->ldk, &d, &c, !plan->opd[0].k_fast, ch->c1.b);
  cg_line(E, "__syncthreads();");
  attn_emit_scores_math(ae);
  close_block(ae);
}

/* _o += P . V over the tile's columns, V through _Vs in chunks of AT_VC. */
static void emit_pv(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const cg_attn_plan *plan = ae->plan;
  const attn_layout *L = &plan->lay;
  int q = ch->count - 1;
  cg_emit *E = attn_at(ae, q);
  cg_line(E, "for (int _v0 = 0; _v0 < %d; _v0 += %d) {", L->bc, AT_VC);
  E->indent++;
  cg_line(E, "__syncthreads(); // _Ps written, _Vs free");
  cg_line(E, "const long long _cv = _c0 + _v0;");
  tile_space c = {.ids = ch->c2.k, .n = ch->c2.n_k, .base = "_cv", .extent = "_C", .count = AT_VC};
  tile_space n = {.ids = ch->n2, .n = ch->n_n2, .base = "_n0", .extent = "_N2", .count = L->nt, .n2 = 1};
  emit_tile_load(ae, q, "_Vs", L->ldv, &c, &n, plan->v_n_fast, ch->c2.b);
  cg_line(E, "__syncthreads();");
  attn_emit_pv_math(ae);
  close_block(ae);
}

/* After the sweep: rows combined across their threads, kept rows stored,
 * the consumer's epilogue on F times the accumulator. */
void attn_emit_finish(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  const char **v = ae->value;
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *r = &ch->st[q];
    if (r->role != ATTN_ROW) continue;
    if (q != ch->m_row) {
      cg_line(E, "#pragma unroll");
      cg_line(E, "for (int _i = 0; _i < %d; ++_i)", L->nr);
      cg_line(E, "  for (int _x = %d; _x > 0; _x >>= 1)", L->lanes / 2);
      cg_line(E, "    %s[_i] = %s;", row_name(ae, q),
              cg_combine(E, r->op, cg_fmt(E, "%s[_i]", row_name(ae, q)),
                         cg_fmt(E, "__shfl_xor_sync(0xffffffffu, %s[_i], _x)", row_name(ae, q))));
    }
    v[r->s->out->id] = q == ch->m_row ? "_m[_i]" : cg_fmt(E, "%s[_i]", row_name(ae, q));
  }
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _i = 0; _i < %d; ++_i) {", L->nr);
  E->indent++;
  cg_line(E, "if (!_rok[_i]) continue;");
  bind_digits(ae, "r", ch->c1.m, ch->c1.n_m, "_i");
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *r = &ch->st[q];
    if (r->role != ATTN_ROW || !r->keep) continue;
    cg_emit *Eq = attn_at(ae, q);
    cg_line(Eq, "if (%s) %s[%s] = %s;", attn_lane0(ae), C_name(ae, r->s->out), cg_offset(Eq, r->s->out, r->s->lhs),
            v[r->s->out->id]);
  }
  cg_line(E, "const float _F = %s;", product(ae, ch->f, ch->n_f));
  int q = ch->count - 1;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _n = 0; _n < %d; ++_n) {", L->no);
  E->indent++;
  cg_line(E, "const long long _gn = _n0 + %s;", attn_ocol(ae, "_n"));
  cg_line(E, "if (_gn >= _N2) continue;");
  cg_emit *Eo = attn_at(ae, q);
  tile_space n = {.ids = ch->n2, .n = ch->n_n2, .base = "_n0", .extent = "_N2", .count = 0, .n2 = 1};
  attn_declare_digits(Eo, &n);
  attn_decode_into(ae, "_qn", "_gn", &n);
  const char *val = attn_expr_at(ae, q, ch->O->rhs, cg_fmt(E, "(_F * %s)", attn_o_at(ae, "_i", "_n")));
  cg_line(Eo, "%s[%s] = %s;", C_name(ae, ch->O->out), cg_offset(Eo, ch->O->out, ch->O->lhs), val);
  close_block(ae);
  close_block(ae);
  for (int r = 1; r < ch->count; r++) v[ch->st[r].s->out->id] = NULL;
}

/* a*col + b*row + c as C text, zero terms left out. */
static const char *affine_text(cg_emit *E, const attn_mask *mk, const char *col, const char *row) {
  const char *t = NULL;
  const int64_t coef[2] = {mk->a, mk->b};
  const char *var[2] = {col, row};
  for (int i = 0; i < 2; i++) {
    if (!coef[i]) continue;
    const char *term = coef[i] == 1 || coef[i] == -1 ? var[i] : cg_fmt(E, "%lldLL * %s", (long long)llabs(coef[i]), var[i]);
    t = !t ? (coef[i] < 0 ? cg_fmt(E, "-%s", term) : term) : cg_fmt(E, "%s %c %s", t, coef[i] < 0 ? '-' : '+', term);
  }
  if (!t) return cg_fmt(E, "%lldLL", (long long)mk->c);
  return mk->c ? cg_fmt(E, "%s %c %lldLL", t, mk->c < 0 ? '-' : '+', (long long)llabs(mk->c)) : t;
}

const char *attn_emit_mask_test(attn_emitter *ae, const char *col0) {
  const attn_mask *mk = &ae->plan->mask;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  const char *k = cg_float_literal(E->a, mk->k);
  cg_line(E, "// a tile where the mask selects %s everywhere adds nothing once every row's max is far above it", k);
  cg_line(E, "const long long _ilo = _r0, _ihi = kbc_min_ll(_r0 + %d, _R) - 1;", L->br);
  cg_line(E, "const long long _jlo = %s, _jhi = kbc_min_ll(%s + %d, _C) - 1;", col0, col0, L->bc);
  const char *lo = affine_text(E, mk, mk->a > 0 ? "_jlo" : "_jhi", mk->b > 0 ? "_ilo" : "_ihi");
  const char *hi = affine_text(E, mk, mk->a > 0 ? "_jhi" : "_jlo", mk->b > 0 ? "_ihi" : "_ilo");
  cg_line(E, "const long long _dlo = %s, _dhi = %s; // the condition's sides' difference over the tile", lo, hi);
  cg_line(E, "bool _far = true;");
  cg_line(E, "for (int _i = 0; _i < %d; ++_i) _far = _far && (!_rok[_i] || %s - _m[_i] < -128.0f);", L->nr, k);
  const char *always, *never;
  switch (mk->cmp) {
  case IR_OP_LT: always = "_dhi < 0", never = "_dlo >= 0"; break;
  case IR_OP_LE: always = "_dhi <= 0", never = "_dlo > 0"; break;
  case IR_OP_GT: always = "_dlo > 0", never = "_dhi <= 0"; break;
  default: always = "_dlo >= 0", never = "_dhi < 0"; break;
  }
  return mk->k_when_true ? always : never;
}

/* At the top of a column tile: skip it, the whole block, where the mask
 * selects K on every element and K is far below every row's running max
 * (attn_mask): exp(K - max) is then exactly 0, and so is all it adds.
 * The first test is the same in every thread, so that either all of them
 * or none reach the barrier. */
static void emit_mask_skip(attn_emitter *ae) {
  cg_emit *E = &ae->E;
  if (!ae->plan->mask.on) return;
  cg_line(E, "{");
  E->indent++;
  const char *always = attn_emit_mask_test(ae, "_c0");
  cg_line(E, "if ((%s) && __syncthreads_and(_far)) continue;", always);
  E->indent--;
  cg_line(E, "}");
}

/* The kernel's head comment: its statements, the schedule, what stays on chip. */
static void emit_header(attn_emitter *ae, const cg_kernel *k) {
  const cg_attention *ch = ae->ch;
  kbc_buf *out = ae->E.out;
  kbc_arena *a = ae->E.a;
  for (int q = 0; q < ch->count; q++) kbc_buf_printf(out, "// %s\n", cg_stmt_comment(a, ch->st[q].s));
  const char **sn = ae->plan->idx[0], **on = ae->plan->idx[ch->count - 1];
  const attn_layout *L = &ae->plan->lay;
  kbc_buf_printf(out, "// schedule: attention (%s), rows =",
                 L->mma == 2 ? "3xTF32 mma.sync m16n8k8, fp32 accumulation"
                 : L->mma    ? "TF32 mma.sync m16n8k8, fp32 accumulation"
                             : "FFMA fp32");
  for (int i = 0; i < ch->c1.n_m; i++) kbc_buf_printf(out, " %s", sn[ch->c1.m[i]]);
  kbc_buf_printf(out, ", columns =");
  for (int i = 0; i < ch->c1.n_n; i++) kbc_buf_printf(out, " %s", sn[ch->c1.n[i]]);
  kbc_buf_printf(out, ", batch =");
  for (int i = 0; i < ch->c1.n_b; i++) kbc_buf_printf(out, " %s", sn[ch->c1.bat[i]]);
  if (!ch->c1.n_b) kbc_buf_puts(out, " -");
  kbc_buf_printf(out, ", D =");
  for (int i = 0; i < ch->c1.n_k; i++) kbc_buf_printf(out, " %s", sn[ch->c1.k[i]]);
  kbc_buf_printf(out, ", N2 =");
  for (int i = 0; i < ch->n_n2; i++) kbc_buf_printf(out, " %s", on[ch->n2[i]]);
  if (L->pipe)
    kbc_buf_printf(out,
                   "\n//   a block per batch point and %d rows, all of N2 (%d); columns swept %d at a time; the rows' operand\n"
                   "//   resident (D = %d), each step's columns and values by cp.async during the previous step\n",
                   L->br, L->nt, L->bc, L->dp);
  else
    kbc_buf_printf(out, "\n//   a block per batch point, %d rows and %d of N2; columns swept %d at a time, D in chunks of %d\n",
                   L->br, L->nt, L->bc, AT_DK);
  kbc_buf_puts(out, "//   on chip only:");
  for (int q = 0; q < ch->count; q++)
    if (ch->st[q].role == ATTN_S || ch->st[q].role == ATTN_S2 || ch->st[q].role == ATTN_WIDE ||
        (ch->st[q].role == ATTN_ROW && !ch->st[q].keep))
      kbc_buf_printf(out, " %s", ch->st[q].s->out->name);
  if (ch->m_row >= 0) kbc_buf_printf(out, "; running max %s", ch->st[ch->m_row].s->out->name);
  if (ae->plan->mask.on) kbc_buf_puts(out, "; wholly masked tiles skipped");
  kbc_buf_putc(out, '\n');
  (void)k;
}

void attn_emit_extents(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  cg_emit *E = attn_at(ae, 0);
  cg_line(E, "const float _ninf = __int_as_float(0xff800000);");
  cg_line(E, "const long long _B = %s;", cg_extent_product(E, ch->c1.bat, ch->c1.n_b));
  cg_line(E, "const long long _R = %s;", cg_extent_product(E, ch->c1.m, ch->c1.n_m));
  cg_line(E, "const long long _C = %s;", cg_extent_product(E, ch->c1.n, ch->c1.n_n));
  cg_line(E, "const long long _D = %s;", cg_extent_product(E, ch->c1.k, ch->c1.n_k));
  attn_at(ae, ch->count - 1);
  const char *n2 = "1LL";
  for (int i = 0; i < ch->n_n2; i++) n2 = cg_fmt(E, "%s * %s", n2, cg_sym(E, attn_n2_extent(E->a, ch, i)));
  cg_line(E, "const long long _N2 = %s;", n2);
}

void attn_emit_tile_start(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = attn_at(ae, 0);
  if (ch->c1.n_b) {
    tile_space b = {.ids = ch->c1.bat, .n = ch->c1.n_b};
    attn_declare_digits(E, &b);
    attn_decode_into(ae, "_qb", "_bb", &b);
  } else {
    cg_line(E, "(void)_bb;");
  }
  attn_emit_lines(ae, "r", ch->c1.m, ch->c1.n_m, L->nr, "_r0", attn_row(ae, "_l"), "_R");
}

void attn_emit_accumulators(attn_emitter *ae) {
  const cg_attention *ch = ae->ch;
  const attn_layout *L = &ae->plan->lay;
  cg_emit *E = &ae->E;
  if (ch->m_row >= 0) cg_line(E, "float _m[%d] = %s;", L->nr, all_of(ae, "_ninf"));
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *r = &ch->st[q];
    if (r->role != ATTN_ROW || q == ch->m_row) continue;
    const char *id = cg_float_literal(E->a, r->scaled ? 0.0 : ir_red_identity(r->op));
    cg_line(E, "float %s[%d] = %s;", row_name(ae, q), L->nr, all_of(ae, id));
  }
  if (L->mma) cg_line(E, "float _o[%d][4] = {}; // per n8 tile, as _s", L->nt / 8);
  else cg_line(E, "float _o[4][%d] = {};", L->no);
}

void cg_emit_attn(cg_ctx *C, const cg_attn_plan *plan, const cg_kernel *k) {
  const cg_attention *ch = &plan->ch;
  const attn_layout *L = &plan->lay;
  attn_emitter ae = {.E = {.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1},
                     .plan = plan,
                     .ch = ch,
                     .value = KBC_NEW_ARRAY(C->a, const char *, C->p->tensors.len + 1)};
  cg_emit *E = &ae.E;
  int q_at = 0, k_at = AT_DK * L->ldq, p_at = AT_DK * (L->ldq + L->ldk);
  if (AT_VC * L->ldv > p_at) p_at = AT_VC * L->ldv;
  attn_emit_helpers(&ae);
  emit_header(&ae, k);
  if (L->pipe) {
    E->written = cg_signature(C, k->name, L->threads, L->min_blocks, k->n_tensors,
                              k->tensors, k->first, k->count);
    attn_emit_pipe_body(&ae);
    kbc_buf_puts(C->out, "}\n\n");
    return;
  }
  /* (256, 1): the accumulators are held in registers, up to 255 of them,
   * rather than spilled for a second block per multiprocessor (nvcc's
   * ptxas chose 128 registers and spills for mma at an N2 tile of 128) */
  E->written = cg_signature(C, k->name, AT_THREADS, 1, k->n_tensors, k->tensors,
                            k->first, k->count);
  cg_line(E, "__shared__ __align__(16) float _sm[%d];", p_at + L->bc * L->ldp);
  cg_line(E, "float *const _Qs = _sm + %d; // [%d][%d]: the rows' operand, D-major", q_at, AT_DK, L->ldq);
  cg_line(E, "float *const _Ks = _sm + %d; // [%d][%d]: the columns' operand, D-major", k_at, AT_DK, L->ldk);
  cg_line(E, "float *const _Vs = _sm; // [%d][%d]: the values (over _Qs, _Ks: used after them)", AT_VC, L->ldv);
  cg_line(E, "float *const _Ps = _sm + %d; // [%d][%d]: E of the tile, column-major", p_at, L->bc, L->ldp);
  attn_emit_extents(&ae);
  cg_line(E, "const long long _tiles_r = (_R + %d) / %d, _tiles_n = (_N2 + %d) / %d;", L->br - 1, L->br, L->nt - 1,
          L->nt);
  cg_line(E, "const int _tid = threadIdx.x;");
  attn_emit_thread_ids(&ae);
  cg_line(E, "for (long long _tile = blockIdx.x; _tile < _B * _tiles_r * _tiles_n; _tile += gridDim.x) {");
  E->indent++;
  cg_line(E, "long long _t = _tile;");
  cg_line(E, "const long long _n0 = (_t %% _tiles_n) * %d;", L->nt);
  cg_line(E, "_t /= _tiles_n;");
  cg_line(E, "const long long _r0 = (_t %% _tiles_r) * %d;", L->br);
  cg_line(E, "const long long _bb = _t / _tiles_r;");
  attn_emit_tile_start(&ae);
  attn_emit_accumulators(&ae);
  cg_line(E, "for (long long _c0 = 0; _c0 < _C; _c0 += %d) {", L->bc);
  E->indent++;
  emit_mask_skip(&ae);
  attn_emit_lines(&ae, "c", ch->c1.n, ch->c1.n_n, L->nc, "_c0", attn_col(&ae, "_l"), "_C");
  emit_scores(&ae);
  attn_emit_phase_a(&ae);
  attn_emit_rescale(&ae);
  attn_emit_phase_b(&ae);
  emit_pv(&ae);
  close_block(&ae);
  attn_emit_finish(&ae);
  close_block(&ae);
  kbc_buf_puts(C->out, "}\n\n");
}
