/* gemm_pack.c — an x-major operand of the wgmma K loop packed k-major
 * before the launch.
 *
 * Before: a wgmma plan (gemm_wgmma_plan, its tile chosen and counted)
 * with an operand o contiguous along its free indices x rather than along
 * K — the B of `a @ b`, b[k, j] with j fastest — which the K loop would
 * copy into its K-major stages a float at a time (gemm_operand.tr).
 * After gemm_pack_plan(): where the copy pays (pack_pays), o reads instead
 * a packed copy P of the elements it uses, laid out [r][x][kp] (r: the
 * flat batch indices o mentions, x: its flat free indices, kp: the flat K
 * padded to a multiple of 4, zero past K), made before the launch by the
 * kernel's own `NAME_pack<i>` (gemm_pack_emit; rounded to TF32 unless the
 * loop is 3xTF32).  o is then k-major, addressed as row offset
 * (r X + x) Kp plus k offset k: 16-byte chunks, whole and aligned but at
 * the edges.  A k-major operand known to be misaligned (a row of K = 2,949
 * floats: most chunks would go a float at a time, so the vector loop would
 * not take the product at all) is packed too, whatever the cost, its rows
 * padded to 16 bytes.  The pack launch takes the kernel's own parameters (the
 * runtime passes it the same arguments), its copy at the operand's place
 * in the kernel's scratch (cg_kernel.prep).
 *
 * The pack kernel transposes through shared memory: a block's 32 x 32
 * tile of (x, k) is read with the lanes along the tensor's contiguous
 * direction (x, or k for a misaligned k-major operand: 128-byte reads) and
 * written with the lanes along k (P's). */
#include <math.h>

#include "gemm_impl.h"
#include "ir/cost.h"
#include "ir/subst.h"

enum { PACK_TILE = 32 }; /* the pack kernel's tiles, PACK_TILE x PACK_TILE of (x, k) */

/* Whether the pack pays: the transposed loop copies every float of the
 * operand's tiles, once per tile along the other operand; the pack
 * streams the operand's floats once (read and write) and costs a launch.
 * Fitted on the H100 (2026-12-06, every pack forced against none, A B B
 * A): L1/1 4096^3 tf32 782 -> 483 us (537M copied floats against a
 * 16.7M-float pack), the batched 128 x 512 x 1024 x 2048 2,166 -> 1,932
 * (1.07G against 268M): about 5 TB/s of 4-byte copies against 3 TB/s for
 * the pack's stream; SAM-HQ 64x64 b4 at fp32 1.13x slower with its 3.2 GB
 * score-sized operands packed too, which this leaves out.  Copied 16 bytes
 * at a time through the stage's low half (vec: gemm_operand.trv, 3xTF32),
 * about 10 TB/s (H100, 2026-12-07, against the pack at fp32: L1/2 2048 x
 * 8192 x 4096 1,729 us packed, 1,862 not: 537M floats; the batched
 * product 4,090 packed, 3,746 not). */
static int pack_pays(const cg_target *t, double tr_floats, double packed, int vec) {
  if (t->opt.gemm_pack == 2) return 1;
  double tr_us = tr_floats * 4 / (vec ? 10e6 : 5e6), pack_us = packed * 8 / 3e6 + 3;
  return tr_us > pack_us;
}

int gemm_pack_plan(kbc_arena *a, const cg_target *t, cg_gemm_plan *plan, int w) {
  gemm_operand *o = &plan->op[w];
  const gemm_tiling *tl = &plan->tiling;
  const cg_contraction *c = &tl->c;
  const ir_stmt *s = plan->s;
  /* a k-major operand only where misaligned: packed whatever the cost (else the vector loop cannot take it) */
  if (!t->opt.gemm_pack || (o->kmajor && !o->misaligned) || !tl->tiles) return 0;
  if (!o->fast || o->guarded || o->table || o->e->op != IR_OP_LOAD) return 0; /* a plain load */
  if (c->n_k > 1 && !plan->kflat) return 0; /* the vector loop's k is flat */
  /* P's extents: its rows r over the batch indices o mentions, x, Kp */
  sym *R = sym_const(a, 1), *r = sym_const(a, 0);
  int n_pb = 0, pb[CG_MAX_OUTER];
  for (int i = 0; i < c->n_b; i++) {
    if (!ir_expr_mentions_index(o->e, c->bat[i])) continue;
    const sym *e = s->index[c->bat[i]].extent;
    R = sym_mul(a, R, e);
    r = sym_add(a, sym_mul(a, r, e), sym_index(a, c->bat[i], NULL));
    pb[n_pb++] = c->bat[i];
  }
  sym *X = w ? tl->N : tl->M;
  sym *Kp = sym_scale(a, sym_div(a, sym_add(a, tl->K, sym_const(a, 3)), 4), 4);
  double packed = ir_estimate(R) * ir_estimate(X) * ir_estimate(Kp);
  double tr_floats = ir_estimate(tl->tiles) * o->bx * ir_estimate(tl->K);
  /* P holds each element the operand reads once: about the tensor's size
   * for a transpose (K padded to 4 at most quadruples it), but a load
   * whose x and k overlap (x[i + k], a convolution's im2col) would
   * multiply it — no pack then, whatever else says */
  const ir_tensor *T = o->e->u.load.tensor;
  double numel = 1;
  for (int d = 0; d < T->rank; d++) numel *= ir_estimate(T->shape[d]);
  if (packed > 4 * numel + (1 << 20)) return 0;
  if (!o->kmajor && !pack_pays(t, tr_floats, packed, gemm_trv_ok(a, t, plan, o))) return 0;
  o->src_off = ir_flat_offset(a, o->e->u.load.tensor, o->e->u.load.idx);
  if (!o->src_off) return 0;
  o->pack = 1;
  o->pack_along_k = o->kmajor;
  o->n_pb = n_pb;
  for (int i = 0; i < n_pb; i++) o->pb[i] = pb[i];
  o->pack_r = R;
  o->pack_x = X;
  o->pack_kp = Kp;
  o->pack_floats = sym_mul(a, sym_mul(a, R, X), Kp);
  o->pack_tiles = sym_mul(a, R, sym_mul(a, sym_div(a, sym_add(a, X, sym_const(a, PACK_TILE - 1)), PACK_TILE),
                                        sym_div(a, sym_add(a, Kp, sym_const(a, PACK_TILE - 1)), PACK_TILE)));
  /* the K loop's addresses: the last x index stands for the flat row (as
   * cg_collapse gives), the last k index for the flat k */
  sym *x = sym_index(a, o->x[o->n_x - 1], NULL);
  o->row_off = sym_mul(a, sym_add(a, sym_mul(a, r, X), x), Kp);
  o->k_off = sym_index(a, c->k[c->n_k - 1], NULL);
  o->flat_rows = o->n_x > 1;
  o->kmajor = 1;
  o->tr = 0;
  return 1;
}

/* ---- the pack kernel ------------------------------------------------------ */

/* The digits of flat over ids declared as fresh locals `_<prefix>_<name>`
 * (gemm_declare_decode), the indices bound to them. */
static void decode_into(gemm_emitter *ge, const char *prefix, const char *flat, const int *ids, int n) {
  if (!n) return;
  const char **dst = gemm_declare_digits(ge, flat, ids, n, cg_fmt(&ge->emit, "_%s_", prefix), "");
  for (int i = 0; i < n; i++) ge->bind[ids[i]] = dst[i];
}

void gemm_pack_emit(cg_ctx *C, const cg_gemm_plan *plan, const cg_kernel *k, int i) {
  int w = k->prep_pack[i] - 1;
  const gemm_operand *o = &plan->op[w];
  const gemm_tiling *tl = &plan->tiling;
  const cg_contraction *c = &tl->c;
  const ir_stmt *s = plan->s;
  const char **names = cg_index_names(C->a, C->names, s);
  const char **bind = KBC_NEW_ARRAY(C->a, const char *, s->n_index + 1);
  for (int id = 0; id < s->n_index; id++) bind[id] = names[id];
  gemm_emitter ge = {.ctx = C, .plan = plan, .kname = k->name, .names = names, .bind = bind,
                     .emit = {.a = C->a, .p = C->p, .opt = &C->t->opt, .names = C->names, .out = C->out, .indent = 1,
                              .s = s, .idx = bind}};
  cg_emit *E = &ge.emit;
  const char *load = cg_expr_comment(C->a, s, o->e), *tname = C->names->tensor[o->e->u.load.tensor->id];
  const char *pb = "", *xs = "", *ks = "";
  for (int j = 0; j < o->n_pb; j++) pb = cg_fmt(E, "%s%s%s", pb, j ? ", " : "", names[o->pb[j]]);
  for (int j = 0; j < o->n_x; j++) xs = cg_fmt(E, "%s%s%s", xs, j ? ", " : "", names[o->x[j]]);
  for (int j = 0; j < c->n_k; j++) ks = cg_fmt(E, "%s%s%s", ks, j ? ", " : "", names[c->k[j]]);
  kbc_buf_printf(C->out,
                 "// %s's operand %c packed k-major before it (gemm_pack.c): _cp[r][x][k] = %s%s%s with r = (%s), x = "
                 "(%s), k = (%s) flattened, k padded to a multiple of 4 with zeros; 32 x 32 tiles through shared "
                 "memory, read along %s, written along k\n",
                 k->name, w ? 'B' : 'A', k->prep_round[i] ? "tf32(" : "", load, k->prep_round[i] ? ")" : "",
                 *pb ? pb : "-", xs, ks, o->pack_along_k ? "k" : "x");
  cg_signature_scratch(C, kbc_arena_printf(C->a, CG_PACK_NAME, k->name, i), CG_BLOCK, 0, k->n_tensors, k->tensors,
                       k->first, k->count, "_ws");
  cg_line(E, "float *const _cp = %s;", gemm_copy_at(E, k, i));
  cg_line(E, "const long long _R = %s, _X = %s, _K = %s;", cg_sym(E, o->pack_r), cg_sym(E, o->pack_x),
          cg_sym(E, tl->K));
  cg_line(E, "const long long _Kp = %s; // K padded to a multiple of 4", cg_sym(E, o->pack_kp));
  cg_line(E, "const long long _tx = (_X + %d) / %d, _tk = (_Kp + %d) / %d, _tiles = _R * _tx * _tk;", PACK_TILE - 1,
          PACK_TILE, PACK_TILE - 1, PACK_TILE);
  cg_line(E, "__shared__ float _t[%d][%d];", PACK_TILE, PACK_TILE + 1);
  cg_line(E, "const int _lane = threadIdx.x %% 32;");
  cg_line(E, "for (long long _tile = blockIdx.x; _tile < _tiles; _tile += gridDim.x) {");
  E->indent++;
  cg_line(E, "const long long _r = _tile / (_tx * _tk), _x0 = _tile / _tk %% _tx * %d, _k0 = _tile %% _tk * %d;",
          PACK_TILE, PACK_TILE);
  decode_into(&ge, "r", "_r", o->pb, o->n_pb);
  cg_line(E, "__syncthreads(); // the tile before written out");
  int along_k = o->pack_along_k; /* the tensor's contiguous direction */
  cg_line(E, "for (int _i = threadIdx.x / 32; _i < %d; _i += %d) { // read with the lanes along %s", PACK_TILE,
          CG_BLOCK / 32, along_k ? "k" : "x");
  E->indent++;
  cg_line(E, along_k ? "const long long _x = _x0 + _i, _k = _k0 + _lane;" : "const long long _x = _x0 + _lane, _k = _k0 + _i;");
  cg_line(E, "float _v = 0.0f;");
  cg_line(E, "if (_x < _X && _k < _K) {");
  E->indent++;
  decode_into(&ge, "x", "_x", o->x, o->n_x);
  decode_into(&ge, "k", "_k", c->k, c->n_k);
  const char *v = cg_fmt(E, "%s[%s]", tname, cg_sym(E, o->src_off));
  cg_line(E, "_v = %s;", k->prep_round[i] ? cg_fmt(E, "kbc_tf32(%s)", v) : v);
  E->indent--;
  cg_line(E, "}");
  cg_line(E, along_k ? "_t[_lane][_i] = _v; // [k][x]" : "_t[_i][_lane] = _v; // [k][x]");
  E->indent--;
  cg_line(E, "}");
  cg_line(E, "__syncthreads();");
  cg_line(E, "for (int _i = threadIdx.x / 32; _i < %d; _i += %d) { // written with the lanes along k", PACK_TILE,
          CG_BLOCK / 32);
  cg_line(E, "  const long long _x = _x0 + _i, _k = _k0 + _lane;");
  cg_line(E, "  if (_x < _X && _k < _Kp) _cp[(_r * _X + _x) * _Kp + _k] = _t[_lane][_i];");
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
  kbc_buf_puts(C->out, "}\n\n");
}
