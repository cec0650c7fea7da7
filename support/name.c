/* name.c — see name.h. */
#include "name.h"

#include <string.h>

char *kbc_name_sanitize(char *s, const char *keep) {
  for (char *p = s; *p; p++) {
    char c = *p;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(keep, c);
    if (!ok) *p = '_';
  }
  return s;
}

char *kbc_name_from_path(kbc_arena *a, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  return kbc_name_sanitize(kbc_arena_strndup(a, base, n), KBC_NAME_IDENT);
}
