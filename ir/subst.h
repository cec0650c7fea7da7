/* subst.h — simultaneous substitution of index variables in syms and
 * expression trees (used by the passes that rewrite statements: inline,
 * gather), and the queries on expression trees that passes and codegen
 * share (what an expression mentions, reads, holds; whether two are the
 * same).
 *
 * by[id] (for old index ids 0..n_old) is the sym that replaces index id;
 * every replacement may mention only the *new* statement's index ids.  The
 * substitution is simultaneous: a replacement is never substituted again.
 * red_map[id] gives the new id of an old reduction index (for REDUCE
 * nodes' variable lists); -1 where the index is not a reduction index.
 * by == NULL / red_map == NULL leave indices / reduction lists as they are
 * (a plain deep copy). */
#ifndef KBC_SUBST_H
#define KBC_SUBST_H

#include "ir.h"

sym *ir_sym_subst(kbc_arena *a, const sym *x, int n_old, sym *const *by);
/* A deep copy of e with the substitution applied; NULL on overflow. */
ir_expr *ir_expr_subst(kbc_arena *a, const ir_expr *e, int n_old, sym *const *by, const int *red_map);
/* Sets mark[v] for every variable of every reduction in e. */
void ir_mark_reduce_vars(const ir_expr *e, unsigned char *mark);
/* Drops the reduction indices of s that no reduction in it ranges over any
 * more (they moved out with their reductions; one may range over an index
 * its body never reads, `sum(r < b: x[0])`), renumbering the others. */
void ir_stmt_drop_stale_indices(kbc_arena *a, ir_stmt *s);
/* Whether e mentions index variable id anywhere (loads, index values). */
int ir_expr_mentions_index(const ir_expr *e, int id);
/* Whether e loads from tensor t anywhere. */
int ir_expr_reads(const ir_expr *e, const ir_tensor *t);
/* Whether the node x is e or inside it (the same node, not an equal one). */
int ir_expr_holds(const ir_expr *e, const ir_expr *x);
/* Whether e holds a reduction anywhere; how many. */
int ir_expr_has_reduce(const ir_expr *e);
int ir_expr_count_reduce(const ir_expr *e);
/* Sets read[t] for every tensor t that e loads. */
void ir_expr_mark_loads(const ir_expr *e, unsigned char *read);
/* Whether e is a load (not padded) whose every index is a plain index
 * variable, no two the same; their ids into ids[] (NULL: not wanted; else
 * room for the tensor's rank). */
int ir_load_plain(const ir_expr *e, int *ids);
/* Whether x and y, two expressions of statement s, compute the same
 * values: the same tree up to the names of their reductions' variables
 * (corresponding variables of equal extents; sum(k: a[i, k]) and
 * sum(k2: a[i, k2]) are the same). */
int ir_expr_same(kbc_arena *a, const ir_stmt *s, const ir_expr *x, const ir_expr *y);
/* The ranges of s's indices, [0, extent - 1] each, as sym_bounds takes
 * them (arrays of s->n_index in a). */
void ir_index_ranges(kbc_arena *a, const ir_stmt *s, sym ***lo, sym ***hi);
/* Whether index expression x (over n indices in [lo, hi]) stays inside
 * [0, size) for every binding satisfying facts f (NULL: every axis >= 1
 * only): 1 proven, 0 not proven, -1 x is not quasi-affine; its bounds in
 * *blo, *bhi unless -1. */
int ir_index_in_bounds(kbc_arena *a, const sym_facts *f, const sym *x, int n, sym *const *lo, sym *const *hi,
                       const sym *size, sym **blo, sym **bhi);
/* Nodes in e (for size limits). */
int ir_expr_size(const ir_expr *e);

#endif
