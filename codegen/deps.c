/* deps.c — the order a program's kernels need among themselves.
 *
 * Before: a program's kernels planned (their statements, tensors and
 * scratch known).  After cg_kernel_deps(): per kernel, the earlier kernels
 * it must run after (cg_kernel.after) — those that write what it reads, or
 * read or write what it writes — with the dependencies that others imply
 * left out, and the region of the workspace's scratch each kernel taking
 * scratch uses (cg_kernel.scratch_slot): a region shared only by kernels
 * already ordered, so that two independent GEMMs split over K need not
 * wait for each other (a new region while there are fewer than
 * CG_SCRATCH_SLOTS, else an extra wait for the region's last kernel).  A
 * kernel's zero-fill and its operands' copies are its own writes.
 * Nothing else is shared between kernels: each keeps its own module state
 * (split-K's and the point family's counters are named after the kernel).
 * Within a persistent kernel (persist.c) the scratch is one tensor that
 * every stage taking it writes (cg_kernel_access).
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

/* Step k (its reach r: r[i] set where it waits for step i, transitively)
 * waits for step j: j added to its list aft, j's own reach to r. */
static void wait_for(const unsigned char *reach, int n, unsigned char *r, int *aft, int *na, int j) {
  aft[(*na)++] = j;
  r[j] = 1;
  const unsigned char *rj = reach + (size_t)j * n;
  for (int i = 0; i < j; i++) r[i] |= rj[i];
}

/* cg_order's work; where takes is given, a slot per step taking scratch
 * (takes[k]) as cg_kernel.scratch_slot says, in slot[k] (left as it is
 * for the others). */
static void order(kbc_arena *a, unsigned char *const *rw, int n, int nt, const unsigned char *takes, int *slot,
                  const int **after, int *n_after) {
  unsigned char *reach = KBC_NEW_ARRAY(a, unsigned char, (size_t)n * n + 1); /* [k][j]: k waits for j, transitively */
  int last[CG_SCRATCH_SLOTS], n_slots = 0; /* per slot, the last step in it */
  for (int k = 0; k < n; k++) {
    unsigned char *r = reach + (size_t)k * n;
    int *aft = KBC_NEW_ARRAY(a, int, k + 2), na = 0;
    for (int j = k - 1; j >= 0; j--) {
      if (r[j] || !cg_access_conflict(rw[j], rw[k], nt)) continue; /* implied by a later one, or none */
      wait_for(reach, n, r, aft, &na, j);
    }
    if (takes && takes[k]) {
      int s = 0;
      while (s < n_slots && !r[last[s]]) s++; /* a slot whose steps all come before k */
      if (s == n_slots && n_slots < CG_SCRATCH_SLOTS) n_slots++;
      else if (s == n_slots) { /* none: k waits for the latest slot's last step */
        s = 0;
        for (int t = 1; t < n_slots; t++)
          if (last[t] > last[s]) s = t;
        wait_for(reach, n, r, aft, &na, last[s]);
      }
      last[s] = k;
      slot[k] = s;
    }
    for (int i = 1; i < na; i++) /* ascending */
      for (int m = i; m > 0 && aft[m - 1] > aft[m]; m--) {
        int x = aft[m];
        aft[m] = aft[m - 1];
        aft[m - 1] = x;
      }
    after[k] = aft;
    n_after[k] = na;
  }
}

void cg_order(kbc_arena *a, unsigned char *const *rw, int n, int nt, const int **after, int *n_after) {
  order(a, rw, n, nt, NULL, NULL, after, n_after);
}

void cg_kernel_deps(kbc_arena *a, const ir_program *p, cg_kernel *ks, int n) {
  int nt = p->tensors.len; /* the tensors alone: the scratch by slots */
  unsigned char **rw = KBC_NEW_ARRAY(a, unsigned char *, n + 1);
  unsigned char *takes = KBC_NEW_ARRAY(a, unsigned char, n + 1);
  int *slot = KBC_NEW_ARRAY(a, int, n + 1); /* zeroed: kernels without scratch keep 0 */
  const int **after = KBC_NEW_ARRAY(a, const int *, n + 1);
  int *n_after = KBC_NEW_ARRAY(a, int, n + 1);
  for (int k = 0; k < n; k++) {
    rw[k] = KBC_NEW_ARRAY(a, unsigned char, nt + 1);
    cg_kernel_access(p, &ks[k], rw[k]);
    takes[k] = (unsigned char)cg_kernel_takes_scratch(&ks[k]);
  }
  order(a, rw, n, nt, takes, slot, after, n_after);
  for (int k = 0; k < n; k++) {
    ks[k].after = after[k];
    ks[k].n_after = n_after[k];
    ks[k].scratch_slot = slot[k];
  }
}
