/* tune.c — see tune.h. */
#include "tune.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_file.h"
#include "support/env.h"
#include "support/version.h"

enum { RECORD_MAX_BYTES = 1 << 16 };

void rt_tune_key(const ir_program *p, const char *arch, cg_precision precision, char key[RT_KEY_HEX + 1]) {
  kbc_buf ir = {0};
  ir_print(p, &ir);
  const char *fields[] = {"kbc-tune-1", KBC_VERSION, arch, precision == CG_PRECISION_TF32 ? "tf32" : "fp32",
                          kbc_buf_str(&ir)};
  rt_key_of_fields(fields, 5, key);
  kbc_buf_free(&ir);
}

void rt_tune_path(const char *dir, const char *key, kbc_buf *path) {
  rt_buf_clear(path);
  kbc_buf_printf(path, "%s/tune-%s.txt", dir, key);
}

int rt_tune_load(const char *key, kbc_buf *settings) {
  rt_buf_clear(settings);
  if (!kbc_env_flag("KBC_TUNE", 1)) return 0;
  kbc_buf dir = {0}, path = {0};
  rt_err err = {0};
  rt_blob text = {0};
  int found = 0;
  if (rt_cache_dir_path(&dir, &err) == 0) {
    rt_tune_path(dir.data, key, &path);
    if (rt_read_file(path.data, RECORD_MAX_BYTES, &text, &err) == 0) {
      /* the one line "settings: ..." */
      const char *s = (const char *)text.data, *end = s + text.len;
      while (s < end && !found) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        if (n >= 9 && !memcmp(s, "settings:", 9)) {
          size_t at = 9;
          while (at < n && s[at] == ' ') at++;
          kbc_buf_putn(settings, s + at, n - at);
          found = 1;
        }
        s += n + 1;
      }
      cg_options probe = cg_options_default();
      kbc_buf why = {0};
      if (found && cg_options_apply(&probe, kbc_buf_str(settings), &why)) {
        rt_debug(1, "tune: %s ignored: %s", path.data, kbc_buf_str(&why));
        rt_buf_clear(settings);
        found = 0;
      } else if (!found) {
        rt_debug(1, "tune: %s ignored: no 'settings:' line", path.data);
      }
      kbc_buf_free(&why);
    }
  }
  free(text.data);
  rt_err_free(&err);
  kbc_buf_free(&dir);
  kbc_buf_free(&path);
  return found;
}

int rt_tune_store(const char *key, const char *comment, const char *settings, rt_err *err) {
  kbc_buf dir = {0}, path = {0}, text = {0};
  int rc = -1;
  if (rt_cache_dir(&dir, err) == 0) {
    rt_tune_path(dir.data, key, &path);
    for (const char *s = comment ? comment : ""; *s;) {
      size_t n = strcspn(s, "\n");
      kbc_buf_printf(&text, "# %.*s\n", (int)n, s);
      s += n + (s[n] == '\n');
    }
    kbc_buf_printf(&text, "settings: %s\n", settings ? settings : "");
    rc = rt_write_file_atomic(path.data, text.data, text.len, err) < 0 ? -1 : 0;
  }
  kbc_buf_free(&dir);
  kbc_buf_free(&path);
  kbc_buf_free(&text);
  return rc;
}

int rt_tune_remove(const char *key, rt_err *err) {
  kbc_buf dir = {0}, path = {0};
  int rc = -1;
  if (rt_cache_dir_path(&dir, err) == 0) {
    rt_tune_path(dir.data, key, &path);
    if (remove(path.data) == 0) rc = 1;
    else if (errno == ENOENT) rc = 0;
    else rt_fail(err, RT_ERR_IO, "cannot remove '%s': %s", path.data, strerror(errno));
  }
  kbc_buf_free(&dir);
  kbc_buf_free(&path);
  return rc;
}

cg_options rt_tune_options(const ir_program *p, const char *arch, cg_precision precision, const char *config,
                           int *tuned) {
  cg_options o = cg_options_default();
  kbc_buf settings = {0}, why = {0};
  int applied = 0;
  if (config) {
    if (cg_options_apply(&o, config, &why)) o = cg_options_default(); /* rejected by the caller already */
  } else {
    char key[RT_KEY_HEX + 1];
    rt_tune_key(p, arch, precision, key);
    if (rt_tune_load(key, &settings) && cg_options_apply(&o, kbc_buf_str(&settings), &why) == 0) {
      applied = 1;
      rt_debug(1, "tune: %s for %s: the record's settings '%s'", p->name, arch, kbc_buf_str(&settings));
    }
  }
  kbc_buf_free(&settings);
  kbc_buf_free(&why);
  if (tuned) *tuned = applied;
  return cg_options_from_env_over(o);
}
