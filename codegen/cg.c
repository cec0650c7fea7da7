/* cg.c — the code generator's driver.
 *
 * Before: a verified program after the IR passes, and a target.  After
 * cg_generate(): the groups (group.c, each with its family decided), then
 * per group its family's plan and the kernel printed from it (the table
 * CG_FAMILIES), after a preamble of helper functions; and per kernel its
 * launch (cg_kernel_launch, the one computation of launch dimensions). */
#include <stdint.h>
#include <string.h>

#include "cg_impl.h"
#include "gemm_impl.h"
#include "support/name.h"

const char *const cg_family_name[] = {
#define CG_FAMILY_NAME(e, name, stem) name,
    CG_FAMILIES(CG_FAMILY_NAME)
#undef CG_FAMILY_NAME
};

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
    "// gelu(x) = x/2 (1 + erf(x/sqrt 2)), as x/2 erfc(-x/sqrt 2): no cancellation in the negative tail\n"
    "__device__ __forceinline__ float kbc_gelu(float x) { return 0.5f * x * erfcf(x * -0.70710678f); }\n"
    "\n"
    "// Zero-fills the target of a scatter before it accumulates.\n"
    "extern \"C\" __global__ void kbc_zero(float *p, long long n) {\n"
    "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"
    "    p[i] = 0.0f;\n"
    "}\n"
    "\n";

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

int64_t cg_kernel_scratch(const cg_kernel *k, const int64_t *vars) {
  int64_t tiles, ktiles;
  if (!k->scratch_tiles) return 0;
  if (!sym_eval(k->scratch_tiles, vars, NULL, &tiles) || !sym_eval(k->scratch_ktiles, vars, NULL, &ktiles)) return -1;
  long long splits = gemm_split_count(tiles, ktiles, k->scratch_slots, k->scratch_below, k->scratch_min);
  if (splits < 2) return 0;
  if (tiles > INT64_MAX / splits / k->scratch_tile) return -1;
  return tiles * splits * k->scratch_tile;
}

cg_launch cg_zero_launch(int64_t n) {
  int64_t blocks = n / CG_BLOCK + 1;
  return (cg_launch){.grid = {blocks < 4096 ? blocks : 4096, 1, 1}, .block = {CG_BLOCK, 1, 1}, .smem = 0};
}

/* Group g's kernel: its family's plan, then its text. */
static int plan_and_emit(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  switch (g->family) {
#define CG_FAMILY_CASE(e, name, stem)                       \
  case CG_FAMILY_##e: {                                     \
    const cg_##stem##_plan *plan = cg_plan_##stem(C, g, k); \
    if (!plan) return 0;                                    \
    cg_emit_##stem(C, plan, k);                             \
    return 1;                                               \
  }
    CG_FAMILIES(CG_FAMILY_CASE)
#undef CG_FAMILY_CASE
  }
  return 0;
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

int cg_generate(kbc_arena *a, const ir_program *p, const cg_target *t, cg_program *out, kbc_diag *d) {
  memset(out, 0, sizeof *out);
  unsigned char *heads;
  const ir_program *given = p;
  p = out->program = cg_recompute(a, p, t, &heads);
  cg_group *groups;
  int ng = cg_make_groups(a, p, t, heads, &groups);
  if (p != given && !heads_fused(p, heads, groups, ng)) { /* never seen: the program as given, rather than copies in memory */
    p = out->program = given;
    ng = cg_make_groups(a, p, t, NULL, &groups);
  }
  out->kernels = KBC_NEW_ARRAY(a, cg_kernel, ng + 1);
  cg_ctx C = {.a = a, .p = p, .t = t, .names = cg_names_make(a, p), .out = &out->source};
  kbc_buf_printf(&out->source,
                 "// Generated by kbc for kernel '%s': %d statements in %d kernels, sm_%d, %s.\n"
                 "// Regenerate with `kbc compile SPEC --emit cuda`.\n\n",
                 p->name, p->stmts.len, ng, t->sm, t->precision == CG_PRECISION_TF32 ? "tf32" : "fp32");
  kbc_buf_puts(&out->source, preamble);
  for (int i = 0; i < ng; i++) {
    cg_kernel *k = &out->kernels[out->n_kernels];
    const ir_stmt *s = IR_STMT(p, groups[i].first);
    k->name = kbc_name_sanitize(kbc_arena_printf(a, "%s_k%d_%s", p->name, i, C.names->tensor[s->out->id]),
                                KBC_NAME_IDENT);
    int ok = plan_and_emit(&C, &groups[i], k);
    if (!ok) {
      kbc_internal(d, s->loc, "no schedule could emit the kernel for '%s'", s->out->name);
      cg_program_free(out);
      return 0;
    }
    out->n_kernels++;
  }
  return 1;
}

void cg_program_free(cg_program *g) { kbc_buf_free(&g->source); }
