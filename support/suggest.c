/* suggest.c — see suggest.h. */
#include "suggest.h"

#include <string.h>

enum { MAX_LEN = 64 };

int kbc_edit_distance(const char *a, const char *b, int limit) {
  size_t n = strlen(a), m = strlen(b);
  if (n > MAX_LEN || m > MAX_LEN) return limit + 1;
  if ((n > m ? n - m : m - n) > (size_t)limit) return limit + 1;
  /* three rows of the optimal-string-alignment table */
  int rows[3][MAX_LEN + 1];
  int *pp = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= m; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    cur[0] = (int)i;
    int lo = cur[0];
    for (size_t j = 1; j <= m; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = prev[j - 1] + cost;
      if (prev[j] + 1 < v) v = prev[j] + 1;
      if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v) v = pp[j - 2] + 1;
      cur[j] = v;
      if (v < lo) lo = v;
    }
    if (lo > limit) return limit + 1;
    int *t = pp;
    pp = prev;
    prev = cur;
    cur = t;
  }
  return prev[m] <= limit ? prev[m] : limit + 1;
}

static int allowed(const char *word) {
  size_t n = strlen(word);
  return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

void kbc_suggest_init(kbc_suggest *s, const char *word) {
  s->word = word;
  s->best = NULL;
  s->dist = allowed(word) + 1;
  s->tied = 0;
}

void kbc_suggest_add(kbc_suggest *s, const char *candidate) {
  if (!candidate || !strcmp(candidate, s->word)) return;
  int d = kbc_edit_distance(s->word, candidate, s->dist);
  if (d >= (int)strlen(s->word)) return; /* `x` is not a misspelling of `y` */
  if (d < s->dist) {
    s->best = candidate;
    s->dist = d;
    s->tied = 0;
  } else if (d == s->dist && s->best && strcmp(s->best, candidate)) {
    s->tied = 1;
  }
}

const char *kbc_suggest_best(const kbc_suggest *s) { return s->best && !s->tied ? s->best : NULL; }
