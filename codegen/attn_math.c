/* attn_math.c — the fused attention's two products and its layout's
 * index arithmetic.
 *
 * Before: the plan's layout (attn_impl.h), the operand tiles in shared
 * memory (_Qs, _Ks: D-major; _Ps: E of the tile, column-major; _Vs: the
 * values, C-major), loaded by attn_emit.c.  After: the C text of
 *   - where a thread's rows, columns and accumulator elements are;
 *   - the scores tile += _Qs^T . _Ks over one D chunk of AT_DK;
 *   - the accumulator += _Ps . _Vs over one V chunk of AT_VC columns.
 * FFMA: a thread's 4 x 4 scores and 4 x no accumulator from float4 reads.
 * MMA (mma.sync m16n8k8, fragments as in the PTX ISA: a0 (g, t), a1
 * (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k = t, n = g), b1
 * (k = t + 4, n = g); c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3
 * (g + 8, 2t + 1)): warp w holds rows 16w .. 16w + 15, the scores as
 * _s[n8 tile][c], the accumulator as _o[n8 tile][c]; TF32 rounds each
 * operand at use, 3xTF32 splits it into high and low parts and adds the
 * two cross products before the main one. */
#include "attn_impl.h"

static const attn_layout *lay(const attn_emitter *ae) { return &ae->plan->lay; }

const char *attn_row(attn_emitter *ae, const char *v) {
  return lay(ae)->mma ? cg_fmt(&ae->E, "(_wr + _gid + 8 * (%s))", v) : cg_fmt(&ae->E, "(_ty * 4 + (%s))", v);
}

const char *attn_col(attn_emitter *ae, const char *v) {
  return lay(ae)->mma ? cg_fmt(&ae->E, "((%s) / 2 * 8 + 2 * _tig + (%s) %% 2)", v, v)
                      : cg_fmt(&ae->E, "(_tx * 4 + (%s))", v);
}

const char *attn_ocol(attn_emitter *ae, const char *v) {
  return lay(ae)->mma ? cg_fmt(&ae->E, "((%s) / 2 * 8 + 2 * _tig + (%s) %% 2)", v, v)
                      : cg_fmt(&ae->E, "(_tx * %d + (%s))", lay(ae)->no, v);
}

const char *attn_reg_at(attn_emitter *ae, const char *reg, const char *i, const char *j) {
  return lay(ae)->mma ? cg_fmt(&ae->E, "%s[(%s) / 2][(%s) * 2 + (%s) %% 2]", reg, j, i, j)
                      : cg_fmt(&ae->E, "%s[%s][%s]", reg, i, j);
}

const char *attn_s_at(attn_emitter *ae, const char *i, const char *j) { return attn_reg_at(ae, "_s", i, j); }

const cg_contraction *attn_product(const cg_attention *ch, int pi) { return pi ? &ch->s2[pi - 1] : &ch->c1; }

int attn_product_at(const cg_attention *ch, int pi) { return pi ? ch->s2_at[pi - 1] : 0; }

const char *attn_product_name(attn_emitter *ae, const char *what, int pi) {
  int tile = what[1] == 'Q' || what[1] == 'K';
  if (!pi) return tile ? cg_fmt(&ae->E, "%ss", what) : what;
  return cg_fmt(&ae->E, tile ? "%s%ds" : "%s%d", what, pi + 1);
}

const char *attn_o_at(attn_emitter *ae, const char *i, const char *n) {
  return lay(ae)->mma ? cg_fmt(&ae->E, "_o[(%s) / 2][(%s) * 2 + (%s) %% 2]", n, i, n)
                      : cg_fmt(&ae->E, "_o[%s][%s]", i, n);
}

const char *attn_lane0(const attn_emitter *ae) { return lay(ae)->mma ? "_tig == 0" : "_tx == 0"; }

void attn_emit_thread_ids(attn_emitter *ae) {
  cg_emit *E = &ae->E;
  if (lay(ae)->mma)
    cg_line(E, "const int _wr = (_tid / 32) * 16, _gid = (_tid %% 32) / 4, _tig = _tid %% 4; // warp rows, lane group, lane in group");
  else
    cg_line(E, "const int _ty = _tid / 16, _tx = _tid %% 16; // rows _ty * 4 .., columns _tx * 4 ..");
}

void attn_emit_helpers(attn_emitter *ae) {
  if (lay(ae)->mma) cg_emit_mma_helpers(ae->E.out, lay(ae)->mma == 2);
  if (lay(ae)->pipe) cg_emit_async_helpers(ae->E.out);
}

/* An A fragment (rows _wr + _gid (+ 8), k (+ 4)) of the k-major tile src
 * (row width ld, k from k0) into _fa (and _fal: the low parts). */
static void a_fragment(attn_emitter *ae, const char *src, int ld, const char *k0) {
  cg_emit *E = &ae->E;
  static const char *const at[4][2] = {{"", ""}, {"", " + 8"}, {" + 4", ""}, {" + 4", " + 8"}};
  int split = lay(ae)->mma == 2;
  cg_line(E, split ? "unsigned _fa[4], _fal[4];" : "unsigned _fa[4];");
  if (lay(ae)->pipe) {
    /* row-major (row width ld): the step's k = t and t + 4 stand for
     * columns 2t and 2t + 1, one float2 per row (the B fragments alike) */
    cg_line(E, "const float2 _q0 = kbc_lds2(%s_s + 4 * ((_wr + _gid) * %d + %s + 2 * _tig));", src, ld, k0);
    cg_line(E, "const float2 _q1 = kbc_lds2(%s_s + 4 * ((_wr + _gid + 8) * %d + %s + 2 * _tig));", src, ld, k0);
    static const char *const part[4] = {"_q0.x", "_q1.x", "_q0.y", "_q1.y"};
    for (int q = 0; q < 4; q++) {
      if (split) cg_line(E, "kbc_split_tf32_fast(%s, _fa[%d], _fal[%d]);", part[q], q, q);
      else cg_line(E, "_fa[%d] = __float_as_uint(kbc_tf32(%s));", q, part[q]);
    }
    return;
  }
  for (int q = 0; q < 4; q++) {
    const char *x = cg_fmt(E, "%s[(%s + _tig%s) * %d + _wr + _gid%s]", src, k0, at[q][0], ld, at[q][1]);
    if (split) cg_line(E, "kbc_split_tf32(%s, _fa[%d], _fal[%d]);", x, q, q);
    else cg_line(E, "_fa[%d] = __float_as_uint(kbc_tf32(%s));", q, x);
  }
}

/* The B fragment (b0, b1) of the elements x0, x1 into _fb (and _fbl). */
static void b_fragment(attn_emitter *ae, const char *x0, const char *x1) {
  cg_emit *E = &ae->E;
  int split = lay(ae)->mma == 2;
  cg_line(E, split ? "unsigned _fb[2], _fbl[2];" : "unsigned _fb[2];");
  const char *x[2] = {x0, x1};
  for (int q = 0; q < 2; q++) {
    if (split) cg_line(E, "%s(%s, _fb[%d], _fbl[%d]);", lay(ae)->pipe ? "kbc_split_tf32_fast" : "kbc_split_tf32", x[q], q, q);
    else cg_line(E, "_fb[%d] = __float_as_uint(kbc_tf32(%s));", q, x[q]);
  }
}

/* acc += a . _fb (3xTF32: the two small products first), a and al the A
 * fragment's high and low parts. */
static void mma(attn_emitter *ae, const char *acc, const char *a, const char *al) {
  cg_emit *E = &ae->E;
  if (lay(ae)->mma == 2) {
    cg_line(E, "kbc_mma_tf32(%s, %s, _fb); // the small products first", acc, al);
    cg_line(E, "kbc_mma_tf32(%s, %s, _fbl);", acc, a);
  }
  cg_line(E, "kbc_mma_tf32(%s, %s, _fb);", acc, a);
}

/* For each n8 tile _j of n: a B fragment of the k-major tile src (k from
 * k0) and the mma into acc[_j]. */
static void b_fragments_mma(attn_emitter *ae, const char *src, int ld, const char *k0, int n, const char *acc) {
  cg_emit *E = &ae->E;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _j = 0; _j < %d; ++_j) {", n / 8);
  E->indent++;
  if (lay(ae)->pipe) { /* row-major: n = _j * 8 + _gid is the row, k = t and t + 4 columns 2t and 2t + 1 */
    cg_line(E, "const float2 _k2 = kbc_lds2(%s_s + 4 * ((_j * 8 + _gid) * %d + %s + 2 * _tig));", src, ld, k0);
    b_fragment(ae, "_k2.x", "_k2.y");
  } else
    b_fragment(ae, cg_fmt(E, "%s[(%s + _tig) * %d + _j * 8 + _gid]", src, k0, ld),
               cg_fmt(E, "%s[(%s + _tig + 4) * %d + _j * 8 + _gid]", src, k0, ld));
  mma(ae, cg_fmt(E, "%s[_j]", acc), "_fa", "_fal");
  E->indent--;
  cg_line(E, "}");
}

/* acc[n8 tile] += A . B over k in [0, kmax) by 8: A the k-major tile a
 * (its k from a_k0 + _k), B the k-major tile b (from b_k0 + _k), n columns
 * of it. */
static void mma_product(attn_emitter *ae, int kmax, const char *a, int lda, const char *a_k0, const char *b, int ldb,
                        const char *b_k0, int n, const char *acc) {
  cg_emit *E = &ae->E;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _k = 0; _k < %d; _k += 8) {", kmax);
  E->indent++;
  a_fragment(ae, a, lda, a_k0);
  b_fragments_mma(ae, b, ldb, b_k0, n, acc);
  E->indent--;
  cg_line(E, "}");
}

void attn_emit_scores_math(attn_emitter *ae) {
  const attn_layout *L = lay(ae);
  cg_emit *E = &ae->E;
  if (L->mma) {
    mma_product(ae, AT_DK, "_Qs", L->ldq, "_k", "_Ks", L->ldk, "_k", L->bc, "_s");
    return;
  }
  cg_line(E, "#pragma unroll 8");
  cg_line(E, "for (int _k = 0; _k < %d; ++_k) {", AT_DK);
  cg_line(E, "  const float4 _a = *(const float4 *)&_Qs[_k * %d + _ty * 4];", L->ldq);
  cg_line(E, "  const float4 _b = *(const float4 *)&_Ks[_k * %d + _tx * 4];", L->ldk);
  cg_line(E, "  const float _av[4] = {_a.x, _a.y, _a.z, _a.w}, _bv[4] = {_b.x, _b.y, _b.z, _b.w};");
  cg_line(E, "  #pragma unroll");
  cg_line(E, "  for (int _i = 0; _i < 4; ++_i)");
  cg_line(E, "    #pragma unroll");
  cg_line(E, "    for (int _j = 0; _j < 4; ++_j) _s[_i][_j] = fmaf(_av[_i], _bv[_j], _s[_i][_j]);");
  cg_line(E, "}");
}

void attn_emit_pv_math(attn_emitter *ae) {
  const attn_layout *L = lay(ae);
  cg_emit *E = &ae->E;
  if (L->mma) {
    mma_product(ae, AT_VC, "_Ps", L->ldp, "_v0 + _k", "_Vs", L->ldv, "_k", L->nt, "_o");
    return;
  }
  cg_line(E, "#pragma unroll 4");
  cg_line(E, "for (int _k = 0; _k < %d; ++_k) {", AT_VC);
  cg_line(E, "  const float4 _p = *(const float4 *)&_Ps[(_v0 + _k) * %d + _ty * 4];", L->ldp);
  cg_line(E, "  const float _pv[4] = {_p.x, _p.y, _p.z, _p.w};");
  cg_line(E, "  #pragma unroll");
  cg_line(E, "  for (int _n = 0; _n < %d; ++_n) {", L->no);
  cg_line(E, "    const float _vv = _Vs[_k * %d + _tx * %d + _n];", L->ldv, L->no);
  cg_line(E, "    #pragma unroll");
  cg_line(E, "    for (int _i = 0; _i < 4; ++_i) _o[_i][_n] = fmaf(_pv[_i], _vv, _o[_i][_n]);");
  cg_line(E, "  }");
  cg_line(E, "}");
}

/* acc (declared here) = the scores tile of the resident q and the step's k. */
static void pipe_scores(attn_emitter *ae, const char *q, const char *k, const char *acc) {
  const attn_layout *L = lay(ae);
  cg_emit *E = &ae->E;
  int split = L->mma == 2;
  cg_line(E, "float %s[%d][4] = {}; // per n8 tile: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)", acc, L->bc / 8);
  /* D in chunks of kc, the chunk loop not unrolled (a whole unrolled D
   * made ptxas hoist every fragment and spill) */
  cg_line(E, "#pragma unroll 1");
  cg_line(E, split ? "for (int _kc = 0; _kc < %d; _kc += %d) { // the tensor cores sum %d terms, the chunks are added in fp32"
                   : "for (int _kc = 0; _kc < %d; _kc += %d) {", L->dp, L->kc, L->kc);
  E->indent++;
  if (split) cg_line(E, "float _sc[%d][4] = {};", L->bc / 8);
  mma_product(ae, L->kc, q, L->ldq, "_kc + _k", k, L->ldk, "_kc + _k", L->bc, split ? "_sc" : acc);
  if (split) {
    cg_line(E, "#pragma unroll");
    cg_line(E, "for (int _j = 0; _j < %d; ++_j)", L->bc / 8);
    cg_line(E, "  for (int _e = 0; _e < 4; ++_e) %s[_j][_e] += _sc[_j][_e];", acc);
  }
  E->indent--;
  cg_line(E, "}");
}

void attn_emit_pipe_scores_math(attn_emitter *ae) {
  for (int pi = 0; pi <= ae->ch->n_s2; pi++)
    pipe_scores(ae, attn_product_name(ae, "_Q", pi), attn_product_name(ae, "_K", pi), attn_product_name(ae, "_s", pi));
}

/* The accumulator's n8 tiles taken a group at a time, each tile's sum
 * over the step's columns a chain of mma on one accumulator: the group's
 * chains are independent, so the tensor cores' latency overlaps. */
enum { PV_GROUP = 4 };

void attn_emit_pipe_pv_math(attn_emitter *ae) {
  const attn_layout *L = lay(ae);
  cg_emit *E = &ae->E;
  int split = L->mma == 2, nt8 = L->nt / 8, g = nt8 < PV_GROUP ? nt8 : PV_GROUP;
  /* a C fragment's columns are 2t and 2t + 1, an A fragment's k are t and
   * t + 4: k = t stands for column 2t and k = t + 4 for 2t + 1, and the
   * values' rows are read in the same order */
  cg_line(E, split ? "unsigned _pa[%d][4], _pl[%d][4]; // P as A fragments (high, low parts)"
                   : "unsigned _pa[%d][4]; // P as A fragments", L->bc / 8, L->bc / 8);
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _kk = 0; _kk < %d; ++_kk) { // k = t: column 2t; k = t + 4: column 2t + 1", L->bc / 8);
  E->indent++;
  static const int from[4] = {0, 2, 1, 3};
  for (int q = 0; q < 4; q++) {
    if (split) cg_line(E, "kbc_split_tf32_fast(_s[_kk][%d], _pa[_kk][%d], _pl[_kk][%d]);", from[q], q, q);
    else cg_line(E, "_pa[_kk][%d] = __float_as_uint(kbc_tf32(_s[_kk][%d]));", q, from[q]);
  }
  E->indent--;
  cg_line(E, "}");
  /* A recomputing chain's E may cancel along the columns (the backward's
   * ds = p * (dp - rowsum), summing to 0 over a row): its tensor-core
   * sums, which round toward zero, then start afresh every 8 columns
   * rather than every step (fuzz seed 2022 on the H200: dq 8.8e-5 off
   * over 2,405 columns) */
  int fresh = split && ae->ch->recompute;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _n0 = 0; _n0 < %d; _n0 += %d) { // %d n8 tiles at a time", nt8, g, g);
  E->indent++;
  if (split && !fresh) cg_line(E, "float _t[%d][4] = {}; // the step's sums by the tensor cores, added in fp32", g);
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _kk = 0; _kk < %d; ++_kk) {", L->bc / 8);
  E->indent++;
  if (fresh) cg_line(E, "float _t[%d][4] = {}; // 8 columns' sums by the tensor cores, added in fp32", g);
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _u = 0; _u < %d; ++_u) {", g);
  E->indent++;
  if (nt8 % g) cg_line(E, "if (_n0 + _u >= %d) break;", nt8);
  b_fragment(ae, cg_fmt(E, "kbc_lds(_Vs_s + 4 * ((_kk * 8 + 2 * _tig) * %d + (_n0 + _u) * 8 + _gid))", L->ldv),
             cg_fmt(E, "kbc_lds(_Vs_s + 4 * ((_kk * 8 + 2 * _tig + 1) * %d + (_n0 + _u) * 8 + _gid))", L->ldv));
  mma(ae, split ? "_t[_u]" : "_o[_n0 + _u]", "_pa[_kk]", "_pl[_kk]");
  E->indent--;
  cg_line(E, "}");
  if (fresh) {
    cg_line(E, "#pragma unroll");
    cg_line(E, "for (int _u = 0; _u < %d; ++_u)", g);
    if (nt8 % g) cg_line(E, "  for (int _e = 0; _e < 4 && _n0 + _u < %d; ++_e) _o[_n0 + _u][_e] += _t[_u][_e];", nt8);
    else cg_line(E, "  for (int _e = 0; _e < 4; ++_e) _o[_n0 + _u][_e] += _t[_u][_e];");
  }
  E->indent--;
  cg_line(E, "}");
  if (split && !fresh) {
    cg_line(E, "#pragma unroll");
    cg_line(E, "for (int _u = 0; _u < %d; ++_u)", g);
    if (nt8 % g) cg_line(E, "  for (int _e = 0; _e < 4 && _n0 + _u < %d; ++_e) _o[_n0 + _u][_e] += _t[_u][_e];", nt8);
    else cg_line(E, "  for (int _e = 0; _e < 4; ++_e) _o[_n0 + _u][_e] += _t[_u][_e];");
  }
  E->indent--;
  cg_line(E, "}");
}
