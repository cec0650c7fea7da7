/* env.c — the environment switches' one reading rule; see env.h.
 *
 * Before: any environment.  After: values parsed by the rule of env.h; an
 * invalid value is reported on stderr ("kbc: warning: ...") the first time
 * its variable is read with that value, and the default used. */
#include "env.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int kbc_parse_flag(const char *s, int *on) {
  static const char *const yes[] = {"1", "yes", "on", "true"}, *const no[] = {"0", "no", "off", "false"};
  if (!s) return 0;
  for (int i = 0; i < 4; i++) {
    if (!strcasecmp(s, yes[i])) return *on = 1, 1;
    if (!strcasecmp(s, no[i])) return *on = 0, 1;
  }
  return 0;
}

int kbc_parse_int(const char *s, long long lo, long long hi, long long *v) {
  if (!s) return 0;
  const char *digits = s + (*s == '+' || *s == '-');
  if (*digits < '0' || *digits > '9') return 0; /* no white space, no empty digits */
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || *end || x < lo || x > hi) return 0;
  *v = x;
  return 1;
}

/* ---- warnings, once per variable and value ------------------------------- */

enum { WARNED_MAX = 64, WARNED_LEN = 160 };
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static char warned[WARNED_MAX][WARNED_LEN];
static int n_warned;

/* Whether "name=value" is warned about for the first time (recorded). */
static int first_warning(const char *name, const char *value) {
  char key[WARNED_LEN];
  snprintf(key, sizeof key, "%s=%s", name, value);
  int first = 1;
  pthread_mutex_lock(&warned_lock);
  for (int i = 0; i < n_warned && first; i++) first = strcmp(warned[i], key) != 0;
  if (first && n_warned < WARNED_MAX) memcpy(warned[n_warned++], key, sizeof key);
  pthread_mutex_unlock(&warned_lock);
  return first;
}

static void warn_invalid(const char *name, const char *value, const char *want, const char *dflt) {
  if (!first_warning(name, value)) return;
  char line[512]; /* one write, so that threads' lines do not mix */
  snprintf(line, sizeof line, "kbc: warning: ignoring %s='%.200s' (want %s); using the default, %s\n", name, value,
           want, dflt);
  fputs(line, stderr);
}

/* ---- the switches ------------------------------------------------------- */

int kbc_env_flag(const char *name, int dflt) {
  const char *s = kbc_env_str(name);
  int on;
  if (!s) return dflt;
  if (kbc_parse_flag(s, &on)) return on;
  warn_invalid(name, s, "1, yes, on, true or 0, no, off, false", dflt ? "on" : "off");
  return dflt;
}

int kbc_env_int(const char *name, int lo, int hi, int dflt) {
  const char *s = kbc_env_str(name);
  long long v;
  if (!s) return dflt;
  if (kbc_parse_int(s, lo, hi, &v)) return (int)v;
  char want[64], d[16];
  snprintf(want, sizeof want, "an integer in %d..%d", lo, hi);
  snprintf(d, sizeof d, "%d", dflt);
  warn_invalid(name, s, want, d);
  return dflt;
}

const char *kbc_env_str(const char *name) {
  const char *s = getenv(name);
  return s && *s ? s : NULL;
}
