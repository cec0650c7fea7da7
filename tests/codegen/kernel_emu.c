/* kernel_emu.c — checks the generated kernels on the CPU, without a GPU.
 *
 *   kernel_emu SPEC [--tf32] [--sm90a] [--chain] [--specialize] [--misalign] [--codegen-only] [--inputs LO:HI]
 *              [--tol T] [--grid N] [--dir DIR] [--cxx CXX] AXIS=N ...
 *
 * Compiles SPEC, binds its var axes, gives the inputs pseudo-random values
 * (uniform in [LO, HI), default [-1, 1)) and runs the reference interpreter.  Then every kernel of the generated
 * CUDA C — tiled contractions, rows kernels, and scatters whose target the
 * runtime zeroes — runs under emu.h (a C++ compiler builds the translation
 * unit for the CPU; one thread per CUDA thread, warp shuffles and barriers
 * emulated) on the interpreter's values of the tensors it reads, with at
 * most N blocks (default 3, so the grid-stride loops are exercised); a
 * kernel that keeps state in its module (a reduction split across the
 * grid: the count of blocks finished) runs twice, its outputs reset in
 * between, so that the first launch must have left the state ready.  Every
 * tensor it writes must match the interpreter's float64 values (relative
 * L2 error <= 1e-5, or 2e-3 with --tf32; --tol T sets it), every element must be written
 * (except where the kernel adds into a zeroed output: scatters),
 * and the guard zones around every buffer must stay untouched (they hold
 * NaNs, so reading them shows too).
 *
 * --sm90a generates code for sm_90a (its wgmma K loop for GEMMs whose
 * operands are both k-major; emu.h emulates wgmma), else for sm_90.
 *
 * --specialize compiles the program specialized for the binding (its var
 * axes made constants, as the runtime does with KBC_SPECIALIZE) and also
 * checks that the specialized program's interpreted outputs equal the
 * generic one's.
 *
 * Always: the program as the spec states it (the pipeline stopped after
 * check-bounds, untransformed) is interpreted on the same inputs and must
 * give the same outputs (same_as_lowered): the passes keep the meaning.
 *
 * --misalign gives the kernels every tensor at an address 4 bytes past a
 * multiple of 16, so that the paths taken when a tensor is not 16-byte
 * aligned (float4 accesses and 16-byte copies checked at run time) run.
 *
 * --chain runs the whole program instead, as the runtime does: every
 * kernel in order on one set of buffers (inputs from the interpreter's
 * values, everything else starting as NaN sentinels, scatter targets
 * zeroed before the kernel that zeroes them), scatters that add into
 * earlier values included; then every tensor the program writes must match
 * the interpreter's final values (those in memory: a temporary that no
 * kernel takes stays on chip).  The differential fuzzer uses it.
 *
 * --codegen-only stops once the kernels are generated and the binding
 * checked: nothing is interpreted or emulated.  The sanitizer build runs
 * the codegen/emu tests so (the compiler under ASan and UBSan on every
 * case; the emulated kernels, never instrumented, are the Release run's):
 * KBC_EMU_CODEGEN_ONLY=1 in the environment means the same.
 * Exit status: 0 all match, 1 a kernel failed, 2 usage or setup error,
 * 77 no C++ compiler (skip). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "ir/bind.h"
#include "ir/cost.h"
#include "interp/interp.h"
#include "passes/pipeline.h"
#include "runtime/special.h"

#ifndef KBC_EMU_HEADER
#define KBC_EMU_HEADER "emu.h"
#endif

enum { GUARD = 4096 };
static int misalign; /* --misalign: every buffer 4 bytes past 16-byte alignment */
static const uint32_t SENTINEL = 0x7fc0deadu; /* a NaN */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) exit(2);
  s[n] = 0;
  fclose(f);
  return s;
}

static int fail(const char *msg, const char *detail) {
  fprintf(stderr, "kernel_emu: %s%s\n", msg, detail ? detail : "");
  return 2;
}

/* Kernels run here: GEMM and rows kernels, and scatters whose target the
 * runtime zeroes (one that adds into earlier values is left out). */
static int emulated(const cg_kernel *k) {
  return k->family != CG_FAMILY_SCATTER || k->zero_tensor >= 0;
}

/* Whether kernel k keeps state in its module between launches (the
 * counter of a reduction split across the grid, `_NAME_done`): it is then
 * launched twice, its outputs reset to sentinels in between, and the
 * second launch's outputs are checked. */
static int module_state(const cg_program *g, const cg_kernel *k) {
  char decl[512];
  snprintf(decl, sizeof decl, "__device__ unsigned _%s_done", k->name);
  return strstr(kbc_buf_str(&g->source), decl) != NULL;
}

/* Kernel ki's scratch (cg_kernel_scratch), declared in the launcher as
 * scratch<ki>: sentinel NaNs, so that a part read before it is written
 * shows (at least one float, so that the pointer is valid). */
static int scratch_decl(FILE *L, const cg_kernel *k, const int64_t *vars, int ki) {
  if (!cg_kernel_takes_scratch(k)) return 0;
  int64_t n = cg_kernel_scratch(k, vars);
  if (n < 0) return 1;
  fprintf(L, "  static float *scratch%d = nullptr;\n", ki);
  fprintf(L, "  if (!scratch%d) { scratch%d = (float *)malloc(4 * (%lldLL + 1)); if (!scratch%d) abort();\n", ki, ki,
          (long long)n, ki);
  fprintf(L, "    const unsigned nan = 0x%xu;\n", SENTINEL);
  fprintf(L, "    for (long long e = 0; e <= %lldLL; e++) memcpy(&scratch%d[e], &nan, 4); }\n", (long long)n, ki);
  return 0;
}

/* The launcher's line running `fn` (kernel ki, or one of its pack
 * kernels, which take its parameters) on `grid` blocks: the kernel's
 * tensors (t[id] of the whole program's, by_id, else the kernel's own
 * t<j>), past their guard zones, then its scratch, then the var values. */
static void launch_line(FILE *L, const cg_kernel *k, const char *fn, int ki, int64_t grid, int by_id,
                        const int64_t *vars, int nv) {
  /* the dynamic shared memory the runtime gives it: the kernel's, none to a pack kernel */
  int smem = strcmp(fn, k->name) ? 0 : k->smem;
  fprintf(L, "  emu_launch(%lld, %d, %d, [&] { %s(", (long long)grid, k->block, smem, fn);
  for (int j = 0; j < k->n_tensors; j++) {
    if (by_id) fprintf(L, "%st[%d] + %d", j ? ", " : "", k->tensors[j], GUARD);
    else fprintf(L, "%st%d + %d", j ? ", " : "", j, GUARD);
  }
  if (cg_kernel_takes_scratch(k)) fprintf(L, ", scratch%d", ki);
  for (int v = 0; v < nv; v++) fprintf(L, ", %lldLL", (long long)vars[v]);
  fprintf(L, "); });\n");
}

/* Kernel ki's operands' copies into its scratch (cg_kernel.prep), as the
 * runtime makes them before the launch: a plain copy rounded as
 * kbc_tf32_copy does (emu.h's kbc_tf32: cvt.rna), a pack by the kernel's
 * own pack kernel (at most gridcap blocks where the emulator asks); the
 * tensors named as in launch_line.  Returns 1 when an offset or a launch
 * cannot be evaluated. */
static int prep_lines(FILE *L, const cg_kernel *k, int ki, int by_id, const int64_t *vars, const int64_t *numel,
                      int nv, int gridcap) {
  for (int i = 0; i < k->n_prep; i++) {
    int64_t at = cg_kernel_prep_at(k, i, vars);
    cg_launch l;
    if (at < 0 || !cg_prep_launch_of(k, i, vars, numel, &l)) return 1;
    if (k->prep_pack[i]) {
      char fn[512];
      cg_prep_name(k, i, fn, sizeof fn);
      int64_t grid = gridcap > 0 && l.grid[0] > gridcap ? gridcap : l.grid[0];
      if (grid > 0) launch_line(L, k, fn, ki, grid, by_id, vars, nv);
      continue;
    }
    int j = 0;
    while (j < k->n_tensors && k->tensors[j] != k->prep[i]) j++;
    char src[32];
    if (by_id) snprintf(src, sizeof src, "t[%d]", k->prep[i]);
    else snprintf(src, sizeof src, "t%d", j);
    fprintf(L, "  for (long long e = 0; e < %lldLL; e++) scratch%d[%lldLL + e] = kbc_tf32(%s[%d + e]); // prep\n",
            (long long)numel[k->prep[i]], ki, (long long)at, src, GUARD);
  }
  return 0;
}

/* Whether kernel k writes tensor t. */
static int written(const ir_program *p, const cg_kernel *k, int t) {
  for (int i = k->first; i < k->first + k->count; i++)
    if (IR_STMT(p, i)->out->id == t) return 1;
  return 0;
}

/* The relative L2 error allowed (--tol): below 0, 1e-5 or (TF32) 2e-3. */
static double tolerance = -1;

/* Compares one written tensor o (n values between guard zones) with the
 * interpreter's values: 1 ok, 0 wrong (reported).  A NaN or infinity
 * where the interpreter has the same counts as equal. */
static int check_values(const float *o, const char *kernel, const char *tensor, const double *ref, int64_t n,
                        int tf32) {
  int64_t guard = 0, unwritten = 0;
  for (int64_t e = 0; e < GUARD; e++) {
    guard += memcmp(&o[e], &SENTINEL, 4) != 0;
    guard += memcmp(&o[GUARD + n + e], &SENTINEL, 4) != 0;
  }
  double num = 0, den = 0, maxe = 0;
  for (int64_t e = 0; e < n; e++) {
    float v = o[GUARD + e];
    if (!memcmp(&v, &SENTINEL, 4)) {
      unwritten++;
      continue;
    }
    if (!isfinite(ref[e]) && (isnan(ref[e]) ? isnan(v) : (double)v == ref[e])) continue;
    double err = fabs((double)v - ref[e]);
    if (!(err == err)) err = 1e30;
    num += err * err;
    den += isfinite(ref[e]) ? ref[e] * ref[e] : 0;
    if (err > maxe) maxe = err;
  }
  double rel = sqrt(num / (den > 0 ? den : 1));
  int ok = !guard && !unwritten && rel <= (tolerance >= 0 ? tolerance : tf32 ? 2e-3 : 1e-5);
  printf("%s %s (%s): rel L2 error %.3g, max abs error %.3g, %lld elements, %lld unwritten, %lld guard writes\n",
         ok ? "ok  " : "FAIL", kernel, tensor, rel, maxe, (long long)n, (long long)unwritten, (long long)guard);
  return ok;
}

/* check_values on a tensor read from a file: -1 when unreadable. */
static int check_output(const char *path, const char *tensor, const cg_kernel *k, const double *ref, int64_t n,
                        int tf32) {
  float *o = malloc(4 * (size_t)(n + 2 * GUARD));
  FILE *O = fopen(path, "rb");
  if (!o || !O || fread(o, 4, (size_t)(n + 2 * GUARD), O) != (size_t)(n + 2 * GUARD)) {
    if (O) fclose(O);
    free(o);
    return -1;
  }
  fclose(O);
  int ok = check_values(o, k->name, tensor, ref, n, tf32);
  free(o);
  return ok;
}

/* What a run holds, released by emu_free whichever way the run ended. */
typedef struct {
  kbc_arena *a;
  char *src;
  kbc_diag *d;
  ir_program *p;
  int64_t *vars;
  double **data;
  int *kid;
  cg_program g; /* all zero until generated: released either way */
} emu;

static void emu_free(emu *E) {
  if (E->p && E->data) {
    ir_interp_release(E->p, E->data);
    for (int i = 0; i < E->p->tensors.len; i++) free(E->data[i]);
  }
  free(E->data);
  free(E->kid);
  free(E->vars);
  cg_program_free(&E->g);
  kbc_diag_destroy(E->d);
  free(E->src);
  kbc_arena_destroy(E->a);
}

/* The runtime's grid for kernel k (cg_kernel_launch), capped further at
 * gridcap where the emulator asks; -1 when the work cannot be evaluated. */
static int64_t launch_grid(const cg_kernel *k, const int64_t *vars, int gridcap) {
  cg_launch launch;
  if (!cg_kernel_launch(k, vars, &launch)) return -1;
  int64_t grid = launch.grid[0];
  return gridcap > 0 && grid > gridcap ? gridcap : grid;
}

/* --chain: the whole program on one set of buffers (see the top). */
static int run_chain(emu *E, const ir_binding *B, const char *dir, const char *cxx, int gridcap, int tf32) {
  const ir_program *p = E->p;
  const cg_program *g = &E->g;
  char cmd[4096], path[2048];
  snprintf(path, sizeof path, "%s/kern.cu", dir);
  FILE *f = fopen(path, "w");
  if (!f) return fail("cannot write ", path);
  fputs(kbc_buf_str(&g->source), f);
  fclose(f);
  snprintf(path, sizeof path, "%s/launch.cpp", dir);
  FILE *L = fopen(path, "w");
  if (!L) return fail("cannot write ", path);
  int nt = p->tensors.len;
  fprintf(L, "#include \"%s\"\n#include \"kern.cu\"\n", KBC_EMU_HEADER);
  fprintf(L, "int main() {\n  static float *t[%d];\n  FILE *f = fopen(\"data.bin\", \"rb\");\n", nt + 1);
  for (int i = 0; i < nt; i++)
    fprintf(L,
            "  t[%d] = (float *)malloc(4 * (%lldLL + 2 * %d + 1)) + %d;\n"
            "  if (!t[%d] || fread(t[%d], 4, %lldLL + 2 * %d, f) != (size_t)(%lldLL + 2 * %d)) abort();\n",
            i, (long long)B->numel[i], GUARD, misalign, i, i, (long long)B->numel[i], GUARD, (long long)B->numel[i],
            GUARD);
  fprintf(L, "  fclose(f);\n");
  for (int ki = 0; ki < g->n_kernels; ki++) {
    const cg_kernel *k = &g->kernels[ki];
    int64_t grid = launch_grid(k, E->vars, gridcap);
    if (grid < 0) return fail("cannot evaluate the work of ", k->name);
    if (k->zero_tensor >= 0)
      fprintf(L, "  for (long long e = 0; e < %lldLL; e++) t[%d][%d + e] = 0.0f;\n",
              (long long)B->numel[k->zero_tensor], k->zero_tensor, GUARD);
    if (grid == 0) continue;
    if (scratch_decl(L, k, E->vars, ki) || prep_lines(L, k, ki, 1, E->vars, B->numel, p->vars.len, gridcap))
      return fail("cannot evaluate the scratch of ", k->name);
    launch_line(L, k, k->name, ki, grid, 1, E->vars, p->vars.len);
  }
  fprintf(L, "  FILE *o = fopen(\"out.bin\", \"wb\");\n");
  for (int i = 0; i < nt; i++)
    fprintf(L, "  fwrite(t[%d], 4, %lldLL + 2 * %d, o);\n", i, (long long)B->numel[i], GUARD);
  fprintf(L, "  fclose(o);\n  return 0;\n}\n");
  fclose(L);
  /* every tensor: inputs hold their values, the rest sentinels */
  snprintf(path, sizeof path, "%s/data.bin", dir);
  FILE *D = fopen(path, "wb");
  if (!D) return fail("cannot write ", path);
  for (int i = 0; i < nt; i++) {
    int64_t n = B->numel[i];
    float *buf = malloc(4 * (size_t)(n + 2 * GUARD));
    if (!buf) return fail("out of memory", NULL);
    for (int64_t e = 0; e < n + 2 * GUARD; e++) memcpy(&buf[e], &SENTINEL, 4);
    if (IR_TENSOR(p, i)->role == IR_ROLE_INPUT)
      for (int64_t e = 0; e < n; e++) buf[GUARD + e] = (float)E->data[i][e];
    fwrite(buf, 4, (size_t)(n + 2 * GUARD), D);
    free(buf);
  }
  fclose(D);
  snprintf(cmd, sizeof cmd,
           "cd '%s' && '%s' -O1 -std=c++17 -pthread -fno-strict-aliasing -w -o launch launch.cpp", dir, cxx);
  if (system(cmd)) return fail("the C++ compiler failed on ", dir);
  snprintf(cmd, sizeof cmd, "cd '%s' && ./launch", dir);
  if (system(cmd)) {
    printf("FAIL %s: the emulated run crashed\n", p->name);
    return 1;
  }
  /* every tensor in turn; those the program writes are checked */
  snprintf(path, sizeof path, "%s/out.bin", dir);
  FILE *O = fopen(path, "rb");
  if (!O) return fail("cannot read ", path);
  int bad = 0;
  for (int i = 0; i < nt; i++) {
    int64_t n = B->numel[i] + 2 * GUARD;
    float *buf = malloc(4 * (size_t)n);
    if (!buf || fread(buf, 4, (size_t)n, O) != (size_t)n) {
      free(buf);
      fclose(O);
      return fail("cannot read ", path);
    }
    /* written by the program, and in memory: some kernel takes it (a fused
     * attention keeps its scores and probabilities on chip) */
    int writes = 0, taken = 0;
    for (int s = 0; s < p->stmts.len; s++) writes |= IR_STMT(p, s)->out->id == i;
    for (int ki = 0; ki < g->n_kernels; ki++)
      for (int j = 0; j < g->kernels[ki].n_tensors; j++) taken |= g->kernels[ki].tensors[j] == i;
    writes &= taken;
    if (writes && IR_TENSOR(p, i)->role != IR_ROLE_INPUT)
      bad += !check_values(buf, p->name, IR_TENSOR(p, i)->name, E->data[i], B->numel[i], tf32);
    free(buf);
  }
  fclose(O);
  return bad ? 1 : 0;
}

#define USAGE "usage: kernel_emu SPEC [--tf32] [--sm90a] [--chain] [--specialize] [--misalign] [--codegen-only] [--inputs LO:HI] [--tol T] [--grid N] [--dir DIR] [--cxx CXX] AXIS=N ..."

/* The inputs' pseudo-random values, uniform in [lo, hi), in declaration
 * order (other compilations of the spec are given copies: same_outputs). */
static void fill_inputs(const ir_program *p, const ir_binding *B, double **data, double lo, double hi) {
  unsigned seed = 12345;
  for (int i = 0; i < p->tensors.len; i++)
    if (IR_TENSOR(p, i)->role == IR_ROLE_INPUT) {
      data[i] = malloc(sizeof(double) * (size_t)B->numel[i]);
      for (int64_t e = 0; e < B->numel[i]; e++) {
        seed = seed * 1103515245u + 12345u;
        data[i][e] = lo + (hi - lo) * ((double)((seed >> 8) & 0xffff) / 65536.0);
      }
    }
}

/* Program o, another compilation of the same spec, interpreted on the
 * inputs p was given (copied by name) must produce every output p's
 * interpretation produced: float64 both, within rel L2 1e-9 (passes may
 * associate sums differently), NaN where NaN and an infinity where the
 * same one.  `what` says which compilations differ, in the failure. */
static int same_outputs(emu *E, const ir_program *o, double **pdata, const char *what) {
  ir_binding OB;
  if (!ir_bind(o, E->a, E->vars, &OB, E->d)) return fail(kbc_diag_text(E->d), NULL), 0;
  double **odata = calloc((size_t)o->tensors.len + 1, sizeof *odata);
  for (int i = 0; i < o->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(o, i);
    if (t->role != IR_ROLE_INPUT) continue;
    const ir_tensor *pt = ir_tensor_find(E->p, t->name);
    odata[i] = calloc((size_t)(OB.numel[i] > 0 ? OB.numel[i] : 1), sizeof **odata);
    if (pt) memcpy(odata[i], pdata[pt->id], sizeof **odata * (size_t)OB.numel[i]);
  }
  int ok = ir_interp(o, &OB, odata, E->d);
  if (!ok) fail(kbc_diag_text(E->d), NULL);
  for (int i = 0; ok && i < o->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(o, i);
    if (t->role != IR_ROLE_OUTPUT) continue;
    int j = ir_tensor_find(E->p, t->name)->id;
    double num = 0, den = 0;
    int64_t apart = 0; /* NaN or infinity on one side only, or different infinities */
    for (int64_t e = 0; e < OB.numel[i]; e++) {
      double x = odata[i][e], y = pdata[j][e];
      if (!isfinite(x) || !isfinite(y)) {
        apart += !(isnan(x) && isnan(y)) && x != y;
        continue;
      }
      num += (x - y) * (x - y);
      den += x * x;
    }
    if (apart || !(num <= 1e-18 * den || num == 0)) {
      printf("FAIL %s: %s (rel L2 %.3g, %lld NaN or infinity apart)\n", t->name, what,
             sqrt(num / (den > 0 ? den : 1)), (long long)apart);
      ok = 0;
    }
  }
  ir_interp_release(o, odata);
  for (int i = 0; i < o->tensors.len; i++) free(odata[i]);
  free(odata);
  return ok;
}

/* The passes keep the spec's meaning: the program as the spec states it
 * (the pipeline stopped after check-bounds: lowered, verified, nothing
 * transformed) gives p's outputs.  The differential fuzzer thereby checks
 * simplify, factor, gather, phase, inline, distribute, hoist and dce too: the kernels are
 * compared with p, so a pass that changed p's meaning would go unseen
 * otherwise.  Skipped, with a note, where the untransformed program would
 * do more than LOWERED_MAX_FLOPS (a reduction that hoisting evaluates once
 * per row is evaluated per element before it). */
static const double LOWERED_MAX_FLOPS = 4e8;

static int same_as_lowered(emu *E, double **pdata) {
  ir_pipeline_opts o = {.stop_after = "check-bounds"};
  const ir_program *l = ir_pipeline_run(E->a, E->d, E->src, "emu", &o);
  if (!l) return fail(kbc_diag_text(E->d), NULL), 0;
  ir_binding LB;
  if (!ir_bind(l, E->a, E->vars, &LB, E->d)) return fail(kbc_diag_text(E->d), NULL), 0;
  double flops = ir_program_cost(l, &LB).flops;
  if (flops > LOWERED_MAX_FLOPS) {
    printf("note: the untransformed program (%.3g flops) not interpreted: passes unchecked\n", flops);
    return 1;
  }
  return same_outputs(E, l, pdata,
                      "the passes changed the program's meaning: the untransformed program's interpreter differs");
}

static int emu_run(emu *E, int argc, char **argv) {
  const char *spec = NULL, *dir = "/tmp/kbc_kernel_emu", *cxx = getenv("CXX") ? getenv("CXX") : "c++";
  int tf32 = 0, sm90a = 0, gridcap = 3, nsets = 0, chain = 0, specialize = 0;
  const char *only = getenv("KBC_EMU_CODEGEN_ONLY");
  int codegen_only = only && *only && strcmp(only, "0");
  double lo = -1, hi = 1;
  const char *sets[64];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tf32")) tf32 = 1;
    else if (!strcmp(argv[i], "--sm90a")) sm90a = 1;
    else if (!strcmp(argv[i], "--chain")) chain = 1;
    else if (!strcmp(argv[i], "--specialize")) specialize = 1;
    else if (!strcmp(argv[i], "--misalign")) misalign = 1;
    else if (!strcmp(argv[i], "--codegen-only")) codegen_only = 1;
    else if (!strcmp(argv[i], "--inputs") && i + 1 < argc) {
      if (sscanf(argv[++i], "%lf:%lf", &lo, &hi) != 2 || !(lo < hi)) return fail("--inputs takes LO:HI", NULL);
    }
    else if (!strcmp(argv[i], "--tol") && i + 1 < argc) {
      char *end;
      tolerance = strtod(argv[++i], &end);
      if (*end || !(tolerance >= 0)) return fail("--tol takes a relative L2 error >= 0", NULL);
    }
    else if (!strcmp(argv[i], "--grid") && i + 1 < argc) gridcap = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--cxx") && i + 1 < argc) cxx = argv[++i];
    else if (strchr(argv[i], '=') && nsets < 64) sets[nsets++] = argv[i];
    else if (!spec) spec = argv[i];
    else return fail(USAGE, NULL);
  }
  if (!spec) return fail(USAGE, NULL);
  char cmd[4096], path[2048];
  snprintf(cmd, sizeof cmd, "command -v '%s' > /dev/null 2>&1", cxx);
  if (!codegen_only && system(cmd)) {
    printf("SKIP: no C++ compiler (%s)\n", cxx);
    return 77;
  }

  kbc_arena *a = E->a = kbc_arena_create();
  char *src = E->src = slurp(spec);
  if (!src) return fail("cannot read ", spec);
  kbc_diag *d = E->d = kbc_diag_create(spec, src);
  ir_pipeline_opts po = {.gates = cg_pipeline_gates_from_env()}; /* as the runtime runs it */
  ir_program *p = E->p = ir_pipeline_run(a, d, src, "emu", &po);
  if (!p) return fail(kbc_diag_text(d), NULL);
  int64_t *vars = E->vars = calloc((size_t)p->vars.len + 1, sizeof *vars);
  for (int s = 0; s < nsets; s++) {
    const char *eq = strchr(sets[s], '=');
    int found = 0;
    for (int i = 0; i < p->vars.len; i++)
      if (strlen(IR_VAR(p, i)->name) == (size_t)(eq - sets[s]) && !strncmp(IR_VAR(p, i)->name, sets[s], eq - sets[s])) {
        vars[i] = atoll(eq + 1);
        found = 1;
      }
    if (!found) return fail("no var axis ", sets[s]);
  }
  for (int i = 0; i < p->vars.len; i++)
    if (vars[i] < 1) return fail("unset var axis ", IR_VAR(p, i)->name);
  const ir_program *generic = NULL;
  if (specialize) {
    generic = p;
    p = E->p = rt_specialize(a, d, src, "emu", generic, vars); /* as the runtime does */
    if (!p) return fail(kbc_diag_text(d), NULL);
  }
  cg_target t = cg_target_default();
  t.arch_a = sm90a;
  t.opt = cg_options_from_env(); /* KBC_IDX32, KBC_MAX_TEAM, ... as the runtime reads them */
  t.precision = tf32 ? CG_PRECISION_TF32 : CG_PRECISION_FP32;
  if (!cg_generate(a, p, &t, &E->g, d)) return fail(kbc_diag_text(d), NULL);
  if (t.opt.idx32) cg_program_narrow(&E->g); /* KBC_IDX32: the 32-bit index variant */
  const cg_program g = E->g;
  ir_binding B;
  if (!ir_bind(p, a, vars, &B, d)) return fail(kbc_diag_text(d), NULL);
  if (codegen_only) {
    printf("codegen only: %d kernels generated, none emulated\n", g.n_kernels);
    return 0;
  }
  double **data = E->data = calloc((size_t)p->tensors.len + 1, sizeof *data);
  fill_inputs(p, &B, data, lo, hi);
  if (!ir_interp(p, &B, data, d)) return fail(kbc_diag_text(d), NULL);
  if (generic && !same_outputs(E, generic, data, "the specialized program's interpreter differs from the generic one's"))
    return 1;
  if (!same_as_lowered(E, data)) return 1;

  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  if (system(cmd)) return fail("cannot create ", dir);
  if (chain) return run_chain(E, &B, dir, cxx, gridcap, tf32);
  snprintf(path, sizeof path, "%s/kern.cu", dir);
  FILE *f = fopen(path, "w");
  if (!f) return fail("cannot write ", path);
  fputs(kbc_buf_str(&g.source), f);
  fclose(f);
  snprintf(path, sizeof path, "%s/launch.cpp", dir);
  FILE *L = fopen(path, "w");
  if (!L) return fail("cannot write ", path);
  fprintf(L, "#include \"%s\"\n#include \"kern.cu\"\n", KBC_EMU_HEADER);
  fprintf(L, "static float *rd(FILE *f, long long n) {\n"
             "  float *p = (float *)malloc(4 * (n + 2 * %d + 1)) + %d;\n"
             "  if (!p || fread(p, 4, n + 2 * %d, f) != (size_t)(n + 2 * %d)) abort();\n"
             "  return p;\n}\n",
          GUARD, misalign, GUARD, GUARD);
  fprintf(L, "static const unsigned emu_sentinel = 0x%xu;\n", SENTINEL);
  fprintf(L, "int main(int argc, char **argv) {\n  int which = atoi(argv[1]);\n  char name[64];\n");
  int ng = 0, *kid = E->kid = calloc((size_t)g.n_kernels + 1, sizeof *kid);
  for (int ki = 0; ki < g.n_kernels; ki++) {
    const cg_kernel *k = &g.kernels[ki];
    if (!emulated(k)) continue;
    int64_t grid = launch_grid(k, vars, gridcap);
    if (grid < 0) return fail("cannot evaluate the work of ", k->name);
    kid[ng] = ki;
    fprintf(L, "  if (which == %d) {\n", ng);
    fprintf(L, "    snprintf(name, sizeof name, \"data%d.bin\");\n    FILE *f = fopen(name, \"rb\");\n", ng);
    for (int j = 0; j < k->n_tensors; j++)
      fprintf(L, "    float *t%d = rd(f, %lldLL);\n", j, (long long)B.numel[k->tensors[j]]);
    fprintf(L, "    fclose(f);\n");
    if (scratch_decl(L, k, vars, ki) || prep_lines(L, k, ki, 0, vars, B.numel, p->vars.len, gridcap))
      return fail("cannot evaluate the scratch of ", k->name);
    launch_line(L, k, k->name, ki, grid, 0, vars, p->vars.len);
    if (module_state(&g, k)) {
      /* launched again on sentinels: the first launch left its state ready */
      for (int j = 0; j < k->n_tensors; j++)
        if (written(g.program, k, k->tensors[j]))
          fprintf(L, "    for (long long e = 0; e < %lldLL; e++) memcpy(&t%d[%d + e], &emu_sentinel, 4);\n",
                  (long long)B.numel[k->tensors[j]], j, GUARD);
      launch_line(L, k, k->name, ki, grid, 0, vars, p->vars.len);
    }
    for (int j = 0; j < k->n_tensors; j++)
      if (written(g.program, k, k->tensors[j]))
        fprintf(L,
                "    snprintf(name, sizeof name, \"out%d_%d.bin\");\n    FILE *o%d = fopen(name, \"wb\");\n"
                "    fwrite(t%d, 4, %lldLL + 2 * %d, o%d);\n    fclose(o%d);\n",
                ng, j, j, j, (long long)B.numel[k->tensors[j]], GUARD, j, j);
    fprintf(L, "  }\n");
    /* the kernel's tensors: values (as float) between guard zones; its output all sentinels */
    snprintf(path, sizeof path, "%s/data%d.bin", dir, ng);
    FILE *D = fopen(path, "wb");
    if (!D) return fail("cannot write ", path);
    for (int j = 0; j < k->n_tensors; j++) {
      int tid = k->tensors[j];
      int64_t n = B.numel[tid];
      float *buf = malloc(4 * (size_t)(n + 2 * GUARD));
      for (int64_t e = 0; e < n + 2 * GUARD; e++) memcpy(&buf[e], &SENTINEL, 4);
      if (!written(g.program, k, tid))
        for (int64_t e = 0; e < n; e++) buf[GUARD + e] = (float)data[tid][e];
      else if (k->zero_tensor == tid) /* scatters add into it: zeroed first, as the runtime does */
        for (int64_t e = 0; e < n; e++) buf[GUARD + e] = 0.0f;
      fwrite(buf, 4, (size_t)(n + 2 * GUARD), D);
      free(buf);
    }
    fclose(D);
    ng++;
  }
  fprintf(L, "  (void)argc;\n  return 0;\n}\n");
  fclose(L);
  if (!ng) {
    printf("no kernels to emulate\n");
    return 0;
  }
  snprintf(cmd, sizeof cmd,
           "cd '%s' && '%s' -O1 -std=c++17 -pthread -fno-strict-aliasing -w -o launch launch.cpp", dir, cxx);
  if (system(cmd)) return fail("the C++ compiler failed on ", dir);

  int bad = 0;
  for (int i = 0; i < ng; i++) {
    const cg_kernel *k = &g.kernels[kid[i]];
    snprintf(cmd, sizeof cmd, "cd '%s' && ./launch %d", dir, i);
    if (system(cmd)) {
      printf("FAIL %s: the emulated run crashed\n", k->name);
      bad++;
      continue;
    }
    for (int j = 0; j < k->n_tensors; j++) {
      int tid = k->tensors[j];
      if (!written(g.program, k, tid)) continue;
      snprintf(path, sizeof path, "%s/out%d_%d.bin", dir, i, j);
      int c = check_output(path, IR_TENSOR(p, tid)->name, k, data[tid], B.numel[tid], tf32);
      if (c < 0) return fail("cannot read ", path);
      bad += !c;
    }
  }
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  emu E = {0};
  int rc = emu_run(&E, argc, argv);
  emu_free(&E);
  return rc;
}
