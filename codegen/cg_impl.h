/* cg_impl.h — internals shared by the code generator's files:
 * group.c (fusion groups, contraction analysis and the family of each
 * group), emit.c (names, index arithmetic and expressions as C), the
 * schedule families (sched_rows.c, sched_point.c, sched_scatter.c and the
 * tiled contraction's gemm_*.c, gemm_impl.h), and cg.c (the driver). */
#ifndef KBC_CG_IMPL_H
#define KBC_CG_IMPL_H

#include "ir/cost.h"
#include "ir/ir.h"
#include "cg.h"

enum { CG_MAX_OUTER = 8, CG_BLOCK = 256, CG_MAX_HOISTED = 16 };

/* ---- fusion groups (group.c) ---- */

typedef struct {
  cg_family family;            /* cg_group_family */
  int first, count;            /* consecutive statements */
  int n_outer;                 /* ROWS: the outer dimensions */
  sym *outer_extent[CG_MAX_OUTER];
  int *phi;                    /* ROWS: phi[k * CG_MAX_OUTER + j] = index id of statement
                                  first+k mapped to outer dimension j */
  int team;                    /* ROWS: threads per outer point (power of 2, <= CG_BLOCK) */
  int across;                  /* ROWS: 0, the team's threads consecutive lanes; else the points a
                                  block takes (at least 32; the block: across * team threads), its
                                  threads taking neighbouring points, the team's `across` apart */
  int pairs;                   /* ROWS, across: a thread a point made a team of 8 (a long reduction):
                                  its share of a one-index reduction in pairs of steps (emit.c,
                                  pair_loop), the grid up to 64 blocks a multiprocessor */
  const struct cg_attention *attn; /* ATTN: the chain as cg_make_groups found it (attn_impl.h) */
  const struct cg_fold *fold;  /* GEMM of two statements: the contraction and the next one
                                  reducing its output, folded into its tiles (gemm_impl.h) */
  const struct cg_tail *tail;  /* GEMM: the statements after the stored one computed a row of
                                  the tile at a time in its epilogue (gemm_tail.c), or NULL */
} cg_group;

/* The statements partitioned into groups, each with its family decided;
 * heads (NULL: none) marks the statements that start a recomputing
 * attention chain (cg_recompute). */
int cg_make_groups(kbc_arena *a, const ir_program *p, const cg_target *t, const unsigned char *heads, cg_group **out);
/* The program codegen plans for p (recompute.c): p itself, or a copy
 * whose contractions reading the attention backward's scores-sized
 * tensors read copies of the statements computing them, placed right
 * before each (a recomputing attention chain, its first statement marked
 * in *heads, else *heads NULL), the originals dropped.  The copy shares
 * p's tensors (ids kept: the runtime's), its own appended after them, and
 * those never leave the chip. */
const ir_program *cg_recompute(kbc_arena *a, const ir_program *p, const cg_target *t, unsigned char **heads);
/* The one decision of a group's family (its statements, and for a rows
 * group its outer dimensions and team, given): sets g->family, and where
 * a contraction goes to the rows family, its outer dimensions and team. */
void cg_group_family(kbc_arena *a, const ir_program *p, const cg_target *t, cg_group *g);

/* A statement `out[...] = epilogue(sum(k...: A * B))` seen as a (batched)
 * matrix product: index ids of its M (only in A), N (only in B), batch (in
 * both) free indices and of the K (reduction) indices. */
typedef struct {
  const ir_expr *reduce;    /* the main sum */
  const ir_expr *a, *b;     /* its two factors (A carries M, B carries N) */
  int n_m, m[CG_MAX_OUTER], n_n, n[CG_MAX_OUTER], n_b, bat[CG_MAX_OUTER], n_k, k[CG_MAX_OUTER];
} cg_contraction;

/* Work estimates take every var axis as IR_EST_VAR; a rows group keeps at
 * least CG_MIN_OUTER estimated outer points when it can. */
enum { CG_MIN_OUTER = 4096, CG_JOIN_DROP = 1024, CG_JOIN_WORK = 1 << 16, CG_JOIN_LONG = 128 };
/* Groups of a single point (no outer dimension) with more than one
 * statement: each statement's points times (1 + its reduction terms), all
 * extents constant, at most this. */
enum { CG_POINT_WORK = 1 << 15 };
int cg_find_contraction(kbc_arena *a, const ir_stmt *s, cg_contraction *c);
/* The product of the extents of s's indices ids[0..n) (1 for none). */
sym *cg_extent_sym(kbc_arena *a, const ir_stmt *s, const int *ids, int n);
/* The same product estimated (every var axis at IR_EST_VAR). */
double cg_extent_estimate(const ir_stmt *s, const int *ids, int n);
/* Whether an offset steps by exactly one along the flattened indices
 * ids[0..n) (the last fastest: its coefficients are 1, then the products
 * of the extents after each).  (Flat offsets and unit steps of loads:
 * ir/cost.h, shared with the passes.) */
int cg_offset_contiguous(kbc_arena *a, const ir_stmt *s, const sym *off, const int *ids, int n);
/* Whether off depends on the indices ids[0..n) of s only through their
 * flattening f = (..(i0*E1 + i1)*E2 + ..) (the last fastest), checked
 * symbolically; if so, off with i0..i(n-2) at zero, in which i(n-1) stands
 * for f (a flattened space addressed without its digits); else NULL. */
sym *cg_collapse(kbc_arena *a, const ir_stmt *s, const sym *off, const int *ids, int n);
/* Whether the access e (a load, or a store written as one) in s is
 * contiguous along the indices ids[0..n) (their extents' product `extent`,
 * a multiple of 4) with every other term of its offset a constant multiple
 * of 4 (and each split index's c, mult): then every chunk of 4 along ids
 * starting at a multiple of 4 is 16 bytes, 16-byte aligned where the
 * tensor is — one float4. */
int cg_access_by_4(kbc_arena *a, const ir_stmt *s, const ir_expr *e, const int *ids, int n, int64_t extent,
                   int64_t mult);

/* ---- emission (emit.c) ---- */

/* C names of the program's tensors (by id) and var axes (by var_id). */
typedef struct {
  const char **tensor, **axis;
  int n_tensors, n_axes;
} cg_names;

cg_names *cg_names_make(kbc_arena *a, const ir_program *p);

/* A row a rows kernel keeps in registers for its point (opt.rows_cache;
 * vec_loop.c): a thread's float4s of the row of `tensor` at offset `key`
 * (C text, the outer indices named _o0, _o1, ...), len floats along a
 * team's loop of `step` threads from `lane`; the first loop reading it
 * fills `name[k]` and records its head and float4 count (`hd`, `nv`), a
 * later loop with the same ones reads the registers. */
typedef struct {
  int tensor;
  const char *key, *lane, *name, *hd, *nv;
  int64_t len;
  int step, filled;
} cg_row_cache;
enum { CG_MAX_ROW_CACHES = 4, CG_ROW_CACHE_FLOAT4S = 8 };

typedef struct {
  kbc_arena *a;
  const ir_program *p;
  const cg_options *opt;   /* the target's switches */
  const cg_names *names;
  const ir_stmt *s;        /* statement being emitted */
  kbc_buf *out;
  int indent;
  const char **idx;        /* C names of s's index variables (what each index stands for now) */
  int tmp;                 /* fresh-name counter */
  /* Values computed before the loop being emitted (cg_hoist_invariants,
   * cg_flat_loop), a stack that loops push and pop: cg_expr gives
   * hoisted_name[i] for hoisted[i]. */
  int n_hoisted;
  const ir_expr *hoisted[CG_MAX_HOISTED];
  const char *hoisted_name[CG_MAX_HOISTED];
  unsigned char hoisted_recip[CG_MAX_HOISTED]; /* a division x / d: x times the reciprocal named */
  const unsigned char *written; /* per tensor id: written by this kernel (its loads go through __ldca) */
  /* The rows kept in registers for the point being emitted (rows kernels,
   * opt.rows_cache), and the names of s's indices in their keys (outer
   * ones _o0, _o1, ...; NULL: no keys). */
  cg_row_cache *cache;
  int n_cache;
  const char **key_idx;
} cg_emit;

/* A team of threads working on one value: `size` threads (a power of 2;
 * more than 32: the whole block), each's lane a C expression (NULL:
 * `_lane`), the shuffle mask of its warp's part (NULL: `_mask`).  With
 * `across` (the rows family's g->across), the team's threads are `across`
 * apart in the block (lane l of point q is thread l * across + q): they
 * combine through the shared arrays _red..._red4 of a float a thread;
 * with `pairs`, each thread's share of a one-index reduction in two sums. */
typedef struct {
  int size;
  const char *lane, *mask;
  int across;
  int pairs; /* across: a one-index reduction's share in pairs of steps (g->pairs) */
} cg_team;

/* A reduction node split across a team: each thread loops over its share
 * of the flattened reduction space.  Whole (part_step NULL): the share is
 * lane, lane + size, ...; the team's values are then combined
 * (cg_team_combine) so that every thread holds the total.  Partial: the
 * share starts at part_start and steps by part_step (C expressions), and
 * the value is the thread's part (the caller combines the parts). */
typedef struct {
  const ir_expr *reduce;
  cg_team team;
  const char *part_start, *part_step;
  /* Partial, by rows: the share is the rows of the space (every index but
   * the last, flattened) from part_start in steps of part_step, the team's
   * threads strided along the last index of each (float4 where the loads
   * allow, vec_loop.c): the point family's long rows. */
  int rows;
  /* With a max: the name of a float (declared, 0) that sums exp(term -
   * max) alongside, online (a softmax's max and sum in one pass over the
   * row; sched_rows.c, online_pair; cg_acc). */
  const char *online;
  /* With a sum: the prefix P of four floats (declared, 0) Pn, Pm, Pq, Ps
   * that keep the terms' count, mean, squared deviations from the mean
   * (Welford's update, Chan's merge) and sum (the reduction's value) in
   * place of the accumulator: a norm's mean and variance in one pass
   * (sched_rows.c, welford_pair; cg_acc). */
  const char *welford;
} cg_split;

/* Flattened index spaces addressed without their digits (GEMM
 * epilogues): offsets go through cg_collapse, the last index of each
 * space standing for the flat coordinate. */
typedef struct {
  int n;
  const int *ids[2];
  int len[2];
} cg_flat_spaces;

/* What one expression is emitted under (cg_expr_in; every field optional):
 * a node already computed (`known` is given as the C expression
 * known_value: a GEMM's main sum is the tile's accumulator), a reduction
 * split across a team, flat spaces for the addresses. */
typedef struct {
  const ir_expr *known;
  const char *known_value;
  const cg_split *split;
  const cg_flat_spaces *flat;
  /* by tensor id: the C value a load of it gives (a tile element held on
   * chip, at the point being emitted), or NULL: read from memory */
  const char *const *value_of;
} cg_expr_ctx;
/* The C value x gives loads of tensor t, or NULL (t is read from memory). */
static inline const char *cg_value_of(const cg_expr_ctx *x, const ir_tensor *t) {
  return x && x->value_of ? x->value_of[t->id] : NULL;
}

/* Statement s's store, as a load of its target (for the queries on
 * loads: ir_load_unit_step, cg_contiguous_base, stride runs). */
static inline ir_expr cg_store_as_load(const ir_stmt *s) {
  ir_expr target = {.op = IR_OP_LOAD, .type = IR_TY_FLOAT};
  target.u.load.tensor = s->out;
  target.u.load.idx = s->lhs;
  return target;
}

/* Gives every index of s a C name distinct from tensors, axes, keywords. */
const char **cg_index_names(kbc_arena *a, const cg_names *names, const ir_stmt *s);

void cg_line(cg_emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A block of generated code: the line `head {` and one level in; the
 * level out and `}`. */
void cg_open_block(cg_emit *E, const char *head);
void cg_close_block(cg_emit *E);
/* What a reduction's terms go into: the float acc combined by op; with
 * online (op max) acc is the running max and online the float beside it
 * that sums exp(term - max) (cg_split's online); with welford (op sum) the
 * prefix P of the Welford state Pn, Pm, Pq, Ps in place of acc, acc set to
 * Ps by the team's merge (cg_split's welford). */
typedef struct {
  const char *acc;
  ir_red op;
  const char *online, *welford;
} cg_acc;
/* n terms (C expressions, each evaluated once; n is 1, or 4 with online
 * or welford: a float4's) into a. */
void cg_acc_add(cg_emit *E, const cg_acc *a, int n, const char *const *t);
/* The team's accumulators merged so that every thread holds the team's. */
void cg_acc_team_combine(cg_emit *E, const cg_team *team, const cg_acc *a);
/* After the online merge: a row of `terms` terms (a C expression), all
 * -inf, sums to NaN. */
void cg_online_finish(cg_emit *E, const char *m, const char *s, const char *terms);
/* printf into the arena. */
const char *cg_fmt(cg_emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cg_sym(cg_emit *E, const sym *x);                /* a long long C expression */
/* The flat element offset of t[idx]; cg_offset_in through flat spaces (or
 * NULL: none). */
const char *cg_offset(cg_emit *E, const ir_tensor *t, sym *const *idx);
const char *cg_offset_in(cg_emit *E, const ir_tensor *t, sym *const *idx, const cg_flat_spaces *flat);
const char *cg_in_bounds(cg_emit *E, const ir_tensor *t, sym *const *idx);
/* The C expression of e (emitting loops for reductions before it);
 * cg_expr_in under x (NULL: as cg_expr).  A value that is not a float is
 * converted by cg_float_value. */
const char *cg_expr(cg_emit *E, const ir_expr *e);
const char *cg_expr_in(cg_emit *E, const ir_expr *e, const cg_expr_ctx *x);
const char *cg_float_value(cg_emit *E, const ir_expr *e, const char *c);
/* A loop over the flattened space of indices ids[0..n) of E->s (the last
 * fastest) from element `start` in steps of `step`, the indices declared
 * before it and advanced digit by digit (no division inside the loop);
 * the loads in body[0..n_body) that are contiguous along that space read
 * through a pointer set before the loop, indexed by the loop counter (and
 * when the body then uses the indices no more, they are not declared).
 * cg_flat_loop_end closes it; L holds the loop's state (loops nest). */
typedef struct {
  int n;
  const int *ids;
  const char *inc; /* the increments' array (NULL for one index) */
  int saved;       /* E->n_hoisted before the loop's pointers */
} cg_flat;
void cg_flat_loop(cg_emit *E, cg_flat *L, int n, const int *ids, const char *start, int step,
                  const ir_expr *const *body, int n_body, const cg_expr_ctx *x);
void cg_flat_loop_end(cg_emit *E, const cg_flat *L);
/* Whether load e's flat offset steps by one along the flattened loop
 * indices ids[0..n) of E->s (the last fastest); if so, its offset with
 * those indices at zero, else NULL. */
sym *cg_contiguous_base(cg_emit *E, const ir_expr *e, int n, const int *ids);
/* Whether e, as cg_expr would now emit it, still mentions one of the
 * indices ids[0..n) (a hoisted or substituted subexpression, or a load
 * through a row pointer, does not). */
int cg_mentions_unhoisted(const cg_emit *E, const ir_expr *e, const int *ids, int n);
/* A team's loop over the indices ids[0..n) of E->s, flattened (the last
 * fastest; from 0 to the product of their extents; this thread's
 * elements lane, lane + step, ...), each element's value either added
 * into acc (cg_acc_add), or stored into target (the
 * statement's output as a load).  cg_vec_loop (vec_loop.c) emits it with
 * float4 accesses along the rows' 16-byte-aligned part and returns 1, or
 * emits nothing and returns 0 where the loads along the flat index (or
 * the store) are not one float per step; x is what the value is emitted
 * under. */
typedef struct {
  const ir_expr *value;
  const cg_acc *acc; /* what each element's value goes into; NULL: stored into target */
  const ir_expr *target;
} cg_vec_body;
int cg_vec_loop(cg_emit *E, int n, const int *ids, const char *lane, int step, const cg_vec_body *b,
                const cg_expr_ctx *x);
/* The rows cg_vec_loop would read along ids[0..n) for value (their
 * tensors and keys, as cg_row_cache has them; a known length only) into
 * tensor[], key[] and len[], at most max; their count, 0 where the loop
 * would not take float4s.  Under E->key_idx. */
int cg_vec_row_keys(cg_emit *E, int n, const int *ids, const ir_expr *value, int *tensor, const char **key,
                    int64_t *len, int max);
/* Emits a block assigning dst[0..n) (declared lvalues) the row-major digits
 * of the C expression flat over the indices ids[0..n) of E->s (the last
 * fastest), through a long long temporary named q; and the C expression
 * "1LL * E1 * E2 ..." of the product of their extents. */
void cg_decode(cg_emit *E, const char *q, const char *flat, const int *ids, int n, const char *const *dst);
const char *cg_extent_product(cg_emit *E, const int *ids, int n);
/* Before a loop over index ids vars[0..nv) whose body is e: computes into
 * registers the largest float subexpressions of e that read memory and
 * mention none of vars (outside where() branches and reductions, so that
 * nothing is read that e would not read); returns the previous
 * E->n_hoisted, to restore when the loop closes. */
int cg_hoist_invariants(cg_emit *E, const ir_expr *e, const int *vars, int nv);
/* The same, the values emitted under x. */
int cg_hoist_invariants_in(cg_emit *E, const ir_expr *e, const int *vars, int nv, const cg_expr_ctx *x);
/* Whether e may be given a value of its own before the loop being emitted:
 * no where() (its branches are not evaluated both), no reduction, not
 * already given one (cg_hoist_invariants, cg_substitute), and room left. */
int cg_hoist_open(const cg_emit *E, const ir_expr *e);
/* From here until E->n_hoisted is restored, cg_expr gives the C
 * expression `text` for e (returns 0 when the stack is full: e then
 * prints as itself). */
int cg_substitute(cg_emit *E, const ir_expr *e, const char *text);
/* The same for a division x / d: x times the reciprocal of d, the C
 * expression `recip`. */
int cg_substitute_recip(cg_emit *E, const ir_expr *div, const char *recip);
const char *cg_float_literal(kbc_arena *a, double v);
/* acc combined with v by reduction op (a C expression). */
const char *cg_combine(cg_emit *E, ir_red op, const char *acc, const char *v);
/* Combines the float variable acc across the team (shuffles within a
 * warp; for a whole block also the shared array _red[32] and two
 * barriers): after it, every thread of the team holds the team's value. */
void cg_team_combine(cg_emit *E, const cg_team *team, ir_red op, const char *acc);
/* The IR statement as a one-line C comment body. */
const char *cg_stmt_comment(kbc_arena *a, const ir_stmt *s);
/* Expression e of s, as the IR prints it, the same way. */
const char *cg_expr_comment(kbc_arena *a, const ir_stmt *s, const ir_expr *e);

int cg_collect_tensors(kbc_arena *a, const ir_program *p, int first, int count, int **ids);
/* A float4 load of tensor t's (a C function name): __ldg, through the
 * read-only cache, unless t changes while the kernel runs (E->written:
 * this kernel or another stage of a persistent kernel writes it), then
 * __ldca. */
const char *cg_ld4(const cg_emit *E, const ir_tensor *t);

/* ---- schedule families ---- */
/* Each family plans, then emits (the table: CG_FAMILIES, cg.h).  The
 * planner cg_plan_<stem> makes every decision of the kernel from the IR,
 * the target (its options in t->opt) and the group, fills k's launch
 * fields (k->name is set by the caller) and returns the plan (NULL: an
 * internal error; cg_group_family chose the family so that its planner
 * succeeds).  The emitter cg_emit_<stem> appends the kernel's text, only
 * printing the plan. */
typedef struct {
  kbc_arena *a;
  const ir_program *p;
  const cg_target *t;
  const cg_names *names;
  kbc_buf *out;
  /* Set while the stages of a persistent kernel are printed (persist.c):
   * per tensor id, 1 where some stage writes it.  Kernels are then printed
   * as device functions (cg_signature), and such tensors are read
   * coherently (never through __restrict__ or __ldg). */
  const unsigned char *changing;
  /* Under changing, for the cluster kernel's slots (cluster.c): above 1,
   * each stage a template over its slot KBC_SLOT (its static shared memory
   * the slot's own) taking its thread index as a parameter too. */
  int slots;
} cg_ctx;

/* Kernel signature: tensors used by statements [first, first+count);
 * __launch_bounds__(block) or, for min_blocks >= 1, (block, min_blocks)
 * (1: one block per multiprocessor is enough, registers up to 255); for
 * min_blocks <= -2, -min_blocks blocks from sm_90 on and one before
 * (KBC_BLOCKS_SM90, the preamble's).  Under C->changing, a stage of a
 * persistent kernel instead: a device function taking its block's index
 * and its grid first (blockIdx, gridDim: the names the body uses).
 * Prints the body's opening brace too, and under opt.pdl (not in a
 * stage) the wait for the grid before (cg_grid_dependency).
 * Returns, per tensor id, 1 where the kernel writes it, 2 where another
 * stage does (for cg_emit.written). */
const unsigned char *cg_signature(const cg_ctx *C, const char *name, int block, int min_blocks, int n_tensors,
                                  const int *ids, int first, int count);
/* The same with a scratch pointer (cg_kernel.scratch_tiles) named
 * `scratch` after the tensors (NULL: none). */
const unsigned char *cg_signature_scratch(const cg_ctx *C, const char *name, int block, int min_blocks,
                                          int n_tensors, const int *ids, int first, int count, const char *scratch);

/* Under opt.pdl (KBC_PDL), a kernel's first statement: it waits until the
 * grid launched before it on the stream has finished and its writes are
 * visible (griddepcontrol.wait), then lets the next grid launch
 * (griddepcontrol.launch_dependents); the runtime launches every kernel
 * with programmatic stream serialization, so a launch overlaps the grid
 * before.  Nothing before the wait touches memory.  Without the launch
 * attribute the wait returns at once. */
void cg_grid_dependency(const cg_ctx *C);

#define CG_FAMILY_ENTRIES(e, name, stem)                                                  \
  typedef struct cg_##stem##_plan cg_##stem##_plan;                                       \
  cg_##stem##_plan *cg_plan_##stem(cg_ctx *C, const cg_group *g, cg_kernel *k);           \
  void cg_emit_##stem(cg_ctx *C, const cg_##stem##_plan *plan, const cg_kernel *k);
CG_FAMILIES(CG_FAMILY_ENTRIES)
#undef CG_FAMILY_ENTRIES

/* persist.c: the program's kernels (ks[0..n), planned, not printed) as
 * the stages of one persistent kernel — NULL where they launch one by one
 * (KBC_PERSIST off, var axes, a kernel that cannot be a stage, or the cost
 * rule).  Then: cg_persist_helpers once; each kernel printed under
 * C->changing = cg_persist_changing, between cg_persist_body_open and
 * _close; cg_emit_persist prints the kernel (out->name set) and fills out. */
/* deps.c: kernel k's accesses into rw (by tensor id, the scratch at
 * p->tensors.len: 1 read, 2 written, 3 both; rw zeroed, p->tensors.len + 1
 * bytes), whether two such sets conflict (one writes what the other reads
 * or writes), and every kernel's cg_kernel.after and scratch_slot. */
void cg_kernel_access(const ir_program *p, const cg_kernel *k, unsigned char *rw);
int cg_access_conflict(const unsigned char *a, const unsigned char *b, int n);
void cg_kernel_deps(kbc_arena *a, const ir_program *p, cg_kernel *ks, int n);
/* For n steps run in order with accesses rw[0..n) (nt bytes each): per
 * step k, the earlier steps it must follow, ascending, those that a later
 * of them implies left out (after[k], n_after[k]; in a). */
void cg_order(kbc_arena *a, unsigned char *const *rw, int n, int nt, const int **after, int *n_after);
/* The plan (fields read by persist.c and cluster.c). */
typedef struct cg_persist {
  int threads;            /* the block: the widest stage's */
  int smem;               /* dynamic shared memory: the largest stage's */
  int per_sm;             /* blocks a multiprocessor (persist_per_sm): the grid is sm_count times it */
  int n_stages;
  cg_stage *stages;
  int *kernel_of;         /* stage -> kernel index (-1: a zero-fill) */
  int64_t *first_task;    /* stage -> its first task; [n_stages]: the total */
  unsigned char *changing; /* per tensor id: written by some stage */
  int64_t *zero_numel;    /* stage -> floats a zero-fill clears */
} cg_persist;

cg_persist *cg_plan_persist(cg_ctx *C, const cg_kernel *ks, int n);
const unsigned char *cg_persist_changing(const cg_persist *P);
void cg_persist_helpers(cg_ctx *C);
void cg_persist_body_open(cg_ctx *C, const cg_persist *P, int i);
void cg_persist_body_close(cg_ctx *C, const cg_persist *P, int i);
void cg_emit_persist(cg_ctx *C, const cg_persist *P, cg_kernel *out);
/* The tensors any stage takes, ascending, into *ids (in a): how many. */
int cg_persist_tensors(kbc_arena *a, const ir_program *p, const cg_persist *P, int **ids);
/* A kernel of P's stages (persistent or cluster): its signature (every
 * tensor a stage takes, then the scratch where a stage takes it),
 * __launch_bounds__ of threads and min_blocks, the opening brace and grid
 * dependency; out filled (blocks launched of threads, P's dynamic shared
 * memory, every statement, the stages).  And stage s's one-line label. */
void cg_persist_open(cg_ctx *C, const cg_persist *P, int threads, int min_blocks, int64_t blocks, cg_kernel *out);
const char *cg_persist_stage_label(cg_ctx *C, const cg_persist *P, int s);

/* batch.c: whether specialized program p is independent copies of one
 * program along its tensors' first dimension (see there); then *out. */
typedef struct {
  int64_t points;          /* the batch points */
  const ir_program *one;   /* the program of one point: the same tensor ids and statements */
  int64_t *stride;         /* per tensor id: floats from one point's slice to the next's (0: not batched) */
} cg_batch;
int cg_batch_split(kbc_arena *a, const ir_program *p, cg_batch *out);
/* cluster.c: the blocks of a cluster for a program of `points` batch
 * points (KBC_CLUSTER_SIZE, else the largest power of two up to 8 whose
 * clusters for every point fit the multiprocessors); whether the stages
 * of P (planned for that many) run as the cluster kernel (no stage keeps
 * state outside its outputs, and the rule of KBC_CLUSTER); the helpers,
 * once, before the stages (C->slots set: the slots' dynamic shared
 * memory apart); the kernel (out->name set; as many clusters as
 * sm_count multiprocessors hold, at most one a point), which fills out. */
int cg_cluster_size(const cg_target *t, int64_t points);
int cg_cluster_pays(const cg_target *t, const cg_persist *P);
/* The tasks a block runs at once (KBC_CLUSTER_SLOTS, at most 1,024 threads). */
int cg_cluster_slots(const cg_target *t, const cg_persist *P);
void cg_cluster_helpers(cg_ctx *C, const cg_persist *P);
void cg_emit_cluster(cg_ctx *C, const cg_persist *P, const cg_batch *B, int cluster, int sm_count, cg_kernel *out);

/* gemm_emit.c: the TF32 mma.sync helpers kbc_tf32 and kbc_mma_tf32 (and
 * with split, kbc_split_tf32 for 3xTF32), each once per translation unit
 * (guarded by #ifndef). */
void cg_emit_mma_helpers(kbc_buf *out, int split);
/* async.c: the cp.async helpers (kbc_cp_async4/16, kbc_cp_commit,
 * kbc_cp_wait<N>, kbc_smem_u32, kbc_lds, KBC_DYNAMIC_SMEM),
 * once per translation unit. */
void cg_emit_async_helpers(kbc_buf *out);

/* The first reduction at the top of e (through arithmetic and where(), not
 * into another reduction: ir_top_reductions), or NULL: the one a team or
 * the grid splits.
 * Every top reduction is computed before the value, whichever branch of a
 * where() takes it, so one under a where() splits as well as any; the
 * others were moved to statements of their own (passes/hoist.c) unless
 * short. */
const ir_expr *cg_top_reduce(const ir_expr *e);
/* sched_point.c: the blocks of a point's grid (a block per chunk of the
 * reduction's terms) as a sym, or NULL when it cannot be formed. */
sym *cg_point_blocks(kbc_arena *a, const ir_stmt *s);

#endif
