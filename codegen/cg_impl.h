/* cg_impl.h — internals shared by the code generator's files:
 * group.c (fusion groups and contraction analysis), emit.c (names, index
 * arithmetic and expressions as C), sched_rows.c, sched_gemm.c,
 * sched_scatter.c (the schedule families) and cg.c (the driver). */
#ifndef KBC_CG_IMPL_H
#define KBC_CG_IMPL_H

#include "ir/cost.h"
#include "ir/ir.h"
#include "cg.h"

enum { CG_MAX_OUTER = 8, CG_BLOCK = 256, CG_MAX_HOISTED = 16 };

/* ---- fusion groups (group.c) ---- */

typedef struct {
  cg_family family;
  int first, count;            /* consecutive statements */
  int n_outer;                 /* ROWS: the outer dimensions */
  sym *outer_extent[CG_MAX_OUTER];
  int *phi;                    /* ROWS: phi[k * CG_MAX_OUTER + j] = index id of statement
                                  first+k mapped to outer dimension j */
  int team;                    /* ROWS: threads per outer point (power of 2, <= CG_BLOCK) */
} cg_group;

int cg_make_groups(kbc_arena *a, const ir_program *p, const cg_target *t, cg_group **out);

/* A statement `out[...] = epilogue(sum(k...: A * B))` seen as a (batched)
 * matrix product: index ids of its M (only in A), N (only in B), batch (in
 * both) free indices and of the K (reduction) indices. */
typedef struct {
  const ir_expr *reduce;    /* the main sum */
  const ir_expr *a, *b;     /* its two factors (A carries M, B carries N) */
  int n_m, m[CG_MAX_OUTER], n_n, n[CG_MAX_OUTER], n_b, bat[CG_MAX_OUTER], n_k, k[CG_MAX_OUTER];
  double est_macs;          /* estimated work with every var axis at IR_EST_VAR */
} cg_contraction;

/* Work estimates take every var axis as IR_EST_VAR; a rows group keeps at
 * least CG_MIN_OUTER estimated outer points when it can. */
enum { CG_MIN_OUTER = 4096, CG_JOIN_DROP = 1024 };
/* Groups of a single point (no outer dimension) with more than one
 * statement: each statement's points times (1 + its reduction terms), all
 * extents constant, at most this. */
enum { CG_POINT_WORK = 1 << 15 };
int cg_find_contraction(kbc_arena *a, const ir_stmt *s, cg_contraction *c);
/* The flat element offset of t[idx]; whether a load's offset moves by one
 * element when index `id` of s steps by one (every var axis at IR_EST_VAR,
 * the other indices at 0); whether some load in e does; and whether an
 * offset steps by exactly one along the flattened indices ids[0..n) (the
 * last fastest: its coefficients are 1, then the products of the extents
 * after each). */
sym *cg_flat_offset(kbc_arena *a, const ir_tensor *t, sym *const *idx);
int cg_load_unit_step(kbc_arena *a, const ir_stmt *s, const ir_expr *load, int id);
int cg_reads_contiguously(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int id);
int cg_offset_contiguous(kbc_arena *a, const ir_stmt *s, const sym *off, const int *ids, int n);
/* Whether off depends on the indices ids[0..n) of s only through their
 * flattening f = (..(i0*E1 + i1)*E2 + ..) (the last fastest), checked
 * symbolically; if so, off with i0..i(n-2) at zero, in which i(n-1) stands
 * for f (a flattened space addressed without its digits); else NULL. */
sym *cg_collapse(kbc_arena *a, const ir_stmt *s, const sym *off, const int *ids, int n);

/* ---- emission (emit.c) ---- */

/* C names of the program's tensors (by id) and var axes (by var_id). */
typedef struct {
  const char **tensor, **axis;
  int n_tensors, n_axes;
} cg_names;

cg_names *cg_names_make(kbc_arena *a, const ir_program *p);

typedef struct {
  kbc_arena *a;
  const ir_program *p;
  const cg_options *opt;   /* the target's switches */
  const cg_names *names;
  const ir_stmt *s;        /* statement being emitted */
  kbc_buf *out;
  int indent;
  const char **idx;        /* C names of s's index variables */
  int tmp;                 /* fresh-name counter */
  /* Cooperative reduction (ROWS): this REDUCE node is split over a team. */
  const ir_expr *coop;
  int team;
  /* Cooperative reductions: the lane variable and the shuffle mask. */
  const char *lane, *mask;
  /* Partial cooperative reduction (set by the caller, which combines the
   * parts): the coop reduction's flat loop starts at part_start and steps
   * by part_step (C expressions), and its value is this thread's part. */
  const char *part_start, *part_step;
  /* This node is already computed: cg_expr gives `value` for it (GEMM
   * epilogues: the main sum is the tile's accumulator). */
  const ir_expr *known;
  const char *known_value;
  /* Values computed before the loop being emitted (cg_hoist_invariants,
   * cg_flat_loop): cg_expr gives hoisted_name[i] for hoisted[i]. */
  int n_hoisted;
  const ir_expr *hoisted[CG_MAX_HOISTED];
  const char *hoisted_name[CG_MAX_HOISTED];
  unsigned char hoisted_recip[CG_MAX_HOISTED]; /* a division x / d: x times the reciprocal named */
  /* Flattened index spaces addressed without their digits (GEMM
   * epilogues): cg_offset gives flat offsets through cg_collapse, the last
   * index of each space standing for the flat coordinate. */
  int n_flat;
  const int *flat_ids[2];
  int flat_n[2];
  const unsigned char *written; /* per tensor id: written by this kernel (its loads go through __ldca) */
} cg_emit;

/* Gives every index of s a C name distinct from tensors, axes, keywords. */
const char **cg_index_names(kbc_arena *a, const cg_names *names, const ir_stmt *s);

void cg_line(cg_emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cg_sym(cg_emit *E, const sym *x);                /* a long long C expression */
const char *cg_offset(cg_emit *E, const ir_tensor *t, sym *const *idx); /* flat element offset */
const char *cg_in_bounds(cg_emit *E, const ir_tensor *t, sym *const *idx);
/* The C expression of e (emitting loops for reductions before it). */
const char *cg_expr(cg_emit *E, const ir_expr *e);
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
                  const ir_expr *const *body, int n_body);
void cg_flat_loop_end(cg_emit *E, const cg_flat *L);
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
const char *cg_float_literal(kbc_arena *a, double v);
/* acc combined with v by reduction op (a C expression). */
const char *cg_combine(cg_emit *E, ir_red op, const char *acc, const char *v);
/* Combines the float variable acc across the team of E->team threads
 * (shuffles within a warp, E->mask or _mask; for a whole block also the
 * shared array _red[32] and two barriers): after it, every thread of the
 * team holds the team's value. */
void cg_team_combine(cg_emit *E, ir_red op, const char *acc);
/* The IR statement as a one-line C comment body. */
const char *cg_stmt_comment(kbc_arena *a, const ir_stmt *s);

/* Kernel signature: tensors used by statements [first, first+count);
 * __launch_bounds__(block) or, for min_blocks > 1, (block, min_blocks).
 * Returns, per tensor id, whether the kernel writes it (for cg_emit.written). */
int cg_collect_tensors(kbc_arena *a, const ir_program *p, int first, int count, int **ids);
const unsigned char *cg_signature(kbc_buf *out, kbc_arena *a, const ir_program *p, const cg_names *names,
                                  const char *name, int block, int min_blocks, int n_tensors, const int *ids,
                                  int first, int count);

/* ---- schedule families ---- */
/* Each fills k (name is set by the caller) and appends the kernel's text.
 * Returns 0 when the group cannot be emitted by this family. */
typedef struct {
  kbc_arena *a;
  const ir_program *p;
  const cg_target *t;
  const cg_names *names;
  kbc_buf *out;
} cg_ctx;

int cg_emit_rows(cg_ctx *C, const cg_group *g, cg_kernel *k);
/* The reduction at the top of e (through arithmetic, not where()), or NULL. */
const ir_expr *cg_top_reduce(const ir_expr *e);
/* sched_point.c: a rows group of one statement without free indices whose
 * value is a block-wide reduction, split across the grid; 0 when g is not
 * such a group (cg_emit_rows then emits it). */
int cg_emit_point(cg_ctx *C, const cg_group *g, cg_kernel *k);
int cg_emit_gemm(cg_ctx *C, const cg_group *g, cg_kernel *k);
int cg_emit_scatter(cg_ctx *C, const cg_group *g, cg_kernel *k);

#endif
