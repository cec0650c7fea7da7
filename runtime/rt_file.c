/* rt_file.c — see rt_file.h. */
#include "rt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/buf.h"

int rt_mkdir_p(const char *path, mode_t mode, rt_err *err) {
  size_t n = strlen(path);
  if (n == 0) return rt_fail(err, RT_ERR_ARGUMENT, "empty directory name");
  char *p = malloc(n + 1);
  if (!p) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  memcpy(p, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    char c = p[i];
    p[i] = 0;
    if (mkdir(p, mode) < 0 && errno != EEXIST) {
      int e = errno;
      rt_fail(err, RT_ERR_IO, "cannot create directory %s: %s", p, strerror(e));
      free(p);
      return -1;
    }
    p[i] = c;
  }
  struct stat st;
  int rc = 0;
  if (stat(path, &st) < 0) rc = rt_fail(err, RT_ERR_IO, "cannot create directory %s: %s", path, strerror(errno));
  else if (!S_ISDIR(st.st_mode)) rc = rt_fail(err, RT_ERR_IO, "%s exists and is not a directory", path);
  free(p);
  return rc;
}

/* ---- atomic writing -------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len) {
  for (const char *p = data; len > 0;) {
    ssize_t k = write(fd, p, len < (1u << 30) ? len : (1u << 30));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    p += k, len -= (size_t)k;
  }
  return 0;
}

static atomic_uint temp_counter;

/* Creates "DIR/.BASE.tmp-PID-N" next to path (dirlen: the length of
 * "DIR/", 0 for the current directory) with O_EXCL, trying further N while
 * the name is taken; its name into *tmp. */
static int create_temp(const char *path, size_t dirlen, kbc_buf *tmp, rt_err *err) {
  for (int tries = 0; tries < 100; tries++) {
    tmp->len = 0;
    kbc_buf_printf(tmp, "%.*s.%s.tmp-%ld-%u", (int)dirlen, path, path + dirlen, (long)getpid(),
                   atomic_fetch_add(&temp_counter, 1u));
    int fd = open(tmp->data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) break;
  }
  int e = errno;
  return rt_fail(err, RT_ERR_IO, "%s: cannot create a temporary file in '%.*s': %s", path,
                 (int)(dirlen > 1 ? dirlen - 1 : 1), dirlen ? path : ".", strerror(e));
}

/* Makes the rename durable: fsync of path's directory. */
static int sync_dir(const char *path, size_t dirlen, rt_err *err) {
  kbc_buf dir = {0};
  kbc_buf_printf(&dir, "%.*s", (int)(dirlen > 1 ? dirlen - 1 : 1), dirlen ? path : ".");
  int fd = open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
  if (fd < 0 || (fsync(fd) < 0 && errno != EINVAL && errno != ENOTSUP))
    rc = rt_fail(err, RT_ERR_IO, "%s: written, but its directory '%s' cannot be synced: %s", path, dir.data,
                 strerror(errno));
  if (fd >= 0) close(fd);
  kbc_buf_free(&dir);
  return rc;
}

int rt_write_parts_atomic(const char *path, const rt_span *parts, int n, rt_err *err) {
  if (!path || !*path) return rt_fail(err, RT_ERR_ARGUMENT, "no path to write");
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  if (!path[dirlen]) return rt_fail(err, RT_ERR_ARGUMENT, "%s: the path names a directory, not a file", path);
  kbc_buf tmp = {0};
  int fd = create_temp(path, dirlen, &tmp, err), rc = 0;
  if (fd < 0) {
    kbc_buf_free(&tmp);
    return -1;
  }
  for (int i = 0; rc == 0 && i < n; i++)
    if (parts[i].len && write_all(fd, parts[i].data, parts[i].len) < 0)
      rc = rt_fail(err, RT_ERR_IO, "%s: cannot write the temporary file %s: %s", path, tmp.data, strerror(errno));
  if (rc == 0 && fsync(fd) < 0)
    rc = rt_fail(err, RT_ERR_IO, "%s: cannot sync the temporary file %s: %s", path, tmp.data, strerror(errno));
  if (close(fd) < 0 && rc == 0)
    rc = rt_fail(err, RT_ERR_IO, "%s: cannot write the temporary file %s: %s", path, tmp.data, strerror(errno));
  if (rc == 0 && rename(tmp.data, path) < 0)
    rc = rt_fail(err, RT_ERR_IO, "%s: cannot replace it with the temporary file: %s", path, strerror(errno));
  if (rc < 0) unlink(tmp.data);
  else rc = sync_dir(path, dirlen, err);
  kbc_buf_free(&tmp);
  return rc;
}

int rt_write_file_atomic(const char *path, const void *data, size_t len, rt_err *err) {
  rt_span one = {data, len};
  return rt_write_parts_atomic(path, &one, 1, err);
}
