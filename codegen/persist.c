/* persist.c — a program's kernels as the stages of one persistent kernel.
 *
 * Before: every group of a program whose sizes are all known (no var
 * axes: a specialized binding) planned, its kernel's launch fields set,
 * nothing printed.  After cg_plan_persist(): NULL (the kernels launch one
 * by one), or the plan of one kernel running them all: per stage (a
 * kernel with work, or the zero-fill before a scatter) its blocks and the
 * earlier stages it must wait for.  Then each kernel is printed as a
 * device function (cg_signature under cg_ctx.changing; a task narrower
 * than the block between cg_persist_body_open and _close), and
 * cg_emit_persist() prints the kernel and makes its cg_kernel.
 *
 * The kernel (docs/ARCHITECTURE.md, "The persistent kernel"): blocks, as
 * many a multiprocessor as its threads, shared memory and a register
 * budget allow (persist_per_sm), take tasks — a stage's block each — from
 * a counter, in stage order; before a task runs, its first thread waits
 * (acquire) until every stage it depends on has counted all its blocks
 * done (release after a barrier).  Tasks are handed out in order and wait
 * only for earlier ones, held by blocks that are running, so it never
 * deadlocks and assumes nothing of how many blocks are resident.  The last
 * block out resets the counters for the next launch.
 *
 * A stage depends on each earlier stage that writes what it reads or
 * writes, or reads what it writes (the split-K scratch counts as one
 * tensor every stage taking it writes); dependencies implied by others
 * are left out. */
#include <string.h>

#include "cg_impl.h"

enum {
  PERSIST_MAX_STAGES = 256, /* the dependencies cost stages^2 x tensors to find */
  PERSIST_MAX_THREADS = 1024,
  /* the cost rule (KBC_PERSIST=1): a round of blocks on a nearly idle GPU
   * costs about 1 us; a launch saved, nothing — on the H200 (2026-12-05,
   * docs/BENCHMARKS.md "Session 26") a stage's hand-off cost about what a
   * kernel boundary in a graph costs, and every case timed ran slower
   * persistent (CViT b10 1.74x), so the rule takes no program */
  PERSIST_LAUNCH_US = 0,
  PERSIST_ROUND_US = 1,
  /* the registers a thread may have when several blocks share a
   * multiprocessor (persist_per_sm): the stages' kernels hold 24-125 (CViT
   * 24-53 alone, 72 as one persistent kernel of a block a multiprocessor) */
  PERSIST_REGS = 80,
};

static int64_t numel_of(const ir_tensor *t) {
  int64_t n = 1, e;
  for (int d = 0; d < t->rank; d++) {
    if (!sym_eval(t->shape[d], NULL, NULL, &e)) return -1;
    n *= e;
  }
  return n;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* The blocks of a kernel of `threads` threads and smem bytes one
 * multiprocessor holds on its own (registers unknown: threads and shared
 * memory only). */
static int64_t resident(int threads, int smem) {
  int64_t by_threads = 2048 / threads, by_smem = smem ? (228 * 1024) / (smem + 1024) : 32;
  int64_t r = by_threads < by_smem ? by_threads : by_smem;
  return r < 1 ? 1 : r > 32 ? 32 : r;
}

/* The blocks of the persistent kernel a multiprocessor holds: as many as
 * its threads and shared memory allow (resident), at most as many as leave
 * each thread PERSIST_REGS registers (__launch_bounds__ makes ptxas keep
 * to it).  Every stage's blocks then run in as few rounds as the kernel's
 * own grid would, not one block a multiprocessor in turn (docs/PERSISTENT.md:
 * the first version, of one block, lost the split-K weight streams'
 * parallelism). */
static int persist_per_sm(const cg_persist *P) {
  int64_t r = resident(P->threads, P->smem), by_regs = 65536 / ((int64_t)P->threads * PERSIST_REGS);
  if (r > by_regs) r = by_regs;
  return r < 1 ? 1 : (int)r;
}

/* The cost rule: the launches saved against the rounds of blocks lost by
 * running every stage P->per_sm blocks a multiprocessor. */
static int pays(const cg_target *t, const cg_persist *P) {
  if (t->opt.persist >= 2) return 1;
  int64_t lost = 0;
  for (int s = 0; s < P->n_stages; s++) {
    const cg_stage *st = &P->stages[s];
    int smem = st->kernel ? st->kernel->smem : 0;
    int64_t alone = ceil_div(st->blocks, t->sm_count * resident(st->threads, smem));
    lost += ceil_div(st->blocks, (int64_t)t->sm_count * P->per_sm) - alone;
  }
  return lost * PERSIST_ROUND_US < (P->n_stages - 1) * PERSIST_LAUNCH_US;
}

cg_persist *cg_plan_persist(cg_ctx *C, const cg_kernel *ks, int n) {
  const ir_program *p = C->p;
  const cg_target *t = C->t;
  if (!t->opt.persist || t->sm < 70 || p->vars.len || n < 2) return NULL;
  kbc_arena *a = C->a;
  int nt = p->tensors.len + 1; /* the scratch last */
  cg_persist *P = KBC_NEW(a, cg_persist);
  P->stages = KBC_NEW_ARRAY(a, cg_stage, 2 * n + 1);
  P->kernel_of = KBC_NEW_ARRAY(a, int, 2 * n + 1);
  P->zero_numel = KBC_NEW_ARRAY(a, int64_t, 2 * n + 1);
  P->first_task = KBC_NEW_ARRAY(a, int64_t, 2 * n + 2);
  P->changing = KBC_NEW_ARRAY(a, unsigned char, nt);
  unsigned char **rw = KBC_NEW_ARRAY(a, unsigned char *, 2 * n + 1);
  for (int i = 0; i < n; i++) {
    const cg_kernel *k = &ks[i];
    cg_launch l;
    if (!cg_kernel_launch(k, NULL, &l) || l.grid[1] != 1 || l.grid[2] != 1) return NULL;
    if (k->block % 32 || k->block > PERSIST_MAX_THREADS || k->n_stages) return NULL;
    if (k->n_prep) return NULL; /* its operands' copies are launches of their own (no stage for them yet) */
    if (l.grid[0] == 0) continue; /* not launched */
    if (P->n_stages + 2 > PERSIST_MAX_STAGES) return NULL;
    if (k->zero_tensor >= 0) {
      int64_t numel = numel_of(IR_TENSOR(p, k->zero_tensor));
      if (numel < 0) return NULL;
      if (numel > 0) {
        int z = P->n_stages++;
        P->kernel_of[z] = -1;
        P->zero_numel[z] = numel;
        P->stages[z] = (cg_stage){.zero = k->zero_tensor}; /* its threads and blocks below */
        rw[z] = KBC_NEW_ARRAY(a, unsigned char, nt);
        rw[z][k->zero_tensor] = 2;
      }
    }
    int s = P->n_stages++;
    P->kernel_of[s] = i;
    P->stages[s] = (cg_stage){.kernel = k, .zero = -1, .blocks = l.grid[0], .threads = k->block};
    rw[s] = KBC_NEW_ARRAY(a, unsigned char, nt);
    cg_kernel_access(p, k, rw[s]);
  }
  if (P->n_stages < 2) return NULL;
  for (int s = 0; s < P->n_stages; s++) {
    const cg_stage *st = &P->stages[s];
    if (st->threads > P->threads) P->threads = st->threads;
    if (st->kernel && st->kernel->smem > P->smem) P->smem = st->kernel->smem;
  }
  for (int s = 0; s < P->n_stages; s++) {
    cg_stage *st = &P->stages[s];
    if (!st->kernel) { /* a zero-fill: the block's threads, a float each */
      st->threads = P->threads;
      st->blocks = ceil_div(P->zero_numel[s], st->threads);
    }
    for (int i = 0; i < nt - 1; i++)
      if (rw[s][i] & 2) P->changing[i] = 1;
  }
  P->per_sm = persist_per_sm(P);
  if (P->smem > t->smem_per_block || !pays(t, P)) return NULL;
  /* Every kernel's blocks loop over the work past its grid (the emulator
   * runs them on capped grids): a stage takes at most a task per block of
   * the persistent kernel, and so at most one round. */
  int64_t grid = (int64_t)t->sm_count * P->per_sm;
  for (int s = 0; s < P->n_stages; s++) {
    cg_stage *st = &P->stages[s];
    if (st->blocks > grid) st->blocks = grid;
    P->first_task[s + 1] = P->first_task[s] + st->blocks;
  }
  const int **after = KBC_NEW_ARRAY(a, const int *, P->n_stages + 1);
  int *n_after = KBC_NEW_ARRAY(a, int, P->n_stages + 1);
  cg_order(a, rw, P->n_stages, nt, after, n_after); /* the stages each waits for (deps.c) */
  for (int s = 0; s < P->n_stages; s++) {
    P->stages[s].after = after[s];
    P->stages[s].n_after = n_after[s];
  }
  return P;
}

const unsigned char *cg_persist_changing(const cg_persist *P) { return P->changing; }

/* Stage kernel i's threads, when narrower than the block: its barriers
 * then count its threads only (named barrier 1), the others idle at the
 * block's barrier after the task. */
static int narrow_threads(const cg_persist *P, int i) {
  for (int s = 0; s < P->n_stages; s++)
    if (P->kernel_of[s] == i) return P->stages[s].threads < P->threads ? P->stages[s].threads : 0;
  return 0;
}

void cg_persist_body_open(cg_ctx *C, const cg_persist *P, int i) {
  int n = narrow_threads(P, i);
  if (C->slots > 1) { /* the cluster kernel's slots (cluster.c) */
    int t = n ? n : P->threads;
    kbc_buf_printf(C->out,
                   "// a task of %d threads in a slot of %d: its barriers count its threads alone\n"
                   "#define __syncthreads() kbc_slot_sync(1u, %du, %du)\n"
                   "#define __syncthreads_and(p) kbc_slot_and(1u, %du, %du, (p))\n",
                   t, P->threads, P->threads, t, P->threads, t);
    return;
  }
  if (!n) return;
  kbc_buf_printf(C->out,
                 "// a task of %d threads in blocks of %d: its barriers count its threads alone\n"
                 "#define __syncthreads() kbc_bar_sync(%du)\n"
                 "#define __syncthreads_and(p) kbc_bar_and(%du, (p))\n",
                 n, P->threads, n, n);
}

void cg_persist_body_close(cg_ctx *C, const cg_persist *P, int i) {
  if (C->slots > 1 || narrow_threads(P, i)) kbc_buf_puts(C->out, "#undef __syncthreads\n#undef __syncthreads_and\n\n");
}

static const char helpers[] =
    "#ifndef KBC_PERSIST_HELPERS\n"
    "#define KBC_PERSIST_HELPERS\n"
    "// The persistent kernel's hand-offs: a stage's finished blocks are counted with a release at\n"
    "// GPU scope (after the block's barrier, so cumulative over every thread's writes: no fence\n"
    "// besides); a task's first thread waits for the counts it needs with acquires, and the block's\n"
    "// barrier passes what it saw on to every thread.\n"
    "__device__ __forceinline__ void kbc_stage_done(unsigned *c) {\n"
    "  asm volatile(\"red.release.gpu.global.add.u32 [%0], 1;\" ::\"l\"(c) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void kbc_stage_wait(const unsigned *c, unsigned n) {\n"
    "  for (;;) {\n"
    "    unsigned v;\n"
    "    asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(v) : \"l\"(c) : \"memory\");\n"
    "    if (v >= n) break;\n"
    "    __nanosleep(32);\n"
    "  }\n"
    "}\n"
    "// The barriers of a task narrower than the block: named barrier 1, its n threads.\n"
    "__device__ __forceinline__ void kbc_bar_sync(unsigned n) { asm volatile(\"bar.sync 1, %0;\" ::\"r\"(n) : \"memory\"); }\n"
    "__device__ __forceinline__ int kbc_bar_and(unsigned n, int p) {\n"
    "  int r;\n"
    "  asm volatile(\"{ .reg .pred q; setp.ne.s32 q, %1, 0; bar.red.and.pred q, 1, %2, q; selp.s32 %0, 1, 0, q; }\"\n"
    "               : \"=r\"(r) : \"r\"(p), \"r\"(n) : \"memory\");\n"
    "  return r;\n"
    "}\n"
    "#endif\n\n";

void cg_persist_helpers(cg_ctx *C) { kbc_buf_puts(C->out, helpers); }

int cg_persist_tensors(kbc_arena *a, const ir_program *p, const cg_persist *P, int **ids) {
  unsigned char *used = KBC_NEW_ARRAY(a, unsigned char, p->tensors.len + 1);
  for (int s = 0; s < P->n_stages; s++) {
    const cg_stage *st = &P->stages[s];
    if (!st->kernel) used[st->zero] = 1;
    for (int j = 0; st->kernel && j < st->kernel->n_tensors; j++) used[st->kernel->tensors[j]] = 1;
  }
  int n = 0;
  *ids = KBC_NEW_ARRAY(a, int, p->tensors.len + 1);
  for (int i = 0; i < p->tensors.len; i++)
    if (used[i]) (*ids)[n++] = i;
  return n;
}

/* Stage s's task: wait for its inputs, run the block _b of its grid. */
static void emit_task(cg_ctx *C, const cg_persist *P, const char *done, int s) {
  const cg_stage *st = &P->stages[s];
  kbc_buf *o = C->out;
  const char **tn = C->names->tensor;
  if (st->n_after) {
    kbc_buf_puts(o, "      if (threadIdx.x == 0) {\n");
    for (int d = 0; d < st->n_after; d++)
      kbc_buf_printf(o, "        if (!_known[%d]) { kbc_stage_wait(&%s[%d], %lldu); _known[%d] = 1; }\n", st->after[d],
                     done, st->after[d], (long long)P->stages[st->after[d]].blocks, st->after[d]);
    kbc_buf_puts(o, "      }\n      __syncthreads();\n");
  }
  if (!st->kernel) {
    kbc_buf_printf(o, "      kbc_zero_from(%s, %lldLL, (long long)_b * %d + threadIdx.x, %lldLL);\n", tn[st->zero],
                   (long long)P->zero_numel[s], st->threads, (long long)st->blocks * st->threads);
  } else {
    const cg_kernel *k = st->kernel;
    if (st->threads < P->threads) kbc_buf_printf(o, "      if (threadIdx.x < %d)\n  ", st->threads);
    kbc_buf_printf(o, "      %s(make_uint3(_b, 0u, 0u), make_uint3(%lldu, 1u, 1u)", k->name, (long long)st->blocks);
    for (int j = 0; j < k->n_tensors; j++) kbc_buf_printf(o, ", %s", tn[k->tensors[j]]);
    if (cg_kernel_takes_scratch(k)) kbc_buf_puts(o, ", _kws");
    kbc_buf_puts(o, ");\n");
  }
}

const char *cg_persist_stage_label(cg_ctx *C, const cg_persist *P, int s) {
  const cg_stage *st = &P->stages[s];
  return kbc_arena_printf(C->a, "stage %d: %s, %lld block%s of %d", s,
                          st->kernel ? st->kernel->name
                                     : kbc_arena_printf(C->a, "%s = 0", IR_TENSOR(C->p, st->zero)->name),
                          (long long)st->blocks, st->blocks == 1 ? "" : "s", st->threads);
}

void cg_persist_open(cg_ctx *C, const cg_persist *P, int threads, int min_blocks, int64_t blocks, cg_kernel *out) {
  kbc_buf *o = C->out;
  out->n_stages = P->n_stages;
  out->stages = P->stages;
  int *ids, nid = cg_persist_tensors(C->a, C->p, P, &ids);
  kbc_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d, %d)\n%s(", threads, min_blocks, out->name);
  for (int i = 0; i < nid; i++)
    kbc_buf_printf(o, "%s%s%s", i ? ",\n    " : "", P->changing[ids[i]] ? "float *" : "const float *",
                   C->names->tensor[ids[i]]);
  if (cg_kernel_takes_scratch(out)) kbc_buf_puts(o, ",\n    float *_kws");
  kbc_buf_puts(o, ")\n{\n");
  cg_grid_dependency(C);
  out->family = CG_FAMILY_PERSIST;
  out->first = 0;
  out->count = C->p->stmts.len;
  out->block = threads;
  out->smem = P->smem;
  out->work = sym_const(C->a, blocks);
  out->per_block = 1;
  out->n_tensors = nid;
  out->tensors = ids;
  out->zero_tensor = -1;
}

void cg_emit_persist(cg_ctx *C, const cg_persist *P, cg_kernel *out) {
  kbc_arena *a = C->a;
  kbc_buf *o = C->out;
  const char *name = out->name;
  const char *done = kbc_arena_printf(a, "_%s_done", name);
  int S = P->n_stages;
  kbc_buf_printf(o, "// The %d stages above as one persistent kernel: %d blocks a multiprocessor take tasks\n"
                    "// (a stage's block each) in stage order, each once the stages it reads from, or writes\n"
                    "// after, are done.\n",
                 S, P->per_sm);
  kbc_buf_printf(o, "__device__ unsigned _%s_next = 0; // tasks handed out\n", name);
  kbc_buf_printf(o, "__device__ unsigned %s[%d]; // per stage, its blocks finished\n", done, S);
  kbc_buf_printf(o, "__device__ unsigned _%s_out = 0; // blocks out of tasks; the last resets the counters\n", name);
  /* every stage at most one round of the grid */
  cg_persist_open(C, P, P->threads, P->per_sm, (int64_t)C->t->sm_count * P->per_sm, out);
  kbc_buf_printf(o, "  __shared__ unsigned _task;\n"
                    "  __shared__ unsigned char _known[%d]; // the stages this block has seen done\n"
                    "  unsigned _ahead = 0; // thread 0: the task after this one, asked for while this one runs\n",
                 S);
  kbc_buf_printf(o, "  for (int _i = threadIdx.x; _i < %d; _i += %d) _known[_i] = 0;\n", S, P->threads);
  kbc_buf_printf(o, "  if (threadIdx.x == 0) _task = atomicAdd(&_%s_next, 1u);\n", name);
  kbc_buf_puts(o, "  __syncthreads();\n");
  kbc_buf_printf(o, "  for (unsigned _t = _task; _t < %lldu; _t = _task) {\n", (long long)P->first_task[S]);
  kbc_buf_printf(o, "    if (threadIdx.x == 0) _ahead = atomicAdd(&_%s_next, 1u);\n", name);
  kbc_buf_puts(o, "    int _s;\n");
  for (int s = 0; s < S; s++) {
    kbc_buf_printf(o, "    %sif (_t < %lldu) { // %s\n", s ? "else " : "", (long long)P->first_task[s + 1],
                   cg_persist_stage_label(C, P, s));
    kbc_buf_printf(o, "      const unsigned _b = _t - %lldu;\n", (long long)P->first_task[s]);
    emit_task(C, P, done, s);
    kbc_buf_printf(o, "      _s = %d;\n    }\n", s);
  }
  kbc_buf_puts(o, "    __syncthreads(); // every thread done with the task\n");
  kbc_buf_printf(o, "    if (threadIdx.x == 0) {\n      kbc_stage_done(&%s[_s]);\n", done);
  kbc_buf_puts(o, "      _task = _ahead;\n    }\n");
  kbc_buf_puts(o, "    __syncthreads();\n  }\n");
  kbc_buf_printf(o, "  if (threadIdx.x == 0 && atomicAdd(&_%s_out, 1u) == gridDim.x - 1u) { // every task done\n", name);
  kbc_buf_printf(o, "    _%s_next = 0u;\n    _%s_out = 0u;\n", name, name);
  kbc_buf_printf(o, "    for (int _i = 0; _i < %d; ++_i) %s[_i] = 0u;\n", S, done);
  kbc_buf_puts(o, "    __threadfence();\n  }\n}\n\n");
}
