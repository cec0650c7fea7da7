/* arena.c — chunked bump allocator; see arena.h. */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK_MIN = 64 * 1024 };

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} chunk;

struct kbc_arena {
  chunk *head;
};

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fputs("kbc: out of memory\n", stderr);
    abort();
  }
  return p;
}

kbc_arena *kbc_arena_create(void) {
  kbc_arena *a = xmalloc(sizeof *a);
  a->head = NULL;
  return a;
}

void kbc_arena_destroy(kbc_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *kbc_arena_alloc(kbc_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  chunk *c = a->head;
  if (!c || c->cap - c->used < size) {
    size_t cap = size > CHUNK_MIN ? size : CHUNK_MIN;
    if (cap > SIZE_MAX - sizeof(chunk)) {
      fputs("kbc: out of memory\n", stderr);
      abort();
    }
    c = xmalloc(sizeof(chunk) + cap);
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

void *kbc_arena_grow(kbc_arena *a, void *old, size_t old_size, size_t new_size) {
  void *p = kbc_arena_alloc(a, new_size);
  if (old && old_size) memcpy(p, old, old_size < new_size ? old_size : new_size);
  return p;
}

char *kbc_arena_strndup(kbc_arena *a, const char *s, size_t n) {
  char *p = kbc_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *kbc_arena_strdup(kbc_arena *a, const char *s) {
  return kbc_arena_strndup(a, s, strlen(s));
}

char *kbc_arena_printf(kbc_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = kbc_arena_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

void kbc_vec_push(kbc_arena *a, kbc_vec *v, void *item) {
  if (v->len == v->cap) {
    int cap = v->cap ? v->cap * 2 : 8;
    v->items = kbc_arena_grow(a, v->items, sizeof(void *) * (size_t)v->cap,
                              sizeof(void *) * (size_t)cap);
    v->cap = cap;
  }
  v->items[v->len++] = item;
}
