/* exec.c — see exec.h. */
#include "exec.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "nvrtc.h"
#include "tune.h"
#include "support/env.h"

#include "support/version.h"
#define KBC_EXEC_VERSION "kbc-" KBC_VERSION

/* One compiled form of the program's kernels: the generated text as is
 * (64-bit indices) or narrowed to 32-bit indices (cg_narrow_indices). */
typedef struct {
  int built;
  rt_compiled bin;
  rt_module *mod;
  rt_function **fn;      /* per kernel */
  rt_function *zero;     /* kbc_zero */
  rt_function **copy;    /* per kernel, two: its operands' copies' functions (cg_kernel.prep, cg_prep_name) */
} rt_variant;

/* The streams a capture in branches uses besides its own: SAM-HQ's
 * widest layer of independent kernels is four wide. */
enum { RT_SIDE_STREAMS = 4 };

static void unload_variant(rt_variant *v) {
  rt_module_unload(v->mod);
  rt_compiled_free(&v->bin);
  free(v->fn);
  free(v->copy);
  *v = (rt_variant){0};
}

enum { RT_IDX64, RT_IDX32 };

struct rt_exec {
  const ir_program *p;
  kbc_arena *arena;      /* codegen's */
  rt_device *dev;
  const char *arch;
  cg_program code;
  rt_variant v[2];       /* by RT_IDX64 / RT_IDX32; the 32-bit one built at the first binding that fits */
  int idx32;             /* KBC_IDX32 (cg_options.idx32): use the 32-bit variant where the binding fits */
  int pdl;               /* KBC_PDL on an sm_90+ device: the kernels launched with programmatic stream
                            serialization (each waits for the grid before with griddepcontrol.wait) */
  int cur;               /* the variant of the launch being queued */
  int *vars32;           /* the var axes as the 32-bit variant takes them */
  int64_t *fit_vars;     /* the var values last judged by ir_binding_fits_i32 ... */
  int fit;               /* ... and its answer; -1 before the first */
  unsigned char *in_ws;  /* by tensor id: a temporary placed in the workspace (rt_workspace_members) */
  rt_dptr workspace;
  size_t workspace_bytes;
  rt_dptr scratch;        /* the kernels' scratch in the workspace, for the current launch */
  rt_dptr slot_scratch[CG_SCRATCH_SLOTS]; /* its region per scratch slot (cg_kernel.scratch_slot) */
  /* Graph replay: the launches of the last argument set (pointers, var
   * values and scratch), captured once the same set (under
   * KBC_GRAPH_UPDATE, the same sizes) came twice in a row; replayed as they
   * are when the set repeats, and under KBC_GRAPH_UPDATE with their kernel
   * nodes' arguments changed when only the tensors' pointers differ
   * (via_graph). */
  int no_graph;                   /* KBC_NO_GRAPH, read once at creation */
  int graph_update;               /* KBC_GRAPH_UPDATE (default on), read once at creation */
  void *capture_stream;
  rt_graph *graph;
  unsigned char *key, *graph_key; /* last and captured argument sets */
  size_t key_len;
  int repeats;
  int node;                       /* updating the graph: its next kernel node; -1 when launching */
  int node_same;                  /* updating: the kernel being queued has the graph's tensors (its nodes kept) */
  /* The capture in branches (capture_branches): where the kernels' order
   * (cg_kernel.after) is not one chain, each kernel goes on one of the
   * capture's streams, waiting for the events of the kernels it follows
   * that are not before it there; every launch's node is kept in launch
   * order for update_graph. */
  int branches;                   /* KBC_GRAPH_BRANCHES (default on; 0: one chain), the program's order has
                                     branches and the driver can capture them */
  int recording;                  /* capturing in branches: launch() keeps each node */
  void *side[RT_SIDE_STREAMS];    /* the capture's other streams */
  void **kev;                     /* per kernel: recorded after its launches */
  void *fork_ev;                  /* recorded as the capture starts: a side stream's first wait */
  int tail[RT_SIDE_STREAMS + 1];  /* per stream (0: the capture's own): its last kernel, -1 none */
  int on;                         /* the stream of the kernel being queued */
  void **nodes;                   /* the kernel nodes captured so far */
  int n_nodes, cap_nodes;
  /* KBC_PROFILE=1: every launch is timed kernel by kernel (events around
   * each, no graph) and the totals printed to stderr on destroy. */
  void **prof_ev;        /* 2 per kernel; NULL when not profiling */
  double *prof_ms;       /* per kernel, summed */
  long long prof_runs;
};

cg_target rt_exec_target(const rt_device_props *props, cg_precision precision, cg_options opt) {
  cg_target t = cg_target_default();
  if (props) {
    t.sm = props->cc_major * 10 + props->cc_minor;
    char arch[16];
    rt_arch_of_cc(props->cc_major, props->cc_minor, arch, sizeof arch); /* what it is compiled for there */
    t.arch_a = arch[strlen(arch) - 1] == 'a';
    t.sm_count = props->sm_count;
    t.smem_per_block = props->smem_per_block_optin;
    if (props->l2_bytes > 0) t.l2_bytes = props->l2_bytes;
  }
  t.precision = precision;
  t.opt = opt;
  return t;
}

rt_device *rt_exec_device(rt_exec *x) { return x->dev; }
const cg_program *rt_exec_code(const rt_exec *x) { return &x->code; }

static void profile_report(rt_exec *x) {
  if (!x->prof_runs) return;
  double total = 0;
  for (int k = 0; k < x->code.n_kernels; k++) total += x->prof_ms[k];
  /* the debugging channel (stderr, a line at a time), level 0: always */
  rt_debug(0, "profile of %s, %lld runs, mean per run (events around each kernel)%s:", x->p->name, x->prof_runs,
           x->v[RT_IDX32].built ? ", 32-bit indices where the binding fit" : "");
  for (int k = 0; k < x->code.n_kernels; k++)
    rt_debug(0, "  %10.1f us %5.1f%%  %s", 1e3 * x->prof_ms[k] / (double)x->prof_runs,
             total > 0 ? 100.0 * x->prof_ms[k] / total : 0.0, x->code.kernels[k].name);
  rt_debug(0, "  %10.1f us total", 1e3 * total / (double)x->prof_runs);
}

void rt_exec_destroy(rt_exec *x) {
  if (!x) return;
  profile_report(x);
  for (int k = 0; x->prof_ev && k < 2 * x->code.n_kernels; k++)
    if (x->prof_ev[k]) rt_event_destroy(x->dev, x->prof_ev[k], NULL);
  free(x->prof_ev);
  free(x->prof_ms);
  rt_graph_destroy(x->graph);
  if (x->capture_stream) rt_stream_destroy(x->dev, x->capture_stream, NULL);
  for (int i = 0; i < RT_SIDE_STREAMS; i++)
    if (x->side[i]) rt_stream_destroy(x->dev, x->side[i], NULL);
  for (int k = 0; x->kev && k < x->code.n_kernels; k++)
    if (x->kev[k]) rt_event_destroy(x->dev, x->kev[k], NULL);
  free(x->kev);
  if (x->fork_ev) rt_event_destroy(x->dev, x->fork_ev, NULL);
  free(x->nodes);
  free(x->key);
  free(x->graph_key);
  if (x->workspace) rt_mem_free(x->dev, x->workspace, NULL);
  for (int i = 0; i < 2; i++) unload_variant(&x->v[i]);
  cg_program_free(&x->code);
  free(x->vars32);
  free(x->fit_vars);
  free(x->in_ws);
  kbc_arena_destroy(x->arena);
  rt_device_close(x->dev);
  free(x);
}

/* Whether some kernel need not wait for the one before it (cg_kernel.after):
 * the order is not one chain. */
static int order_has_branches(const cg_program *c) {
  for (int k = 1; k < c->n_kernels; k++) {
    const cg_kernel *kn = &c->kernels[k];
    if (kn->n_after != 1 || kn->after[0] != k - 1) return 1;
  }
  return 0;
}

/* Whether the code is one persistent kernel (codegen/persist.c) whose
 * static shared memory — its stage functions' own, each function's apart,
 * known only once compiled — with its dynamic exceeds what a block may
 * have: the plan counted the dynamic alone. */
static int persist_too_big(const rt_exec *x, const rt_device_props *props) {
  for (int k = 0; k < x->code.n_kernels; k++) {
    const cg_kernel *kn = &x->code.kernels[k];
    rt_function_attrs a;
    if (kn->n_stages && !rt_function_get_attrs(x->v[RT_IDX64].fn[k], &a, NULL) &&
        (long long)kn->smem + a.static_smem > props->smem_per_block_optin)
      return 1;
  }
  return 0;
}

/* The program's kernels for target t into x->code; -1 (err set) when
 * code generation fails. */
static int generate(rt_exec *x, const cg_target *t, rt_err *err) {
  kbc_diag *d = kbc_diag_create(x->p->name, NULL);
  int ok = cg_generate(x->arena, x->p, t, &x->code, d);
  if (!ok) rt_fail(err, RT_ERR_INTERNAL, "%s", kbc_diag_text(d));
  kbc_diag_destroy(d);
  return ok ? 0 : -1;
}

/* Compiles (through the cache) and loads variant i of the kernels. */
static int build_variant(rt_exec *x, int i, rt_err *err) {
  rt_variant *v = &x->v[i];
  kbc_buf narrow = {0};
  const char *src = kbc_buf_str(&x->code.source);
  if (i == RT_IDX32) {
    cg_narrow_indices(src, &narrow);
    src = kbc_buf_str(&narrow);
  }
  rt_compile_req req = {.src = src, .name = x->p->name, .arch = x->arch, .kbc_version = KBC_EXEC_VERSION};
  int rc = rt_compile(&req, &v->bin, err);
  kbc_buf_free(&narrow);
  if (rc || rt_module_load(x->dev, &v->bin.cubin, &v->mod, err)) return -1;
  v->fn = calloc((size_t)x->code.n_kernels + 1, sizeof *v->fn);
  if (!v->fn) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  for (int k = 0; k < x->code.n_kernels; k++)
    if (rt_module_function(v->mod, x->code.kernels[k].name, &v->fn[k], err)) return -1;
  if (rt_module_function(v->mod, "kbc_zero", &v->zero, err)) return -1;
  v->copy = calloc(2 * (size_t)x->code.n_kernels + 1, sizeof *v->copy);
  if (!v->copy) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  for (int k = 0; k < x->code.n_kernels; k++)
    for (int c = 0; c < x->code.kernels[k].n_prep; c++) {
      char name[512];
      cg_prep_name(&x->code.kernels[k], c, name, sizeof name);
      if (rt_module_function(v->mod, name, &v->copy[2 * k + c], err)) return -1;
    }
  rt_debug(1, "%s: loaded the %s-bit index variant", x->p->name, i == RT_IDX32 ? "32" : "64");
  v->built = 1;
  return 0;
}

int rt_exec_create(const ir_program *p, int device, const char *arch, cg_precision precision, const char *config,
                   rt_exec **out, rt_err *err) {
  *out = NULL;
  rt_exec *x = calloc(1, sizeof *x);
  if (!x) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  x->p = p;
  x->arena = kbc_arena_create();
  if (rt_device_open(device, &x->dev, err)) goto fail;
  const rt_device_props *props = rt_device_info(x->dev);
  char dev_arch[16];
  rt_arch_of_device(x->dev, dev_arch, sizeof dev_arch);
  if (!arch || !strcmp(arch, "auto")) arch = dev_arch;
  cg_target t = rt_exec_target(props, precision, rt_tune_options(p, arch, precision, config, NULL));
  x->arch = kbc_arena_strdup(x->arena, arch);
  if (generate(x, &t, err) || build_variant(x, RT_IDX64, err)) goto fail;
  if (persist_too_big(x, props)) { /* the kernels one by one instead */
    rt_debug(1, "%s: the persistent (or cluster) kernel's shared memory exceeds a block's %d B: "
             "its kernels one by one", p->name, props->smem_per_block_optin);
    unload_variant(&x->v[RT_IDX64]);
    cg_program_free(&x->code);
    t.opt.persist = 0;
    t.opt.cluster = 0;
    if (generate(x, &t, err) || build_variant(x, RT_IDX64, err)) goto fail;
  }
  x->idx32 = t.opt.idx32;
  x->pdl = t.opt.pdl && props->cc_major >= 9;
  x->no_graph = kbc_env_flag("KBC_NO_GRAPH", 0);
  x->graph_update = kbc_env_flag("KBC_GRAPH_UPDATE", 1);
  x->branches = !x->pdl && kbc_env_flag("KBC_GRAPH_BRANCHES", 1) && order_has_branches(&x->code) &&
                rt_graph_branches_supported(x->dev);
  x->vars32 = calloc((size_t)p->vars.len + 1, sizeof *x->vars32);
  x->fit_vars = calloc((size_t)p->vars.len + 1, sizeof *x->fit_vars);
  x->in_ws = calloc((size_t)p->tensors.len + 1, 1);
  x->fit = -1;
  x->node = -1;
  if (!x->vars32 || !x->fit_vars || !x->in_ws) {
    rt_fail(err, RT_ERR_MEMORY, "out of memory");
    goto fail;
  }
  rt_workspace_members(p, &x->code, x->in_ws);
  if (kbc_env_flag("KBC_PROFILE", 0)) {
    x->prof_ev = calloc(2 * (size_t)x->code.n_kernels + 1, sizeof *x->prof_ev);
    x->prof_ms = calloc((size_t)x->code.n_kernels + 1, sizeof *x->prof_ms);
    if (!x->prof_ev || !x->prof_ms) {
      rt_fail(err, RT_ERR_MEMORY, "out of memory");
      goto fail;
    }
    for (int k = 0; k < 2 * x->code.n_kernels; k++)
      if (rt_event_create(x->dev, &x->prof_ev[k], err)) goto fail;
  }
  *out = x;
  return 0;
fail:
  rt_exec_destroy(x);
  return -1;
}

void rt_workspace_members(const ir_program *p, const cg_program *g, unsigned char *in_ws) {
  memset(in_ws, 0, (size_t)p->tensors.len);
  for (int k = 0; k < g->n_kernels; k++)
    for (int j = 0; j < g->kernels[k].n_tensors; j++) {
      int t = g->kernels[k].tensors[j];
      in_ws[t] = IR_TENSOR(p, t)->role == IR_ROLE_TEMP;
    }
}

/* bytes rounded up to a multiple of RT_WORKSPACE_ALIGN: each temporary's
 * and each scratch region's share (the plan's buffers each a multiple). */
static size_t ws_aligned(size_t bytes) { return (bytes + RT_WORKSPACE_ALIGN - 1) & ~(size_t)(RT_WORKSPACE_ALIGN - 1); }

size_t rt_workspace_layout(const ir_program *p, const cg_program *g, const unsigned char *in_ws, const ir_binding *b,
                           size_t *offset, size_t *scratch_at, size_t *scratch_bytes, size_t *slot_at) {
  size_t off = 0;
  for (int i = 0; i < p->tensors.len; i++) {
    if (!in_ws[i]) continue;
    if (offset) offset[i] = off;
    off += ws_aligned(sizeof(float) * (size_t)b->numel[i]);
  }
  int64_t slot[CG_SCRATCH_SLOTS] = {0}; /* floats, the largest of each slot's kernels */
  for (int k = 0; k < g->n_kernels; k++) {
    int64_t n = cg_kernel_scratch(&g->kernels[k], b->vars);
    if (n < 0 || (uint64_t)n > (SIZE_MAX - off) / sizeof(float) / CG_SCRATCH_SLOTS) return (size_t)-1;
    int s = g->kernels[k].scratch_slot;
    if (n > slot[s]) slot[s] = n;
  }
  *scratch_at = off;
  *scratch_bytes = 0;
  for (int s = 0; s < CG_SCRATCH_SLOTS; s++) {
    if (slot_at) slot_at[s] = *scratch_bytes;
    *scratch_bytes += ws_aligned(sizeof(float) * (size_t)slot[s]);
  }
  return off + *scratch_bytes;
}

/* Places every temporary and the kernels' scratch in the workspace,
 * growing it when needed (not while the caller captures the stream: no
 * allocation may happen then). */
static int place_temps(rt_exec *x, const ir_binding *b, rt_dptr *ptr, int capturing, rt_err *err) {
  size_t *offset = calloc((size_t)x->p->tensors.len + 1, sizeof *offset);
  if (!offset) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  size_t scratch_at = 0, scratch_bytes = 0, slot_at[CG_SCRATCH_SLOTS];
  size_t need = rt_workspace_layout(x->p, &x->code, x->in_ws, b, offset, &scratch_at, &scratch_bytes, slot_at);
  int rc = 0;
  if (need == (size_t)-1)
    rc = rt_fail(err, RT_ERR_ARGUMENT, "%s: the scratch memory of a kernel overflows at these sizes", x->p->name);
  else if (need > x->workspace_bytes && capturing)
    rc = rt_fail(err, RT_ERR_ARGUMENT,
                 "%s needs a workspace of %zu bytes at these sizes, which cannot be allocated while the stream is "
                 "being captured into a CUDA graph: run the program once at these sizes before capturing",
                 x->p->name, need);
  else if (need > x->workspace_bytes) {
    rc = x->workspace ? rt_mem_free(x->dev, x->workspace, err) : 0;
    if (!rc) {
      x->workspace = 0;
      x->workspace_bytes = 0;
      rc = rt_mem_alloc(x->dev, need, &x->workspace, err);
    }
    if (!rc) x->workspace_bytes = need;
  }
  for (int i = 0; !rc && i < x->p->tensors.len; i++)
    if (x->in_ws[i]) ptr[i] = x->workspace + offset[i];
  x->scratch = rc ? 0 : x->workspace + scratch_at;
  for (int s = 0; s < CG_SCRATCH_SLOTS; s++) x->slot_scratch[s] = rc ? 0 : x->scratch + slot_at[s];
  free(offset);
  return rc ? -1 : 0;
}

/* One launch of the program's: queued on stream, or, while via_graph
 * updates the captured graph (x->node >= 0), given to its next kernel node
 * instead (the same launches in the same order: the sizes are the graph's). */
static int launch(rt_exec *x, rt_function *fn, const unsigned grid[3], const unsigned block[3], size_t smem,
                  void *stream, void **args, const rt_launch_opts *o, rt_err *err) {
  if (x->node >= 0) {
    if (x->node_same) { /* its tensors as the graph has them: the node is left as it is */
      x->node++;
      return 0;
    }
    return rt_graph_set_kernel(x->graph, x->node++, fn, grid, block, smem, args, err);
  }
  if (o ? rt_launch_ex(fn, grid, block, smem, stream, args, o, err) : rt_launch(fn, grid, block, smem, stream, args, err))
    return -1;
  if (!x->recording) return 0;
  if (x->n_nodes == x->cap_nodes) {
    void **more = realloc(x->nodes, sizeof *more * (size_t)(x->cap_nodes = x->cap_nodes ? 2 * x->cap_nodes : 64));
    if (!more) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
    x->nodes = more;
  }
  return rt_graph_capture_last(x->dev, stream, &x->nodes[x->n_nodes++], err);
}

/* Capturing in branches: the stream kernel k goes on (*s; x->on its
 * index) — one whose last kernel it follows, else one not used yet, else
 * the one whose last kernel is the oldest — made to wait for the events of
 * the kernels k follows that are not its last. */
static int branch_begin(rt_exec *x, int k, void *origin, void **s, rt_err *err) {
  const cg_kernel *kn = &x->code.kernels[k];
  int best = -1;
  for (int st = 0; st <= RT_SIDE_STREAMS; st++)
    for (int i = 0; i < kn->n_after; i++)
      if (x->tail[st] == kn->after[i] && (best < 0 || x->tail[st] > x->tail[best])) best = st;
  for (int st = 0; best < 0 && st <= RT_SIDE_STREAMS; st++)
    if (x->tail[st] < 0) best = st;
  if (best < 0) { /* every stream in use, none ending in a kernel k follows */
    best = 0;
    for (int st = 1; st <= RT_SIDE_STREAMS; st++)
      if (x->tail[st] < x->tail[best]) best = st;
  }
  *s = best ? x->side[best - 1] : origin;
  x->on = best;
  if (best && x->tail[best] < 0 && rt_stream_wait_event(x->dev, *s, x->fork_ev, err)) return -1;
  for (int i = 0; i < kn->n_after; i++)
    if (kn->after[i] != x->tail[best] && rt_stream_wait_event(x->dev, *s, x->kev[kn->after[i]], err)) return -1;
  return 0;
}

static int branch_end(rt_exec *x, int k, void *s, rt_err *err) {
  x->tail[x->on] = k;
  return rt_event_record(x->dev, x->kev[k], s, err);
}

static int launch_zero(rt_exec *x, const rt_variant *v, int idx32, rt_dptr p, long long n, void *stream,
                       rt_err *err) {
  cg_launch l = cg_zero_launch(n);
  unsigned grid[3] = {(unsigned)l.grid[0], (unsigned)l.grid[1], (unsigned)l.grid[2]};
  unsigned block[3] = {(unsigned)l.block[0], (unsigned)l.block[1], (unsigned)l.block[2]};
  int n32 = (int)n; /* the 32-bit variant takes an int (its binding fits) */
  void *args[] = {&p, idx32 ? (void *)&n32 : (void *)&n};
  return launch(x, v->zero, grid, block, (size_t)l.smem, stream, args, NULL, err);
}

/* Kernel k's operands' copies into its scratch (cg_kernel.prep): by
 * kbc_tf32_copy, or by the kernel's own pack kernels, which take the
 * kernel's arguments (args). */
static int launch_copies(rt_exec *x, const rt_variant *v, int idx32, int k, const cg_kernel *kn, const ir_binding *b,
                         const rt_dptr *ptr, rt_dptr scratch, void **args, void *stream, rt_err *err) {
  for (int i = 0; i < kn->n_prep; i++) {
    int64_t at = cg_kernel_prep_at(kn, i, b->vars);
    cg_launch l;
    if (at < 0 || !cg_prep_launch_of(kn, i, b->vars, b->numel, &l))
      return rt_fail(err, RT_ERR_ARGUMENT, "kernel %s: the size of its operands' copies overflows", kn->name);
    if (l.grid[0] <= 0) continue;
    unsigned grid[3] = {(unsigned)l.grid[0], 1, 1}, block[3] = {(unsigned)l.block[0], 1, 1};
    long long n = b->numel[kn->prep[i]];
    rt_dptr dst = scratch + sizeof(float) * (size_t)at, src = ptr[kn->prep[i]];
    int n32 = (int)n; /* the 32-bit variant takes an int (its binding fits) */
    void *copy_args[] = {&dst, &src, idx32 ? (void *)&n32 : (void *)&n};
    if (rt_debug_level() >= 2) {
      char name[512];
      cg_prep_name(kn, i, name, sizeof name);
      rt_debug(2, "launch %s: grid %lld, block %d, smem 0", name, (long long)l.grid[0], l.block[0]);
    }
    if (launch(x, v->copy[2 * k + i], grid, block, 0, stream, kn->prep_pack[i] ? args : copy_args, NULL, err))
      return -1;
  }
  return 0;
}

/* Waits for one profiled run and adds each kernel's time. */
static int profile_collect(rt_exec *x, void *stream, rt_err *err) {
  if (rt_stream_sync(x->dev, stream, err)) return -1;
  for (int k = 0; k < x->code.n_kernels; k++) {
    float ms = 0;
    if (rt_event_elapsed_ms(x->dev, x->prof_ev[2 * k], x->prof_ev[2 * k + 1], &ms, err)) return -1;
    x->prof_ms[k] += ms;
  }
  x->prof_runs++;
  return 0;
}

/* Chooses the variant for binding b: the 32-bit one where it is on and
 * the binding fits (judged once per set of var values, not per launch;
 * built now, before any graph capture), else the 64-bit one. */
static int choose_variant(rt_exec *x, const ir_binding *b, rt_err *err) {
  size_t vbytes = sizeof *b->vars * (size_t)x->p->vars.len;
  if (x->idx32 && (x->fit < 0 || memcmp(x->fit_vars, b->vars, vbytes))) {
    memcpy(x->fit_vars, b->vars, vbytes);
    x->fit = ir_binding_fits_i32(x->p, b);
    /* and every kernel's scratch (its operands' copies, split-K's parts), addressed by the same indices */
    for (int k = 0; x->fit && k < x->code.n_kernels; k++) {
      int64_t n = cg_kernel_scratch(&x->code.kernels[k], b->vars);
      x->fit = n >= 0 && n < (1 << 30);
    }
  }
  x->cur = x->idx32 && x->fit ? RT_IDX32 : RT_IDX64;
  if (!x->v[x->cur].built && build_variant(x, x->cur, err)) return -1;
  for (int i = 0; x->cur == RT_IDX32 && i < x->p->vars.len; i++) x->vars32[i] = (int)b->vars[i];
  return 0;
}

/* Whether kernel k's tensors are at the pointers `was` has them (the
 * graph's: its nodes need no new arguments; the scratch and the sizes are
 * the graph's whenever it is updated). */
static int same_tensors(const cg_kernel *kn, const rt_dptr *ptr, const rt_dptr *was) {
  for (int i = 0; i < kn->n_tensors; i++)
    if (ptr[kn->tensors[i]] != was[kn->tensors[i]]) return 0;
  return 1;
}

/* Queues every kernel for the binding (ptr: all tensors, temporaries
 * placed) on stream, from the chosen variant; timed per kernel when
 * profiling (not under a caller's capture: the timing waits for the
 * stream). */
static int enqueue(rt_exec *x, const ir_binding *b, rt_dptr *ptr, long long *vars, void **args, void *stream,
                   int capturing, rt_err *err) {
  void **ev = capturing ? NULL : x->prof_ev;
  int nv = x->p->vars.len;
  int idx32 = x->cur == RT_IDX32;
  const rt_variant *v = &x->v[x->cur];
  int *vars32 = x->vars32;
  void *origin = stream;
  for (int k = 0; k < x->code.n_kernels; k++) {
    const cg_kernel *kn = &x->code.kernels[k];
    if (x->recording && branch_begin(x, k, origin, &stream, err)) return -1;
    if (x->node >= 0) x->node_same = same_tensors(kn, ptr, (const rt_dptr *)x->graph_key);
    cg_launch l;
    if (!cg_kernel_launch(kn, b->vars, &l)) return rt_fail(err, RT_ERR_ARGUMENT, "kernel %s: its amount of work overflows", kn->name);
    if (kn->zero_tensor >= 0 && b->numel[kn->zero_tensor] > 0 &&
        launch_zero(x, v, idx32, ptr[kn->zero_tensor], b->numel[kn->zero_tensor], stream, err))
      return -1;
    /* profiling: events around the kernel (around nothing when it has no work), its operands' copies included */
    if (ev && rt_event_record(x->dev, ev[2 * k], stream, err)) return -1;
    if (l.grid[0] > 0) {
      int n = 0;
      for (int i = 0; i < kn->n_tensors; i++) args[n++] = &ptr[kn->tensors[i]];
      rt_dptr *scratch = &x->slot_scratch[kn->scratch_slot];
      if (cg_kernel_takes_scratch(kn)) args[n++] = scratch;
      for (int i = 0; i < nv; i++) args[n++] = idx32 ? (void *)&vars32[i] : (void *)&vars[i];
      if (launch_copies(x, v, idx32, k, kn, b, ptr, *scratch, args, stream, err)) return -1;
      unsigned grid[3] = {(unsigned)l.grid[0], (unsigned)l.grid[1], (unsigned)l.grid[2]};
      unsigned block[3] = {(unsigned)l.block[0], (unsigned)l.block[1], (unsigned)l.block[2]};
      rt_debug(2, "launch %s: grid %lld, block %d, smem %d", kn->name, (long long)l.grid[0], l.block[0], l.smem);
      /* programmatic: this launch may start while the grid before runs (its kernels wait for it first) */
      rt_launch_opts o = {.programmatic_serialization = x->pdl};
      if (kn->cluster > 1) { /* a kernel of thread-block clusters (codegen/cluster.c) */
        o.cluster[0] = (unsigned)kn->cluster, o.cluster[1] = o.cluster[2] = 1;
        o.non_portable_cluster = kn->cluster > 8;
      }
      if (launch(x, v->fn[k], grid, block, (size_t)l.smem, stream, args, &o, err)) return -1;
    }
    if (ev && rt_event_record(x->dev, ev[2 * k + 1], stream, err)) return -1;
    if (x->recording && branch_end(x, k, stream, err)) return -1;
  }
  return ev ? profile_collect(x, stream, err) : 0;
}

/* The captured graph's kernel nodes given this call's arguments (the same
 * sizes and scratch: only tensors' pointers differ), as enqueue would
 * launch them.  0 when every node took its launch; -1 (why at debug level
 * 1) when not, and the graph is then dropped. */
static int update_graph(rt_exec *x, const ir_binding *b, rt_dptr *ptr, long long *vars, void **args) {
  rt_err why = {0};
  x->node = 0;
  int rc = enqueue(x, b, ptr, vars, args, NULL, 0, &why);
  if (rc == 0 && x->node != rt_graph_kernels(x->graph))
    rc = rt_fail(&why, RT_ERR_INTERNAL, "%d launches for a graph of %d kernel nodes", x->node, rt_graph_kernels(x->graph));
  x->node = -1;
  x->node_same = 0;
  if (rc) {
    rt_debug(1, "%s: the graph's arguments not changed (%s): launched plainly", x->p->name, rt_err_msg(&why));
    rt_graph_destroy(x->graph);
    x->graph = NULL;
  }
  rt_err_free(&why);
  return rc;
}

/* Queues the kernels on the capture's streams in branches (branch_begin),
 * keeping every launch's node, then joins the side streams back into the
 * capture's own; its streams and events made at the first capture. */
static int capture_branches(rt_exec *x, const ir_binding *b, rt_dptr *ptr, long long *vars, void **args, rt_err *err) {
  int n = x->code.n_kernels;
  for (int i = 0; i < RT_SIDE_STREAMS; i++)
    if (!x->side[i] && rt_stream_create(x->dev, &x->side[i], err)) return -1;
  if (!x->kev && !(x->kev = calloc((size_t)n + 1, sizeof *x->kev))) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  for (int k = 0; k < n; k++)
    if (!x->kev[k] && rt_event_create_untimed(x->dev, &x->kev[k], err)) return -1;
  if (!x->fork_ev && rt_event_create_untimed(x->dev, &x->fork_ev, err)) return -1;
  if (rt_event_record(x->dev, x->fork_ev, x->capture_stream, err)) return -1;
  for (int st = 0; st <= RT_SIDE_STREAMS; st++) x->tail[st] = -1;
  x->n_nodes = 0;
  x->recording = 1;
  int rc = enqueue(x, b, ptr, vars, args, x->capture_stream, 0, err);
  x->recording = 0;
  for (int st = 1; rc == 0 && st <= RT_SIDE_STREAMS; st++)
    if (x->tail[st] >= 0) rc = rt_stream_wait_event(x->dev, x->capture_stream, x->kev[x->tail[st]], err);
  return rc;
}

/* Replays a captured graph when the arguments repeat (KBC_NO_GRAPH on
 * turns this off), a program of one kernel too: back to back, a graph's
 * launch costs the host less than the kernel's own.  Under
 * KBC_GRAPH_UPDATE (on by default; 0 turns it off) a call with the same
 * sizes but other tensors (a caller rotating its inputs, or a framework's
 * fresh activations) changes the graph's kernel nodes' arguments and
 * replays it (update_graph): one driver call a node, where a plain launch
 * costs several; the second call of the same sizes captures.  Returns 1
 * when it launched, 0 to launch plainly. */
static int via_graph(rt_exec *x, const ir_binding *b, rt_dptr *ptr, long long *vars, void **args, void *stream,
                     rt_err *err) {
  if (x->no_graph || x->prof_ev || !rt_graph_supported(x->dev) || x->code.n_kernels < 1) return 0;
  /* the key: every tensor's pointer, the var values and the scratch's
   * pointer (a grown workspace moves it, temporaries or none) */
  size_t nt = sizeof(rt_dptr) * (size_t)x->p->tensors.len, nv = sizeof(long long) * (size_t)x->p->vars.len;
  size_t len = nt + nv + sizeof x->scratch;
  unsigned char *key = malloc(len + 1);
  if (!key) return 0;
  memcpy(key, ptr, nt);
  memcpy(key + nt, vars, nv);
  memcpy(key + nt + nv, &x->scratch, sizeof x->scratch);
  /* With the update (KBC_GRAPH_UPDATE), a call is compared by its sizes
   * and scratch alone (the key past the pointers); without, by the whole
   * key. */
  size_t from = x->graph_update ? nt : 0;
  int again = x->key && x->key_len == len && !memcmp(key + from, x->key + from, len - from);
  free(x->key);
  x->key = key;
  x->key_len = len;
  if (x->graph && !memcmp(key, x->graph_key, len)) return rt_graph_launch(x->graph, stream, err) ? -1 : 1;
  if (from && x->graph && rt_graph_kernels(x->graph) >= 0 && !memcmp(key + nt, x->graph_key + nt, len - nt) &&
      update_graph(x, b, ptr, vars, args) == 0) {
    rt_debug(2, "%s: the graph's %d kernel nodes given new arguments", x->p->name, rt_graph_kernels(x->graph));
    memcpy(x->graph_key, key, len);
    return rt_graph_launch(x->graph, stream, err) ? -1 : 1;
  }
  x->repeats = again ? x->repeats + 1 : 0;
  if (x->repeats < 1) return 0;
  /* The same arguments (sizes, with the update) twice in a row: capture on
   * our own stream. */
  if (!x->capture_stream && rt_stream_create(x->dev, &x->capture_stream, err)) return -1;
  rt_graph_destroy(x->graph);
  x->graph = NULL;
  if (rt_graph_capture_begin(x->dev, x->capture_stream, err)) return -1;
  rt_graph *g = NULL;
  int rc = x->branches ? capture_branches(x, b, ptr, vars, args, err)
                       : enqueue(x, b, ptr, vars, args, x->capture_stream, 0, err);
  if ((x->branches ? rt_graph_capture_end_nodes(x->dev, x->capture_stream, x->nodes, x->n_nodes, &g, err)
                   : rt_graph_capture_end(x->dev, x->capture_stream, &g, err)) ||
      rc) {
    rt_graph_destroy(g);
    return -1;
  }
  x->graph = g;
  free(x->graph_key);
  x->graph_key = malloc(len);
  if (!x->graph_key) {
    rt_graph_destroy(x->graph);
    x->graph = NULL;
    return 0;
  }
  memcpy(x->graph_key, x->key, len);
  rt_debug(1, "captured %d kernels of %s into a CUDA graph%s", x->code.n_kernels, x->p->name,
           x->branches ? " in branches" : "");
  return rt_graph_launch(x->graph, stream, err) ? -1 : 1;
}

int rt_exec_launch(rt_exec *x, const ir_binding *b, const rt_dptr *tensors, void *stream, rt_err *err) {
  const ir_program *p = x->p;
  int nt = p->tensors.len, nv = p->vars.len;
  rt_dptr *ptr = calloc((size_t)nt + 1, sizeof *ptr);
  long long *vars = calloc((size_t)nv + 1, sizeof *vars);
  void **args = calloc((size_t)(nt + nv) + 1, sizeof *args);
  int rc = -1;
  if (!ptr || !vars || !args) {
    rt_fail(err, RT_ERR_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < nt; i++) ptr[i] = tensors[i];
  for (int i = 0; i < nv; i++) vars[i] = b->vars[i];
  /* Under a caller's capture the kernels go into the caller's graph as
   * they are: no graph of our own inside it, no allocation. */
  int capturing = rt_stream_capturing(x->dev, stream);
  if (place_temps(x, b, ptr, capturing, err) || choose_variant(x, b, err)) goto done;
  int g = capturing ? 0 : via_graph(x, b, ptr, vars, args, stream, err);
  if (g < 0) goto done;
  if (g == 0 && enqueue(x, b, ptr, vars, args, stream, capturing, err)) goto done;
  rc = 0;
done:
  free(ptr);
  free(vars);
  free(args);
  return rc;
}
