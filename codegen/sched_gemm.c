/* sched_gemm.c — schedule family (b): tiled contraction (placeholder).
 *
 * Until the tiled implicit-GEMM emitter lands, every GEMM group falls back
 * to the rows family (see cg.c). */
#include "cg_impl.h"

int cg_emit_gemm(cg_ctx *C, const cg_group *g, cg_kernel *k) {
  (void)C;
  (void)g;
  (void)k;
  return 0;
}
