/* sched_gemm.c — schedule family (b): the tiled contraction (implicit GEMM).
 *
 * Before: a GEMM group, one plain statement `out[...] = epilogue(sum(K: A * B))`
 * (cg_find_contraction).  After: one kernel computing it as a batched
 * matrix product acc[batch][m][n] = sum_k A[batch][m][k] * B[batch][k][n],
 * where m, n, k and batch are the row-major flattenings (last index
 * fastest) of the statement's M, N, K and batch indices, followed by the
 * statement's epilogue per output element.
 *
 * Kernel structure:
 *   - 256 threads per block, one BM x BN output tile at a time (a
 *     grid-stride loop over tiles: n-tiles fastest, then m-tiles, then
 *     batch);
 *   - per k-tile of BK reductions, each thread loads a fixed set of A and
 *     B elements into registers (zero outside M, N, K) and stores them
 *     into shared memory, k-major (_As[k][m], _Bs[k][n], rows padded
 *     against bank conflicts), double buffered: the global loads for tile
 *     kt+1 are issued before the math on tile kt, one barrier per k-tile;
 *   - math: FFMA on a TM x TN register tile per thread, read from shared
 *     memory as 4-wide vectors (fp32), or, with --precision tf32, tensor
 *     cores (mma.sync m16n8k8 TF32, operands rounded with cvt.rna when
 *     stored to shared memory) on a warp tile per warp, or, for fp32 with
 *     KBC_FP32_MMA=1 (experimental), 3xTF32: fp32 operands in shared memory
 *     split at use into high and low TF32 parts, three mma per product;
 *   - epilogue: the statement's rhs with the main sum replaced by the
 *     accumulator (cg_emit.known), guarded against partial tiles, stored
 *     from the thread tiles directly, or, when the output is contiguous
 *     along m (convolutions), through shared memory so that a warp stores
 *     32 consecutive m.
 * Index decoding: the M / N coordinates a thread loads are fixed per tile
 * and decoded once per tile (k-major loads take up to 4 consecutive k per
 * row, so a thread holds at most 4 rows); its K coordinates are decoded
 * once per tile and then advanced by BK per k-tile, digit by digit with
 * one carry each, so the K loop has no division.  When a thread loads
 * several k of a multi-index K, the threads instead keep k = base + _tid % BK
 * and the first BK publish a table of k offsets (or digits) per k-tile in
 * shared memory.
 * Flat spaces: where every address depends on a multi-index M, N or K only
 * through its flattening (cg_collapse), the flat coordinate is used as is:
 * rows are not decoded, K has no digits or tables (single K: a load's k is
 * the k-tile base _kb plus its local k, nothing carried across k-tiles),
 * and the epilogue decodes rows / columns only for the addresses that need
 * them (columns once per run of consecutive columns, then carried).
 * An operand that is one plain load whose flat offset splits into a part
 * without K indices plus a part with only K indices (checked symbolically)
 * is addressed as row offset + k offset; any other operand (where(),
 * products, padded loads, ...) is evaluated with cg_expr on the decoded
 * indices.  Whether consecutive threads load along k or along m / n is
 * chosen per operand from its loads' unit strides.
 * Tile shapes come from a small cost model (padding waste, register-tile
 * efficiency, tiles vs. multiprocessors) over estimated extents: constant
 * extents exactly (N = 24 gets a 24-wide tile), var-dependent ones with
 * every var axis at 256 (large; the binding is unknown).  Shapes with few
 * tiles and a reduction longer than the output (a projection of a few
 * rows) go to the rows family with a team per output element instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_impl.h"
#include "ir/subst.h"

/* ---- emission helpers ---------------------------------------------------- */

#define L(...) cg_line(&G->E, __VA_ARGS__)
#define P(...) kbc_arena_printf(G->C->a, __VA_ARGS__)

static const char *ext_c(gemm *G, int id) { return cg_sym(&G->E, G->s->index[id].extent); }

static const char *join_names(gemm *G, const int *ids, int n) {
  if (n == 0) return "-";
  const char *r = G->names[ids[0]];
  for (int i = 1; i < n; i++) r = P("%s*%s", r, G->names[ids[i]]);
  return r;
}

/* Assigns the row-major digits of `flat` over ids to the C lvalues
 * dst[i] (already declared), last index fastest. */
static void emit_decode(gemm *G, const char *flat, const int *ids, int n, const char *const *dst) {
  if (n == 1) L("%s = %s;", dst[0], flat);
  else cg_decode(&G->E, "_q", flat, ids, n, dst);
}

/* `long long d0, d1, ...;` (with an optional comment) then dst decoded from flat. */
static void declare_decode(gemm *G, const char *flat, const int *ids, int n, const char *const *dst,
                           const char *comment) {
  const char *decl = dst[0];
  for (int i = 1; i < n; i++) decl = P("%s, %s", decl, dst[i]);
  L("long long %s;%s", decl, comment);
  emit_decode(G, flat, ids, n, dst);
}

/* The same into the statement's own index names. */
static void decode_named(gemm *G, const char *flat, const int *ids, int n, const char *comment) {
  const char **dst = KBC_NEW_ARRAY(G->C->a, const char *, n);
  for (int i = 0; i < n; i++) dst[i] = G->names[ids[i]];
  declare_decode(G, flat, ids, n, dst, comment);
}

/* K is one coordinate: one index (each k slot a variable advanced by BK per
 * k-tile), or flat (each load's k is the k-tile base _kb plus its slot's
 * local offset, nothing carried across k-tiles: a carried variable per slot
 * measured slower on flat K, and flat K comes with up to 16 slots). */
static int k_single(const gemm *G) { return G->c.n_k == 1 || G->kflat; }

/* The C name of digit `id` of k slot ks (single K: its k). */
static const char *kdigit(gemm *G, int ks, int id) {
  if (k_single(G)) return P("_k%d", ks);
  return P("_k%d_%s", ks, G->names[id]);
}

static const char *rowdigit(gemm *G, const gemm_operand *o, int r, int id) {
  if (o->n_x == 1) return P("_%cr%d", o->tag, r);
  return P("_%cr%d_%s", o->tag, r, G->names[id]);
}

static int kslot(gemm *G, const char *expr) {
  for (int i = 0; i < G->n_kslots; i++)
    if (!strcmp(G->kslot_expr[i], expr)) return i;
  G->kslot_expr[G->n_kslots] = expr;
  return G->n_kslots++;
}

/* Which element of the tile each load slot of o covers.  An operand
 * whose slots have several k coordinates per thread and K several indices
 * reads its k offsets (fast path) or k digits (generic) from a per-k-tile
 * table in shared memory instead of decoding them itself. */
static void plan_loads(gemm *G, gemm_operand *o) {
  int T = GEMM_THREADS, bk = G->f.bk, bx = o->bx, total = bx * bk;
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
    const char *e = j ? P("(_tid + %d)", j * T) : "_tid";
    const char *xl, *kl;
    if (o->kmajor && kp > 1) {
      /* kp consecutive k of each of slots / kp rows */
      int tr = bk / kp, r = j / kp, q = j % kp;
      kl = q ? P("_tid %% %d * %d + %d", tr, kp, q) : P("_tid %% %d * %d", tr, kp);
      xl = r ? P("_tid / %d + %d", tr, r * T / tr) : P("_tid / %d", tr);
    } else if (o->kmajor) {
      kl = T % bk == 0 ? P("_tid %% %d", bk) : P("%s %% %d", e, bk);
      xl = T % bk == 0 ? (j ? P("_tid / %d + %d", bk, j * T / bk) : P("_tid / %d", bk)) : P("%s / %d", e, bk);
    } else if (T == bx) {
      xl = "_tid";
      kl = P("%d", j);
    } else {
      xl = T % bx == 0 ? P("_tid %% %d", bx) : P("%s %% %d", e, bx);
      kl = T % bx == 0 ? (j ? P("_tid / %d + %d", bx, j * T / bx) : P("_tid / %d", bx)) : P("%s / %d", e, bx);
    }
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
  o->table = G->c.n_k > 1 && !G->kflat && n_kls > 1;
  if (o->table) {
    G->table_digits |= !o->fast;
    G->builder = kslot(G, P("_tid %% %d", bk));
  }
  for (int j = 0; j < o->slots; j++) o->kslot_of[j] = o->table ? -1 : kslot(G, o->kl[j]);
}

/* Row slots: global x coordinate, in-range flag, decoded indices, and
 * (fast path) the row part of the offset. */
static void emit_rows(gemm *G, gemm_operand *o) {
  L("// %c rows this thread loads (%s = %s + local row)%s", o->tag == 'a' ? 'A' : 'B',
    join_names(G, o->x, o->n_x), o->x0,
    o->n_x == 1 ? "" : o->flat_rows ? ", addressed through the flat row" : ", decoded once per tile");
  for (int r = 0; r < o->n_rows; r++) {
    const char *row = P("_%cr%d", o->tag, r);
    L("const long long %s = %s + %s;", row, o->x0, o->row_expr[r]);
    L("const bool %sok = %s < %s;", row, row, o->X);
    if (o->flat_rows) { /* the row offset is a function of the flat row */
      G->bind[o->x[o->n_x - 1]] = row;
      L("const long long _%co%d = %s;", o->tag, r, cg_sym(&G->E, o->row_off));
      continue;
    }
    if (o->n_x > 1) {
      const char **dst = KBC_NEW_ARRAY(G->C->a, const char *, o->n_x);
      for (int i = 0; i < o->n_x; i++) dst[i] = rowdigit(G, o, r, o->x[i]);
      declare_decode(G, row, o->x, o->n_x, dst, "");
    }
    if (o->fast) {
      for (int i = 0; i < o->n_x; i++) G->bind[o->x[i]] = rowdigit(G, o, r, o->x[i]);
      L("const long long _%co%d = %s;", o->tag, r, cg_sym(&G->E, o->row_off));
    }
  }
}

static int uses_kslot(const gemm_operand *o, int ks) {
  for (int j = 0; j < o->slots; j++)
    if (o->kslot_of[j] == ks) return 1;
  return 0;
}

static void bind_k(gemm *G, int ks) {
  for (int i = 0; i < G->c.n_k; i++) G->bind[G->c.k[i]] = kdigit(G, ks, G->c.k[i]);
}

/* Loads k-tile (flat base _kb) of both operands into the staging
 * registers; tables from shared buffer tbuf. */
static void emit_loads(gemm *G, const char *tbuf) {
  for (int ks = 0; ks < G->n_kslots && G->kflat; ks++)
    if (uses_kslot(&G->op[0], ks) || uses_kslot(&G->op[1], ks))
      L("const long long _k%d = _kb + %s;", ks, G->kslot_expr[ks]);
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &G->op[w];
    if (!o->fast || o->table) continue;
    for (int ks = 0; ks < G->n_kslots; ks++) {
      if (!uses_kslot(o, ks)) continue;
      bind_k(G, ks);
      L("const long long _%cq%d = %s;", o->tag, ks, cg_sym(&G->E, o->k_off));
    }
  }
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &G->op[w];
    const ir_tensor *t = o->fast ? o->e->u.load.tensor : NULL;
    for (int j = 0; j < o->slots; j++) {
      int r = o->row_of[j], ks = o->kslot_of[j];
      const char *cond = o->table ? P("_%cr%dok && _kb + %s < _kend", o->tag, r, o->kl[j])
                                  : P("_%cr%dok && _k%d < _kend", o->tag, r, ks);
      if (o->partial && j == o->slots - 1)
        cond = P("%s && _tid < %d", cond, o->bx * G->f.bk - j * GEMM_THREADS);
      if (o->fast) {
        const char *koff = o->table ? P("_%cqt[%s][%s]", o->tag, tbuf, o->kl[j]) : P("_%cq%d", o->tag, ks);
        L("_%cv[%d] = %s ? %s[_%co%d + %s] : 0.0f;", o->tag, j, cond, G->C->names->tensor[t->id], o->tag, r, koff);
        continue;
      }
      for (int i = 0; i < o->n_x; i++) G->bind[o->x[i]] = rowdigit(G, o, r, o->x[i]);
      if (o->table)
        for (int i = 0; i < G->c.n_k; i++) G->bind[G->c.k[i]] = P("_kd[%s][%d][%s]", tbuf, i, o->kl[j]);
      else
        bind_k(G, ks);
      L("_%cv[%d] = 0.0f;", o->tag, j);
      L("if (%s) {", cond);
      G->E.indent++;
      const char *v = cg_expr(&G->E, o->e);
      if (o->e->type != IR_TY_FLOAT) v = P("(float)(%s)", v);
      L("_%cv[%d] = %s;", o->tag, j, v);
      G->E.indent--;
      L("}");
    }
  }
}

/* The k tables for the k-tile that the builder slot is at, into buffer buf. */
static void emit_table_write(gemm *G, const char *buf) {
  if (G->builder < 0) return;
  L("if (_tid < %d) { // k table: digits / offsets of this k-tile's k = base + _tid", G->f.bk);
  G->E.indent++;
  bind_k(G, G->builder);
  if (G->table_digits)
    for (int i = 0; i < G->c.n_k; i++) L("_kd[%s][%d][_tid] = %s;", buf, i, kdigit(G, G->builder, G->c.k[i]));
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &G->op[w];
    if (o->table && o->fast) L("_%cqt[%s][_tid] = %s;", o->tag, buf, cg_sym(&G->E, o->k_off));
  }
  G->E.indent--;
  L("}");
}

/* Stores the staging registers into shared-memory buffer buf. */
static void emit_stores(gemm *G, const char *buf) {
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &G->op[w];
    for (int j = 0; j < o->slots; j++) {
      /* TF32: rounded once when stored; 3xTF32 keeps the fp32 value, split at use */
      const char *v = G->f.mma && !G->split3 ? P("kbc_tf32(_%cv[%d])", o->tag, j) : P("_%cv[%d]", o->tag, j);
      int tt = o->tag == 'a' ? G->f.tm : G->f.tn;
      const char *col = o->xl[j];
      if (!G->f.mma && tt % 4) col = P("(%s) / %d * %d + (%s) %% %d", col, tt, (tt + 3) / 4 * 4, col, tt);
      const char *st = P("_%cs[%s][%s][%s] = %s;", o->tag == 'a' ? 'A' : 'B', buf, o->kl[j], col, v);
      if (o->partial && j == o->slots - 1)
        L("if (_tid < %d) %s", o->bx * G->f.bk - j * GEMM_THREADS, st);
      else
        L("%s", st);
    }
  }
}

/* Advances every k slot by BK: the flat coordinate, and the digits by the
 * digits of BK in the same mixed radix (_kinc_*, computed once), each digit
 * with at most one carry (a digit < extent plus an increment < extent plus
 * a carry stays below twice the extent). */
static void emit_k_advance(gemm *G) {
  const cg_contraction *c = &G->c;
  if (G->kflat) return;
  for (int ks = 0; ks < G->n_kslots; ks++) {
    L("_k%d += %d;", ks, G->f.bk);
    if (c->n_k == 1) continue;
    for (int i = c->n_k - 1; i > 0; i--) {
      const char *d = kdigit(G, ks, c->k[i]), *e = ext_c(G, c->k[i]);
      L("%s += _kinc_%s;", d, G->names[c->k[i]]);
      L("if (%s >= %s) { %s -= %s; ++%s; }", d, e, d, e, kdigit(G, ks, c->k[i - 1]));
    }
    L("%s += _kinc_%s;", kdigit(G, ks, c->k[0]), G->names[c->k[0]]);
  }
}

/* The digits of BK in the mixed radix of the K indices. */
static void emit_k_increments(gemm *G) {
  const cg_contraction *c = &G->c;
  if (k_single(G)) return;
  const char **dst = KBC_NEW_ARRAY(G->C->a, const char *, c->n_k);
  for (int i = 0; i < c->n_k; i++) dst[i] = P("_kinc_%s", G->names[c->k[i]]);
  declare_decode(G, P("%dLL", G->f.bk), c->k, c->n_k, dst,
                 P(" // %d as digits of (%s)", G->f.bk, join_names(G, c->k, c->n_k)));
}

static void emit_k_init(gemm *G) {
  const cg_contraction *c = &G->c;
  if (G->kflat) {
    L("// k of each load: the k-tile base _kb plus the load's local k (%s = k, addressed through the flat k)",
      join_names(G, c->k, c->n_k));
    return;
  }
  L("// k coordinates this thread loads (%s = k), advanced by %d per k-tile", join_names(G, c->k, c->n_k), G->f.bk);
  for (int ks = 0; ks < G->n_kslots; ks++) {
    L("long long _k%d = _kt0 * %d + %s;", ks, G->f.bk, G->kslot_expr[ks]);
    if (c->n_k == 1) continue;
    const char **dst = KBC_NEW_ARRAY(G->C->a, const char *, c->n_k);
    for (int i = 0; i < c->n_k; i++) dst[i] = kdigit(G, ks, c->k[i]);
    declare_decode(G, P("_k%d", ks), c->k, c->n_k, dst, "");
  }
}

/* The math on shared-memory buffer _cur. */
static void emit_math(gemm *G) {
  const gemm_cfg *f = &G->f;
  if (!f->mma) {
    int rm = f->tm / f->vm, rn = f->tn / f->vn;
    L("#pragma unroll");
    L("for (int _kk = 0; _kk < %d; ++_kk) {", f->bk);
    G->E.indent++;
    L("float _fa[%d], _fb[%d];", f->tm, f->tn);
    for (int w = 0; w < 2; w++) {
      char T = w ? 'B' : 'A', v = w ? 'b' : 'a';
      int vec = w ? f->vn : f->vm, reps = w ? rn : rm, bx = w ? f->bn : f->bm, tt = w ? f->tn : f->tm;
      const char *tid = w ? "_tx" : "_ty";
      if (vec == 4) {
        for (int r = 0; r < reps; r++) {
          L("{");
          L("  const float4 _v = *(const float4 *)&_%cs[_cur][_kk][%s * 4 + %d];", T, tid, r * bx / reps);
          L("  _f%c[%d] = _v.x; _f%c[%d] = _v.y; _f%c[%d] = _v.z; _f%c[%d] = _v.w;", v, 4 * r, v, 4 * r + 1, v,
            4 * r + 2, v, 4 * r + 3);
          L("}");
        }
      } else {
        /* this thread's tt values, contiguous in a chunk padded to 4k */
        static const char comp[] = "xyzw";
        int cw = (tt + 3) / 4 * 4;
        for (int r = 0; r < cw / 4; r++) {
          L("{");
          L("  const float4 _v = *(const float4 *)&_%cs[_cur][_kk][%s * %d + %d];", T, tid, cw, 4 * r);
          const char *as = "";
          for (int q = 0; q < 4 && 4 * r + q < tt; q++) as = P("%s%s_f%c[%d] = _v.%c;", as, q ? " " : "", v, 4 * r + q, comp[q]);
          L("  %s", as);
          L("}");
        }
      }
    }
    L("#pragma unroll");
    L("for (int _i = 0; _i < %d; ++_i)", f->tm);
    L("  #pragma unroll");
    L("  for (int _j = 0; _j < %d; ++_j) _acc[_i][_j] = fmaf(_fa[_i], _fb[_j], _acc[_i][_j]);", f->tn);
    G->E.indent--;
    L("}");
  } else {
    L("#pragma unroll");
    L("for (int _kk = 0; _kk < %d; _kk += 8) {", f->bk);
    G->E.indent++;
    static const char *const a_at[4] = {"[_kk + _t4][_r]", "[_kk + _t4][_r + 8]", "[_kk + _t4 + 4][_r]",
                                        "[_kk + _t4 + 4][_r + 8]"};
    static const char *const b_at[2] = {"[_kk + _t4][_c]", "[_kk + _t4 + 4][_c]"};
    if (G->split3) L("unsigned _fa[%d][4], _fal[%d][4], _fb[%d][2], _fbl[%d][2]; // high and low TF32 parts", f->mi,
                     f->mi, f->ni, f->ni);
    else L("unsigned _fa[%d][4], _fb[%d][2];", f->mi, f->ni);
    L("#pragma unroll");
    L("for (int _i = 0; _i < %d; ++_i) {", f->mi);
    L("  const int _r = _wm0 + _i * 16 + _g;");
    for (int q = 0; q < 4; q++)
      if (G->split3) L("  kbc_split_tf32(_As[_cur]%s, _fa[_i][%d], _fal[_i][%d]);", a_at[q], q, q);
      else L("  _fa[_i][%d] = __float_as_uint(_As[_cur]%s);", q, a_at[q]);
    L("}");
    L("#pragma unroll");
    L("for (int _j = 0; _j < %d; ++_j) {", f->ni);
    L("  const int _c = _wn0 + _j * 8 + _g;");
    for (int q = 0; q < 2; q++)
      if (G->split3) L("  kbc_split_tf32(_Bs[_cur]%s, _fb[_j][%d], _fbl[_j][%d]);", b_at[q], q, q);
      else L("  _fb[_j][%d] = __float_as_uint(_Bs[_cur]%s);", q, b_at[q]);
    L("}");
    L("#pragma unroll");
    L("for (int _i = 0; _i < %d; ++_i)", f->mi);
    L("  #pragma unroll");
    if (G->split3) {
      L("  for (int _j = 0; _j < %d; ++_j) { // the small products first", f->ni);
      L("    kbc_mma_tf32(_acc[_i][_j], _fal[_i], _fb[_j]);");
      L("    kbc_mma_tf32(_acc[_i][_j], _fa[_i], _fbl[_j]);");
      L("    kbc_mma_tf32(_acc[_i][_j], _fa[_i], _fb[_j]);");
      L("  }");
    } else {
      L("  for (int _j = 0; _j < %d; ++_j) kbc_mma_tf32(_acc[_i][_j], _fa[_i], _fb[_j]);", f->ni);
    }
    G->E.indent--;
    L("}");
  }
}

/* The epilogue through shared memory: per group of columns, the threads
 * write their accumulators to _Cs, then each thread takes one row
 * (m = _m0 + _tid % BM, decoded once) and strides over the group's columns,
 * so that a warp stores 32 consecutive m. */
/* The output element's store (an atomic add of a K slice's partial sum
 * when split). */
static void store(gemm *G, const char *v) {
  const ir_stmt *s = G->s;
  const char *dst = P("%s[%s]", G->C->names->tensor[s->out->id], cg_offset(&G->E, s->out, s->lhs));
  if (G->split) L("if (_splits > 1) atomicAdd(&%s, %s); else %s = %s;", dst, v, dst, v);
  else L("%s = %s;", dst, v);
}

static void emit_epilogue_staged(gemm *G) {
  const gemm_cfg *f = &G->f;
  const ir_stmt *s = G->s;
  const cg_contraction *c = &G->c;
  int T = GEMM_THREADS;
  for (int id = 0; id < s->n_index; id++) G->bind[id] = G->names[id];
  L("// epilogue through shared memory (the output is contiguous along m): each thread takes row");
  L("// _m0 + _tid %% %d and strides over %d column%s at a time", f->bm, G->nc, G->nc == 1 ? "" : "s");
  L("const int _ml = _tid %% %d;", f->bm);
  L("const long long _m = _m0 + _ml;");
  L("const bool _mok = _m < _M;");
  decode_named(G, "_m", c->m, c->n_m, "");
  for (int p = 0; p < G->passes; p++) {
    int j0, j1;
    const char *row, *cidx, *col;
    if (!f->mma) {
      int rn = f->tn / f->vn;
      row = f->vm == 4 ? P("(_i / 4) * %d + _ty * 4 + _i %% 4", f->bm / (f->tm / 4)) : P("_ty * %d + _i", f->tm);
      if (f->vn == 4) {
        j0 = 4 * p, j1 = 4 * p + 4;
        cidx = "_tx * 4 + _j % 4";
        col = P("%d + _c", p * (f->bn / rn));
      } else {
        int q = f->tn / G->passes;
        j0 = p * q, j1 = (p + 1) * q;
        cidx = p ? P("_tx * %d + _j - %d", q, j0) : P("_tx * %d + _j", q);
        col = G->passes == 1 ? "_c" : P("(_c / %d) * %d + %d + _c %% %d", q, f->tn, j0, q);
      }
    } else if (G->passes == 1) {
      j0 = 0, j1 = 2 * f->ni;
      row = "_wm0 + (_i / 2) * 16 + (_i % 2) * 8 + _g";
      cidx = "_wn0 + (_j / 2) * 8 + _t4 * 2 + _j % 2";
      col = "_c";
    } else {
      j0 = 2 * p, j1 = 2 * p + 2;
      row = "_wm0 + (_i / 2) * 16 + (_i % 2) * 8 + _g";
      cidx = P("(_warp %% %d) * 8 + _t4 * 2 + _j %% 2", f->wn);
      col = P("(_c / 8) * %d + %d + _c %% 8", f->ni * 8, p * 8);
    }
    L("// %s", G->passes == 1 ? "all columns of the tile" : P("column group %d of %d", p, G->passes));
    L("#pragma unroll");
    L("for (int _i = 0; _i < %d; ++_i)", f->mma ? f->mi * 2 : f->tm);
    L("  #pragma unroll");
    L("  for (int _j = %d; _j < %d; ++_j) _Cs[%s][%s] = %s;", j0, j1, row, cidx,
      f->mma ? "_acc[_i / 2][_j / 2][(_i % 2) * 2 + _j % 2]" : "_acc[_i][_j]");
    L("__syncthreads();");
    L("for (int _c = _tid / %d; _c < %d; _c += %d) {", f->bm, G->nc, T / f->bm);
    G->E.indent++;
    L("const long long _n = _n0 + %s;", col);
    L("if (!_mok || _n >= _N) continue;");
    decode_named(G, "_n", c->n, c->n_n, "");
    G->E.known = c->reduce;
    G->E.known_value = "_Cs[_ml][_c]";
    const char *v = cg_expr(&G->E, s->rhs);
    if (s->rhs->type != IR_TY_FLOAT) v = P("(float)(%s)", v);
    store(G, v);
    G->E.known = NULL;
    G->E.indent--;
    L("}");
    L("__syncthreads();");
  }
}

/* Whether the output's flat offset steps by exactly one along the
 * flattened N indices (then a thread's consecutive columns are
 * consecutive floats and can be stored as one vector). */
static int out_contiguous_along_n(gemm *G) {
  return cg_offset_contiguous(G->C->a, G->s, cg_flat_offset(G->C->a, G->s->out, G->s->lhs), G->c.n, G->c.n_n);
}

/* The tile column of the thread's output j (a C expression in j). */
static const char *column(gemm *G, const char *j) {
  const gemm_cfg *f = &G->f;
  if (f->mma) return P("_wn0 + (%s / 2) * 8 + _t4 * 2 + %s %% 2", j, j);
  if (f->vn == 4) return P("(%s / 4) * %d + _tx * 4 + %s %% 4", j, f->bn / (f->tn / 4), j);
  return P("_tx * %d + %s", f->tn, j);
}

/* Whether every address of the epilogue (its loads outside the main sum,
 * and the output) depends on the indices ids only through their
 * flattening, and no value uses them: then they need no decoding. */
static int collapses(gemm *G, const ir_expr *e, const int *ids, int n) {
  if (e == G->c.reduce) return 1;
  int mentions = 0;
  if (e->op == IR_OP_LOAD || e->op == IR_OP_INDEX)
    for (int i = 0; i < n; i++) mentions |= ir_expr_mentions_index(e, ids[i]);
  if (e->op == IR_OP_INDEX) return !mentions;
  if (e->op == IR_OP_LOAD)
    return !mentions || (!e->u.load.padded &&
                         cg_collapse(G->C->a, G->s, cg_flat_offset(G->C->a, e->u.load.tensor, e->u.load.idx), ids, n));
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!collapses(G, e->arg[i], ids, n)) return 0;
  return 1;
}

static int epilogue_collapses(gemm *G, const int *ids, int n) {
  const ir_stmt *s = G->s;
  return collapses(G, s->rhs, ids, n) && cg_collapse(G->C->a, s, cg_flat_offset(G->C->a, s->out, s->lhs), ids, n);
}

/* Per output element of the thread: decode, epilogue, store. */
static void emit_epilogue(gemm *G) {
  if (G->staged) {
    emit_epilogue_staged(G);
    return;
  }
  const gemm_cfg *f = &G->f;
  const ir_stmt *s = G->s;
  const cg_contraction *c = &G->c;
  int R, Cn;
  const char *row, *col, *acc;
  if (!f->mma) {
    R = f->tm;
    Cn = f->tn;
    row = f->vm == 4 ? P("(_i / 4) * %d + _ty * 4 + _i %% 4", f->bm / (f->tm / 4)) : P("_ty * %d + _i", f->tm);
    col = column(G, "_j");
    acc = "_acc[_i][_j]";
  } else {
    R = f->mi * 2;
    Cn = f->ni * 2;
    row = "_wm0 + (_i / 2) * 16 + (_i % 2) * 8 + _g";
    col = column(G, "_j");
    acc = "_acc[_i / 2][_j / 2][(_i % 2) * 2 + _j % 2]";
  }
  for (int id = 0; id < s->n_index; id++) G->bind[id] = G->names[id];
  /* Row and column digits are decoded only where some address needs them
   * (flat spaces: cg_offset addresses through _m / _n). */
  int mflat = c->n_m > 1 && epilogue_collapses(G, c->m, c->n_m);
  int nflat = c->n_n > 1 && epilogue_collapses(G, c->n, c->n_n);
  /* a thread's columns come in runs of `run` consecutive n */
  int run = f->mma ? 2 : f->vn == 4 ? 4 : f->tn;
  L("// epilogue: each output element of the thread (the main sum is the accumulator)");
  int free_ids[2 * CG_MAX_OUTER + 64], n_free = 0;
  for (int i = 0; i < c->n_m; i++) free_ids[n_free++] = c->m[i];
  for (int i = 0; i < c->n_n; i++) free_ids[n_free++] = c->n[i];
  int hoisted = cg_hoist_invariants(&G->E, s->rhs, free_ids, n_free);
  L("bool _colok[%d];", Cn);
  if (!nflat && c->n_n > 1) L("// columns decoded at the start of each run of %d, then carried", run);
  for (int i = 0; i < c->n_n && !nflat; i++) L("long long _col_%s[%d];", G->names[c->n[i]], Cn);
  L("#pragma unroll");
  L("for (int _j = 0; _j < %d; ++_j) {", Cn);
  G->E.indent++;
  L("const long long _n = _n0 + %s;", col);
  L("_colok[_j] = _n < _N;");
  if (!nflat) {
    const char **dst = KBC_NEW_ARRAY(G->C->a, const char *, c->n_n);
    for (int i = 0; i < c->n_n; i++) dst[i] = P("_col_%s[_j]", G->names[c->n[i]]);
    if (c->n_n > 1 && run > 1) {
      L("if (_j %% %d == 0) {", run);
      G->E.indent++;
      emit_decode(G, "_n", c->n, c->n_n, dst);
      G->E.indent--;
      L("} else { // the previous column plus one");
      G->E.indent++;
      for (int i = 0; i < c->n_n; i++)
        L("%s = _col_%s[_j - 1]%s;", dst[i], G->names[c->n[i]], i == c->n_n - 1 ? " + 1" : "");
      for (int i = c->n_n - 1; i > 0; i--) {
        L("if (%s >= %s) {", dst[i], ext_c(G, c->n[i]));
        G->E.indent++;
        L("%s = 0;", dst[i]);
        L("++%s;", dst[i - 1]);
      }
      for (int i = c->n_n - 1; i > 0; i--) {
        G->E.indent--;
        L("}");
      }
      G->E.indent--;
      L("}");
    } else {
      emit_decode(G, "_n", c->n, c->n_n, dst);
    }
  }
  G->E.indent--;
  L("}");
  G->E.n_flat = 0;
  if (mflat) {
    G->E.flat_ids[G->E.n_flat] = c->m;
    G->E.flat_n[G->E.n_flat++] = c->n_m;
    G->bind[c->m[c->n_m - 1]] = "_m";
  }
  if (nflat) {
    G->E.flat_ids[G->E.n_flat] = c->n;
    G->E.flat_n[G->E.n_flat++] = c->n_n;
  }
  L("#pragma unroll");
  L("for (int _i = 0; _i < %d; ++_i) {", R);
  G->E.indent++;
  L("const long long _m = _m0 + %s;", row);
  L("if (_m >= _M) continue;");
  if (!mflat) decode_named(G, "_m", c->m, c->n_m, "");
  /* Vector stores: a thread's columns come in runs of V consecutive n (4
   * for FFMA tiles of 4-wide chunks, 2 for mma fragments). */
  int V = f->mma ? 2 : f->vn == 4 ? 4 : 1;
  if (G->split || !out_contiguous_along_n(G)) V = 1;
  L("#pragma unroll");
  L("for (int _j0 = 0; _j0 < %d; _j0 += %d) {", Cn, V);
  G->E.indent++;
  if (V > 1) L("float _v[%d];", V);
  L("#pragma unroll");
  L("for (int _j = _j0; _j < _j0 + %d; ++_j) {", V);
  G->E.indent++;
  L("if (!_colok[_j]) continue;");
  if (nflat) {
    L("const long long _n = _n0 + %s;", col);
    G->bind[c->n[c->n_n - 1]] = "_n";
  } else {
    for (int i = 0; i < c->n_n; i++) L("const long long %s = _col_%s[_j];", G->names[c->n[i]], G->names[c->n[i]]);
  }
  G->E.known = c->reduce;
  G->E.known_value = acc;
  const char *v = cg_expr(&G->E, s->rhs);
  if (s->rhs->type != IR_TY_FLOAT) v = P("(float)(%s)", v);
  if (V == 1) store(G, v);
  else L("_v[_j - _j0] = %s;", v);
  G->E.known = NULL;
  G->E.indent--;
  L("}");
  if (V > 1) {
    /* the run's first element: its address, then one vector store when
     * the whole run is in range and aligned */
    L("if (!_colok[_j0]) continue;");
    if (nflat)
      L("const long long _n = _n0 + %s;", column(G, "_j0"));
    else
      for (int i = 0; i < c->n_n; i++) L("const long long %s = _col_%s[_j0];", G->names[c->n[i]], G->names[c->n[i]]);
    L("float *_p = &%s[%s];", G->C->names->tensor[s->out->id], cg_offset(&G->E, s->out, s->lhs));
    L("if (_colok[_j0 + %d] && ((unsigned long long)_p & %dULL) == 0) {", V - 1, 4 * V - 1);
    if (V == 4) L("  *(float4 *)_p = make_float4(_v[0], _v[1], _v[2], _v[3]);");
    else L("  *(float2 *)_p = make_float2(_v[0], _v[1]);");
    L("} else { // one by one, each in range (columns in range form a prefix of the run)");
    for (int k = 0; k < V; k++) L("  if (_colok[_j0 + %d]) _p[%d] = _v[%d];", k, k, k);
    L("}");
  }
  G->E.indent--;
  L("}");
  G->E.indent--;
  L("}");
  G->E.n_flat = 0;
  G->E.n_hoisted = hoisted;
}

static const char tf32_helpers[] =
    "#ifndef KBC_GEMM_TF32_HELPERS\n"
    "#define KBC_GEMM_TF32_HELPERS\n"
    "// TF32 tensor cores: x rounded to TF32 (nearest, ties away from zero), kept as a float;\n"
    "// d += a * b on one m16n8k8 tile (fragments as in the PTX ISA, mma.m16n8k8 .tf32).\n"
    "__device__ __forceinline__ float kbc_tf32(float x) {\n"
    "  unsigned u;\n"
    "  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(u) : \"f\"(x));\n"
    "  return __uint_as_float(u);\n"
    "}\n"
    "__device__ __forceinline__ void kbc_mma_tf32(float *d, const unsigned *a, const unsigned *b) {\n"
    "  asm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, \"\n"
    "      \"{%0, %1, %2, %3};\"\n"
    "      : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "#endif\n\n";

static const char split_helpers[] =
    "#ifndef KBC_GEMM_SPLIT_HELPERS\n"
    "#define KBC_GEMM_SPLIT_HELPERS\n"
    "// 3xTF32: x as its TF32 rounding (hi) and the TF32 rounding of the rest (lo), so that\n"
    "// a*b = ah*bh + ah*bl + al*bh + al*bl, the last term dropped, to about fp32 accuracy.\n"
    "__device__ __forceinline__ void kbc_split_tf32(float x, unsigned &hi, unsigned &lo) {\n"
    "  const float h = kbc_tf32(x);\n"
    "  hi = __float_as_uint(h);\n"
    "  lo = __float_as_uint(kbc_tf32(x - h));\n"
    "}\n"
    "#endif\n\n";

/* Matrix-vector like shapes (few tiles, a long reduction): the rows
 * family with a team of threads per output element splitting the sum. */
static int emit_as_rows(cg_ctx *C, const cg_group *g, const ir_stmt *s, double k_est, cg_kernel *k) {
  cg_group rg = {.family = CG_FAMILY_ROWS, .first = g->first, .count = 1};
  rg.phi = KBC_NEW_ARRAY(C->a, int, CG_MAX_OUTER);
  for (int id = 0; id < s->n_index && rg.n_outer < CG_MAX_OUTER; id++)
    if (s->index[id].kind == IR_IDX_FREE) {
      rg.outer_extent[rg.n_outer] = s->index[id].extent;
      rg.phi[rg.n_outer++] = id;
    }
  rg.team = 1;
  while (rg.team < CG_BLOCK && rg.team * 16 < k_est) rg.team *= 2;
  return cg_emit_rows(C, &rg, k);
}

static void operand_init(gemm *G, gemm_operand *o, char tag) {
  const cg_contraction *c = &G->c;
  int is_a = tag == 'a';
  o->tag = tag;
  o->e = is_a ? c->a : c->b;
  o->n_x = is_a ? c->n_m : c->n_n;
  o->x = is_a ? c->m : c->n;
  o->bx = is_a ? G->f.bm : G->f.bn;
  o->X = is_a ? "_M" : "_N";
  o->x0 = is_a ? "_m0" : "_n0";
  double run_k = 0, run_x = 0;
  gemm_stride_runs(G->C->a, G->s, o->e, c->k[c->n_k - 1], o->x[o->n_x - 1], &run_k, &run_x);
  o->kmajor = run_k >= run_x;
  o->fast = gemm_split_offset(G->C->a, G->s, c, o->e, &o->row_off, &o->k_off);
  sym *rows = o->fast && o->n_x > 1 ? cg_collapse(G->C->a, G->s, o->row_off, o->x, o->n_x) : NULL;
  o->flat_rows = rows != NULL;
  if (rows) o->row_off = rows;
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
static void plan_operand_loads(gemm *G) {
  const cg_contraction *c = &G->c;
  sym *ka = NULL, *kb = NULL;
  if (c->n_k > 1 && G->op[0].fast && G->op[1].fast) {
    ka = cg_collapse(G->C->a, G->s, G->op[0].k_off, c->k, c->n_k);
    kb = cg_collapse(G->C->a, G->s, G->op[1].k_off, c->k, c->n_k);
  }
  if (ka && kb) {
    gemm flat = *G;
    flat.kflat = 1;
    flat.op[0].k_off = ka;
    flat.op[1].k_off = kb;
    plan_loads(&flat, &flat.op[0]);
    plan_loads(&flat, &flat.op[1]);
    if (flat.n_kslots <= GEMM_KFLAT_MAX_SLOTS) {
      *G = flat;
      return;
    }
  }
  plan_loads(G, &G->op[0]);
  plan_loads(G, &G->op[1]);
}

/* Bytes of static shared memory besides the tiles: the k tables. */
static int table_bytes(const gemm *G) {
  int b = G->table_digits ? 2 * G->c.n_k * G->f.bk * 8 : 0;
  for (int w = 0; w < 2; w++)
    if (G->op[w].table && G->op[w].fast) b += 2 * G->f.bk * 8;
  return b;
}

/* Whether the epilogue goes through shared memory: when the output is
 * contiguous along m (a convolution's spatial positions) rather than n,
 * the thread tiles' stores would hit a separate sector per lane. */
static void plan_epilogue(gemm *G) {
  const ir_stmt *s = G->s;
  const cg_contraction *c = &G->c;
  const gemm_cfg *f = &G->f;
  G->staged = 0;
  double run_m = 0, run_n = 0;
  ir_expr probe = {.op = IR_OP_LOAD, .type = IR_TY_FLOAT};
  probe.u.load.tensor = s->out;
  probe.u.load.idx = s->lhs;
  gemm_stride_runs(G->C->a, s, &probe, c->m[c->n_m - 1], c->n[c->n_n - 1], &run_m, &run_n);
  if (run_m <= 0 || run_n > 0 || GEMM_THREADS % f->bm) return;
  int tiles = gemm_smem_bytes(f);
  for (int passes = 1; passes <= (f->mma ? f->ni : f->tn); passes++) {
    if (f->mma) {
      /* all columns at once, else a pass per n8 tile of the warps */
      if (passes != 1 && passes != f->ni) continue;
      G->passes = passes;
      G->nc = passes == 1 ? f->bn : f->wn * 8;
    } else {
      /* 4-wide column chunks: a pass per chunk; contiguous thread columns:
       * the smallest split of tn that fits */
      if (f->vn == 4 ? passes != f->tn / 4 : f->tn % passes) continue;
      G->passes = passes;
      G->nc = f->bn / passes;
    }
    int cs = f->bm * (G->nc + 1) * 4;
    if ((tiles > cs ? tiles : cs) + table_bytes(G) <= GEMM_SMEM_STATIC) {
      G->staged = 1;
      return;
    }
    if (!f->mma && f->vn == 4) return;
  }
}

int cg_emit_gemm(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  if (g->count != 1) return 0;
  const ir_stmt *s = IR_STMT(C->p, g->first);
  gemm *G = KBC_NEW(C->a, gemm);
  G->C = C;
  G->s = s;
  cg_contraction *c = &G->c;
  if (!cg_find_contraction(C->a, s, c) || c->n_m < 1 || c->n_n < 1 || c->n_k < 1) return 0;
  sym *M = gemm_extent_product(C->a, s, c->m, c->n_m), *N = gemm_extent_product(C->a, s, c->n, c->n_n);
  sym *K = gemm_extent_product(C->a, s, c->k, c->n_k), *B = gemm_extent_product(C->a, s, c->bat, c->n_b);
  if (!M || !N || !K || !B) return 0;
  gemm_shape sh = {gemm_tile_estimate(M), gemm_tile_estimate(N), gemm_tile_estimate(K), gemm_tile_estimate(B), 0};
  /* Split-K needs an output that is the bare sum and a K that may be long. */
  sh.splittable = s->rhs == c->reduce && !s->accumulate && sh.k >= 2.0 * GEMM_SPLIT_MIN_KTILES * 16;
  /* fp32 on tensor cores (experimental, opt.fp32_mma: KBC_FP32_MMA=1): 3xTF32 split products */
  G->split3 = C->t->precision == CG_PRECISION_FP32 && C->t->opt.fp32_mma;
  int mma = C->t->precision == CG_PRECISION_TF32 || G->split3;
  if (!gemm_choose_cfg(C->t, &sh, G->split3 ? 2 : mma, &G->f)) return 0;
  gemm_cfg *f = &G->f;

  /* Few tiles at the estimated extents and a reduction longer than the
   * output (a projection of a few rows): rows, a team per element. */
  double me = ir_estimate(M), ne = ir_estimate(N), ke = ir_estimate(K), be = ir_estimate(B);
  if (ceil(me / f->bm) * ceil(ne / f->bn) * be * 4 < C->t->sm_count && ke >= 4096 && ke > me * ne)
    return emit_as_rows(C, g, s, ke, k);

  sym *tiles = sym_mul(C->a, sym_mul(C->a, sym_div(C->a, sym_add(C->a, M, sym_const(C->a, f->bm - 1)), f->bm),
                                     sym_div(C->a, sym_add(C->a, N, sym_const(C->a, f->bn - 1)), f->bn)),
                       B);
  if (!tiles) return 0;

  G->names = cg_index_names(C->a, C->names, s);
  G->bind = KBC_NEW_ARRAY(C->a, const char *, s->n_index + 1);
  for (int id = 0; id < s->n_index; id++) G->bind[id] = G->names[id];
  G->E = (cg_emit){.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1, .s = s,
                   .idx = G->bind};
  G->builder = -1;
  operand_init(G, &G->op[0], 'a');
  operand_init(G, &G->op[1], 'b');
  plan_operand_loads(G);
  plan_epilogue(G);

  /* Split-K when the output is the bare sum, K may be long enough to cut,
   * and the output tiles may be fewer than two waves of block slots (the
   * slice count is decided at run time; only output tiles known to be
   * plenty rule it out here). */
  G->slots = 2 * C->t->sm_count;
  int known = sym_is_const(M, NULL) && sym_is_const(N, NULL) && sym_is_const(B, NULL);
  G->split = sh.splittable && !(known && ceil(me / f->bm) * ceil(ne / f->bn) * be >= 2.0 * G->slots);
  k->family = CG_FAMILY_GEMM;
  k->first = g->first;
  k->count = 1;
  k->block = GEMM_THREADS;
  k->smem = 0; /* static __shared__, <= 48 KB */
  k->work = G->split ? sym_scale(C->a, tiles, GEMM_SPLIT_MAX) : tiles;
  k->per_block = 1;
  k->max_blocks = G->split ? G->slots : 0;
  k->zero_tensor = G->split ? s->out->id : -1;
  k->n_tensors = cg_collect_tensors(C->a, C->p, g->first, 1, &k->tensors);

  /* ---- header ---- */
  if (mma) kbc_buf_puts(C->out, tf32_helpers);
  if (G->split3) kbc_buf_puts(C->out, split_helpers);
  kbc_buf_printf(C->out, "// %s\n", cg_stmt_comment(C->a, s));
  kbc_buf_printf(C->out, "// schedule: gemm (%s), M = %s, N = %s, K = %s, batch = %s\n",
                 G->split3 ? "3xTF32 mma.sync m16n8k8, split operands, fp32 accumulation"
                 : mma     ? "TF32 mma.sync m16n8k8, fp32 accumulation"
                           : "FFMA fp32",
                 join_names(G, c->m, c->n_m),
                 join_names(G, c->n, c->n_n), join_names(G, c->k, c->n_k), join_names(G, c->bat, c->n_b));
  if (!mma)
    kbc_buf_printf(C->out, "//   tile %dx%dx%d, %d threads as %d x %d, %dx%d outputs per thread",
                   f->bm, f->bn, f->bk, GEMM_THREADS, f->ty, f->tx, f->tm, f->tn);
  else
    kbc_buf_printf(C->out, "//   tile %dx%dx%d, %d threads: %d x %d warps, warp tile %dx%d (%d x %d mma tiles)", f->bm,
                   f->bn, f->bk, GEMM_THREADS, f->wm, f->wn, f->mi * 16, f->ni * 8, f->mi, f->ni);
  kbc_buf_printf(C->out, ", shared memory %d B double-buffered\n", gemm_smem_bytes(f));
  if (G->staged)
    kbc_buf_printf(C->out, "//   epilogue through shared memory (output contiguous along m), %d pass%s of %d columns\n",
                   G->passes, G->passes == 1 ? "" : "es", G->nc);
  for (int w = 0; w < 2; w++) {
    gemm_operand *o = &G->op[w];
    kbc_buf_printf(C->out, "//   %c: loaded %s-contiguous, %d per thread per k-tile, %s\n", w ? 'B' : 'A',
                   o->kmajor ? "k" : (w ? "n" : "m"), o->slots,
                   o->fast ? "addressed as row offset + k offset" : "evaluated per element");
  }
  /* opt.gemm_min_blocks = N (KBC_GEMM_MIN_BLOCKS, experimental, 2..4): ask
   * ptxas for N blocks per multiprocessor (registers capped, some spilled) */
  G->E.written = cg_signature(C->out, C->a, C->p, C->names, k->name, GEMM_THREADS, C->t->opt.gemm_min_blocks,
               k->n_tensors, k->tensors, g->first, 1);
  kbc_buf_puts(C->out, "{\n");

  /* ---- setup ---- */
  if (!G->staged) {
    L("__shared__ __align__(16) float _As[2][%d][%d]; // A tile, k-major: _As[k][m]", f->bk, f->sa + f->pad_a);
    L("__shared__ __align__(16) float _Bs[2][%d][%d]; // B tile, k-major: _Bs[k][n]", f->bk, f->sb + f->pad_b);
  } else {
    L("__shared__ __align__(16) union {");
    L("  struct {");
    L("    float As[2][%d][%d];", f->bk, f->sa + f->pad_a);
    L("    float Bs[2][%d][%d];", f->bk, f->sb + f->pad_b);
    L("  } k;                 // the K loop's tiles");
    L("  float Cs[%d][%d]; // the epilogue's output tile, one group of columns at a time", f->bm, G->nc + 1);
    L("} _sm;");
    L("float (&_As)[2][%d][%d] = _sm.k.As; // A tile, k-major: _As[k][m]", f->bk, f->sa + f->pad_a);
    L("float (&_Bs)[2][%d][%d] = _sm.k.Bs; // B tile, k-major: _Bs[k][n]", f->bk, f->sb + f->pad_b);
    L("float (&_Cs)[%d][%d] = _sm.Cs;", f->bm, G->nc + 1);
  }
  if (G->table_digits)
    L("__shared__ long long _kd[2][%d][%d]; // k table: digits of k = k-tile base + i", c->n_k, f->bk);
  for (int w = 0; w < 2; w++)
    if (G->op[w].table && G->op[w].fast)
      L("__shared__ long long _%cqt[2][%d]; // k table: %c offset of k = k-tile base + i", G->op[w].tag, f->bk,
        w ? 'B' : 'A');
  L("const long long _M = %s;", cg_sym(&G->E, M));
  L("const long long _N = %s;", cg_sym(&G->E, N));
  L("const long long _K = %s;", cg_sym(&G->E, K));
  L("const long long _tiles_m = (_M + %d) / %d;", f->bm - 1, f->bm);
  L("const long long _tiles_n = (_N + %d) / %d;", f->bn - 1, f->bn);
  L("const long long _ktiles = (_K + %d) / %d;", f->bk - 1, f->bk);
  if (G->split) {
    int slots = G->slots;
    L("// split-K: with fewer output tiles than %d, K is cut into up to %d slices of at least %d k-tiles,", 2 * slots,
      GEMM_SPLIT_MAX, GEMM_SPLIT_MIN_KTILES);
    L("// the count that best fills waves of %d blocks (two per multiprocessor); the slices' sums", slots);
    L("// are added atomically into the zeroed output");
    L("const long long _out_tiles = _tiles_m * _tiles_n * %s;", cg_sym(&G->E, B));
    L("long long _splits = 1;");
    L("for (long long _s = 1, _best = 0; _s <= %d && _out_tiles < %d && _s * %d <= _ktiles; ++_s) {", GEMM_SPLIT_MAX,
      2 * slots, GEMM_SPLIT_MIN_KTILES);
    L("  const long long _fill = 1000 * _out_tiles * _s / ((_out_tiles * _s + %d) / %d * %d); // per mille", slots - 1,
      slots, slots);
    L("  if (_fill > _best + 50) { _best = _fill; _splits = _s; }");
    L("}");
    L("const long long _kper = (_ktiles + _splits - 1) / _splits; // k-tiles per slice");
    L("const long long _tiles = _out_tiles * _splits;");
  } else {
    L("const long long _tiles = _tiles_m * _tiles_n * %s;", cg_sym(&G->E, B));
  }
  emit_k_increments(G);
  L("const int _tid = threadIdx.x;");
  if (!mma) {
    L("const int _tx = _tid %% %d; // thread column: outputs n = _n0 + %s", f->tx,
      f->vn == 4 ? P("(j / 4) * %d + _tx * 4 + j %% 4", f->bn / (f->tn / 4)) : P("_tx * %d + j", f->tn));
    L("const int _ty = _tid / %d; // thread row: outputs m = _m0 + %s", f->tx,
      f->vm == 4 ? P("(i / 4) * %d + _ty * 4 + i %% 4", f->bm / (f->tm / 4)) : P("_ty * %d + i", f->tm));
  } else {
    L("const int _warp = _tid / 32, _lane = _tid %% 32;");
    L("const int _g = _lane / 4, _t4 = _lane %% 4; // mma fragment row group, thread in group");
    L("const int _wm0 = (_warp / %d) * %d, _wn0 = (_warp %% %d) * %d; // warp tile origin", f->wn, f->mi * 16, f->wn,
      f->ni * 8);
  }
  L("for (long long _tile = blockIdx.x; _tile < _tiles; _tile += gridDim.x) {");
  G->E.indent++;
  L("long long _t = _tile;");
  if (G->split) {
    L("const long long _kt0 = (_t %% _splits) * _kper; // this slice: k-tiles [_kt0, _kt0 + _nkt)");
    L("_t /= _splits;");
    L("const long long _nkt = _ktiles - _kt0 < _kper ? _ktiles - _kt0 : _kper;");
    L("if (_nkt <= 0) continue;");
    L("const long long _kend = (_kt0 + _nkt) * %d < _K ? (_kt0 + _nkt) * %d : _K;", f->bk, f->bk);
  } else {
    L("const long long _kt0 = 0, _nkt = _ktiles, _kend = _K; // the whole K range");
  }
  L("const long long _n0 = (_t %% _tiles_n) * %d;", f->bn);
  L("_t /= _tiles_n;");
  L("const long long _m0 = (_t %% _tiles_m) * %d;", f->bm);
  L("_t /= _tiles_m;");
  if (c->n_b > 0) {
    decode_named(G, "_t", c->bat, c->n_b, " // batch");
  }
  emit_rows(G, &G->op[0]);
  emit_rows(G, &G->op[1]);
  emit_k_init(G);
  L("float _av[%d], _bv[%d]; // staging registers: this thread's A and B elements of one k-tile", G->op[0].slots,
    G->op[1].slots);
  if (!mma) {
    L("float _acc[%d][%d];", f->tm, f->tn);
    L("#pragma unroll");
    L("for (int _i = 0; _i < %d; ++_i)", f->tm);
    L("  #pragma unroll");
    L("  for (int _j = 0; _j < %d; ++_j) _acc[_i][_j] = 0.0f;", f->tn);
  } else {
    L("float _acc[%d][%d][4];", f->mi, f->ni);
    L("#pragma unroll");
    L("for (int _i = 0; _i < %d; ++_i)", f->mi);
    L("  #pragma unroll");
    L("  for (int _j = 0; _j < %d; ++_j) _acc[_i][_j][0] = _acc[_i][_j][1] = _acc[_i][_j][2] = _acc[_i][_j][3] = 0.0f;",
      f->ni);
  }
  L("// k-tile 0 -> shared buffer 0");
  if (G->builder >= 0) {
    emit_table_write(G, "0");
    L("__syncthreads();");
  }
  L("{");
  G->E.indent++;
  L("const long long _kb = _kt0 * %d;", f->bk);
  emit_loads(G, "0");
  G->E.indent--;
  L("}");
  emit_k_advance(G);
  emit_table_write(G, "1");
  emit_stores(G, "0");
  L("__syncthreads();");
  L("for (long long _kt = 0; _kt < _nkt; ++_kt) {");
  G->E.indent++;
  L("const int _cur = (int)(_kt & 1);");
  L("{ // k-tile _kt + 1 -> registers, in flight during the math below (none past the end: k >= K)");
  G->E.indent++;
  L("const long long _kb = (_kt0 + _kt + 1) * %d;", f->bk);
  emit_loads(G, "_cur ^ 1");
  G->E.indent--;
  L("}");
  emit_k_advance(G);
  emit_table_write(G, "_cur");
  emit_math(G);
  emit_stores(G, "_cur ^ 1");
  L("__syncthreads();");
  G->E.indent--;
  L("}");
  emit_epilogue(G);
  G->E.indent--;
  L("}");
  kbc_buf_puts(C->out, "}\n\n");
  return 1;
}
