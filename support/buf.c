/* buf.c — see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(kbc_buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    fputs("kbc: out of memory\n", stderr);
    abort();
  }
  b->data = p;
  b->cap = cap;
}

void kbc_buf_putn(kbc_buf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void kbc_buf_puts(kbc_buf *b, const char *s) { kbc_buf_putn(b, s, strlen(s)); }

void kbc_buf_putc(kbc_buf *b, char c) { kbc_buf_putn(b, &c, 1); }

void kbc_buf_printf(kbc_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void kbc_buf_vprintf(kbc_buf *b, const char *fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n < 0) return;
  reserve(b, (size_t)n);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

const char *kbc_buf_str(const kbc_buf *b) { return b->data ? b->data : ""; }

void kbc_buf_free(kbc_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}
