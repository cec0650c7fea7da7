/* cg.h — code generation: a checked IR program -> CUDA C kernels and the
 * plan to launch them.
 *
 * Before: a verified IR program after the IR passes.  After cg_generate():
 * one translation unit of CUDA C (self-contained for NVRTC: no includes)
 * holding one kernel per fusion group, and per kernel the tensors it
 * takes, its block size, shared memory, and its amount of work as a sym
 * over the var axes, from which the runtime computes the grid for a
 * binding (cg_kernel_launch).  Kernel parameters: the kernel's tensors (device pointers, in
 * the order listed), then every var axis as `long long`, in var_id order.
 * The text is deterministic for the same IR and target (its options
 * included: code generation reads no environment, see options.h).
 * cg_narrow_indices makes its 32-bit index variant (var axes then passed
 * as `int`). */
#ifndef KBC_CG_H
#define KBC_CG_H

#include "ir/ir.h"
#include "options.h"

typedef enum { CG_PRECISION_FP32, CG_PRECISION_TF32 } cg_precision;

typedef struct {
  int sm;              /* compute capability * 10, e.g. 90 */
  int arch_a;          /* the architecture-specific features of sm_90a (wgmma): the code is compiled
                          for that GPU alone (the runtime's sm_90a, `--target sm_90a`) */
  int sm_count;        /* multiprocessors (132 on an H200) */
  int smem_per_block;  /* opt-in shared memory per block, bytes */
  int l2_bytes;        /* L2 cache, bytes (50 MiB on an H200) */
  cg_precision precision;
  cg_options opt;      /* the switches (options.h) */
} cg_target;

/* The default target when no device is known: an H200 (sm_90), with the
 * default options (cg_options_default; no environment read). */
cg_target cg_target_default(void);

/* The schedule families, one table (docs/ARCHITECTURE.md, "Schedule
 * families"): X(ENUM, name, stem) gives CG_FAMILY_<ENUM>, the name `kbc
 * compile --emit plan` prints for its kernels (cg_family_name), and, inside
 * codegen/ (cg_impl.h), its plan type cg_<stem>_plan, planner
 * cg_plan_<stem> and emitter cg_emit_<stem>.  codegen/group.c decides a
 * group's family (cg_group_family). */
#define CG_FAMILIES(X)                                                                                      \
  X(ROWS, "rows", rows)          /* pointwise / reduction groups, teams of threads per outer point */      \
  X(POINT, "rows", point)        /* a rows group of one point: its reduction split across the grid */      \
  X(GEMM, "gemm", gemm)          /* tiled contraction (implicit GEMM) with fused epilogue */               \
  X(SCATTER, "scatter", scatter) /* += with atomics (a scatter that could not become a gather) */ \
  X(ATTN, "attention", attn)     /* scores, row statistics and a consumer contraction in one sweep */

typedef enum {
#define CG_FAMILY_ENUM(e, name, stem) CG_FAMILY_##e,
  CG_FAMILIES(CG_FAMILY_ENUM)
#undef CG_FAMILY_ENUM
  /* not a group's: the whole program's kernels as the stages of one
   * persistent kernel (persist.c), named "persistent" */
  CG_FAMILY_PERSIST
} cg_family;

extern const char *const cg_family_name[];

typedef struct {
  const char *name;     /* the kernel function's name */
  cg_family family;
  int first, count;     /* the statements it computes: stmts [first, first+count) of cg_program's program */
  int block;            /* threads per block */
  int smem;             /* dynamic shared memory, bytes */
  sym *work;            /* work items: outer points, tiles, or scatter points */
  int per_block;        /* work items per block */
  int max_blocks;       /* grid cap (the kernel loops over the rest); 0 = none */
  int n_tensors;
  int *tensors;         /* tensor ids, in parameter order */
  int zero_tensor;      /* tensor id to zero-fill before the launch, or -1 */
  /* Scratch memory of a launch (split-K: the K slices' partial sums, added
   * in slice order by the last slice to finish).  Where scratch_tiles is
   * set the kernel takes a float pointer after its tensors, to
   * cg_kernel_scratch(k, vars) floats that the runtime places in the
   * program's workspace after the temporaries (one region for all kernels:
   * they run one after another). */
  sym *scratch_tiles;   /* output tiles, or NULL: no scratch */
  sym *scratch_ktiles;  /* k-tiles of the whole K */
  int scratch_slots, scratch_below, scratch_min; /* the slice count's rule (gemm_split_count) */
  int scratch_tile;     /* floats of one tile's partial sums */
  /* Operands copied once before the launch (gemm_wgmma.c, prep_pays;
   * gemm_pack.c): tensor prep[i] copied just before this kernel, into the
   * kernel's scratch at float cg_kernel_prep_at(k, i, vars), in the order
   * listed; prep_floats[i] floats each (padded to 32); split-K's partial
   * sums after them.  The kernel reads the copy in place of the tensor for
   * that operand: a plain copy rounded to TF32 (the stage passes' work done
   * once), or a packed one (below). */
  int n_prep;
  int prep[2];
  sym *prep_floats[2];
  /* How copy i is made: prep_pack[i] 0 — the tensor as it is, by the
   * preamble's kbc_tf32_copy (always rounded); w + 1 — operand w packed
   * k-major ([r][x][k], gemm_pack.c) by the kernel's own pack kernel
   * (cg_prep_name), launched with the kernel's own arguments on a grid
   * over its prep_tiles[i] tiles (cg_prep_launch_of); rounded to TF32
   * where prep_round[i] (a plain copy always, a pack not under 3xTF32). */
  int prep_pack[2], prep_round[2];
  sym *prep_tiles[2];
  /* PERSIST: the kernels it runs, in order, as stages (cg_stage); its
   * scratch is the largest any of them takes. */
  int n_stages;
  const struct cg_stage *stages;
  /* PERSIST over batch points (cluster.c): launched in thread-block
   * clusters of `cluster` blocks (0: no cluster launch), each taking the
   * `points` batch points in turn. */
  int cluster;
  int64_t points;
  /* The earlier kernels of the program this one must run after (deps.c:
   * it reads what they write, or reads or writes what they write or
   * read), ascending, those implied by others left out; none for the
   * first.  Kernels neither waits for, directly or through others, may run
   * side by side. */
  int n_after;
  const int *after;
  /* The region of the workspace's scratch it uses (deps.c), where it
   * takes scratch: kernels of one region are ordered (one waits for the
   * other, directly or through others), so independent kernels each
   * taking scratch may run side by side; at most CG_SCRATCH_SLOTS
   * regions, beyond which a kernel waits for the last of the region it
   * shares.  The runtime sizes each region as the largest of its
   * kernels' scratch (runtime/exec.c, rt_workspace_layout). */
  int scratch_slot;
} cg_kernel;

#define CG_SCRATCH_SLOTS 4

/* A stage of a persistent kernel: a kernel of the program (or the
 * zero-fill of a scatter's target), run as `blocks` tasks of `threads`
 * threads, each a block of the kernel's launch; it starts once every
 * stage in after[] has finished (the ones it reads from, writes after or
 * writes before; transitively implied ones left out). */
typedef struct cg_stage {
  const cg_kernel *kernel; /* NULL: the zero-fill of tensor zero */
  int zero;                /* tensor id, or -1 */
  int64_t blocks;
  int threads;
  int n_after;
  const int *after;        /* stage indices, ascending */
} cg_stage;

/* A launch configuration: blocks and threads per block in x, y, z, and
 * the dynamic shared memory per block in bytes. */
typedef struct {
  int64_t grid[3];
  int block[3];
  int smem;
} cg_launch;

/* The launch of kernel k for the var values vars (by var_id): the one
 * computation of launch dimensions, used by the runtime to launch, by
 * `kbc compile --emit plan` and by the kernel emulator.  ceil(work /
 * per_block) blocks in x, at most max_blocks (where set) and 2^31 - 1, of
 * k->block threads.  Returns 0 when the work cannot be evaluated (it
 * overflows); grid[0] == 0 means there is nothing to launch. */
int cg_kernel_launch(const cg_kernel *k, const int64_t *vars, cg_launch *out);
/* The floats of scratch kernel k needs for the var values vars: 0 for
 * none (no scratch, or a single K slice), -1 when the sizes cannot be
 * evaluated. */
int64_t cg_kernel_scratch(const cg_kernel *k, const int64_t *vars);
/* Whether kernel k takes a scratch pointer after its tensors. */
int cg_kernel_takes_scratch(const cg_kernel *k);
/* Where in kernel k's scratch (in floats) the copy of its operand
 * k->prep[i] starts, for the var values vars; -1 when the sizes cannot be
 * evaluated. */
int64_t cg_kernel_prep_at(const cg_kernel *k, int i, const int64_t *vars);
/* The launch of kbc_zero (the preamble's zero-fill) over n > 0 floats. */
cg_launch cg_zero_launch(int64_t n);
/* The launch of kbc_tf32_copy (cg_kernel.prep) over n > 0 floats:
 * kbc_tf32_copy(float *dst, const float *src, long long n). */
cg_launch cg_prep_launch(int64_t n);
/* Copy i of k (cg_kernel.prep): its function's name (kbc_tf32_copy, or
 * the pack kernel's, CG_PACK_NAME) into buf; its launch for the var
 * values vars and the tensors' element counts numel (grid[0] 0: nothing
 * to copy), 0 when its work cannot be evaluated. */
#define CG_PACK_NAME "%s_pack%d" /* a pack kernel's name: the kernel's, the copy's place */
void cg_prep_name(const cg_kernel *k, int i, char *buf, size_t n);
int cg_prep_launch_of(const cg_kernel *k, int i, const int64_t *vars, const int64_t *numel, cg_launch *out);

typedef struct {
  kbc_buf source;       /* the translation unit (free with cg_program_free) */
  const ir_program *program; /* the statements the kernels compute: the program given, or codegen's
                                copy of it (cg_recompute: its tensors the same ids, more after) */
  int n_kernels;
  cg_kernel *kernels;   /* in the arena */
} cg_program;

int cg_generate(kbc_arena *a, const ir_program *p, const cg_target *t, cg_program *out, kbc_diag *d);
void cg_program_free(cg_program *g);

/* The 32-bit index variant of generated text src, appended to out (see
 * narrow.c; valid where ir_binding_fits_i32 holds). */
void cg_narrow_indices(const char *src, kbc_buf *out);
/* g's source replaced by its 32-bit index variant.  Where the target's
 * opt.idx32 asks for it (KBC_IDX32), the runtime launches this variant for
 * the bindings that fit, and `kbc compile --emit` and the kernel emulator
 * show it. */
void cg_program_narrow(cg_program *g);

#endif
