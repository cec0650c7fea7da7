/* special.h — a program's kernels specialized for the sizes it runs at.
 *
 * Code generated for var axes decides its schedules (family, tiles,
 * split-K, fusion) on estimated extents; a program re-lowered with every
 * var axis a constant of the binding's value decides them on exact ones,
 * as for a spec of constant axes, and folds the sizes into the code.
 * With KBC_SPECIALIZE=N (N >= 1) the runtime does this at the first launch
 * of each of the first N distinct bindings of a program (the var axes'
 * values), keeps the executor and reuses it whenever that binding comes
 * again; other bindings run the generic code.  Each specialized program is
 * checked by the same passes, its kernels compiled through the same cache.
 *
 * Before: a spec's source text, its name, and its generic program (checked,
 * made from that text).  After rt_special_find: an executor for the
 * binding, or NULL (the limit is reached: run the generic code).
 * rt_special_destroy releases every executor and program it made. */
#ifndef KBC_RUNTIME_SPECIAL_H
#define KBC_RUNTIME_SPECIAL_H

#include "exec.h"
#include "rt_err.h"

typedef struct rt_special rt_special;

/* How many bindings a program specializes: KBC_SPECIALIZE (0..1024), else
 * RT_SPECIALIZE_DEFAULT. */
enum { RT_SPECIALIZE_DEFAULT = 16 };
int rt_special_limit_from_env(void);

/* One binding's specialization. */
typedef struct {
  rt_exec *exec;
  const ir_program *p;   /* the specialized program: no var axes */
  ir_binding b;          /* its binding */
  const int *tensor_of;  /* by the generic program's tensor id: p's id of the same input or output, -1 */
} rt_specialized;

/* limit: the number of bindings specialized at most (0: none).  NULL when
 * out of memory. */
rt_special *rt_special_create(const char *source, const char *name, int limit);
void rt_special_destroy(rt_special *s);
int rt_special_limit(const rt_special *s);

/* The executor of generic's kernels specialized for binding b (made at the
 * first call for b), in *out, or *out = NULL when b is not specialized (the
 * limit is reached).  -1 with a message in err when making it failed. */
int rt_special_find(rt_special *s, const ir_program *generic, const ir_binding *b, int device, const char *arch,
                    cg_precision precision, const char *config, const rt_specialized **out, rt_err *err);

/* The specialized program for b alone, without a GPU (`kbc compile --emit
 * ... --specialize`): NULL with diagnostics in d on failure. */
ir_program *rt_specialize(kbc_arena *a, kbc_diag *d, const char *source, const char *name,
                          const ir_program *generic, const int64_t *vars);

#endif
