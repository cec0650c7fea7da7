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

const char *attn_s_at(attn_emitter *ae, const char *i, const char *j) {
  return lay(ae)->mma ? cg_fmt(&ae->E, "_s[(%s) / 2][(%s) * 2 + (%s) %% 2]", j, i, j)
                      : cg_fmt(&ae->E, "_s[%s][%s]", i, j);
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
}

/* An A fragment (rows _wr + _gid (+ 8), k (+ 4)) of the k-major tile src
 * (row width ld, k from k0) into _fa (and _fal: the low parts). */
static void a_fragment(attn_emitter *ae, const char *src, int ld, const char *k0) {
  cg_emit *E = &ae->E;
  static const char *const at[4][2] = {{"", ""}, {"", " + 8"}, {" + 4", ""}, {" + 4", " + 8"}};
  int split = lay(ae)->mma == 2;
  cg_line(E, split ? "unsigned _fa[4], _fal[4];" : "unsigned _fa[4];");
  for (int q = 0; q < 4; q++) {
    const char *x = cg_fmt(E, "%s[(%s + _tig%s) * %d + _wr + _gid%s]", src, k0, at[q][0], ld, at[q][1]);
    if (split) cg_line(E, "kbc_split_tf32(%s, _fa[%d], _fal[%d]);", x, q, q);
    else cg_line(E, "_fa[%d] = __float_as_uint(kbc_tf32(%s));", q, x);
  }
}

/* For each n8 tile _j of n: a B fragment of the k-major tile src and the
 * mma into acc[_j]. */
static void b_fragments_mma(attn_emitter *ae, const char *src, int ld, const char *k0, int n, const char *acc) {
  cg_emit *E = &ae->E;
  int split = lay(ae)->mma == 2;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _j = 0; _j < %d; ++_j) {", n / 8);
  E->indent++;
  cg_line(E, split ? "unsigned _fb[2], _fbl[2];" : "unsigned _fb[2];");
  for (int q = 0; q < 2; q++) {
    const char *x = cg_fmt(E, "%s[(%s + _tig%s) * %d + _j * 8 + _gid]", src, k0, q ? " + 4" : "", ld);
    if (split) cg_line(E, "kbc_split_tf32(%s, _fb[%d], _fbl[%d]);", x, q, q);
    else cg_line(E, "_fb[%d] = __float_as_uint(kbc_tf32(%s));", q, x);
  }
  if (split) {
    cg_line(E, "kbc_mma_tf32(%s[_j], _fal, _fb); // the small products first", acc);
    cg_line(E, "kbc_mma_tf32(%s[_j], _fa, _fbl);", acc);
  }
  cg_line(E, "kbc_mma_tf32(%s[_j], _fa, _fb);", acc);
  E->indent--;
  cg_line(E, "}");
}

/* acc[n8 tile] += A . B over k in [0, kmax) by 8: A the k-major tile a
 * (its k from a_k0 + _k), B the k-major tile b, n columns of it. */
static void mma_product(attn_emitter *ae, int kmax, const char *a, int lda, const char *a_k0, const char *b, int ldb,
                        int n, const char *acc) {
  cg_emit *E = &ae->E;
  cg_line(E, "#pragma unroll");
  cg_line(E, "for (int _k = 0; _k < %d; _k += 8) {", kmax);
  E->indent++;
  a_fragment(ae, a, lda, a_k0);
  b_fragments_mma(ae, b, ldb, "_k", n, acc);
  E->indent--;
  cg_line(E, "}");
}

void attn_emit_scores_math(attn_emitter *ae) {
  const attn_layout *L = lay(ae);
  cg_emit *E = &ae->E;
  if (L->mma) {
    mma_product(ae, AT_DK, "_Qs", L->ldq, "_k", "_Ks", L->ldk, L->bc, "_s");
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
    mma_product(ae, AT_VC, "_Ps", L->ldp, "_v0 + _k", "_Vs", L->ldv, L->nt, "_o");
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
