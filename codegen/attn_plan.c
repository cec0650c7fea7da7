/* attn_plan.c — the fused attention family's plan.
 *
 * Before: an ATTN group (the chain cg_make_groups found with
 * cg_find_attention, attn_impl.h).  After cg_plan_attn(): the plan — the
 * chain; the layout: where D and N2 are known, the pipelined kernel
 * (attn_pipe.c: TF32 at tf32, 3xTF32 at fp32 unless KBC_ATTN_FFMA; its
 * shared memory, blocks per multiprocessor, and which operand tiles copy
 * 16 bytes at a time), else the first kernel (FFMA at fp32, TF32 mma.sync
 * at tf32, 3xTF32 under KBC_FP32_MMA) with an N2 tile of 16 to 128 from
 * the consumer's estimated N2; whether each operand tile is read with
 * consecutive threads along D / N2; the causal-style mask whose tiles may
 * be skipped; the C name of every index of every statement (after the S
 * index it stands for) — and the kernel's launch fields: a block per
 * (batch point, row tile, N2 tile), and as its tensors only what the chain
 * reads from memory, the rows it keeps and the consumer's output. */
#include <string.h>

#include "attn_impl.h"
#include "ir/subst.h"

/* Whether a loads contiguously along the last of ids (in statement s). */
static int contiguous_along(kbc_arena *a, const ir_stmt *s, const ir_expr *e, const int *ids, int n) {
  return n > 0 && ir_reads_contiguously(a, s, e, ids[n - 1]);
}

static void mark_loads(const cg_attention *ch, const ir_expr *e, unsigned char *used) {
  if (e->op == IR_OP_LOAD) {
    int chain = 0;
    for (int q = 0; q < ch->count; q++) chain |= ch->st[q].s->out == e->u.load.tensor;
    if (!chain) used[e->u.load.tensor->id] = 1;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) mark_loads(ch, e->arg[i], used);
}

/* The kernel's tensors: what the chain reads from memory, the rows it
 * keeps and the consumer's output (never s or the pointwise tiles). */
static int kernel_tensors(kbc_arena *a, const ir_program *p, const cg_attention *ch, int **ids) {
  unsigned char *used = KBC_NEW_ARRAY(a, unsigned char, p->tensors.len + 1);
  for (int q = 0; q < ch->count; q++) {
    mark_loads(ch, ch->st[q].s->rhs, used);
    if (ch->st[q].keep || ch->st[q].role == ATTN_OUT) used[ch->st[q].s->out->id] = 1;
  }
  int n = 0;
  *ids = KBC_NEW_ARRAY(a, int, p->tensors.len + 1);
  for (int i = 0; i < p->tensors.len; i++)
    if (used[i]) (*ids)[n++] = i;
  return n;
}

const int64_t *attn_split_c(const cg_attention *ch, int i, int *frame) {
  const attn_stmt *o = &ch->st[ch->count - 1];
  for (int k = 0; k < o->n_split; k++)
    if (o->split[k].id == ch->n2[i]) {
      if (frame) *frame = o->split[k].frame;
      return &o->split[k].c;
    }
  return NULL;
}

sym *attn_n2_extent(kbc_arena *a, const cg_attention *ch, int i) {
  const int64_t *c = attn_split_c(ch, i, NULL);
  return c ? sym_const(a, *c) : ch->O->index[ch->n2[i]].extent;
}

/* nm, or nm with "_n" appended until it names no S index, tensor or axis. */
static const char *distinct_name(kbc_arena *a, const cg_names *names, const ir_stmt *S, const char **sname,
                                 const char *nm) {
  for (;;) {
    int clash = 0;
    for (int j = 0; j < S->n_index; j++) clash |= !strcmp(nm, sname[j]);
    for (int j = 0; j < names->n_tensors; j++) clash |= !strcmp(nm, names->tensor[j]);
    for (int j = 0; j < names->n_axes; j++) clash |= !strcmp(nm, names->axis[j]);
    if (!clash) return nm;
    nm = kbc_arena_printf(a, "%s_n", nm);
  }
}

/* The layout (attn_impl.h) for mma (0 FFMA, 1 TF32, 2 3xTF32) and an N2
 * tile of nt (16 to 128). */
static attn_layout choose_layout(int mma, int nt) {
  attn_layout L = {.mma = mma, .nt = nt, .threads = AT_THREADS, .min_blocks = 1};
  if (mma) {
    L.br = 128, L.bc = 32, L.nr = 2, L.nc = 8, L.lanes = 4, L.no = nt / 4;
  } else {
    L.br = 64, L.bc = 64, L.nr = 4, L.nc = 4, L.lanes = 16, L.no = nt / 16;
  }
  /* rows padded by 4 floats: float4 reads stay aligned, and rows start
   * on different banks */
  L.ldq = L.br + 4, L.ldk = L.bc + 4, L.ldp = L.br + 4, L.ldv = nt + 4;
  return L;
}

long long attn_part_floats(const cg_attention *ch, int br, int bc) {
  long long f = 0;
  for (int k = 0; k < ch->n_part; k++) {
    if (ch->part[k].stage == k) f += (long long)br * attn_part_ldt(bc);
    f += (long long)br * attn_part_ldg(ch->part[k].groups) + bc;
  }
  return f;
}

enum { PIPE_SMEM_MAX = 227 * 1024, SM_SMEM = 228 * 1024, BLOCK_SMEM_RESERVED = 1024 };

/* The pipelined layout for D and N2 known (d, n2), or 0 where it does not
 * fit.  _Qs and _Ks are row-major (D contiguous, as the operands usually
 * are in memory, so that 16 bytes are copied at a time), their rows ld
 * floats apart with ld = 8 (mod 32): a half-warp's fragment read, a float2
 * at columns 2t, 2t + 1 of rows g = 0..3, meets every bank once; _Vs rows
 * nt + 4 apart (nt a multiple of 16: 8 columns g of rows 2t, 2t + 1 at
 * 8t + g). */
static int pipe_layout(int mma, int64_t d, int64_t n2, const cg_attention *ch, int want_blocks, attn_layout *out) {
  int n_s2 = ch->n_s2;
  attn_layout L = {.mma = mma, .pipe = 1, .threads = AT_PIPE_THREADS, .br = 64, .bc = 64, .nr = 2, .nc = 16,
                   .lanes = 4};
  if (d < 1 || n2 < 1 || n2 > 128) return 0;
  L.nt = (int)((n2 + 15) / 16 * 16);
  L.no = L.nt / 4;
  L.ldv = L.nt + 4;
  L.dp = (int)((d + 7) / 8 * 8);
  L.ldq = L.ldk = L.dp + (8 - L.dp % 32 + 32) % 32;
  L.kc = L.dp % 32 == 0 ? 32 : L.dp % 16 == 0 ? 16 : 8;
  long long smem = 4LL * ((1LL + n_s2) * ((long long)L.br * L.ldq + (long long)L.bc * L.ldk) + (long long)L.bc * L.ldv +
                          attn_part_floats(ch, L.br, L.bc));
  if (smem > PIPE_SMEM_MAX) return 0;
  L.smem = (int)smem;
  /* blocks per multiprocessor: as asked (cg_plan_attn: measured on the
   * H200 at D = 32, 64 and 80, 3 blocks ran 11-28% faster than 2 at
   * 183-245 registers), at most as many as shared memory fits */
  int fit = (int)(SM_SMEM / (smem + BLOCK_SMEM_RESERVED));
  L.min_blocks = want_blocks;
  if (L.min_blocks > fit) L.min_blocks = fit;
  if (L.min_blocks < 1) L.min_blocks = 1;
  *out = L;
  return 1;
}

/* The coefficient of index id in an affine split, as a constant (0 where
 * absent); 0 returned when it is not a constant. */
static int const_coeff(sym *const *coeff, int id, int64_t *out) {
  *out = 0;
  return !coeff[id] || sym_is_const(coeff[id], out);
}

/* Whether the chain lets a wholly masked tile be skipped (attn_mask). */
static attn_mask plan_mask(kbc_arena *a, const cg_attention *ch) {
  attn_mask m = {0};
  const ir_stmt *S = ch->S;
  const ir_expr *w = S->rhs;
  if (w->op != IR_OP_WHERE || ch->c1.n_m != 1 || ch->c1.n_n != 1 || ch->m_row < 0) return m;
  int kb = w->arg[1]->op == IR_OP_CONST ? 1 : w->arg[2]->op == IR_OP_CONST ? 2 : 0;
  if (!kb || !ir_expr_holds(w->arg[3 - kb], ch->c1.reduce)) return m;
  const ir_expr *cond = w->arg[0];
  if ((cond->op != IR_OP_LT && cond->op != IR_OP_LE && cond->op != IR_OP_GT && cond->op != IR_OP_GE) ||
      cond->arg[0]->op != IR_OP_INDEX || cond->arg[1]->op != IR_OP_INDEX)
    return m;
  sym *d = sym_sub(a, cond->arg[0]->u.index, cond->arg[1]->u.index), *rest;
  sym **coeff = KBC_NEW_ARRAY(a, sym *, S->n_index + 1);
  int row = ch->c1.m[0], col = ch->c1.n[0];
  if (!d || !sym_split_affine(a, d, S->n_index, coeff, &rest) || !sym_is_const(rest, &m.c) ||
      !const_coeff(coeff, col, &m.a) || !const_coeff(coeff, row, &m.b))
    return m;
  for (int id = 0; id < S->n_index; id++) {
    int64_t v;
    if (id != row && id != col && (!const_coeff(coeff, id, &v) || v != 0)) return m;
  }
  /* the rows: the running max of s itself, sums of exp(s - max) alone; E: exp(s - max) alone */
  const attn_stmt *mx = &ch->st[ch->m_row];
  if (mx->s->rhs->arg[0]->op != IR_OP_LOAD || mx->s->rhs->arg[0]->u.load.tensor != S->out) return m;
  for (int q = 1; q < ch->count; q++) {
    const attn_stmt *r = &ch->st[q];
    if (r->role == ATTN_ROW && q != ch->m_row && (!r->scaled || r->n_factors != 1)) return m;
  }
  if (ch->n_e != 1 || !ch->e[0].scaled) return m;
  m.on = 1;
  m.cmp = cond->op;
  m.k_when_true = kb == 1;
  m.k = w->arg[kb]->u.value;
  return m;
}

/* The pipelined kernel's precision (1 TF32, 2 3xTF32; 0: none), D, N2 and
 * launch bounds for the chain, where its sizes are known. */
typedef struct {
  int mma;
  int known;
  int64_t d, n2;
  int want_blocks;
} pipe_choice;

static pipe_choice choose_pipe(kbc_arena *a, const cg_attention *ch, const cg_target *t) {
  const cg_options *opt = &t->opt;
  const ir_stmt *S = ch->S;
  pipe_choice c = {0};
  int tf32 = t->precision == CG_PRECISION_TF32;
  sym *B = cg_extent_sym(a, S, ch->c1.bat, ch->c1.n_b), *R = cg_extent_sym(a, S, ch->c1.m, ch->c1.n_m);
  sym *N2 = sym_const(a, 1);
  for (int i = 0; i < ch->n_n2; i++) N2 = sym_mul(a, N2, attn_n2_extent(a, ch, i));
  int64_t unused;
  c.known = sym_is_const(cg_extent_sym(a, S, ch->c1.k, ch->c1.n_k), &c.d) && sym_is_const(N2, &c.n2);
  c.mma = !opt->attn_pipe || !c.known ? 0 : tf32 ? 1 : opt->attn_ffma ? 0 : 2;
  /* 3 blocks per multiprocessor where the batch, rows and columns are
   * known too (a specialized binding: its index arithmetic folds, and
   * ptxas's cap of 168 registers cost at most 24 bytes of spills at D = 80
   * and 32, measured faster than 2 blocks); else 2 (a generic program's
   * kernel, whose extents are parameters, spilled hundreds of bytes at
   * 168) */
  int all_known = sym_is_const(B, &unused) && sym_is_const(R, &unused) &&
                  sym_is_const(cg_extent_sym(a, S, ch->c1.n, ch->c1.n_n), &unused);
  c.want_blocks = opt->attn_min_blocks ? opt->attn_min_blocks : all_known ? 3 : 2;
  return c;
}

int cg_attn_pipelined(kbc_arena *a, const cg_attention *ch, const cg_target *t) {
  pipe_choice c = choose_pipe(a, ch, t);
  attn_layout L;
  return c.mma && pipe_layout(c.mma, c.d, c.n2, ch, c.want_blocks, &L);
}

cg_attn_plan *cg_plan_attn(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  kbc_arena *a = C->a;
  cg_attn_plan *plan = KBC_NEW(a, cg_attn_plan);
  cg_attention *ch = &plan->ch;
  if (!g->attn || g->attn->first != g->first || g->attn->count != g->count) return NULL;
  *ch = *g->attn;
  const ir_stmt *S = ch->S, *O = ch->O;
  double n2 = 1;
  for (int i = 0; i < ch->n_n2; i++) n2 *= cg_attn_n2_estimate(ch, i);
  int nt = 16;
  while (nt < 128 && nt < n2) nt *= 2;
  /* TF32 at tf32.  At fp32: 3xTF32 where pipelined (its partial sums are
   * added in fp32), else FFMA (the tensor cores' own long sums round toward
   * zero), unless KBC_FP32_MMA asks for 3xTF32 or KBC_ATTN_FFMA for FFMA. */
  const cg_options *opt = &C->t->opt;
  int tf32 = C->t->precision == CG_PRECISION_TF32;
  pipe_choice pc = choose_pipe(a, ch, C->t);
  sym *B = cg_extent_sym(a, S, ch->c1.bat, ch->c1.n_b), *R = cg_extent_sym(a, S, ch->c1.m, ch->c1.n_m);
  sym *N2 = sym_const(a, 1);
  for (int i = 0; i < ch->n_n2; i++) N2 = sym_mul(a, N2, attn_n2_extent(a, ch, i));
  int64_t d = pc.d, n2c = pc.n2;
  if (pc.mma && pipe_layout(pc.mma, d, n2c, ch, pc.want_blocks, &plan->lay)) {
    plan->d = d, plan->n2 = n2c;
    for (int pi = 0; pi <= ch->n_s2; pi++) {
      const cg_contraction *c = attn_product(ch, pi);
      const ir_stmt *st = ch->st[attn_product_at(ch, pi)].s;
      plan->opd[pi].q_vec = cg_access_by_4(a, st, c->a, c->k, c->n_k, d, 4);
      plan->opd[pi].k_vec = cg_access_by_4(a, st, c->b, c->k, c->n_k, d, 4);
    }
    /* Split N2 indices (c times a batch index added): the innermost one's c
     * a multiple of 4 suffices.  The tile's chunks of 4 then stay within
     * one of its local runs (they are c times the full extents inside it
     * long), and every outer split's term is c' times a stride that holds
     * that extent, c times its heads: a multiple of 4 too. */
    int64_t mult = 4;
    for (int i = 0; i < ch->n_n2; i++) {
      const int64_t *c = attn_split_c(ch, i, NULL);
      if (c) mult = *c;
    }
    plan->v_vec = cg_access_by_4(a, O, ch->c2.b, ch->n2, ch->n_n2, n2c, mult);
  } else if (ch->recompute) {
    return NULL; /* cg_recompute made it only where cg_attn_pipelined holds */
  } else
    plan->lay = choose_layout(tf32 ? 1 : opt->fp32_mma == 1 ? 2 : 0, nt);
  plan->mask = plan_mask(a, ch);
  for (int pi = 0; pi <= ch->n_s2; pi++) {
    const cg_contraction *c = attn_product(ch, pi);
    const ir_stmt *st = ch->st[attn_product_at(ch, pi)].s;
    plan->opd[pi].q_fast = contiguous_along(a, st, c->a, c->k, c->n_k);
    plan->opd[pi].k_fast = contiguous_along(a, st, c->b, c->k, c->n_k);
  }
  plan->v_n_fast = contiguous_along(a, O, ch->c2.b, ch->n2, ch->n_n2) ||
                   !contiguous_along(a, O, ch->c2.b, ch->c2.k, ch->c2.n_k);
  /* names: every index after the S index it stands for; the consumer's N2
   * by its own, kept apart from S's */
  const char **sname = cg_index_names(a, C->names, S);
  for (int q = 0; q < ch->count; q++) {
    const ir_stmt *st = ch->st[q].s;
    const char **own = cg_index_names(a, C->names, st);
    plan->idx[q] = KBC_NEW_ARRAY(a, const char *, st->n_index + 1);
    for (int id = 0; id < st->n_index; id++) {
      int to = q == 0 ? id : ch->st[q].map[id];
      plan->idx[q][id] = to >= 0 ? sname[to] : distinct_name(a, C->names, S, sname, own[id]);
    }
  }
  const attn_layout *L = &plan->lay;
  sym *tr = sym_div(a, sym_add(a, R, sym_const(a, L->br - 1)), L->br);
  sym *tn = L->pipe ? sym_const(a, 1) : sym_div(a, sym_add(a, N2, sym_const(a, L->nt - 1)), L->nt);
  plan->tiles = sym_mul(a, B, sym_mul(a, tr, tn));
  k->family = CG_FAMILY_ATTN;
  k->first = g->first;
  k->count = g->count;
  k->block = L->threads;
  k->smem = L->pipe ? L->smem : 0;
  k->work = plan->tiles;
  k->per_block = 1;
  k->max_blocks = 0;
  k->zero_tensor = -1;
  k->n_tensors = kernel_tensors(a, C->p, ch, &k->tensors);
  return plan;
}
