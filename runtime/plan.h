/* plan.h — the launch plan of a program for one binding of its var axes:
 * what `kbc compile SPEC --emit plan` prints (kbc_program_emit "plan" and
 * "plan-json").
 *
 * Before: the program's generated code for a target (cg_generate), a
 * binding (ir_bind), and the kernels' resources as ptxas reported them
 * (rt_compile; kernels missing from it are reported as unknown).
 * After rt_plan_make: the launches in the order rt_exec_launch issues them
 * — for each kernel, the kbc_zero that zero-fills its scatter target
 * first, where it has one, then the kbc_tf32_copy of each operand it
 * takes rounded (cg_kernel.prep), then the kernel — with the dimensions of
 * cg_kernel_launch / cg_zero_launch / cg_prep_launch (the functions the runtime launches
 * with), and the temporaries the runtime places in its workspace, then the
 * kernels' scratch (split-K's partial sums, a buffer named "(scratch)"),
 * at the offsets of rt_workspace_layout, with the workspace's size.
 *
 * Text (rt_plan_text): a header naming the program, binding, target and
 * precision; a table of launches, each followed by the IR statements it
 * computes; a table of temporaries.
 * JSON (rt_plan_json), exactly these keys:
 *   {"kernels": [{"name", "family", "statements", "grid", "block",
 *                 "smem_bytes", "registers"}],
 *    "buffers": [{"name", "shape", "bytes"}], "workspace_bytes": N}
 * and for a persistent kernel (family "persistent") also "stages":
 * [{"name", "family", "blocks", "threads", "after"}] (after: the indices
 * of the stages it waits for), and where it runs the program's batch
 * points a thread-block cluster each (codegen/cluster.c) "cluster" (its
 * blocks) and "points"; its text lists each stage's line, then the
 * stage's statements.
 * grid and block are [x, y, z] arrays (a grid of [0, 1, 1]: no work, not
 * launched); family is rows, gemm or scatter, or zero for a kbc_zero
 * launch (whose one statement reads "T = 0"), or prep for a kbc_tf32_copy
 * (whose one statement reads "(scratch) = tf32(T)"); statements are the IR
 * statements' first lines (as `--emit ir` prints them); smem_bytes is the
 * shared memory per block, dynamic plus static; registers per thread; both
 * null where ptxas did not report the kernel.  A buffer's bytes are its size (4 per
 * element); each starts at a multiple of RT_WORKSPACE_ALIGN (256) bytes,
 * so workspace_bytes is the sum of the buffers' bytes each rounded up to a
 * multiple of 256. */
#ifndef KBC_RUNTIME_PLAN_H
#define KBC_RUNTIME_PLAN_H

#include "codegen/cg.h"
#include "ir/bind.h"
#include "nvrtc.h"

typedef struct {
  const char *name;     /* the kernel function; "kbc_zero" for a zero-fill, "kbc_tf32_copy" for an operand's copy */
  const char *family;   /* rows, gemm, scatter; zero for a zero-fill; prep for an operand's copy */
  int n_stmts;
  const char **stmts;   /* one line each */
  cg_launch launch;     /* grid[0] == 0: nothing to do, not launched */
  long static_smem;     /* bytes, from ptxas; -1 unknown */
  int registers;        /* from ptxas; -1 unknown */
  int n_stages;         /* a persistent kernel's stages (cg_stage), else 0 */
  const cg_stage *stages;
  int cluster;          /* blocks a cluster (a cluster kernel's; else 0), taking `points` batch points */
  int64_t points;
  int n_after;          /* the launches (rows) it waits for: a kernel's first launch, those of the kernels it */
  int *after;           /* follows (cg_kernel.after); its later launches, the one before */
} rt_plan_launch;

typedef struct {
  const char *name;
  int rank;
  const int64_t *shape;
  size_t bytes;         /* 4 per element */
  size_t offset;        /* in the workspace */
} rt_plan_buffer;

typedef struct {
  const ir_program *p;
  const ir_binding *b;
  const char *arch;       /* the target, e.g. "sm_90" */
  const char *precision;  /* "fp32" or "tf32" */
  int idx32;              /* the 32-bit index variant runs (KBC_IDX32=1 and the binding fits) */
  const char *switches;   /* the code generation switches not at their defaults, "KBC_X=1 ..." ("": none) */
  int tuned;              /* they came from a `kbc tune` record (runtime/tune.h) */
  int n_launches;
  rt_plan_launch *launches;
  int branches;             /* some launch need not wait for the one before it (the graph's branches) */
  int n_buffers;
  rt_plan_buffer *buffers;  /* the temporaries, then the scratch where there is one */
  int n_temps;              /* of them, temporaries */
  size_t workspace_bytes;
} rt_plan;

/* Fills *out (allocated in a); -1 with a message when a kernel's work
 * overflows for this binding. */
int rt_plan_make(kbc_arena *a, const ir_program *p, const cg_program *g, const ir_binding *b,
                 const rt_resources *res, rt_plan *out, rt_err *err);
void rt_plan_text(const rt_plan *pl, kbc_buf *out);
void rt_plan_json(const rt_plan *pl, kbc_buf *out);

#endif
