/* fuzz_compile.c — libFuzzer target for everything after the parser: the
 * lowering, the checks, every pass, code generation and the interpreter.
 *
 * Each input is spec text.  It runs the pipeline as the runtime does; a
 * spec that compiles then has its CUDA C generated for sm_90 and sm_90a,
 * fp32 and tf32, is bound at small var axes drawn from its own bytes
 * (1..6), is run by the reference interpreter where that is cheap, and is
 * specialized for that binding and generated again.  Checked: no crash or
 * sanitizer report; the pipeline returns a program iff it reported no
 * error, and never an internal error ("internal error" is a bug whatever
 * the input); code generation and binding either succeed or say why.
 *
 *   cmake -B build/fuzz -DKBC_FUZZ=ON -DCMAKE_C_COMPILER=clang && cmake --build build/fuzz
 *   build/fuzz/tests/fuzz/fuzz_compile -dict=tests/fuzz/parse.dict -max_len=4096 \
 *       CORPUS_DIR tests/fuzz/corpus/compile specs specs/examples
 *
 * (a fresh CORPUS_DIR first: libFuzzer writes what it finds into the first
 * directory).  With -DKBC_FUZZ_MAIN (and without -fsanitize=fuzzer) it is a
 * plain program that replays the files named on its command line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "codegen/options.h"
#include "interp/interp.h"
#include "ir/bind.h"
#include "ir/cost.h"
#include "passes/pipeline.h"
#include "runtime/special.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                                                                 \
  do {                                                                             \
    if (!(c)) {                                                                    \
      fprintf(stderr, "fuzz_compile: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                                     \
    }                                                                              \
  } while (0)

/* The interpreter runs only programs this cheap at the drawn binding. */
enum { INTERP_MAX_FLOPS = 2000000, INTERP_MAX_BYTES = 16 << 20 };

/* No error, or only user errors: an internal error is a compiler bug. */
static void no_internal(const kbc_diag *d) {
  if (kbc_diag_internal(d)) fprintf(stderr, "%s", kbc_diag_text(d));
  REQUIRE(kbc_diag_internal(d) == 0);
}

static void generate(kbc_arena *a, const ir_program *p, kbc_diag *d) {
  for (int arch_a = 0; arch_a < 2; arch_a++)
    for (int tf32 = 0; tf32 < 2; tf32++) {
      cg_target t = cg_target_default();
      t.arch_a = arch_a;
      t.opt = cg_options_from_env();
      t.precision = tf32 ? CG_PRECISION_TF32 : CG_PRECISION_FP32;
      cg_program g = {0}; /* released either way */
      int ok = cg_generate(a, p, &t, &g, d);
      no_internal(d);
      if (ok && t.opt.idx32) cg_program_narrow(&g); /* the 32-bit index variant, as the runtime makes it */
      if (ok) REQUIRE(g.n_kernels >= 0);
      cg_program_free(&g);
    }
}

static void interpret(const ir_program *p, const ir_binding *B, kbc_diag *d) {
  ir_cost cost = ir_program_cost(p, B);
  int64_t bytes = 0;
  for (int i = 0; i < p->tensors.len; i++) bytes += B->numel[i] * (int64_t)sizeof(double);
  if (cost.flops > INTERP_MAX_FLOPS || bytes > INTERP_MAX_BYTES) return;
  double **buf = calloc((size_t)p->tensors.len + 1, sizeof *buf);
  REQUIRE(buf);
  for (int i = 0; i < p->tensors.len; i++)
    if (IR_TENSOR(p, i)->role == IR_ROLE_INPUT) { /* the rest the interpreter allocates */
      buf[i] = malloc(sizeof(double) * ((size_t)B->numel[i] + 1));
      REQUIRE(buf[i]);
      for (int64_t e = 0; e < B->numel[i]; e++) buf[i][e] = (double)((e * 7 + i) % 13) / 13.0 - 0.5;
    }
  ir_interp(p, B, buf, d);
  no_internal(d);
  ir_interp_release(p, buf);
  for (int i = 0; i < p->tensors.len; i++) free(buf[i]);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  char *src = malloc(size + 1);
  REQUIRE(src);
  memcpy(src, data, size);
  src[size] = 0;
  kbc_arena *a = kbc_arena_create();
  kbc_diag *d = kbc_diag_create("fuzz.kb", src);
  ir_pipeline_opts po = {.gates = cg_pipeline_gates_from_env()};
  ir_program *p = ir_pipeline_run(a, d, src, "fuzz", &po);
  no_internal(d);
  REQUIRE((p != NULL) == (kbc_diag_errors(d) == 0));
  if (p) {
    generate(a, p, d);
    int64_t *vars = calloc((size_t)p->vars.len + 1, sizeof *vars);
    REQUIRE(vars);
    for (int i = 0; i < p->vars.len; i++) vars[i] = 1 + (int64_t)(size > 0 ? data[(size_t)i * 31 % size] % 6 : 0);
    ir_binding B;
    kbc_diag *bd = kbc_diag_create("fuzz.kb", src);
    if (ir_bind(p, a, vars, &B, bd)) {
      interpret(p, &B, bd);
      ir_program *sp = rt_specialize(a, bd, src, "fuzz", p, vars);
      no_internal(bd);
      if (sp) generate(a, sp, bd);
    }
    no_internal(bd);
    kbc_diag_destroy(bd);
    free(vars);
  }
  kbc_diag_destroy(d);
  kbc_arena_destroy(a);
  free(src);
  return 0;
}

#ifdef KBC_FUZZ_MAIN
#define KBC_FUZZ_NAME "fuzz_compile"
#include "replay_main.h"
#endif
