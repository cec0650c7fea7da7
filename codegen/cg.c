/* cg.c — the code generator's driver.
 *
 * Before: a verified program after the IR passes, and a target.  After
 * cg_generate(): the groups (group.c, each with its family decided), then
 * per group its family's plan and the kernel printed from it (the table
 * CG_FAMILIES), after a preamble of helper functions; and per kernel its
 * launch (cg_kernel_launch, the one computation of launch dimensions). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cg_impl.h"
#include "gemm_impl.h"
#include "support/name.h"

const char *const cg_family_name[] = {
#define CG_FAMILY_NAME(e, name, stem) name,
    CG_FAMILIES(CG_FAMILY_NAME)
#undef CG_FAMILY_NAME
    "persistent"};

cg_target cg_target_default(void) {
  return (cg_target){.sm = 90, .sm_count = 132, .smem_per_block = 227 * 1024, .l2_bytes = 50 << 20,
                     .precision = CG_PRECISION_FP32,
                     .opt = cg_options_default()};
}

static const char preamble[] =
    "// Floor division and non-negative remainder, as in the spec language.\n"
    "__device__ __forceinline__ long long kbc_floordiv(long long a, long long b) {\n"
    "  long long q = a / b;\n"
    "  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "__device__ __forceinline__ long long kbc_floormod(long long a, long long b) {\n"
    "  long long r = a % b;\n"
    "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n"
    "__device__ __forceinline__ long long kbc_max_ll(long long a, long long b) { return a > b ? a : b; }\n"
    "__device__ __forceinline__ long long kbc_min_ll(long long a, long long b) { return a < b ? a : b; }\n"
    "__device__ __forceinline__ long long kbc_abs_ll(long long a) { return a < 0 ? -a : a; }\n"
    "// Blocks per multiprocessor asked from sm_90 on, where measured; one before (sm_80's ptxas\n"
    "// spilled a matrix product's registers under the two-block cap)\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n"
    "#define KBC_BLOCKS_SM90(n) 1\n"
    "#else\n"
    "#define KBC_BLOCKS_SM90(n) n\n"
    "#endif\n"
    "// max and min that give NaN where either side is NaN, as PyTorch's maximum, amax and relu\n"
    "// do (fmaxf and fminf return the other side): one instruction from sm_80 on\n"
    "#ifdef __CUDA_ARCH__\n"
    "__device__ __forceinline__ float kbc_fmax(float a, float b) {\n"
    "  float r;\n"
    "  asm(\"max.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
    "  return r;\n"
    "}\n"
    "__device__ __forceinline__ float kbc_fmin(float a, float b) {\n"
    "  float r;\n"
    "  asm(\"min.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
    "  return r;\n"
    "}\n"
    "#else\n"
    "__device__ __forceinline__ float kbc_fmax(float a, float b) { return a != a || b != b ? a + b : a > b ? a : b; }\n"
    "__device__ __forceinline__ float kbc_fmin(float a, float b) { return a != a || b != b ? a + b : a < b ? a : b; }\n"
    "#endif\n"
    "// gelu(x) = x/2 (1 + erf(x/sqrt 2)), as x/2 erfc(-x/sqrt 2): no cancellation in the negative tail.\n"
    "// erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2), z >= 0, P of degree 9 (fractional error < 1.2e-7;\n"
    "// Press et al., Numerical Recipes, 6.2), z^2 split in two floats; erfc(-z) = 2 - erfc(z).  As close\n"
    "// as erfcf (both about 1.5e-6 at x = -5, from rounding x/sqrt 2) in fewer instructions (a float4\n"
    "// loop's body 172 for four points against 199 at sm_90a): a GELU over a large tensor was\n"
    "// compute-bound on the H200.\n"
    "__device__ __forceinline__ float kbc_gelu(float x) {\n"
    "  const float y = x * -0.70710678f, z = fabsf(y);\n"
    "  const float t = __fdividef(1.0f, fmaf(0.5f, z, 1.0f));\n"
    "  float p = fmaf(t, 0.17087277f, -0.82215223f);\n"
    "  p = fmaf(t, p, 1.48851587f);\n"
    "  p = fmaf(t, p, -1.13520398f);\n"
    "  p = fmaf(t, p, 0.27886807f);\n"
    "  p = fmaf(t, p, -0.18628806f);\n"
    "  p = fmaf(t, p, 0.09678418f);\n"
    "  p = fmaf(t, p, 0.37409196f);\n"
    "  p = fmaf(t, p, 1.00002368f);\n"
    "  p = fmaf(t, p, -1.26551223f);\n"
    "  const float zz = z * z, zz_lo = fmaf(z, z, -zz); // z^2 = zz + zz_lo exactly\n"
    "  float r = t * expf(-zz) * expf(p - zz_lo);\n"
    "  r = y < 0.0f ? 2.0f - r : r;\n"
    "  return 0.5f * x * r;\n"
    "}\n"
    "\n"
    "// Zero-fills the target of a scatter before it accumulates: p[first], p[first + step], ... below n\n"
    "// (a launch of its own, kbc_zero, or a persistent kernel's stage).\n"
    "__device__ __forceinline__ void kbc_zero_from(float *p, long long n, long long first, long long step) {\n"
    "  for (long long i = first; i < n; i += step) p[i] = 0.0f;\n"
    "}\n"
    "extern \"C\" __global__ void kbc_zero(float *p, long long n) {\n"
    "  kbc_zero_from(p, n, (long long)blockIdx.x * blockDim.x + threadIdx.x, (long long)gridDim.x * blockDim.x);\n"
    "}\n"
    "\n";

/* The copies of operands rounded to TF32 before a kernel (cg_kernel.prep),
 * where a kernel has any; after the tensor cores' helpers (kbc_tf32). */
static const char prep_kernel[] =
    "// An operand rounded to TF32 once, before the kernel whose wgmma loop reads it (rather than per tile\n"
    "// in that loop): dst[i] = src[i] to the nearest TF32, ties away from zero (cvt.rna; NaN and inf kept);\n"
    "// four floats at a time where src is 16-byte aligned (dst, in the workspace, always is).\n"
    "#ifndef KBC_TF32_COPY\n"
    "#define KBC_TF32_COPY\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "kbc_tf32_copy(float *__restrict__ dst, const float *__restrict__ src, long long n) {\n"
    "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;\n"
    "  long long rest = 0;\n"
    "  if (((unsigned long long)src & 15) == 0) {\n"
    "    for (long long i = first; i < n / 4; i += step) {\n"
    "      float4 v = __ldg((const float4 *)src + i);\n"
    "      v.x = kbc_tf32(v.x);\n"
    "      v.y = kbc_tf32(v.y);\n"
    "      v.z = kbc_tf32(v.z);\n"
    "      v.w = kbc_tf32(v.w);\n"
    "      ((float4 *)dst)[i] = v;\n"
    "    }\n"
    "    rest = n / 4 * 4;\n"
    "  }\n"
    "  for (long long i = rest + first; i < n; i += step) dst[i] = kbc_tf32(src[i]);\n"
    "}\n"
    "#endif\n\n";

/* The wait of a kernel launched with programmatic dependent launch
 * (opt.pdl, cg_grid_dependency); PTX griddepcontrol, sm_90 and newer. */
static const char pdl_helper[] =
    "// Programmatic dependent launch (sm_90+): wait until the grid before on the stream is done and its\n"
    "// writes are visible, then let the next grid launch; at once where launched without it.\n"
    "__device__ __forceinline__ void kbc_grid_dependency() {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "#endif\n"
    "}\n\n";

int cg_kernel_launch(const cg_kernel *k, const int64_t *vars, cg_launch *out) {
  *out = (cg_launch){.grid = {0, 1, 1}, .block = {k->block, 1, 1}, .smem = k->smem};
  int64_t work;
  if (!sym_eval(k->work, vars, NULL, &work)) return 0;
  if (work <= 0) return 1;
  int64_t blocks = work / k->per_block + (work % k->per_block != 0);
  if (k->max_blocks > 0 && blocks > k->max_blocks) blocks = k->max_blocks;
  if (blocks > 0x7fffffff) blocks = 0x7fffffff;
  out->grid[0] = blocks;
  return 1;
}

int cg_kernel_takes_scratch(const cg_kernel *k) {
  for (int i = 0; i < k->n_stages; i++)
    if (k->stages[i].kernel && cg_kernel_takes_scratch(k->stages[i].kernel)) return 1;
  return k->scratch_tiles != NULL || k->n_prep > 0;
}

int64_t cg_kernel_prep_at(const cg_kernel *k, int i, const int64_t *vars) {
  int64_t at = 0, n;
  for (int j = 0; j < i; j++) {
    if (!sym_eval(k->prep_floats[j], vars, NULL, &n) || n < 0 || n > INT64_MAX / 8 - at) return -1;
    at += n;
  }
  return at;
}

int64_t cg_kernel_scratch(const cg_kernel *k, const int64_t *vars) {
  int64_t tiles, ktiles, most = 0;
  for (int i = 0; i < k->n_stages; i++) {
    int64_t n = k->stages[i].kernel ? cg_kernel_scratch(k->stages[i].kernel, vars) : 0;
    if (n < 0) return -1;
    if (n > most) most = n;
  }
  if (k->n_stages) return most;
  int64_t prep = cg_kernel_prep_at(k, k->n_prep, vars); /* the operands' copies first */
  if (prep < 0) return -1;
  if (!k->scratch_tiles) return prep;
  if (!sym_eval(k->scratch_tiles, vars, NULL, &tiles) || !sym_eval(k->scratch_ktiles, vars, NULL, &ktiles)) return -1;
  long long splits = gemm_split_count(tiles, ktiles, k->scratch_slots, k->scratch_below, k->scratch_min);
  if (splits < 2) return prep;
  if (tiles > INT64_MAX / 8 / splits / k->scratch_tile) return -1;
  return prep + tiles * splits * k->scratch_tile;
}

cg_launch cg_zero_launch(int64_t n) {
  int64_t blocks = n / CG_BLOCK + 1;
  return (cg_launch){.grid = {blocks < 4096 ? blocks : 4096, 1, 1}, .block = {CG_BLOCK, 1, 1}, .smem = 0};
}

cg_launch cg_prep_launch(int64_t n) {
  int64_t blocks = n / (4 * CG_BLOCK) + 1; /* four floats a thread */
  return (cg_launch){.grid = {blocks < 4096 ? blocks : 4096, 1, 1}, .block = {CG_BLOCK, 1, 1}, .smem = 0};
}

void cg_prep_name(const cg_kernel *k, int i, char *buf, size_t n) {
  if (k->prep_pack[i]) snprintf(buf, n, CG_PACK_NAME, k->name, i);
  else snprintf(buf, n, "kbc_tf32_copy");
}

int cg_prep_launch_of(const cg_kernel *k, int i, const int64_t *vars, const int64_t *numel, cg_launch *out) {
  int64_t n = numel[k->prep[i]];
  if (k->prep_pack[i] && !sym_eval(k->prep_tiles[i], vars, NULL, &n)) return 0;
  if (n <= 0) *out = (cg_launch){.grid = {0, 1, 1}, .block = {CG_BLOCK, 1, 1}};
  else if (!k->prep_pack[i]) *out = cg_prep_launch(n);
  else *out = (cg_launch){.grid = {n < 4096 ? n : 4096, 1, 1}, .block = {CG_BLOCK, 1, 1}, .smem = 0};
  return 1;
}

/* Group g's kernel's plan (its family's; NULL: none). */
static const void *plan(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  switch (g->family) {
#define CG_FAMILY_PLAN(e, name, stem) \
  case CG_FAMILY_##e:                 \
    return cg_plan_##stem(C, g, k);
    CG_FAMILIES(CG_FAMILY_PLAN)
#undef CG_FAMILY_PLAN
  default:
    return NULL;
  }
}

/* Kernel k's text, from its plan (of family f's). */
static void emit(cg_ctx *C, cg_family f, const cg_kernel *k, const void *plan) {
  switch (f) {
#define CG_FAMILY_EMIT(e, name, stem)                         \
  case CG_FAMILY_##e:                                         \
    cg_emit_##stem(C, (const cg_##stem##_plan *)plan, k);     \
    break;
    CG_FAMILIES(CG_FAMILY_EMIT)
#undef CG_FAMILY_EMIT
  default:
    break;
  }
}

/* Whether every recomputing chain cg_recompute made starts an attention
 * group (its copies then never leave the chip). */
static int heads_fused(const ir_program *p, const unsigned char *heads, const cg_group *g, int ng) {
  for (int i = 0, k = 0; i < p->stmts.len; i++) {
    while (k < ng && g[k].first + g[k].count <= i) k++;
    if (heads[i] && (k == ng || g[k].first != i || g[k].family != CG_FAMILY_ATTN)) return 0;
  }
  return 1;
}

/* The kernels of groups g[0..ng) of C->p planned into ks (names set),
 * their plans into plans: 0 where a group has no schedule (d told). */
static int plan_groups(cg_ctx *C, const cg_group *g, int ng, cg_kernel *ks, const void **plans, kbc_diag *d) {
  const ir_program *p = C->p;
  for (int i = 0; i < ng; i++) {
    const ir_stmt *s = IR_STMT(p, g[i].first);
    ks[i].name = kbc_name_sanitize(kbc_arena_printf(C->a, "%s_k%d_%s", p->name, i, C->names->tensor[s->out->id]),
                                   KBC_NAME_IDENT);
    if (!(plans[i] = plan(C, &g[i], &ks[i]))) {
      if (d) kbc_internal(d, s->loc, "no schedule could emit the kernel for '%s'", s->out->name);
      return 0;
    }
  }
  return 1;
}

/* The translation unit's opening: what it holds, the preamble, the helpers
 * the kernels ks[0..n) need. */
static void open_unit(cg_ctx *C, const cg_kernel *ks, int n, const char *how) {
  kbc_buf *o = C->out;
  kbc_buf_printf(o, "// Generated by kbc for kernel '%s': %d statements in %d kernels%s, sm_%d, %s.\n"
                    "// Regenerate with `kbc compile SPEC --emit cuda`.\n\n",
                 C->p->name, C->p->stmts.len, n, how, C->t->sm,
                 C->t->precision == CG_PRECISION_TF32 ? "tf32" : "fp32");
  kbc_buf_puts(o, preamble);
  if (C->t->opt.pdl) kbc_buf_puts(o, pdl_helper);
  int plain_copies = 0; /* kbc_tf32_copy's (the packs are the kernels' own) */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < ks[i].n_prep; j++) plain_copies |= !ks[i].prep_pack[j];
  if (plain_copies) {
    cg_emit_mma_helpers(o, 0);
    kbc_buf_puts(o, prep_kernel);
  }
}

/* Every kernel printed, as the stages of P where it is not NULL. */
static void emit_groups(cg_ctx *C, const cg_group *g, int ng, const cg_kernel *ks, const void **plans,
                        const cg_persist *P) {
  /* the stages of a persistent (or cluster) kernel share its register cap
   * (persist.c, PERSIST_REGS): their loops unrolled at most twice (CViT's
   * projection, a float4 row loop over two tensors unrolled four times,
   * spilled 12 bytes at 80 registers; nvcc, sm_90), and no rows kept in
   * registers (opt.rows_cache: CViT's layer norms' kept rows spilled there
   * at sm_80 and sm_90) */
  const cg_target *t = C->t;
  cg_target staged = *t;
  if (P && staged.opt.unroll > 2) staged.opt.unroll = 2;
  if (P) staged.opt.rows_cache = 0;
  C->t = &staged;
  for (int i = 0; i < ng; i++) {
    if (P) cg_persist_body_open(C, P, i);
    emit(C, g[i].family, &ks[i], plans[i]);
    if (P) cg_persist_body_close(C, P, i);
  }
  C->t = t;
}

/* The program as one kernel of thread-block clusters, a cluster per batch
 * point (batch.c, cluster.c), where KBC_CLUSTER asks, the program splits
 * and the one-point program's kernels, planned for a cluster's
 * multiprocessors, can be its stages: 1 done, 0 not (out untouched). */
static int generate_cluster(kbc_arena *a, const ir_program *p, const cg_target *t, cg_program *out) {
  cg_batch B;
  if (!t->opt.cluster || t->sm < 90 || !cg_batch_split(a, p, &B)) return 0;
  int cluster = cg_cluster_size(t, B.points);
  cg_target one = *t; /* a cluster: a GPU of that many multiprocessors, whose stages keep no state of their own */
  one.sm_count = cluster;
  one.opt.persist = 2;
  one.opt.gemm_split = 0;
  one.opt.one_block_points = 1;
  one.opt.attn_recompute = 0;
  cg_group *groups;
  int ng = cg_make_groups(a, B.one, &one, NULL, &groups);
  cg_kernel *ks = KBC_NEW_ARRAY(a, cg_kernel, ng + 1);
  const void **plans = KBC_NEW_ARRAY(a, const void *, ng + 1);
  kbc_buf text = {0};
  cg_ctx C = {.a = a, .p = B.one, .t = &one, .names = cg_names_make(a, B.one), .out = &text};
  const cg_persist *P = plan_groups(&C, groups, ng, ks, plans, NULL) ? cg_plan_persist(&C, ks, ng) : NULL;
  if (!P || !cg_cluster_pays(t, P)) return 0;
  open_unit(&C, ks, ng, " (the stages of one kernel of clusters, a cluster per batch point)");
  cg_persist_helpers(&C);
  C.slots = cg_cluster_slots(t, P);
  cg_cluster_helpers(&C, P);
  C.changing = cg_persist_changing(P);
  emit_groups(&C, groups, ng, ks, plans, P);
  memset(out, 0, sizeof *out);
  out->program = p;
  out->kernels = KBC_NEW_ARRAY(a, cg_kernel, 1);
  out->kernels[0].name = kbc_name_sanitize(kbc_arena_printf(a, "%s_cluster", p->name), KBC_NAME_IDENT);
  cg_emit_cluster(&C, P, &B, cluster, t->sm_count, &out->kernels[0]);
  out->n_kernels = 1;
  out->source = text;
  return 1;
}

int cg_generate(kbc_arena *a, const ir_program *p, const cg_target *t, cg_program *out, kbc_diag *d) {
  memset(out, 0, sizeof *out);
  if (generate_cluster(a, p, t, out)) return 1;
  unsigned char *heads;
  const ir_program *given = p;
  p = out->program = cg_recompute(a, p, t, &heads);
  cg_group *groups;
  int ng = cg_make_groups(a, p, t, heads, &groups);
  if (p != given && !heads_fused(p, heads, groups, ng)) { /* never seen: the program as given, rather than copies in memory */
    p = out->program = given;
    ng = cg_make_groups(a, p, t, NULL, &groups);
  }
  /* every group's plan, then (the kernels' launches known) whether they
   * run as one persistent kernel, then the text */
  cg_kernel *ks = KBC_NEW_ARRAY(a, cg_kernel, ng + 1);
  const void **plans = KBC_NEW_ARRAY(a, const void *, ng + 1);
  cg_ctx C = {.a = a, .p = p, .t = t, .names = cg_names_make(a, p), .out = &out->source};
  if (!plan_groups(&C, groups, ng, ks, plans, d)) {
    cg_program_free(out);
    return 0;
  }
  const cg_persist *P = cg_plan_persist(&C, ks, ng);
  open_unit(&C, ks, ng, P ? " (the stages of one persistent kernel)" : "");
  if (P) {
    cg_persist_helpers(&C);
    C.changing = cg_persist_changing(P);
  }
  emit_groups(&C, groups, ng, ks, plans, P);
  if (P) {
    out->kernels = KBC_NEW_ARRAY(a, cg_kernel, 1);
    out->kernels[0].name = kbc_name_sanitize(kbc_arena_printf(a, "%s_persist", p->name), KBC_NAME_IDENT);
    cg_emit_persist(&C, P, &out->kernels[0]);
    out->n_kernels = 1;
  } else {
    cg_kernel_deps(a, p, ks, ng);
    out->kernels = ks;
    out->n_kernels = ng;
  }
  return 1;
}

void cg_program_free(cg_program *g) { kbc_buf_free(&g->source); }
