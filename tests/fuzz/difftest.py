"""difftest.py — differential spec fuzzing: random valid specs (specgen.py),
their generated kernels against the CPU reference interpreter.

    difftest.py emu  --kbc KBC --emu KERNEL_EMU [--seeds A:B] [--fresh N] [--jobs J] [--features LIST]
                     [--variants LIST] [--keep DIR] [--time-limit S]
    difftest.py gpu  --kbc KBC [--seeds A:B[,C,...]] [--jobs J] [--variants fp32,tf32,idx64,...] [--keep DIR]
    difftest.py replay --kbc KBC (--emu KERNEL_EMU | --gpu) CASE.kb...   # kept regressions

Oracles, per spec:
  - `kbc check` accepts it (the generator writes only valid specs: a
    rejection is counted and shown; a crash or an internal error is a bug);
  - emu: tests/codegen/kernel_emu runs every kernel on the CPU (one thread
    per CUDA thread) against the interpreter, at fp32 (rel. L2 <= 1e-5) and
    tf32 (<= 2e-3), and once under each opt-in variant (KBC_IDX32=0,
    KBC_FP32_MMA=1, KBC_ROWS_PARTS=1; attn: KBC_ATTN_ALWAYS=1 specialized,
    the fused attention family even where it would not pay; online:
    KBC_ROWS_ONLINE=2, a row's max and sum of exps in one pass wherever
    they pair, paying or not; welford: KBC_ROWS_WELFORD=2, a row's sum and
    squared deviations likewise; across: KBC_ROWS_ACROSS=2, a rows team's
    threads a warp apart wherever its loads allow, with both pairs;
    recompute: KBC_ATTN_RECOMPUTE=1 with
    KBC_ATTN_ALWAYS=1 specialized, contractions recomputing what they read
    as fused chains), specialized for its binding (spec:
    the var axes made constants, the interpreter's outputs also checked
    against the generic program's), and `kbc compile --emit ptx --target
    sm_90` (NVRTC) compiles the kernels — `--variants` picks them (fp32,
    tf32, idx64, fp32mma, parts, attn, online, welford, across, recompute, spec, misalign: specialized with every
    tensor off 16-byte alignment, gemm / gemm_tf32: every contraction the GEMM family takes as a tiled
    GEMM however small (KBC_GEMM_ALWAYS=1: the emulator's shapes are mostly below its threshold),
    wgmma / wgmma_tf32: code for sm_90a with its wgmma K loop wherever a product's operands allow
    (KBC_GEMM_WGMMA=2, with KBC_GEMM_ALWAYS=1), prep: wgmma_tf32 with every operand rounded before the
    launch into a copy (KBC_GEMM_PREP=2; transposed operands and split-K too), pack / pack_tf32: wgmma
    with every operand contiguous along its free indices packed k-major before the launch (KBC_GEMM_PACK=2,
    split-K too; pack specialized: misaligned k-major operands packed too), gather / gather_tf32:
    specialized, a gathered operand (a convolution's input) on wgmma's transposed copies with a whole-K
    table of its k offsets (KBC_GEMM_GATHER=2, KBC_GEMM_WGMMA=2, the window loop off), sm90a / sm90a_tf32:
    the defaults for sm_90a, specialized, every contraction a tiled GEMM (KBC_GEMM_ALWAYS=1), fold / fold_tf32: a contraction and the next
    statement's reduction of its output as one kernel wherever they match (KBC_GEMM_FOLD=2, with
    KBC_GEMM_ALWAYS=1), ktab: specialized with whole-K k tables and cp.async stages (KBC_GEMM_KTAB=1,
    KBC_GEMM_STAGES=3, KBC_GEMM_ALWAYS=1), win / win_tf32 / win_fold / win_pipe: specialized, a gathered
    operand read from a box of its tensor wherever it fits (KBC_GEMM_WIN=2, KBC_GEMM_ALWAYS=1), single-
    buffered (KBC_GEMM_WIN_PIPE=0; win_fold with the fold wherever it matches) or pipelined, the next
    step's box copied by cp.async (win_pipe, the default where two boxes fit; win_pipe32 on the GPU at fp32),
    tail / tail_tf32: the statements after a GEMM (or its fold) over its rows in its epilogue
    (KBC_GEMM_TAIL=2, KBC_GEMM_FOLD=2, KBC_GEMM_ALWAYS=1), row_tail: the same where the plans
    choose (KBC_GEMM_TAIL=2 alone), persist / persist_gemm: specialized, every kernel a stage of one persistent
    kernel wherever they can be (KBC_PERSIST=2; persist_gemm with every contraction a tiled GEMM, split-K
    wherever K has two k-tiles), point_unroll: the float4 pointwise loop three groups a round, their
    loads issued first (KBC_POINT_UNROLL=3), rowsum: the rowsum IR pass, new
    statements too, without recomputing chains (KBC_ROWSUM=2), pdl: programmatic dependent launch (KBC_PDL=1; on the GPU each
    kernel launched while the one before runs, waiting for it first),
    stage_n / stage_n_sm90a: every GEMM output contiguous along n stored through shared memory, a thread
    a column (KBC_GEMM_STAGE_N=2, with KBC_GEMM_ALWAYS=1; stage_n with split-K wherever K has two
    k-tiles), tail_split: the tails with split-K wherever K has two k-tiles (KBC_GEMM_TAIL=2,
    KBC_GEMM_SPLIT=2, KBC_GEMM_ALWAYS=1, specialized), cluster / cluster_gemm: specialized, a program of
    independent batch points as one kernel, a thread-block cluster per point, wherever it splits
    (KBC_CLUSTER=2; cluster_gemm with every contraction a tiled GEMM; cluster_slots with three tasks a
    block at once, KBC_CLUSTER_SLOTS=3), areg / areg_tf32: every wgmma product (not on two-block tiles) with A
    from registers (KBC_GEMM_AREG=2; areg: 3xTF32, transposed operands in the stages, KBC_GEMM_WGMMA_T=1,
    KBC_GEMM_PACK=0), xprefetch: specialized, wgmma K loops copying ahead across tiles
    (KBC_GEMM_XPREFETCH=3), xform / xform_spec / xform_tf32: contractions whose A is an elementwise function
    of one load and row or k terms taken on wgmma, the function applied to A's fragments (KBC_GEMM_XFORM=1), occ / occ_tf32 (GPU): specialized, wgmma tiles chosen
    for two blocks a multiprocessor wherever one fits (KBC_GEMM_OCC=2, KBC_GEMM_WGMMA=2,
    KBC_GEMM_ALWAYS=1), rows_cache: specialized, a row two statements of a rows kernel read kept in
    registers (KBC_ROWS_CACHE=1), nvrtc);
  - gpu: `kbc verify --json` runs the kernels on the GPU against the
    interpreter, in each variant (fp32, tf32, and fp32 under KBC_IDX32=0,
    KBC_FP32_MMA, KBC_ROWS_PARTS, KBC_ATTN_ALWAYS, KBC_ROWS_ONLINE=2,
    KBC_ROWS_WELFORD=2, KBC_ATTN_RECOMPUTE=1, KBC_GEMM_ALWAYS=1, KBC_GEMM_WGMMA=2, KBC_GEMM_FOLD=2, KBC_GEMM_KTAB=1 or KBC_GEMM_WIN=2), several specs at a time — through
    `kbc verify --batch` processes kept running (one per job and
    environment: opening the GPU costs more than most specs, and is
    serialised between processes); a spec that fails there is run again
    alone, by `kbc verify`, for its messages (--no-batch: always alone).
A tensor off by no more than the precision's rounding of O(1) values
(ROUNDING, ROUNDING_TF32 below) is not a failure: it is a value that
cancels to near zero.
Every failure is minimized (statements, then declarations, then the var
axes' values, while the same oracle still fails) and written to --keep as a
regression case: the spec with `# seed`, `# found by` and `# emu:` (the
binding) comment lines, which `replay` (ctest: differential/regress/*)
runs again.  The last line printed is `N passed, N failed` (N specs).

Exit status: 0 when every spec passed, 1 when any failed, 2 on usage."""
import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import queue

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import specgen  # noqa: E402

VARIANTS = {
    "fp32": ([], {}),
    "tf32": (["--tf32"], {}),
    "idx64": ([], {"KBC_IDX32": "0"}),  # the 64-bit index text (the default narrows it where a binding fits)
    "fp32mma": ([], {"KBC_FP32_MMA": "1"}),
    "parts": ([], {"KBC_ROWS_PARTS": "1"}),
    "attn": (["--specialize"], {"KBC_ATTN_ALWAYS": "1"}),  # fused attention wherever a chain matches
    # contractions reading scores-shaped tensors recompute them (codegen/recompute.c), fused wherever they match
    "recompute": (["--specialize"], {"KBC_ATTN_RECOMPUTE": "1", "KBC_ATTN_ALWAYS": "1"}),
    "online": ([], {"KBC_ROWS_ONLINE": "2"}),  # a row's max and sum of exps in one pass wherever they pair
    "welford": ([], {"KBC_ROWS_WELFORD": "2"}),  # a row's sum and squared deviations in one pass wherever they pair
    # specialized, a row two statements read kept in registers (KBC_ROWS_CACHE=1; sched_rows.c, vec_loop.c)
    "rows_cache": (["--specialize"], {"KBC_ROWS_CACHE": "1"}),
    # a rows team's threads a warp apart wherever the group streams along its points (codegen/group.c,
    # across_points), a thread a point made 8, the one-pass pairs wherever they pair
    "across": ([], {"KBC_ROWS_ACROSS": "2", "KBC_ROWS_ONLINE": "2", "KBC_ROWS_WELFORD": "2"}),
    "spec": (["--specialize"], {}),  # specialized for the binding, as KBC_SPECIALIZE=1 runs it
    # every contraction the GEMM family takes as a tiled GEMM, however small (the emulator's shapes have few)
    "gemm": ([], {"KBC_GEMM_ALWAYS": "1"}),
    # specialized: the epilogue's column groups (gemm_epilogue.c, group) where extents are known
    "gemm_spec": (["--specialize"], {"KBC_GEMM_ALWAYS": "1"}),
    "gemm_spec_misalign": (["--specialize", "--misalign"], {"KBC_GEMM_ALWAYS": "1", "KBC_GEMM_EP_VEC": "1"}),
    "gemm_periodic": (["--sm90a", "--specialize"], {"KBC_GEMM_ALWAYS": "1", "KBC_GEMM_WGMMA": "2",
                                                    "KBC_GEMM_EP_PERIODIC": "1"}),
    "gemm_tf32": (["--tf32"], {"KBC_GEMM_ALWAYS": "1"}),
    # wgmma tiles chosen for two blocks a multiprocessor wherever one fits (KBC_GEMM_OCC=2; gemm_wgmma.c)
    "occ": (["--sm90a", "--specialize"], {"KBC_GEMM_ALWAYS": "1", "KBC_GEMM_WGMMA": "2", "KBC_GEMM_OCC": "2"}),
    # sm_90a's wgmma K loop wherever a product's operands allow, however small (codegen/gemm_wgmma.c)
    "wgmma": (["--sm90a"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1"}),
    "wgmma_tf32": (["--sm90a", "--tf32"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1"}),
    # every m- or n-contiguous wgmma operand transposed in the stages, not packed: at fp32 those contiguous
    # along their x 16 bytes at a time through the stage's low half (gemm_operand.trv)
    "trv": (["--sm90a"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_WGMMA_T": "1", "KBC_GEMM_PACK": "0"}),
    # at fp32, every 3xTF32 wgmma product not on two-block tiles with A from registers (its fragments loaded from
    # the K-major tile or a trv operand's staging and split there: KBC_GEMM_AREG=2), transposed operands too
    "areg": (["--sm90a"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_AREG": "2", "KBC_GEMM_WGMMA_T": "1",
                           "KBC_GEMM_PACK": "0"}),
    "areg_tf32": (["--sm90a", "--tf32"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_AREG": "2"}),
    # wgmma K loops copying a known K's every k-tile before the loop and the block's next tile's first k-tiles
    # before this tile's epilogue (KBC_GEMM_XPREFETCH=3), specialized (K known)
    "xprefetch": (["--sm90a", "--specialize"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XPREFETCH": "3"}),
    # contractions whose A is an elementwise function of one load and row or k terms on wgmma with A from
    # registers, the function applied to the fragments (KBC_GEMM_XFORM, codegen/gemm_xform.c)
    "xform": (["--sm90a"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XFORM": "1"}),
    "xform_spec": (["--sm90a", "--specialize"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XFORM": "1",
                                                "KBC_GEMM_WGMMA_T": "1"}),
    "xform_tf32": (["--sm90a", "--tf32"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XFORM": "1"}),
    # the same with every wgmma operand rounded to TF32 before the launch, into a copy it reads (KBC_GEMM_PREP=2),
    # split-K's parts after the copies, m- or n-contiguous operands too
    "prep": (["--sm90a", "--tf32"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_PREP": "2",
                                      "KBC_GEMM_WGMMA_T": "1", "KBC_GEMM_SPLIT": "2", "KBC_GEMM_PACK": "0"}),
    # every wgmma operand contiguous along its free indices packed k-major before the launch by the kernel's
    # own pack kernel (codegen/gemm_pack.c; 3xTF32: unrounded), split-K's parts after the packs
    # (pack specialized: k-major operands known to be misaligned are packed too)
    "pack": (["--sm90a", "--specialize"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_PACK": "2", "KBC_GEMM_SPLIT": "2"}),
    "pack_tf32": (["--sm90a", "--tf32"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_PACK": "2",
                                          "KBC_GEMM_SPLIT": "2"}),
    # a gathered operand (a convolution's input) on wgmma's transposed copies, its k offsets from a whole-K
    # table (codegen/gemm_plan.c, plan_gather), wherever it applies, the window loop off
    "gather": (["--sm90a", "--specialize"], {"KBC_GEMM_GATHER": "2", "KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1",
                                               "KBC_GEMM_WIN": "0"}),
    "gather_tf32": (["--sm90a", "--specialize", "--tf32"], {"KBC_GEMM_GATHER": "2", "KBC_GEMM_WGMMA": "2",
                                                            "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_WIN": "0"}),
    # the defaults as an sm_90a GPU runs them (specialized: the window loop, the gathered wgmma loop and the
    # packs by their rules), every contraction a tiled GEMM however small
    "sm90a": (["--sm90a", "--specialize"], {"KBC_GEMM_ALWAYS": "1"}),
    "sm90a_tf32": (["--sm90a", "--specialize", "--tf32"], {"KBC_GEMM_ALWAYS": "1"}),
    # a contraction and the next statement's reduction of its output in one kernel wherever they match
    # (codegen/gemm_fold.c), every contraction a tiled GEMM
    "fold": ([], {"KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1"}),
    "fold_tf32": (["--tf32"], {"KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1"}),
    # whole-K k tables (gemm_plan.c, plan_ktab: K known) and, with them, cp.async stages for gathered operands
    "ktab": (["--specialize"], {"KBC_GEMM_KTAB": "1", "KBC_GEMM_STAGES": "3", "KBC_GEMM_ALWAYS": "1"}),
    # a gathered A read from a box of its tensor wherever it fits (codegen/gemm_win.c: constant extents)
    "win": (["--specialize"], {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "0", "KBC_GEMM_ALWAYS": "1"}),
    "win_tf32": (["--specialize", "--tf32"], {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "0", "KBC_GEMM_ALWAYS": "1"}),
    "win_fold": (["--specialize"], {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "0", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1"}),
    "win_pipe": (["--specialize"], {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "1", "KBC_GEMM_FOLD": "2",
                                    "KBC_GEMM_ALWAYS": "1"}),
    # the statements after a GEMM (or its fold) that finish its output a row at a time, in its epilogue (codegen/gemm_tail.c)
    "tail": (["--specialize"], {"KBC_GEMM_TAIL": "2", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1"}),
    # the same where the plans choose (a contraction below the GEMM's work taken as one for its tail)
    "row_tail": (["--specialize"], {"KBC_GEMM_TAIL": "2"}),
    # split-K wherever K has two k-tiles (the slices' sums through scratch, added in slice order), every
    # contraction a tiled GEMM; and with wgmma, m- or n-contiguous operands copied transposed (KBC_GEMM_WGMMA_T)
    "split": ([], {"KBC_GEMM_SPLIT": "2", "KBC_GEMM_ALWAYS": "1"}),
    "split_tf32": (["--specialize", "--tf32"], {"KBC_GEMM_SPLIT": "2", "KBC_GEMM_ALWAYS": "1"}),
    "wgmma_t": (["--sm90a"], {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_WGMMA_T": "1", "KBC_GEMM_SPLIT": "2",
                              "KBC_GEMM_ALWAYS": "1"}),
    # every kernel a stage of one persistent kernel wherever they can be (codegen/persist.c: sizes known)
    "persist": (["--specialize"], {"KBC_PERSIST": "2"}),
    "persist_gemm": (["--specialize"], {"KBC_PERSIST": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_SPLIT": "2"}),
    "misalign": (["--specialize", "--misalign"], {}),  # the same, every tensor 4 bytes off 16-byte alignment
    # programmatic dependent launch: each kernel opens with the wait for the grid before (a no-op here)
    "pdl": ([], {"KBC_PDL": "1"}),
    # the rowsum IR pass in the plain plan (the softmax backward's sum(dp * p) as sum(go * o))
    "rowsum": ([], {"KBC_ROWSUM": "2"}),
    # the float4 pointwise loop three groups a round, their loads first (KBC_POINT_UNROLL; 3: a ragged last round)
    "point_unroll": ([], {"KBC_POINT_UNROLL": "3"}),
    # every GEMM output contiguous along n stored through shared memory, a thread a column (KBC_GEMM_STAGE_N=2:
    # codegen/gemm_epilogue.c emit_staged_n), on the mma.sync loops with split-K, and on sm_90a's wgmma
    "stage_n": ([], {"KBC_GEMM_STAGE_N": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_SPLIT": "2"}),
    "stage_n_sm90a": (["--sm90a", "--specialize"], {"KBC_GEMM_STAGE_N": "2", "KBC_GEMM_ALWAYS": "1"}),
    # the tails with split-K wherever K has two k-tiles: the tile's last slice adds the parts, then the tail
    "tail_split": (["--specialize"], {"KBC_GEMM_TAIL": "2", "KBC_GEMM_SPLIT": "2", "KBC_GEMM_ALWAYS": "1"}),
    # a program of independent batch points as one kernel, a cluster per point (codegen/cluster.c; here
    # every block a cluster of its own), wherever the program splits; cluster_gemm with GEMM stages
    "cluster": (["--specialize"], {"KBC_CLUSTER": "2"}),
    "cluster_gemm": (["--specialize"], {"KBC_CLUSTER": "2", "KBC_GEMM_ALWAYS": "1"}),
    "cluster_slots": (["--specialize"], {"KBC_CLUSTER": "2", "KBC_CLUSTER_SLOTS": "3", "KBC_GEMM_ALWAYS": "1"}),
    "nvrtc": None,  # `kbc compile --emit ptx --target sm_90`: NVRTC compiles every kernel
}
# On the GPU (kbc verify): the precision and the environment of each variant.
GPU_VARIANTS = {
    "fp32": ("fp32", {}),
    "tf32": ("tf32", {}),
    "idx64": ("fp32", {"KBC_IDX32": "0"}),
    "fp32mma": ("fp32", {"KBC_FP32_MMA": "1"}),
    "parts": ("fp32", {"KBC_ROWS_PARTS": "1"}),
    "attn": ("fp32", {"KBC_ATTN_ALWAYS": "1"}),
    "recompute": ("fp32", {"KBC_ATTN_RECOMPUTE": "1", "KBC_ATTN_ALWAYS": "1"}),
    "online": ("fp32", {"KBC_ROWS_ONLINE": "2"}),
    "welford": ("fp32", {"KBC_ROWS_WELFORD": "2"}),
    "rows_cache": ("fp32", {"KBC_ROWS_CACHE": "1", "KBC_SPECIALIZE": "1"}),
    "across": ("fp32", {"KBC_ROWS_ACROSS": "2", "KBC_ROWS_ONLINE": "2", "KBC_ROWS_WELFORD": "2"}),
    "spec": ("fp32", {"KBC_SPECIALIZE": "1"}),
    "gemm": ("fp32", {"KBC_GEMM_ALWAYS": "1"}),
    "gemm_spec": ("fp32", {"KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "gemm_spec_tf32": ("tf32", {"KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1", "KBC_GEMM_WGMMA": "2",
                                "KBC_GEMM_EP_VEC": "1"}),
    "gemm_periodic": ("fp32", {"KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1", "KBC_GEMM_WGMMA": "2",
                               "KBC_GEMM_EP_PERIODIC": "1"}),
    "gemm_tf32": ("tf32", {"KBC_GEMM_ALWAYS": "1"}),
    "occ": ("fp32", {"KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1", "KBC_GEMM_WGMMA": "2", "KBC_GEMM_OCC": "2"}),
    "occ_tf32": ("tf32", {"KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1", "KBC_GEMM_WGMMA": "2", "KBC_GEMM_OCC": "2"}),
    "wgmma": ("fp32", {"KBC_GEMM_WGMMA": "2"}),  # on an sm_90a GPU: wgmma wherever the operands allow
    "wgmma_tf32": ("tf32", {"KBC_GEMM_WGMMA": "2"}),
    "trv": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_WGMMA_T": "1", "KBC_GEMM_PACK": "0"}),
    "areg": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_AREG": "2", "KBC_GEMM_WGMMA_T": "1",
                      "KBC_GEMM_PACK": "0"}),
    "areg_tf32": ("tf32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_AREG": "2"}),
    "xprefetch": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XPREFETCH": "3",
                           "KBC_SPECIALIZE": "1"}),
    "xform": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XFORM": "1"}),
    "xform_spec": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XFORM": "1", "KBC_GEMM_WGMMA_T": "1",
                            "KBC_SPECIALIZE": "1"}),
    "xform_tf32": ("tf32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_XFORM": "1"}),
    "prep": ("tf32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_PREP": "2", "KBC_GEMM_WGMMA_T": "1", "KBC_GEMM_SPLIT": "2",
                      "KBC_GEMM_PACK": "0"}),
    "pack": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_PACK": "2", "KBC_GEMM_SPLIT": "2", "KBC_SPECIALIZE": "1"}),
    "pack_tf32": ("tf32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_PACK": "2", "KBC_GEMM_SPLIT": "2"}),
    "gather": ("fp32", {"KBC_GEMM_GATHER": "2", "KBC_GEMM_WGMMA": "2", "KBC_GEMM_WIN": "0", "KBC_SPECIALIZE": "1"}),
    "gather_tf32": ("tf32", {"KBC_GEMM_GATHER": "2", "KBC_GEMM_WGMMA": "2", "KBC_GEMM_WIN": "0", "KBC_SPECIALIZE": "1"}),
    "fold": ("fp32", {"KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1"}),
    "fold_tf32": ("tf32", {"KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1"}),
    "ktab": ("fp32", {"KBC_GEMM_KTAB": "1", "KBC_GEMM_STAGES": "3", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "win": ("fp32", {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "0", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "win_tf32": ("tf32", {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "0", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "win_fold": ("fp32", {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "0", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "win_pipe": ("tf32", {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "1", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1",
                          "KBC_SPECIALIZE": "1"}),
    "win_pipe32": ("fp32", {"KBC_GEMM_WIN": "2", "KBC_GEMM_WIN_PIPE": "1", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1",
                            "KBC_SPECIALIZE": "1"}),
    "tail": ("fp32", {"KBC_GEMM_TAIL": "2", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "tail_tf32": ("tf32", {"KBC_GEMM_TAIL": "2", "KBC_GEMM_FOLD": "2", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "row_tail": ("fp32", {"KBC_GEMM_TAIL": "2", "KBC_SPECIALIZE": "1"}),
    "generic": ("fp32", {"KBC_SPECIALIZE": "0"}),  # the code for any binding (the runtime specializes by default)
    "split": ("fp32", {"KBC_GEMM_SPLIT": "2", "KBC_GEMM_ALWAYS": "1"}),
    "split_tf32": ("tf32", {"KBC_GEMM_SPLIT": "2", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "wgmma_t": ("fp32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_WGMMA_T": "1"}),
    "wgmma_t_tf32": ("tf32", {"KBC_GEMM_WGMMA": "2", "KBC_GEMM_WGMMA_T": "1"}),
    "persist": ("fp32", {"KBC_PERSIST": "2", "KBC_SPECIALIZE": "1"}),
    "persist_tf32": ("tf32", {"KBC_PERSIST": "2", "KBC_SPECIALIZE": "1"}),
    "persist_gemm": ("fp32", {"KBC_PERSIST": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_SPLIT": "2", "KBC_SPECIALIZE": "1"}),
    "point_unroll": ("fp32", {"KBC_POINT_UNROLL": "3"}),
    "rowsum": ("fp32", {"KBC_ROWSUM": "2"}),
    "pdl": ("fp32", {"KBC_PDL": "1"}),
    "stage_n": ("fp32", {"KBC_GEMM_STAGE_N": "2", "KBC_GEMM_ALWAYS": "1"}),
    "stage_n_tf32": ("tf32", {"KBC_GEMM_STAGE_N": "2", "KBC_GEMM_ALWAYS": "1", "KBC_GEMM_SPLIT": "2"}),
    "tail_split": ("fp32", {"KBC_GEMM_TAIL": "2", "KBC_GEMM_SPLIT": "2", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "cluster": ("fp32", {"KBC_CLUSTER": "2", "KBC_SPECIALIZE": "1"}),
    "cluster_tf32": ("tf32", {"KBC_CLUSTER": "2", "KBC_SPECIALIZE": "1"}),
    "cluster_gemm": ("fp32", {"KBC_CLUSTER": "2", "KBC_GEMM_ALWAYS": "1", "KBC_SPECIALIZE": "1"}),
    "cluster_slots": ("fp32", {"KBC_CLUSTER": "2", "KBC_CLUSTER_SLOTS": "3", "KBC_SPECIALIZE": "1"}),
}
TIMEOUT = 120
# A tensor whose relative L2 error exceeds the tolerance but whose every
# element is within ROUNDING of the reference (and whose relative error is
# below ILL_CONDITIONED) is a result fp32 cannot represent better, not a
# miscompile: values that cancel to near zero (`tanh(w*h + b) + h` with n = 1,
# seed 100258) carry the rounding of their O(1) terms, ~1e-7 absolute, which
# relative to a value of 1e-3 is over 1e-5.  A miscompile reads or writes
# the wrong element, errors of the inputs' size (O(1)).
# A sum of tens of O(1) terms carries a few of them: seed 1708 (`tail`, H100,
# 2026-12-05), 13 terms of about 1.3 each summed to 0.05, was 1.5e-6 off
# (3.2e-5 relative); the kernel emulator's runs of the same spec, whose sums
# do not cancel, are up to 1.6e-6 off with the default plan.
ROUNDING = 4e-6
ILL_CONDITIONED = 1e-2
# tf32 keeps 10 bits of each operand (2^-11 relative, ~1e-3 of a product of
# two O(1) inputs): a contraction that cancels to a small value misses the
# 2e-3 tolerance by tf32's own rounding (seed 200092: 3 terms, 2e-4 off a
# value of 0.06), by up to tens of times where it cancels twice (seed 65,
# `tail_tf32`: an attention backward's dq at one row and one column, the
# row sums of ds that are zero and then dq's own sum, 4.8e-5 off a value of
# 2.3e-3, 2.1e-2 relative; the emulator 1.6e-5 to 2.3e-5 off at its inputs).
ROUNDING_TF32 = 1e-2
ILL_CONDITIONED_TF32 = 1e-1
# Inputs drawn from [-0.5, 1.5): a quarter negative (signs, relu and max
# are exercised) but sums of products do not cancel to near zero, where a
# correct float32 kernel's relative error exceeds any fixed tolerance.
INPUTS = "-0.5:1.5"


def rounding_only(rel, max_abs, tf32=False):
    return rel <= (ILL_CONDITIONED_TF32 if tf32 else ILL_CONDITIONED) and max_abs <= (ROUNDING_TF32 if tf32 else ROUNDING)


def only_rounding(out, tf32=False):
    """kernel_emu's report: every FAIL line an ill-conditioned value (no
    unwritten element, no guard write, no crash)."""
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    if not fails:
        return False
    for l in fails:
        m = re.search(r"rel L2 error (\S+), max abs error (\S+), \d+ elements, 0 unwritten, 0 guard writes$", l)
        if not m or not rounding_only(float(m.group(1)), float(m.group(2)), tf32):
            return False
    return True


def verify_only_rounding(out, tf32=False):
    """kbc verify --json: every failed output an ill-conditioned value."""
    try:
        v = json.loads(out[out.index("{"):])
    except ValueError:
        return False
    return outputs_only_rounding(v, tf32)


def outputs_only_rounding(v, tf32=False):
    """The same for verify's JSON object, parsed."""
    bad = [o for o in v.get("outputs", []) if not o.get("ok")]
    return bool(bad) and all(o.get("nonfinite_mismatches") == 0 and o.get("unwritten") == 0 and
                             rounding_only(o.get("rel_l2", 1), o.get("max_abs", 1), tf32) for o in bad)


def run(cmd, env=None, timeout=TIMEOUT, cwd=None):
    """(exit code, output); a command over its time is run once more with
    three times as long (the machine may just be busy) before it counts as
    hanging: ("timeout", ...)."""
    e = dict(os.environ)
    e.update(env or {})
    for limit in (timeout, 3 * timeout):
        # its own process group, killed whole on a timeout: kernel_emu runs
        # the emulated kernels as a child (./launch), which must not outlive it
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e, cwd=cwd,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=limit)
            return p.returncode, out
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()
    return "timeout", f"timed out after {3 * timeout} s"


def internal(out):
    return "bug in kbc" in out or "internal error" in out or "Sanitizer" in out or "runtime error:" in out


class BatchWorkers:
    """`kbc verify --batch` processes, a pool per environment: request()
    writes one line of arguments to an idle process and returns its JSON
    line (None when the process died or went past the timeout: it is then
    killed, and a fresh one takes its place next time)."""

    def __init__(self, kbc):
        self.kbc = kbc
        self.idle = {}  # environment key -> [worker]
        self.lock = threading.Lock()
        self.all = []

    def _start(self, env):
        e = dict(os.environ)
        e.update(env)
        p = subprocess.Popen([self.kbc, "verify", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=e, start_new_session=True)
        lines = queue.Queue()

        def pump():
            for line in p.stdout:
                lines.put(line)
            lines.put(None)
        threading.Thread(target=pump, daemon=True).start()
        w = (p, lines)
        with self.lock:
            self.all.append(w)
        return w

    def request(self, args, env, timeout=TIMEOUT):
        key = tuple(sorted(env.items()))
        with self.lock:
            idle = self.idle.setdefault(key, [])
            w = idle.pop() if idle else None
        if w is None or w[0].poll() is not None:
            w = self._start(env)
        p, lines = w
        try:
            p.stdin.write(" ".join(args) + "\n")
            p.stdin.flush()
            line = lines.get(timeout=timeout)
        except (BrokenPipeError, OSError, queue.Empty):
            line = None
        if line is None:
            self._kill(p)
            return None
        with self.lock:
            self.idle[key].append(w)
        return line

    def _kill(self, p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

    def close(self):
        for p, _ in self.all:
            if p.poll() is None:
                p.stdin.close()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._kill(p)


class Checker:
    """Runs the oracles on one spec; returns (verdict, oracle, detail):
    verdict 'ok', 'rejected' or 'fail'."""

    def __init__(self, args):
        self.a = argparse.Namespace(**vars(args))
        self.batch = BatchWorkers(args.kbc) if getattr(args, "batch", False) else None

    def check(self, path):
        code, out = run([self.a.kbc, "check", path])
        if code == 1 and not internal(out):
            return "rejected", "check", out.strip().splitlines()[0] if out.strip() else ""
        if code != 0 or internal(out):
            return "fail", "check", f"kbc check exited {code}: {out[-2000:]}"
        return "ok", "check", ""

    def emu(self, path, binding, variant, workdir):
        flags, env = VARIANTS[variant]
        sets = [f"{k}={v}" for k, v in binding.items()]
        d = os.path.join(workdir, variant)
        code, out = run([self.a.emu, path, "--chain", "--inputs", INPUTS, "--dir", d] + flags + sets, env=env)
        if code == 77:
            return "ok", variant, "skipped: no C++ compiler"
        if code == 1 and only_rounding(out, "--tf32" in flags):
            return "ok", variant, "within the precision's rounding"
        if code != 0:
            return "fail", variant, f"kernel_emu exited {code}: " + "\n".join(
                l for l in out.splitlines() if not l.startswith("ok "))[-3000:]
        return "ok", variant, ""

    def nvrtc(self, path):
        code, out = run([self.a.kbc, "compile", path, "--emit", "ptx", "--target", "sm_90", "-o", os.devnull])
        if code != 0:
            return "fail", "nvrtc", f"kbc compile --emit ptx exited {code}: {out[-3000:]}"
        return "ok", "nvrtc", ""

    def gpu(self, path, binding, variant):
        precision, env = GPU_VARIANTS[variant]
        sets = []
        for k, v in binding.items():
            sets += ["--set", f"{k}={v}"]
        batch_said = None
        if self.batch and " " not in path:
            line = self.batch.request([path, "--precision", precision, "--inputs", INPUTS] + sets, env)
            try:
                batch_said = json.loads(line) if line is not None else None
            except ValueError:
                batch_said = {"unreadable": line}
            if batch_said is not None and batch_said.get("ok") is True:
                return "ok", variant, ""
            # not ok in the batch process: alone, for its messages (and to
            # tell a fault of the long-running process from one of the spec)
        code, out = run([self.a.kbc, "verify", path, "--precision", precision, "--inputs", INPUTS, "--json"] + sets,
                        env=env)
        if code == 1 and verify_only_rounding(out, precision == "tf32"):
            return "ok", variant, "within the precision's rounding"
        if code == 0 and batch_said is not None and not outputs_only_rounding(batch_said, precision == "tf32"):
            # a result of its own in a long-running process: state kept
            # between programs (runtime caches, the device) is a bug too
            return "fail", variant, f"kbc verify --batch said {json.dumps(batch_said)[:2000]}; alone it passed"
        if code == 0:
            return "ok", variant, ""
        return "fail", variant, f"kbc verify exited {code}: {out[-3000:]}"

    def oracles(self, path, binding, workdir, only=None):
        """Every oracle in turn (or only the one named); the first failure."""
        v = self.check(path)
        if v[0] != "ok" or only == "check":
            return v
        steps = []
        if self.a.mode == "gpu":
            names = list(self.a.variants)
            steps = [lambda v=v: self.gpu(path, binding, v) for v in self.a.variants]
        else:
            names = list(self.a.variants)
            steps = [(lambda v=v: self.nvrtc(path)) if v == "nvrtc" else (lambda v=v: self.emu(path, binding, v, workdir))
                     for v in self.a.variants]
        for name, step in zip(names, steps):
            if only and name != only:
                continue
            v = step()
            if v[0] != "ok":
                return v
        return "ok", "all", ""


# ---- minimizing ---------------------------------------------------------

def split_spec(text):
    """The spec as a list of items: header lines and statements (a def or a
    for block is one item)."""
    items, cur, depth = [], [], 0
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cur.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0:
            items.append("\n".join(cur))
            cur = []
    if cur:
        items.append("\n".join(cur))
    return items


def declared(text, binding):
    """The binding's values of the var axes that text declares."""
    return {k: v for k, v in binding.items() if re.search(rf"^axis {re.escape(k)} var\b", text, re.M)}


def signature(detail):
    """What kind of failure detail describes: the exit, and whether values
    were wrong, left unwritten, written out of bounds, or the run crashed."""
    first = detail.split(":")[0]
    # kernel_emu's FAIL lines, or kbc verify's JSON; an error message (a
    # binding the spec rejects, found while shrinking the var values) is a
    # kind of its own, so that the minimizer does not trade a wrong value
    # for one
    kinds = [k for k, pat in (("crash", "crashed"), ("unwritten", r"[1-9]\d* unwritten|\"unwritten\": [1-9]"),
                              ("guard", r"[1-9]\d* guard writes"),
                              ("wrong", r"FAIL .*rel L2|\"outputs\": \[.*\"ok\": false"),
                              ("error", r"\berror: |kbc verify: "),
                              ("timeout", "timed out"), ("internal", "bug in kbc|internal error"))
             if re.search(pat, detail)]
    return first, tuple(kinds)


def minimize(checker, text, binding, oracle, detail, workdir, budget_s=240):
    """Deletes items while the same oracle still fails, then shrinks var values."""
    t0 = time.time()
    path = os.path.join(workdir, "min.kb")
    want = signature(detail)

    def fails(items, b):
        text = "\n".join(items) + "\n"
        with open(path, "w") as f:
            f.write(text)
        v = checker.oracles(path, declared(text, b), workdir, only=oracle)
        return v[0] == "fail" and v[1] == oracle and signature(v[2]) == want

    items = split_spec(text)
    changed = True
    while changed and time.time() - t0 < budget_s:
        changed = False
        for i in range(len(items) - 1, 0, -1):  # never the `kernel` line
            if time.time() - t0 >= budget_s:
                break
            if i >= len(items):
                continue
            trial = items[:i] + items[i + 1:]
            if fails(trial, binding):
                items, changed = trial, True
    b = dict(binding)
    for k in sorted(b):
        for v in sorted({1, 2, 3, max(1, b[k] // 2)}):
            if v < b[k] and time.time() - t0 < budget_s:
                trial = dict(b, **{k: v})
                if fails(items, trial):
                    b = trial
                    break
    text = "\n".join(items) + "\n"
    return text, declared(text, b)


# ---- driving --------------------------------------------------------------

def one(checker, seed, args, keepdir):
    size = "gpu" if args.mode == "gpu" else "emu"
    text, binding = specgen.generate(seed, size, args.features)
    with tempfile.TemporaryDirectory(prefix=f"kbc_diff_{seed}_") as wd:
        path = os.path.join(wd, "spec.kb")
        with open(path, "w") as f:
            f.write(text)
        verdict, oracle, detail = checker.oracles(path, binding, wd)
        if verdict != "fail":
            return seed, verdict, oracle, detail, None
        small, sb = minimize(checker, text, binding, oracle, detail, wd, args.min_time) if args.minimize \
            else (text, binding)
        kept = None
        if keepdir:
            os.makedirs(keepdir, exist_ok=True)
            kept = os.path.join(keepdir, f"{args.mode}_{seed}_{oracle}.kb")
            with open(kept, "w") as f:
                f.write(f"# differential regression: seed {seed} ({args.mode}), found by {oracle}\n")
                f.write(f"# emu: {' '.join(f'{k}={v}' for k, v in sb.items())}\n")
                f.write("# " + detail.strip().splitlines()[0][:200] + "\n" if detail.strip() else "")
                f.write(small)
        return seed, verdict, oracle, detail, (small, sb, kept)


def parse_seeds(s):
    """A:B (B excluded), single seeds, or a comma-separated list of both."""
    out = []
    for part in s.split(","):
        a, _, b = part.partition(":")
        out += list(range(int(a), int(b))) if b else [int(a)]
    return out


def replay(args):
    checker = Checker(args)
    passed = failed = 0
    for case in args.cases:
        text = open(case).read()
        m = re.search(r"^# emu:(.*)$", text, re.M)
        binding = dict(kv.split("=") for kv in (m.group(1).split() if m else []))
        binding = {k: int(v) for k, v in binding.items()}
        # the default variants, and the one that found the case
        found = re.search(r"found by (\w+)", text)
        variants = list(args.variants)
        known = GPU_VARIANTS if args.mode == "gpu" else VARIANTS
        if found and found.group(1) in known and found.group(1) not in variants:
            variants.append(found.group(1))
        checker.a.variants = variants
        with tempfile.TemporaryDirectory(prefix="kbc_replay_") as wd:
            verdict, oracle, detail = checker.oracles(case, binding, wd)
        checker.a.variants = args.variants
        if verdict == "ok":
            passed += 1
            print(f"ok   {case}")
        else:
            failed += 1
            print(f"FAIL {case}: {verdict} by {oracle}\n{detail}")
    if checker.batch:
        checker.batch.close()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["emu", "gpu", "replay"])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--kbc", required=True)
    ap.add_argument("--emu")
    ap.add_argument("--seeds", default="1:51")
    ap.add_argument("--fresh", type=int, default=0, help="also N seeds drawn at random (printed)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--variants", default="fp32,tf32")
    ap.add_argument("--features", default="")
    ap.add_argument("--no-minimize", dest="minimize", action="store_false")
    ap.add_argument("--min-time", type=float, default=240, help="seconds to minimize one failure")
    ap.add_argument("--keep", help="where minimized failures are written")
    ap.add_argument("--time-limit", type=float, default=0, help="stop starting new specs after S seconds")
    ap.add_argument("--json", help="write per-seed results here")
    ap.add_argument("--gpu", action="store_true", help="replay: through kbc verify on the GPU")
    ap.add_argument("--no-batch", dest="batch", action="store_false",
                    help="gpu: a kbc verify process per check, not kbc verify --batch processes kept running")
    args = ap.parse_intermixed_args(argv[1:])
    args.variants = [v for v in args.variants.split(",") if v]
    args.features = tuple(f for f in args.features.split(",") if f)
    known = GPU_VARIANTS if args.mode == "gpu" else VARIANTS
    for v in args.variants:
        if v not in known:
            ap.error(f"unknown variant '{v}' (known: {', '.join(known)})")
    if (args.mode == "emu" or (args.mode == "replay" and not args.gpu)) and not args.emu:
        ap.error("emu and replay need --emu KERNEL_EMU (or replay --gpu)")
    if args.mode == "replay":
        args.mode = "gpu" if args.gpu else "emu"
        return replay(args)
    seeds = parse_seeds(args.seeds)
    if args.fresh:
        fresh = random.SystemRandom().randrange(10**6, 10**9)
        print(f"fresh seeds: {fresh}:{fresh + args.fresh} (rerun with --seeds {fresh}:{fresh + args.fresh})",
              flush=True)
        seeds += list(range(fresh, fresh + args.fresh))
    checker = Checker(args)
    t0 = time.time()
    results = []
    counts = {"ok": 0, "rejected": 0, "fail": 0}
    # Past the time limit, the specs still running get a grace period (a
    # slow one's checks may take minutes: the CPU interpreter on a large
    # binding, retries after a timeout, a hang); then they are abandoned —
    # unverified, so they fail the run, their seeds printed for a replay —
    # and the process ends without waiting for their threads.
    grace = max(60.0, args.min_time + 30.0)
    abandoned = 0
    pool = cf.ThreadPoolExecutor(max_workers=max(1, args.jobs))
    pending = {}
    it = iter(seeds)
    def submit():
        if args.time_limit and time.time() - t0 > args.time_limit:
            return False
        s = next(it, None)
        if s is None:
            return False
        pending[pool.submit(one, checker, s, args, args.keep)] = s
        return True
    for _ in range(max(1, args.jobs) * 2):
        if not submit():
            break
    while pending:
        wait_s = None
        if args.time_limit:
            wait_s = max(0.0, t0 + args.time_limit + grace - time.time())
        done, _ = cf.wait(pending, timeout=wait_s, return_when=cf.FIRST_COMPLETED)
        if not done:
            abandoned = len(pending)
            print(f"abandoned {abandoned} specs still running {grace:.0f} s past the time limit (seeds "
                  f"{', '.join(str(v) for v in sorted(pending.values()))}): unverified", flush=True)
            results += [{"seed": v, "verdict": "abandoned", "oracle": "", "detail": ""} for v in pending.values()]
            break
        for fut in done:
            s = pending.pop(fut)
            try:
                seed, verdict, oracle, detail, kept = fut.result()
            except Exception as e:  # a generator or driver bug: counted as a failure
                seed, verdict, oracle, detail, kept = s, "fail", "driver", repr(e), None
            counts[verdict] += 1
            if len(results) % 100 == 99:
                print(f"... {len(results) + 1} specs, {time.time() - t0:.0f} s: {counts}", flush=True)
            results.append({"seed": seed, "verdict": verdict, "oracle": oracle, "detail": detail[:4000]})
            if verdict == "fail":
                print(f"FAIL seed {seed} ({oracle}): {detail.strip()[:1500]}", flush=True)
                if kept:
                    print(f"  minimized ({kept[2] or 'not kept'}):\n{kept[0]}  binding: {kept[1]}", flush=True)
            elif verdict == "rejected":
                print(f"rejected seed {seed}: {detail}", flush=True)
            submit()
    pool.shutdown(wait=not abandoned, cancel_futures=True)
    if checker.batch and not abandoned:
        checker.batch.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    n = len(results)
    print(f"{n} specs in {time.time() - t0:.0f} s: {counts['ok']} ok, {counts['rejected']} rejected by kbc check, "
          f"{counts['fail']} failed" + (f", {abandoned} abandoned" if abandoned else ""))
    # rejected specs are not failures of the compiler's output, but too many
    # means the generator drifted from the language: fail then
    bad = counts["fail"] + (counts["rejected"] if counts["rejected"] > max(2, n // 10) else 0) + abandoned
    print(f"{n - bad} passed, {bad} failed" + (f" (of them {abandoned} abandoned, unverified)" if abandoned else ""))
    code = 1 if bad else 0
    if abandoned:  # their threads may run on for minutes: end without them
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
