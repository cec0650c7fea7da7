/* exec.h — running a program's generated kernels on a GPU.
 *
 * Before: a checked IR program.  rt_exec_create opens the device, generates
 * the CUDA C for the device's properties (codegen/), compiles it through
 * the kernel cache (NVRTC), and loads the module.  rt_exec_launch then
 * queues the kernels for one binding on a stream: temporaries are placed
 * in a device workspace owned by the rt_exec (grown when a binding needs
 * more), scatter targets are zeroed first, and every kernel gets its
 * tensors and the var axes.  With KBC_IDX32 on, a binding whose indices
 * all fit an int (ir_binding_fits_i32) runs the 32-bit index variant of the
 * same kernels (compiled and loaded at its first such launch, var axes then
 * passed as int).  rt_exec_destroy releases everything. */
#ifndef KBC_RUNTIME_EXEC_H
#define KBC_RUNTIME_EXEC_H

#include "codegen/cg.h"
#include "ir/bind.h"
#include "device.h"

typedef struct rt_exec rt_exec;

/* arch: "auto" or NULL for the device's own; config: the code generation
 * switches instead of p's tune record (runtime/tune.h), or NULL. */
int rt_exec_create(const ir_program *p, int device, const char *arch, cg_precision precision, const char *config,
                   rt_exec **out, rt_err *err);
void rt_exec_destroy(rt_exec *x);
rt_device *rt_exec_device(rt_exec *x);
const cg_program *rt_exec_code(const rt_exec *x);

/* tensors[t->id]: device pointers of the inputs and outputs (temporaries
 * are ignored and filled in from the workspace). */
int rt_exec_launch(rt_exec *x, const ir_binding *b, const rt_dptr *tensors, void *stream, rt_err *err);

/* Temporaries that some kernel of g takes live in one workspace, each at
 * a multiple of RT_WORKSPACE_ALIGN bytes (a temporary no kernel takes
 * stays on chip: a fused attention's scores).  rt_workspace_members sets
 * in_ws[t->id] (p->tensors.len entries) for exactly those, once per
 * generated program.  rt_workspace_layout returns the workspace's size
 * for binding b and, when offset is not NULL, stores each member's byte
 * offset at offset[t->id] (other entries untouched): the layout the
 * launches use and `kbc compile --emit plan` reports.  After the members,
 * the kernels' scratch (cg_kernel_scratch: split-K's partial sums,
 * operands' copies) at *scratch_at, *scratch_bytes long (0: none): a
 * region per scratch slot (cg_kernel.scratch_slot), each as large as the
 * largest of its kernels' and starting slot_at[slot] bytes into it
 * (slot_at: CG_SCRATCH_SLOTS entries, or NULL).  (size_t)-1 when a
 * kernel's scratch cannot be evaluated (its sizes overflow). */
enum { RT_WORKSPACE_ALIGN = 256 };
void rt_workspace_members(const ir_program *p, const cg_program *g, unsigned char *in_ws);
size_t rt_workspace_layout(const ir_program *p, const cg_program *g, const unsigned char *in_ws, const ir_binding *b,
                           size_t *offset, size_t *scratch_at, size_t *scratch_bytes, size_t *slot_at);

/* The target of a device (or the default H200-like one for dev == NULL)
 * at precision, with the code generation switches opt (rt_exec_create and
 * kbc_program_emit pass rt_tune_options's: the environment's over a tune
 * record or config, runtime/tune.h). */
cg_target rt_exec_target(const rt_device_props *props, cg_precision precision, cg_options opt);

#endif
