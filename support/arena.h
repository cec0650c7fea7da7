/* arena.h — bump allocator owning every object of one compilation.
 *
 * Before: nothing.  After kbc_arena_destroy(): every pointer obtained from
 * the arena is invalid.  Allocation never returns NULL: running out of
 * memory aborts with a message (the one place kbc gives up, as Lua does). */
#ifndef KBC_ARENA_H
#define KBC_ARENA_H

#include <stddef.h>

typedef struct kbc_arena kbc_arena;

kbc_arena *kbc_arena_create(void);
void kbc_arena_destroy(kbc_arena *a);
void *kbc_arena_alloc(kbc_arena *a, size_t size);          /* zeroed, 16-byte aligned */
void *kbc_arena_grow(kbc_arena *a, void *old, size_t old_size, size_t new_size);
char *kbc_arena_strdup(kbc_arena *a, const char *s);
char *kbc_arena_strndup(kbc_arena *a, const char *s, size_t n);
char *kbc_arena_printf(kbc_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A growable array of pointers living in an arena. */
typedef struct {
  void **items;
  int len, cap;
} kbc_vec;

void kbc_vec_push(kbc_arena *a, kbc_vec *v, void *item);
#define KBC_VEC_AT(v, T, i) ((T *)(v).items[(i)])

#define KBC_NEW(a, T) ((T *)kbc_arena_alloc((a), sizeof(T)))
#define KBC_NEW_ARRAY(a, T, n) ((T *)kbc_arena_alloc((a), sizeof(T) * (size_t)(n)))

#endif
