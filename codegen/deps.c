/* deps.c — the order a program's kernels need among themselves.
 *
 * Before: a program's kernels planned (their statements, tensors and
 * scratch known).  After cg_kernel_deps(): per kernel, the earlier kernels
 * it must run after (cg_kernel.after) — those that write what it reads, or
 * read or write what it writes — with the dependencies that others imply
 * left out.  A kernel's zero-fill and its operands' copies are its own
 * writes; the workspace's scratch region is one tensor that every kernel
 * taking it writes (they all use it from its start).  Nothing else is
 * shared between kernels: each keeps its own module state (split-K's and
 * the point family's counters are named after the kernel).
 *
 * The runtime captures its CUDA graph with these edges only (exec.c,
 * capture_branches), so kernels that do not depend on each other may run
 * side by side; the persistent kernel's stages wait on the same relation
 * (persist.c). */
#include "cg_impl.h"

static void mark_reads(const ir_expr *e, unsigned char *rw) {
  if (e->op == IR_OP_LOAD) rw[e->u.load.tensor->id] |= 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) mark_reads(e->arg[i], rw);
}

void cg_kernel_access(const ir_program *p, const cg_kernel *k, unsigned char *rw) {
  for (int i = k->first; i < k->first + k->count; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    mark_reads(s->rhs, rw);
    rw[s->out->id] |= s->accumulate ? 3 : 2;
  }
  if (k->zero_tensor >= 0) rw[k->zero_tensor] |= 2;
  if (cg_kernel_takes_scratch(k)) rw[p->tensors.len] = 3;
}

int cg_access_conflict(const unsigned char *a, const unsigned char *b, int n) {
  for (int i = 0; i < n; i++)
    if (((a[i] & 2) && b[i]) || ((b[i] & 2) && a[i])) return 1;
  return 0;
}

void cg_order(kbc_arena *a, unsigned char *const *rw, int n, int nt, const int **after, int *n_after) {
  unsigned char *reach = KBC_NEW_ARRAY(a, unsigned char, (size_t)n * n + 1); /* [k][j]: k waits for j, transitively */
  for (int k = 0; k < n; k++) {
    unsigned char *r = reach + (size_t)k * n;
    int *aft = KBC_NEW_ARRAY(a, int, k + 1), na = 0;
    for (int j = k - 1; j >= 0; j--) {
      if (r[j] || !cg_access_conflict(rw[j], rw[k], nt)) continue; /* implied by a later one, or none */
      aft[na++] = j;
      r[j] = 1;
      const unsigned char *rj = reach + (size_t)j * n;
      for (int i = 0; i < j; i++) r[i] |= rj[i];
    }
    for (int i = 0; i < na / 2; i++) { /* ascending */
      int x = aft[i];
      aft[i] = aft[na - 1 - i];
      aft[na - 1 - i] = x;
    }
    after[k] = aft;
    n_after[k] = na;
  }
}

void cg_kernel_deps(kbc_arena *a, const ir_program *p, cg_kernel *ks, int n) {
  int nt = p->tensors.len + 1; /* the scratch last */
  unsigned char **rw = KBC_NEW_ARRAY(a, unsigned char *, n + 1);
  const int **after = KBC_NEW_ARRAY(a, const int *, n + 1);
  int *n_after = KBC_NEW_ARRAY(a, int, n + 1);
  for (int k = 0; k < n; k++) {
    rw[k] = KBC_NEW_ARRAY(a, unsigned char, nt);
    cg_kernel_access(p, &ks[k], rw[k]);
  }
  cg_order(a, rw, n, nt, after, n_after);
  for (int k = 0; k < n; k++) {
    ks[k].after = after[k];
    ks[k].n_after = n_after[k];
  }
}
