/* tensor_io.c — `kbc run`'s tensor files: the format found by content on
 * reading, named by the path on writing; directories of .npy files.  The
 * formats themselves: safetensors.c, npy.c, npz.c.  See tensor_io.h. */
#include "tensor_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_file.h"
#include "tensor_io_impl.h"

enum { MAX_DIR_FILES = 4096 };

const char *rt_tensor_format_name(rt_tensor_format f) {
  static const char *const names[] = {"safetensors", "npy", "npz", "directory"};
  return (unsigned)f < 4 ? names[f] : "?";
}

int rt_tio_fail(rt_tensor_ctx *x, rt_err_kind kind, const char *fmt, ...) {
  if (!x->err) return -1;
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->member) return rt_fail(x->err, kind, "%s: member '%s': %s", x->file, x->member, msg);
  return rt_fail(x->err, kind, "%s: %s", x->file, msg);
}

/* What the first bytes look like, for a file that is none of ours. */
static const char *looks_like(const unsigned char *b, size_t n) {
  static const struct {
    const char *magic;
    size_t len;
    const char *what;
  } known[] = {{"\x1f\x8b", 2, "a gzip file"},        {"\x89HDF", 4, "an HDF5 file"},
               {"\x80\x02", 2, "a Python pickle (torch.save's legacy format?)"},
               {"\x80\x04", 2, "a Python pickle"},    {"\x80\x05", 2, "a Python pickle"},
               {"BZh", 3, "a bzip2 file"},            {"\xfd" "7zXZ", 5, "an xz file"},
               {"\x28\xb5\x2f\xfd", 4, "a zstd file"}, {"\x7f" "ELF", 4, "an executable"}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (n >= known[i].len && !memcmp(b, known[i].magic, known[i].len)) return known[i].what;
  size_t text = 0;
  for (size_t i = 0; i < n; i++) text += (b[i] >= 32 && b[i] < 127) || b[i] == '\n' || b[i] == '\t' || b[i] == '\r';
  if (n && text == n) return "text";
  return NULL;
}

/* From the first (up to) 16 bytes; -1 with the message for none of ours. */
static int detect(rt_tensor_ctx *x, const unsigned char *b, size_t n, rt_tensor_format *f) {
  if (n >= 6 && !memcmp(b, "\x93NUMPY", 6)) return *f = RT_TF_NPY, 0;
  if (n >= 4 && (!memcmp(b, "PK\3\4", 4) || !memcmp(b, "PK\5\6", 4))) return *f = RT_TF_NPZ, 0;
  if (n >= 8) {
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = len << 8 | b[i];
    int brace = n > 8 && b[8] == '{';
    if (brace || (n == 8 && len == 0) || (len <= RT_ST_MAX_HEADER && !looks_like(b, n))) return *f = RT_TF_SAFETENSORS, 0;
  }
  const char *what = looks_like(b, n);
  char hex[64] = "";
  for (size_t i = 0, k = 0; i < n && i < 8; i++) k += (size_t)snprintf(hex + k, sizeof hex - k, "%s%02x", i ? " " : "", b[i]);
  if (!n) return rt_tio_fail(x, RT_ERR_FORMAT, "the file is empty; kbc reads safetensors, .npy, .npz or a directory of .npy files");
  return rt_tio_fail(x, RT_ERR_FORMAT,
                     "%s%s%s%s: not safetensors, .npy, .npz or a directory of .npy files", what ? "this is " : "",
                     what ? what : "unknown format (first bytes ", what ? "" : hex, what ? "" : ")");
}

/* The whole of a regular file, malloc'ed. */
static int read_all(rt_tensor_ctx *x, const char *path, unsigned char **out, size_t *n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  *out = NULL;
  if (fd < 0) return rt_tio_fail(x, RT_ERR_IO, "cannot open: %s", strerror(errno));
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    close(fd);
    return rt_tio_fail(x, RT_ERR_IO, "%s", e && !S_ISREG(st.st_mode) ? "is not a regular file" : strerror(e));
  }
  size_t len = (size_t)st.st_size, got = 0;
  unsigned char *b = malloc(len ? len : 1);
  if (!b) return close(fd), rt_tio_fail(x, RT_ERR_MEMORY, "out of memory for %zu bytes", len);
  while (got < len) {
    ssize_t k = read(fd, b + got, len - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      int e = errno;
      free(b), close(fd);
      return rt_tio_fail(x, RT_ERR_IO, "read error: %s", strerror(e));
    }
    if (k == 0) break;
    got += (size_t)k;
  }
  close(fd);
  *out = b, *n = got;
  return 0;
}

static int parse_as(rt_tensor_ctx *x, rt_tensor_format f, const unsigned char *b, size_t n, const char *name,
                    rt_st_file **out) {
  if (f == RT_TF_NPZ) return rt_npz_parse(x, b, n, out);
  rt_st_tensor t;
  if (rt_npy_parse(x, b, n, name, &t) < 0) return -1;
  return rt_st_adopt(x->file, &t, 1, out, x->err);
}

/* The tensor name of an .npy path: its base name without ".npy". */
static void npy_name(const char *path, char *out, size_t cap) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n > 4 && !strcmp(base + n - 4, ".npy")) n -= 4;
  snprintf(out, cap, "%.*s", (int)n, base);
}

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every "*.npy" in dir, by name; other entries are ignored. */
static int load_dir(rt_tensor_ctx *x, const char *dir, rt_st_file **out) {
  DIR *d = opendir(dir);
  if (!d) return rt_tio_fail(x, RT_ERR_IO, "cannot open the directory: %s", strerror(errno));
  char **names = calloc(MAX_DIR_FILES + 1, sizeof *names);
  int n = 0, rc = names ? 0 : rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
  for (struct dirent *e; rc == 0 && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len <= 4 || strcmp(e->d_name + len - 4, ".npy")) continue;
    if (n == MAX_DIR_FILES) rc = rt_tio_fail(x, RT_ERR_FORMAT, "more than %d .npy files", MAX_DIR_FILES);
    else if (!(names[n++] = strdup(e->d_name))) rc = rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
  }
  closedir(d);
  if (rc == 0 && n == 0) rc = rt_tio_fail(x, RT_ERR_FORMAT, "a directory without .npy files");
  if (rc == 0) qsort(names, (size_t)n, sizeof *names, by_string);
  rt_st_tensor *ts = rc == 0 ? calloc((size_t)n + 1, sizeof *ts) : NULL;
  if (rc == 0 && !ts) rc = rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
  int k = 0;
  for (; rc == 0 && k < n; k++) {
    char *path = malloc(strlen(dir) + strlen(names[k]) + 2), tname[256];
    unsigned char *b = NULL;
    size_t len = 0;
    if (!path) {
      rc = rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
      break;
    }
    sprintf(path, "%s/%s", dir, names[k]);
    x->member = names[k];
    npy_name(names[k], tname, sizeof tname);
    rc = read_all(x, path, &b, &len);
    if (rc == 0) rc = rt_npy_parse(x, b, len, tname, &ts[k]);
    free(b), free(path);
    if (rc < 0) break;
  }
  x->member = NULL;
  if (rc == 0) rc = rt_st_adopt(x->file, ts, n, out, x->err);
  else
    for (int i = 0; ts && i < k; i++) free(ts[i].name), free(ts[i].data);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names), free(ts);
  return rc;
}

int rt_tensors_parse(const void *bytes, size_t len, rt_st_file **out, rt_err *err) {
  rt_tensor_ctx x = {"<memory>", NULL, err};
  rt_tensor_format f;
  *out = NULL;
  if (!bytes && len) return rt_tio_fail(&x, RT_ERR_ARGUMENT, "no bytes");
  if (detect(&x, bytes, len < 16 ? len : 16, &f) < 0) return -1;
  if (f == RT_TF_SAFETENSORS) return rt_st_parse(bytes, len, out, err);
  return parse_as(&x, f, bytes, len, "array", out);
}

int rt_tensors_load(const char *path, rt_st_file **out, rt_err *err) {
  rt_tensor_ctx x = {path ? path : "(null)", NULL, err};
  struct stat st;
  *out = NULL;
  if (!path) return rt_tio_fail(&x, RT_ERR_ARGUMENT, "no path");
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return load_dir(&x, path, out);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return rt_tio_fail(&x, RT_ERR_IO, "cannot open: %s", strerror(errno));
  unsigned char head[16];
  ssize_t k;
  do k = read(fd, head, sizeof head);
  while (k < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  if (k < 0 && e == EISDIR) return load_dir(&x, path, out);
  if (k < 0) return rt_tio_fail(&x, RT_ERR_IO, "cannot read: %s", strerror(e));
  rt_tensor_format f;
  if (!S_ISREG(st.st_mode)) return rt_tio_fail(&x, RT_ERR_IO, "is not a regular file");
  if (detect(&x, head, (size_t)k, &f) < 0) return -1;
  if (f == RT_TF_SAFETENSORS) return rt_st_load(path, out, err);
  unsigned char *b;
  size_t n;
  char name[256];
  if (read_all(&x, path, &b, &n) < 0) return -1;
  npy_name(path, name, sizeof name);
  int rc = parse_as(&x, f, b, n, name, out);
  free(b);
  return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

int rt_tensors_output_format(const char *path, rt_tensor_format *fmt, rt_err *err) {
  rt_tensor_ctx x = {path ? path : "(null)", NULL, err};
  struct stat st;
  if (!path || !*path) return rt_tio_fail(&x, RT_ERR_ARGUMENT, "no path");
  if (path[strlen(path) - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) *fmt = RT_TF_DIR;
  else if (ends_with(path, ".safetensors")) *fmt = RT_TF_SAFETENSORS;
  else if (ends_with(path, ".npy")) *fmt = RT_TF_NPY;
  else if (ends_with(path, ".npz")) *fmt = RT_TF_NPZ;
  else
    return rt_tio_fail(&x, RT_ERR_ARGUMENT, "the outputs' format is named by the extension: .safetensors, .npy (one "
                                            "output), .npz, or a directory (a path ending in '/')");
  return 0;
}

/* Every tensor encoded, then each file written atomically. */
static int save_dir(rt_tensor_ctx *x, const char *dir, const rt_st_tensor *ts, int n) {
  void **b = calloc((size_t)n + 1, sizeof *b);
  size_t *len = calloc((size_t)n + 1, sizeof *len);
  int rc = b && len ? 0 : rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
  for (int i = 0; rc == 0 && i < n; i++)
    if (strchr(ts[i].name, '/') || ts[i].name[0] == '.')
      rc = rt_tio_fail(x, RT_ERR_ARGUMENT, "tensor '%s' cannot name a file", ts[i].name);
    else rc = rt_npy_encode(&ts[i], &b[i], &len[i], x->err);
  if (rc == 0) rc = rt_mkdir_p(dir, 0777, x->err);
  for (int i = 0; rc == 0 && i < n; i++) {
    size_t cap = strlen(dir) + strlen(ts[i].name) + 6;
    char *path = malloc(cap);
    if (!path) rc = rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
    else snprintf(path, cap, "%s%s%s.npy", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", ts[i].name);
    if (path) rc = rt_write_file_atomic(path, b[i], len[i], x->err);
    free(path);
  }
  for (int i = 0; b && i < n; i++) free(b[i]);
  free(b), free(len);
  return rc;
}

int rt_tensors_save(const char *path, const rt_st_tensor *ts, int n, rt_err *err) {
  rt_tensor_ctx x = {path ? path : "(null)", NULL, err};
  rt_tensor_format f;
  if (rt_tensors_output_format(path, &f, err) < 0) return -1;
  if (f == RT_TF_SAFETENSORS) return rt_st_save(path, ts, n, err);
  if (f == RT_TF_DIR) return save_dir(&x, path, ts, n);
  if (f == RT_TF_NPY && n != 1)
    return rt_tio_fail(&x, RT_ERR_ARGUMENT, "a .npy file holds one array, but the spec has %d outputs; write .npz, "
                                            ".safetensors or a directory", n);
  void *b = NULL;
  size_t len = 0;
  int rc = f == RT_TF_NPY ? rt_npy_encode(&ts[0], &b, &len, err) : rt_npz_encode(ts, n, &b, &len, err);
  if (rc == 0) rc = rt_write_file_atomic(path, b, len, err);
  free(b);
  return rc;
}
