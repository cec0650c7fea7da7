/* cluster.c — a program of independent batch points as one kernel of
 * thread-block clusters, a cluster per point.
 *
 * Before: the split of a specialized program into batch points (batch.c),
 * and the one-point program's kernels planned for a target of
 * cg_cluster_size() multiprocessors (the cluster: a small GPU) as the
 * stages of a persistent kernel (persist.c; nothing printed yet).
 * After cg_emit_cluster(), with each stage's kernel printed as a device
 * function (cg_persist_helpers, C->changing): the kernel, whose cluster
 * number g takes the points g, g + G, ... (G clusters); per point, each
 * stage's tasks (its blocks) dealt to the cluster's blocks in turn (block
 * r: r, r + C, ...) on the point's slices of the batched tensors, and a
 * cluster barrier (release, acquire: the blocks' writes visible to the
 * cluster) before a stage that reads or writes what a stage since the
 * last barrier did.  Points never wait for each other: no state outside
 * the point's slices (no split-K scratch, no grid-wide counters: the
 * plan is refused where a stage keeps any).
 *
 * Why it was built (docs/PERSISTENT.md, "Session 41"): a grid-wide
 * hand-off costs what a kernel boundary in a graph costs (about 1.3 us),
 * and a cluster's barrier, kept by one GPC, might have cost a fraction of
 * that.  Measured, it does not (1.0-1.4 us a stage on the H100), and each
 * point's stages on a cluster's few multiprocessors ran CViT 2.8-6.5x
 * slower than its kernels in a graph: off (KBC_CLUSTER=0).  Launched with clusters of C blocks
 * (cg_kernel.cluster); without them (the kernel emulator, or a launch
 * without the attribute) every block is a cluster of its own and the
 * same text is still right. */
#include "cg_impl.h"

enum {
  CLUSTER_MAX = 8,        /* blocks a cluster: the portable limit */
  CLUSTER_MIN_STAGES = 8, /* the cost rule (KBC_CLUSTER=1): fewer stages launch as kernels */
};

int cg_cluster_size(const cg_target *t, int64_t points) {
  if (t->opt.cluster_size) return t->opt.cluster_size;
  int c = 1;
  while (c < CLUSTER_MAX && (int64_t)(2 * c) * points <= t->sm_count) c *= 2;
  return c;
}

/* Whether stage kernel k keeps state beyond its own outputs: split-K's
 * partial sums and counters, a reduction split across the grid's
 * counter, operand copies in the workspace. */
static int keeps_state(const cg_stage *st) {
  const cg_kernel *k = st->kernel;
  if (!k) return 0;
  if (cg_kernel_takes_scratch(k) || k->n_prep) return 1;
  return k->family == CG_FAMILY_POINT && st->blocks > 1;
}

int cg_cluster_pays(const cg_target *t, const cg_persist *P) {
  for (int s = 0; s < P->n_stages; s++)
    if (keeps_state(&P->stages[s])) return 0;
  return t->opt.cluster >= 2 || P->n_stages >= CLUSTER_MIN_STAGES;
}

static const char helpers[] =
    "#ifndef KBC_CLUSTER_HELPERS\n"
    "#define KBC_CLUSTER_HELPERS\n"
    "// Thread-block clusters (sm_90+): this block's rank in its cluster, the cluster's blocks, the\n"
    "// cluster's number and the grid's clusters (0, 1, blockIdx.x and gridDim.x without a cluster\n"
    "// launch, and before sm_90); the cluster's barrier, its arrival a release and its wait an acquire\n"
    "// at cluster scope, so every write of the cluster's blocks before it is seen by all of them after.\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n"
    "#define kbc_cluster_rank() 0u\n"
    "#define kbc_cluster_size() 1u\n"
    "#define kbc_cluster_id() blockIdx.x\n"
    "#define kbc_cluster_count() gridDim.x\n"
    "#define kbc_cluster_sync() __syncthreads()\n"
    "#else\n"
    "__device__ __forceinline__ unsigned kbc_cluster_special(int which) {\n"
    "  unsigned r;\n"
    "  if (which == 0) asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
    "  else if (which == 1) asm volatile(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(r));\n"
    "  else if (which == 2) asm volatile(\"mov.u32 %0, %%clusterid.x;\" : \"=r\"(r));\n"
    "  else asm volatile(\"mov.u32 %0, %%nclusterid.x;\" : \"=r\"(r));\n"
    "  return r;\n"
    "}\n"
    "#define kbc_cluster_rank() kbc_cluster_special(0)\n"
    "#define kbc_cluster_size() kbc_cluster_special(1)\n"
    "#define kbc_cluster_id() kbc_cluster_special(2)\n"
    "#define kbc_cluster_count() kbc_cluster_special(3)\n"
    "__device__ __forceinline__ void kbc_cluster_sync() {\n"
    "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "}\n"
    "#endif\n"
    "// The barriers of a block's slot s of t threads (its threads [s t, s t + t); every slot a task at\n"
    "// once, KBC_CLUSTER_SLOTS): named barrier first + 2 s, its first n threads (the task's barriers\n"
    "// first = 1, the slot's own between tasks first = 2).\n"
    "__device__ __forceinline__ void kbc_slot_sync(unsigned first, unsigned t, unsigned n) {\n"
    "  asm volatile(\"bar.sync %0, %1;\" ::\"r\"(first + 2u * (threadIdx.x / t)), \"r\"(n) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ int kbc_slot_and(unsigned first, unsigned t, unsigned n, int p) {\n"
    "  int r;\n"
    "  asm volatile(\"{ .reg .pred q; setp.ne.s32 q, %1, 0; bar.red.and.pred q, %2, %3, q; selp.s32 %0, 1, 0, q; }\"\n"
    "               : \"=r\"(r) : \"r\"(p), \"r\"(first + 2u * (threadIdx.x / t)), \"r\"(n) : \"memory\");\n"
    "  return r;\n"
    "}\n"
    "#endif\n\n";

/* The dynamic shared memory of a slot: P's, a multiple of 16 bytes. */
static int slot_smem(const cg_persist *P) { return (P->smem + 15) / 16 * 16; }

void cg_cluster_helpers(cg_ctx *C, const cg_persist *P) {
  kbc_buf_puts(C->out, helpers);
  if (C->slots < 2) return;
  /* each slot its own part of the dynamic shared memory */
  cg_emit_async_helpers(C->out);
  kbc_buf_printf(C->out,
                 "// Each slot its own %d bytes of the dynamic shared memory.\n"
                 "#undef KBC_DYNAMIC_SMEM\n"
                 "#define KBC_DYNAMIC_SMEM(name) KBC_DYNAMIC_SMEM_AT(name, KBC_SLOT * %d)\n\n",
                 slot_smem(P), slot_smem(P) / 4);
}

/* Tensor id's pointer for the point _p: its slice where batched. */
static const char *slice(cg_ctx *C, const cg_batch *B, int id) {
  const char *n = C->names->tensor[id];
  return B->stride[id] ? kbc_arena_printf(C->a, "%s + (long long)_p * %lldLL", n, (long long)B->stride[id]) : n;
}

int cg_cluster_slots(const cg_target *t, const cg_persist *P) {
  int s = t->opt.cluster_slots > 1 ? t->opt.cluster_slots : 1;
  while (s > 1 && s * P->threads > 1024) s--;
  return s;
}

/* Stage s's tasks, dealt to the cluster's workers in turn (_w: block _r's
 * slot _s; _W of them); a worker's task on its slot's threads, _t the
 * thread's index there. */
static void emit_stage(cg_ctx *C, const cg_persist *P, const cg_batch *B, int s) {
  const cg_stage *st = &P->stages[s];
  kbc_buf *o = C->out;
  int slots = C->slots;
  kbc_buf_printf(o, "    for (unsigned _b = _w; _b < %lldu; _b += _W) {\n", (long long)st->blocks);
  if (!st->kernel) {
    kbc_buf_printf(o, "      kbc_zero_from(%s, %lldLL, (long long)_b * %d + _t, %lldLL);\n", slice(C, B, st->zero),
                   (long long)P->zero_numel[s], st->threads, (long long)st->blocks * st->threads);
  } else {
    const cg_kernel *k = st->kernel;
    if (st->threads < P->threads) kbc_buf_printf(o, "      if (_t < %d)\n", st->threads);
    if (slots > 1) kbc_buf_puts(o, "      switch (_s) {\n");
    for (int i = 0; i < slots; i++) {
      if (slots > 1) kbc_buf_printf(o, "      case %d:\n  ", i);
      kbc_buf_printf(o, "      %s%s(make_uint3(_b, 0u, 0u), make_uint3(%lldu, 1u, 1u)", k->name,
                     slots > 1 ? kbc_arena_printf(C->a, "<%d>", i) : "", (long long)st->blocks);
      if (slots > 1) kbc_buf_puts(o, ", make_uint3(_t, 0u, 0u)");
      for (int j = 0; j < k->n_tensors; j++) kbc_buf_printf(o, ",\n          %s", slice(C, B, k->tensors[j]));
      kbc_buf_puts(o, slots > 1 ? ");\n        break;\n" : ");\n");
    }
    if (slots > 1) kbc_buf_puts(o, "      }\n");
  }
  if (slots > 1)
    kbc_buf_printf(o, "      kbc_slot_sync(2u, %du, %du); // the slot's shared memory free for its next task\n    }\n",
                   P->threads, P->threads);
  else
    kbc_buf_puts(o, "      __syncthreads(); // the block's shared memory free for its next task\n    }\n");
}

void cg_emit_cluster(cg_ctx *C, const cg_persist *P, const cg_batch *B, int cluster, int sm_count, cg_kernel *out) {
  kbc_buf *o = C->out;
  int S = P->n_stages, slots = C->slots, T = P->threads;
  int64_t clusters = sm_count / cluster;
  if (clusters > B->points) clusters = B->points;
  if (clusters < 1) clusters = 1;
  kbc_buf_printf(o,
                 "// The %d stages above as one kernel of thread-block clusters, a cluster per batch point (%lld\n"
                 "// points, independent: batch.c): each stage's tasks dealt to the cluster's blocks in turn on\n"
                 "// the point's slices, and the cluster's barrier before a stage that needs one since the last.\n"
                 "// Launched as %lld clusters of %d blocks; cluster g takes points g, g + %lld, ...\n",
                 S, (long long)B->points, (long long)clusters, cluster, (long long)clusters);
  if (slots > 1)
    kbc_buf_printf(o, "// Each block runs %d tasks at once, one a slot of %d threads (its barriers named).\n", slots,
                   T);
  cg_persist_open(C, P, slots * T, 1, clusters * cluster, out);
  out->smem = slots * slot_smem(P);
  if (slots > 1)
    kbc_buf_printf(o,
                   "  const unsigned _s = threadIdx.x / %du, _t = threadIdx.x %% %du; // the slot, the thread in it\n",
                   T, T);
  else
    kbc_buf_puts(o, "  const unsigned _s = 0u, _t = threadIdx.x;\n");
  kbc_buf_printf(o, "  const unsigned _w = kbc_cluster_rank() * %du + _s, _W = kbc_cluster_size() * %du; // workers\n",
                 slots, slots);
  kbc_buf_printf(o, "  for (unsigned _p = kbc_cluster_id(); _p < %lldu; _p += kbc_cluster_count()) { // a point\n",
                 (long long)B->points);
  int since = 0; /* the first stage since the last barrier */
  for (int s = 0; s < S; s++) {
    const cg_stage *st = &P->stages[s];
    int wait = 0;
    for (int d = 0; d < st->n_after; d++) wait |= st->after[d] >= since;
    if (wait) {
      kbc_buf_puts(o, "    kbc_cluster_sync();\n");
      since = s;
    }
    kbc_buf_printf(o, "    // %s\n", cg_persist_stage_label(C, P, s));
    emit_stage(C, P, B, s);
  }
  kbc_buf_puts(o, "  }\n}\n\n");
  out->cluster = cluster;
  out->points = B->points;
}
