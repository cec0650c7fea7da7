/* options.h — code generation's switches, in one place.
 *
 * Before: nothing.  After cg_options_from_env(): every switch that changes
 * the generated code, read from the environment once, by the one rule of
 * support/env.h (booleans 1/yes/on/true and 0/no/off/false; numbers
 * within their range; anything else the default, with a warning).  The
 * options travel in cg_target (cg.h), so that cg_generate depends only on
 * the IR, the target and its options; nothing in codegen/ reads the
 * environment itself.  cg_options_default() is the code without any
 * switch.  Each switch is documented in docs/ARCHITECTURE.md, "Switches". */
#ifndef KBC_CG_OPTIONS_H
#define KBC_CG_OPTIONS_H

#include "support/buf.h"

typedef struct {
  int no_gemm;         /* KBC_NO_GEMM: rows schedules only (debugging) */
  int gemm_always;     /* KBC_GEMM_ALWAYS: every contraction the GEMM family takes is a tiled GEMM, however
                          small (testing: the fuzzer's `gemm` variants at its small shapes) */
  int no_fuse;         /* KBC_NO_FUSE: one statement per kernel (debugging) */
  int no_attn;         /* KBC_NO_ATTN: no fused attention kernels (the chain as separate kernels) */
  int attn_always;     /* KBC_ATTN_ALWAYS: the fused attention kernel for every chain found, whether
                          or not it pays (attn_cost.c; testing: the fuzzer's `attn` variant) */
  int no_vec;          /* KBC_NO_VEC: pointwise rows kernels a point per thread, no float4 accesses */
  int max_team;        /* KBC_MAX_TEAM: at most this many threads per outer point; 0: no cap */
  int unroll;          /* KBC_UNROLL: unroll factor of the rows family's flattened loops (1..64) */
  int point_unroll;    /* KBC_POINT_UNROLL: the float4 pointwise loop unrolled N times (1..8; 1 none), so
                          that a thread's next float4 loads are in flight while it computes (opt-in) */
  int fp32_mma;        /* KBC_FP32_MMA: fp32 contractions as 3xTF32 on tensor cores (1) or FFMA (0);
                          -1 (unset): the families' choice (GEMM 3xTF32, the unpipelined attention FFMA) */
  int attn_ffma;       /* KBC_ATTN_FFMA: fp32 attention on FFMA (else 3xTF32 where pipelined) */
  int conv_ffma;       /* KBC_CONV_FFMA: fp32 contractions of gathered or padded operands (convolutions)
                          on FFMA, as before 2026-12-06 (default off: 3xTF32 like every contraction) */
  int attn_pipe;       /* KBC_ATTN_PIPE (default on): the pipelined attention kernel where D and N2 are known */
  int attn_recompute;  /* KBC_ATTN_RECOMPUTE: the attention backward's scores-sized tensors recomputed by
                          each contraction reading them (recompute.c), not kept in memory */
  int rowsum;          /* KBC_ROWSUM: the softmax backward's sum(dp * p) as sum(go * o) (passes/rowsum.c).
                          1 (default): where the program computes o already (the pass rowsum-reuse:
                          SAM-HQ 64x64 b4 0.947x, 32x32 b8 1.001x, 14x14 b8 1.011x on the H100,
                          2026-12-05); 2: also where o is a new statement (the pass rowsum, as under
                          KBC_ATTN_RECOMPUTE); 0: never */
  int pdl;             /* KBC_PDL: programmatic dependent launch (sm_90+): each kernel waits for its
                          predecessor's grid with griddepcontrol.wait as it starts, and is launched
                          while that grid runs (off: mixed on the H100, 2026-12-05 — CViT b1 0.894x,
                          b10 1.089x, b64 1.049x, SAM-HQ 14x14 1.069x) */
  int attn_min_blocks; /* KBC_ATTN_MIN_BLOCKS: the pipelined attention kernel's blocks per multiprocessor,
                          1..4 (as shared memory allows); 0: the plan's choice */
  int rows_parts;      /* KBC_ROWS_PARTS: a block-wide team's column sums in parts */
  int stream_split;    /* KBC_STREAM_SPLIT: a pointwise pass over rows that stream through L2 is a
                          kernel of its own (group.c, streams_past_l2) */
  int rows_cost;       /* KBC_ROWS_COST (default on): a block-wide team's reductions a thread an element
                          where a warp each would take many more rounds (sched_rows.c, warp_rounds_lose),
                          and a thread a point where a team would scatter the group's stores (group.c,
                          scatters_stores); 0: neither */
  int rows_online;     /* KBC_ROWS_ONLINE: a row's max and the next statement's sum of exp(x - max)
                          in one pass (sched_rows.c, online_pair): 1 (default) where it pays
                          (online_pays), 2 wherever they pair (testing), 0 never */
  int rows_cache;      /* KBC_ROWS_CACHE (default on: H100, session 44, SAM-HQ 64x64 b4 0.968x, layer
                          norm 32768 x 1024 0.971x, cross entropy 1.010x): a row two or more statements
                          of a rows kernel read along the same float4 loop kept in registers by the
                          first (sched_rows.c rows_cache_begin, vec_loop.c cache_of) */
  int rows_welford;    /* KBC_ROWS_WELFORD: a row's sum and the next statement's sum of squared
                          deviations from it in one pass (sched_rows.c, welford_pair): 1 (default)
                          where the rows stream past the L2, 2 wherever, 0 never */
  int rows_across;     /* KBC_ROWS_ACROSS: a team's threads a warp apart, the warp's lanes over neighbouring
                          points, where the group reads along its points and not along the team's split
                          (group.c, across_points): 1 (default) where a team of consecutive lanes would
                          be chosen, 2 also where a thread a point would (testing), 0 never */
  int gemm_min_blocks; /* KBC_GEMM_MIN_BLOCKS: __launch_bounds__(256, N) on GEMM kernels, N in 2..4;
                          1: no bound; 0: the plan's (gemm_plan.c) */
  int gemm_stages;     /* KBC_GEMM_STAGES: the GEMM family's K loop: 2 register-staged double
                          buffer; 3..4 that many shared-memory stages filled by cp.async (sm_80+,
                          operands that are plain loads); 0: the plan's (gemm_plan.c) */
  int gemm_vec;        /* KBC_GEMM_VEC (default on): tensor-core GEMMs whose operands allow it copy
                          16-byte chunks into cp.async stages, fragments by ldmatrix (gemm_vec.c);
                          0: the register-staged loop */
  int gemm_wgmma;      /* KBC_GEMM_WGMMA (default on): on sm_90a, vector-loop GEMMs whose operands are
                          both k-contiguous run on wgmma from 128-byte-swizzled stages (gemm_wgmma.c);
                          0: mma.sync; 2: wherever eligible, however small (testing); 3: so, with the
                          largest tile */
  int gemm_wgmma_t;    /* KBC_GEMM_WGMMA_T: wgmma also where an operand is m- or n-contiguous (`x @ w`
                          with w[k, n]): that operand copied a float at a time into the K-major swizzled
                          stage (gemm_vec.c, gemm_operand.tr).  2: where measured to pay (H100,
                          2026-12-05) — at tf32 always (0.49-0.74x), at fp32 (3xTF32) where one operand
                          is (0.95-0.97x), not both (1.09-1.21x) — the default since the GPU fuzzer's
                          wgmma_t variants passed (H100, 2026-12-05); 1: wherever eligible; 0: never */
  int gemm_tr_vec;     /* KBC_GEMM_TR_VEC (default on): at 3xTF32, a transposed wgmma operand contiguous
                          along its x copied 16 bytes at a time into the stage's low half and
                          transposed from there by the pass that splits it (gemm_vec.c,
                          gemm_operand.trv); 0: a float at a time straight into its place */
  int gemm_split;      /* KBC_GEMM_SPLIT (default 1): split-K where the output tiles are few and K long
                          (gemm_plan.c), the slices' sums added in slice order (deterministic);
                          0: never; 2: wherever K has two k-tiles (testing: the fuzzer's `split`) */
  int gemm_edge;       /* KBC_GEMM_EDGE (default on): an edge tile's k-tile (rows outside M or N) copied as
                          16-byte chunks, those outside zero-filled (gemm_vec.c edge_copies); 0: each chunk
                          tested on its own there */
  int gemm_split_min;  /* KBC_GEMM_SPLIT_MIN (0: the plan's, GEMM_SPLIT_MIN_KTILES = 8): the k-tiles a
                          split-K slice has at least (measuring: fewer slices of more k-tiles against more
                          of fewer, for products of few rows) */
  int gemm_ktab;       /* KBC_GEMM_KTAB (default off: mixed on the H200, 0.75-1.11x): a GEMM's k tables
                          (an implicit-GEMM convolution's offsets and digits) cover the whole K,
                          written once per block, where K is known and they are small (gemm_plan.c,
                          plan_ktab); 0: per k-tile tables */
  int gemm_fold;       /* KBC_GEMM_FOLD (default 1): a contraction whose output only the next statement
                          reads, reducing it over some M (or N) indices, is one kernel with that
                          reduction folded into its tiles (gemm_fold.c) where it pays; 0: never;
                          2: wherever it matches (testing) */
  int gemm_win;        /* KBC_GEMM_WIN (default 1): a GEMM whose A is a gathered load (an implicit-GEMM
                          convolution) runs on tensor cores reading A from a box of its tensor staged
                          per tile (gemm_win.c): 1 under a fold, where the box fits and each element is
                          reused; 0: never; 2: wherever it fits (testing) */
  int gemm_win_pipe;   /* KBC_GEMM_WIN_PIPE (default on; measured 0.84-0.87x on conv3d b128): the window
                          loop's next step's box (next fold step, else next tile) copied by cp.async into
                          a second buffer during this step's math, dynamic shared memory (gemm_win.c);
                          the single-buffered loop where two boxes do not fit */
  int gemm_win_ring;   /* KBC_GEMM_WIN_RING (default on): under a fold that moves the box along one
                          dimension, the pipelined window's two boxes as one ring of planes along it,
                          a step copying only the planes the next adds (gemm_win.c, gemm_window.ring) */
  int gemm_win_bsplit; /* KBC_GEMM_WIN_BSPLIT (default off, untimed): at 3xTF32, the window loop's B (the columns
                          by the whole K, staged once per tile or block) split into high and low TF32
                          parts where staged (_Bw, _Bwl), not per fragment read (gemm_win.c) */
  int gemm_low_stage; /* KBC_GEMM_LOW_STAGE (default off, untimed): the mma.sync vector loop at 3xTF32
                          with both operands k-major splits each stage once as it lands, its low TF32
                          parts into a twin of the stages (gemm_vec.c, cg_gemm_plan.low_stage) */
  int gemm_stage_n;    /* KBC_GEMM_STAGE_N (default off, untimed): an output contiguous along n whose
                          epilogue reads an operand per element (a residual) stored through shared
                          memory, a thread a column, its loads and stores coalesced (gemm_plan.c,
                          plan_staging; gemm_epilogue.emit_staged_n); 2: every output along n */
  int gemm_occ;        /* KBC_GEMM_OCC (default on: H100, session 43, 0.81-0.99x where it applies): a
                          wgmma product whose tiles' output outweighs their math (sizes known, K x
                          passes small: gemm_wgmma.c, output_bound) gets a tile that runs two blocks a
                          multiprocessor, one's stores beside the other's products, unless the
                          one-block tile's epilogue is periodic under KBC_GEMM_EP_PERIODIC
                          (cg_plan_gemm); 2: every wgmma
                          product where such a tile exists (testing); 0 never */
  int gemm_xprefetch;  /* KBC_GEMM_XPREFETCH (bits; default 0: timed on an H100 in session 46, within 1.5% either way): a wgmma K loop's copies ahead of its
                          products.  1: all of a known K's k-tiles (at most the stages) copied before
                          the loop, not S - 2 (the loop then copies none); 2: the block's next tile's
                          first k-tiles copied before this tile's epilogue, where the epilogue uses no
                          stage (gemm_wgmma.c, gemm_wgmma_ahead and gemm_wgmma_prefetches) */
  int gemm_areg;       /* KBC_GEMM_AREG (default 1: H100, session 46, SAM-HQ 64x64 b4 0.981x, the flat-rows
                          product 0.926x, none slower; 2 slower, 4096^3 1.140x): wgmma products take A from registers,
                          each thread's fragments loaded from the stage and split (3xTF32) or rounded
                          (TF32) there (gemm_wgmma.c, cg_gemm_plan.areg); 1 where a warpgroup's
                          products are at most 64 wide, 2 at every width; never on two-block tiles */
  int gemm_xform;      /* KBC_GEMM_XFORM (default off, untimed): a contraction's A factor that is an
                          elementwise function of one load of its M and K indices and of row or k
                          terms (exp(s[i, j] - m[i]) / l[i]) planned as that load, the function applied
                          to each A fragment where wgmma takes A from registers (gemm_operand.xform);
                          2 (internal, cg_plan_gemm's fallback): evaluated per element, the tile
                          loaded along that load's contiguous index */
  int absorb;          /* KBC_ABSORB (default off, untimed): the absorb pass after rowsum (passes/pipeline.c) */
  int gemm_ep_periodic; /* KBC_GEMM_EP_PERIODIC (default on: H100, session 44, on top of KBC_GEMM_OCC,
                           SAM-HQ 64x64 b4 0.981x, gemm_lowrank 0.920x; checked on the GPU by kbc
                           verify and the fuzzer's gemm_periodic variant): where the column groups repeat the
                           innermost digit's values, the epilogue's values no outer column digit moves read
                           for the first group once a row (gemm_epilogue.periodic, hoist_periodic) */
  int gemm_ep_vec;     /* KBC_GEMM_EP_VEC (default off: measured 0.9-1.2% slower, H100): where a thread's columns share their outer digits
                          (gemm_epilogue.group), the epilogue's operands contiguous along the
                          innermost read a run (2 or 4) at a time (gemm_epilogue.c, vector_operands) */
  int gemm_win_asplit; /* KBC_GEMM_WIN_ASPLIT (default off, untimed): at 3xTF32, the pipelined window's
                          box split likewise as it lands, its low parts in a twin of the boxes (over the
                          epilogue's tile), where that fits (gemm_win.c, gemm_window.a_split) */
  int gemm_tail;       /* KBC_GEMM_TAIL: the statements that finish a GEMM's output a row at a time (a
                          softmax or a norm over its columns, all in one tile) computed in its staged
                          epilogue (gemm_tail.c).  1 (default): behind a fold (measured 0.977-0.994 on
                          conv3d b128/b256), and behind a plain contraction where the GEMM keeps its K
                          loop (not on wgmma without the tail) and its tiles fill a wave (group.c,
                          tail_pays: 0.80x L2/6, 0.91x 16,390 rows, H100 2026-12-05); 2: behind any
                          plain contraction, and a contraction too small for the GEMM family becomes one
                          where a tail joins it (small_with_tail: 1.07x CViT b10, 1.46x 20 rows);
                          0: never */
  int gemm_prep;       /* KBC_GEMM_PREP: a TF32 wgmma GEMM's operand rounded once before the launch, into
                          a copy in the workspace its K loop reads (kbc_tf32_copy), instead of in each
                          stage by the loop's threads (gemm_wgmma.c, prep_pays): 1 (default) where the
                          model says the copy costs less than the stage passes it saves (H100,
                          2026-12-05: 0.76-0.78x at 4096^3 and 2048 x 8192 x 4096, SAM-HQ 32x32 b2
                          0.99x); 2 wherever a GEMM is on wgmma at TF32 (testing); 0 never */
  int gemm_pack;       /* KBC_GEMM_PACK: a wgmma GEMM's operand contiguous along its free indices (the b
                          of a @ b) packed k-major into the workspace before the launch by the kernel's
                          own pack kernel, instead of copied into the stages a float at a time
                          (gemm_pack.c, pack_pays): 1 (default) where the model says the copy costs less
                          than the transposed copies it saves; 2 wherever it applies (testing); 0 never */
  int gemm_gather;     /* KBC_GEMM_GATHER: a gathered operand (a convolution's input, padded or not) on
                          wgmma's transposed copies, its k offsets from a whole-K table (gemm_plan.c,
                          plan_gather): 1 (default) but a padded one at 3xTF32, 2 wherever it
                          applies (testing), 0 never */
  int gemm_small;      /* KBC_GEMM_SMALL: contractions with few rows (or columns) by the size of their
                          larger operand (group.c, small_rule): under 32 rows and an operand under 1 MB
                          to the rows family, 4-15 rows and one of 4 MB or more to the GEMM family
                          (split-K streams it once); 1 (default: H100, 2026-12-06, CViT b10 0.85x, MLPs
                          at batch 4-12 0.30-0.69x, controls 0.99-1.01x); 2: the GEMM family from 2 rows
                          (testing); 0: M and N of 16 and 2^20 multiply-adds alone decide */
  int join_loss;       /* KBC_JOIN_LOSS: what a rows join leaving few outer points may lose per launch it
                          saves, in a thread's serial steps (group.c, join_pays; default
                          CG_JOIN_LOSS_STEPS) */
  int cluster;         /* KBC_CLUSTER (default off: 2.8-35x slower on the H100, 2026-12-07): a specialized
                          program of independent batch points (batch.c) as one kernel of thread-block
                          clusters, a cluster per point (cluster.c; sm_90+): 1 where it has
                          CLUSTER_MIN_STAGES stages or more, 2 wherever it can (testing: the fuzzer's
                          `cluster` variants); 0 never */
  int one_block_points; /* (no variable: set by cluster.c's planning) a reduction of one point in one
                          block, never split across the grid (sched_point.c): no state outside the outputs */
  int cluster_slots;   /* KBC_CLUSTER_SLOTS: the tasks each block of such a kernel runs at once, a slot of the
                          widest stage's threads each (1..4, as 1,024 threads allow; 0 or 1: one) */
  int cluster_size;    /* KBC_CLUSTER_SIZE: the blocks of such a cluster (1..16; 0: cg_cluster_size's rule) */
  int idx32;           /* KBC_IDX32 (default on; measured 0.97x geomean, 0.82-1.05x): the 32-bit
                          index variant where a binding fits (applied by the callers:
                          cg_program_narrow); 0: the 64-bit text always */
  int persist;         /* KBC_PERSIST (default off until timed): the kernels of a program whose sizes are
                          known run as the stages of one persistent kernel (persist.c) where its cost
                          rule says so (1), or wherever they can (2: testing) */
} cg_options;

/* What a join leaving one or a few outer points may lose per launch it saves, in a thread's serial
 * steps (group.c, join_loss; KBC_JOIN_LOSS): a launch costs about 2 us, a step on a
 * nearly idle GPU about 0.3 us (a load's latency). */
enum { CG_JOIN_LOSS_STEPS = 6 };
enum { CG_UNROLL_DEFAULT = 4, CG_UNROLL_MAX = 64, CG_MAX_TEAM_LIMIT = 1024 };

/* No switch set: the defaults. */
cg_options cg_options_default(void);
/* The switches as the environment sets them (see options.c for each one's
 * variable and values), over the defaults or over o. */
cg_options cg_options_from_env(void);
cg_options cg_options_from_env_over(cg_options o);
/* Applies settings "KBC_X=V KBC_Y=W" (spaces or commas between; the
 * variables' names and values, as the environment takes them; NULL or "":
 * none) to o: 0, or -1 with err saying what is wrong (an unknown name, a
 * value out of range; KBC_ATTN_RECOMPUTE, which gates IR passes, only
 * from the environment).  kbc_options.config and `kbc tune`'s records. */
int cg_options_apply(cg_options *o, const char *settings, kbc_buf *err);
/* Appends ", KBC_X=v" for each switch of o that differs from the default
 * (`kbc info`, the tune records): the switches' names live in options.c
 * only. */
void cg_options_describe(const cg_options *o, kbc_buf *out);
/* The gated IR passes (passes/pipeline.h) code generation under the
 * environment's switches wants: for whoever runs the pipeline for a
 * program the runtime will generate code for. */
unsigned cg_pipeline_gates_from_env(void);

#endif
