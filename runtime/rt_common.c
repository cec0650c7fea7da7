/* rt_common.c — see rt_common.h. */
#include "rt_common.h"

#include "support/env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void rt_blob_free(rt_blob *b) {
  free(b->data);
  b->data = NULL;
  b->len = 0;
}

void rt_blob_set(rt_blob *b, const void *p, size_t n) {
  unsigned char *d = malloc(n + 1);
  if (!d) {
    fputs("kbc: out of memory\n", stderr);
    abort();
  }
  if (n) memcpy(d, p, n);
  d[n] = 0;
  free(b->data);
  b->data = d;
  b->len = n;
}

int rt_debug_level(void) {
  int v = kbc_env_int("KBC_DEBUG", 0, 99, 0); /* levels past 4 are 4 */
  return v > 4 ? 4 : v;
}

/* The formatted message as a fresh heap string. */
static char *vformat(const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *s = malloc(n < 0 ? 1 : (size_t)n + 1);
  if (!s) {
    fputs("kbc: out of memory\n", stderr);
    abort();
  }
  if (n < 0) s[0] = 0;
  else vsnprintf(s, (size_t)n + 1, fmt, again);
  va_end(again);
  return s;
}

void rt_debug(int level, const char *fmt, ...) {
  if (level > rt_debug_level()) return;
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  kbc_buf line = {0};
  kbc_buf_printf(&line, "kbc: %s\n", s);
  fputs(line.data, stderr); /* one write per line, so that threads' lines do not mix */
  kbc_buf_free(&line);
  free(s);
}

void rt_buf_clear(kbc_buf *b) {
  if (!b) return;
  b->len = 0;
  if (b->data) b->data[0] = 0;
}

int rt_read_file(const char *path, size_t max_bytes, rt_blob *out, rt_err *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return rt_fail(err, RT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return rt_fail(err, RT_ERR_IO, "%s is not a regular file", path);
  }
  if ((unsigned long long)st.st_size > max_bytes) {
    close(fd);
    return rt_fail(err, RT_ERR_IO, "%s is too large (%lld bytes)", path, (long long)st.st_size);
  }
  size_t n = (size_t)st.st_size, got = 0;
  unsigned char *d = malloc(n + 1);
  if (!d) {
    close(fd);
    return rt_fail(err, RT_ERR_MEMORY, "out of memory reading %s", path);
  }
  while (got < n) {
    ssize_t k = read(fd, d + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  if (got != n) {
    free(d);
    return rt_fail(err, RT_ERR_IO, "cannot read %s: short read", path);
  }
  d[n] = 0;
  rt_blob_free(out);
  out->data = d;
  out->len = n;
  return 0;
}

double rt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
