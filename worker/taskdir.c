/* taskdir.c — a slot's reusable task directory DIR/run/slot-<n>/ with inputs/
 * and parents/. */
#include "worker/taskdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"
#include "worker/backoff.h"
#include "worker/fetch.h"
#include "worker/fsutil.h"

static int safe_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == ',' || c == '=' || c == '+' || c == '-';
}

cairn_status cairn__encode_id(const char *id, char **out, cairn_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(id);
  *out = NULL;
  if (n == 0)
    return cairn__error_set(err, CAIRN_EINVAL, "a task id is empty: it has no file name");
  if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0) {
    *out = strdup(n == 1 ? "%2E" : "%2E%2E");
    return *out ? CAIRN_OK : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  char *s = malloc(3 * n + 1);
  if (!s)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)id[i];
    if (safe_byte(c))
      s[k++] = (char)c;
    else {
      s[k++] = '%';
      s[k++] = hex[c >> 4];
      s[k++] = hex[c & 15];
    }
  }
  s[k] = '\0';
  *out = s;
  return CAIRN_OK;
}

int cairn__input_name_ok(const char *name) {
  return name[0] != '\0' && !strchr(name, '/') && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0;
}

static const char *const SUBDIRS[2] = {"inputs", "parents"};

/* Frees the current task's paths (not the directory's own name). */
static void free_task_paths(cairn__taskdir *d) {
  for (size_t i = 0; d->input_paths && i < d->ninputs; i++)
    free(d->input_paths[i]);
  for (size_t i = 0; d->parent_paths && i < d->nparents; i++)
    free(d->parent_paths[i]);
  free(d->input_paths);
  free(d->parent_paths);
  d->input_paths = d->parent_paths = NULL;
  d->ninputs = d->nparents = 0;
}

void cairn__taskdir_destroy(cairn__taskdir *d) {
  cairn_error err;
  if (d->dir && cairn__remove_tree(d->dir, &err) != CAIRN_OK)
    CAIRN_WARN(d->log, "%s", err.text);
  free_task_paths(d);
  free(d->dir);
  memset(d, 0, sizeof *d);
}

/* Removes the whole directory and creates it again with empty subfolders. */
static cairn_status rebuild(cairn__taskdir *d, cairn_error *err) {
  d->clean = 0;
  d->has_stderr = 0;
  cairn_status rc = cairn__remove_tree(d->dir, err);
  if (rc == CAIRN_OK)
    rc = cairn__mkdirs(d->dir, 0755, err);
  for (int k = 0; k < 2 && rc == CAIRN_OK; k++) {
    char *sub = cairn__path_join(d->dir, SUBDIRS[k]);
    rc = sub ? cairn__mkdirs(sub, 0755, err) : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    free(sub);
  }
  d->clean = rc == CAIRN_OK;
  return rc;
}

cairn_status cairn__taskdir_init(cairn__taskdir *d, const char *run_root, size_t slot,
                                 cairn_error *err) {
  memset(d, 0, sizeof *d);
  if (asprintf(&d->dir, "%s/slot-%zu", run_root, slot) < 0) {
    d->dir = NULL;
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  return rebuild(d, err);
}

cairn_status cairn__taskdir_resume(cairn__taskdir *d, const char *run_root, size_t slot,
                                   cairn_error *err) {
  struct stat st;
  memset(d, 0, sizeof *d);
  if (asprintf(&d->dir, "%s/slot-%zu", run_root, slot) < 0) {
    d->dir = NULL;
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (lstat(d->dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return cairn__error_set(err, CAIRN_EIO, "%s is no longer a directory", d->dir);
  for (int k = 0; k < 2; k++) {
    char *sub = cairn__path_join(d->dir, SUBDIRS[k]);
    int bad = !sub || ((lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode)) &&
                       (cairn__remove_tree(sub, err) != CAIRN_OK || mkdir(sub, 0755) != 0));
    free(sub);
    if (bad)
      return cairn__error_set(err, CAIRN_EIO, "cannot set up %s/%s", d->dir, SUBDIRS[k]);
  }
  char *errpath = cairn__path_join(d->dir, "stderr");
  d->has_stderr = errpath && lstat(errpath, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
  free(errpath);
  d->clean = 1; /* as the task left it: prepare() keeps it */
  return CAIRN_OK;
}

void cairn__taskdir_leave(cairn__taskdir *d) {
  free_task_paths(d);
  free(d->dir);
  memset(d, 0, sizeof *d);
}

/* Removes every entry of the directory open as dfd, keeping the directory.
 * Returns 0, or -1 when something could not be removed. */
static int empty_dir_fd(int dfd) {
  int rc = 0;
  int dup_fd = dup(dfd);
  DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!dir) {
    if (dup_fd >= 0)
      close(dup_fd);
    return -1;
  }
  for (struct dirent *e = readdir(dir); e; e = readdir(dir)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (e->d_type != DT_DIR && unlinkat(dfd, e->d_name, 0) == 0)
      continue;
    if (cairn__remove_at(dfd, e->d_name) != 0)
      rc = -1;
  }
  closedir(dir);
  return rc;
}

/* Empties subfolder name of the directory open as dfd, or replaces it with
 * an empty directory when it is not a directory one can empty. */
static int empty_subdir(int dfd, const char *name) {
  int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub >= 0) {
    struct stat st;
    int ok = fstat(sub, &st) == 0 && (st.st_mode & S_IRWXU) == S_IRWXU && empty_dir_fd(sub) == 0;
    close(sub);
    if (ok)
      return 0;
  }
  return cairn__remove_at(dfd, name) == 0 && mkdirat(dfd, name, 0755) == 0 ? 0 : -1;
}

/* Brings the directory back to its skeleton (see clear()). Returns 0 or -1. */
static int restore(cairn__taskdir *d) {
  int rc = 0, seen[2] = {0, 0};
  d->has_stderr = 0;
  int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int dup_fd = dfd >= 0 ? dup(dfd) : -1;
  DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!dir) {
    if (dup_fd >= 0)
      close(dup_fd);
    if (dfd >= 0)
      close(dfd);
    return -1;
  }
  for (struct dirent *e = readdir(dir); e && rc == 0; e = readdir(dir)) {
    const char *name = e->d_name;
    struct stat st;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
      continue;
    int k = strcmp(name, SUBDIRS[0]) == 0 ? 0 : strcmp(name, SUBDIRS[1]) == 0 ? 1 : -1;
    if (k >= 0) {
      seen[k] = 1;
      rc = empty_subdir(dfd, name);
    } else if (strcmp(name, "stderr") == 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISREG(st.st_mode) && st.st_nlink == 1)
      d->has_stderr = 1;  /* the next program's runner truncates it */
    else
      rc = cairn__remove_at(dfd, name);
  }
  closedir(dir);
  for (int k = 0; k < 2 && rc == 0; k++)
    if (!seen[k] && mkdirat(dfd, SUBDIRS[k], 0755) != 0)
      rc = -1;
  close(dfd);
  return rc;
}

void cairn__taskdir_clear(cairn__taskdir *d) {
  cairn_error err;
  free_task_paths(d);
  if (!d->dir)
    return;
  d->clean = restore(d) == 0;
  if (!d->clean && rebuild(d, &err) != CAIRN_OK)
    CAIRN_WARN(d->log, "%s", err.text);
}

/* Computes the paths of t's inputs and parents inside d->dir. */
static cairn_status name_files(cairn__taskdir *d, const cairn__task *t, cairn_error *err) {
  d->input_paths = calloc(t->ninputs + 1, sizeof *d->input_paths);
  d->parent_paths = calloc(t->nparents + 1, sizeof *d->parent_paths);
  if (!d->input_paths || !d->parent_paths)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  d->ninputs = t->ninputs;
  d->nparents = t->nparents;
  for (size_t i = 0; i < t->ninputs; i++) {
    const char *name = t->inputs[i].name;
    if (t->inputs[i].parent) { /* a parent's output file: inputs/ENC(parent)/ENC(file) */
      char *ep = NULL, *ef = NULL;
      cairn_status rc = cairn__encode_id(t->inputs[i].parent, &ep, err);
      if (rc == CAIRN_OK)
        rc = cairn__encode_id(t->inputs[i].file, &ef, err);
      if (rc == CAIRN_OK && asprintf(&d->input_paths[i], "%s/inputs/%s/%s", d->dir, ep, ef) < 0) {
        d->input_paths[i] = NULL;
        rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      }
      free(ep);
      free(ef);
      if (rc != CAIRN_OK)
        return rc;
      continue;
    }
    if (!cairn__input_name_ok(name))
      return cairn__error_set(err, CAIRN_EINVAL, "input name \"%.100s\" is not a file name", name);
    if (asprintf(&d->input_paths[i], "%s/inputs/%s", d->dir, name) < 0) {
      d->input_paths[i] = NULL;
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  }
  for (size_t i = 0; i < t->nparents; i++) {
    char *enc = NULL;
    cairn_status rc = cairn__encode_id(t->parents[i].id, &enc, err);
    if (rc != CAIRN_OK)
      return rc;
    int bad = asprintf(&d->parent_paths[i], "%s/parents/%s", d->dir, enc) < 0;
    free(enc);
    if (bad) {
      d->parent_paths[i] = NULL;
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  }
  return CAIRN_OK;
}

cairn_status cairn__taskdir_prepare(cairn__taskdir *d, const cairn__task *t, int program,
                                    cairn_error *err) {
  free_task_paths(d);
  if (!d->dir)
    return cairn__error_set(err, CAIRN_EIO, "the slot has no task directory");
  cairn_status rc = name_files(d, t, err);
  if (rc != CAIRN_OK)
    return rc;
  if (!d->clean) {
    rc = rebuild(d, err);
    if (rc != CAIRN_OK)
      return rc;
  }
  if (!program && d->has_stderr) {
    char *path = cairn__path_join(d->dir, "stderr");
    if (!path)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    if (unlink(path) != 0 && errno != ENOENT)
      rc = cairn__error_set(err, CAIRN_EIO, "cannot remove %s: %s", path, strerror(errno));
    else
      d->has_stderr = 0;
    free(path);
  }
  return rc;
}

/* Sets err to "WHAT NAME: <its previous text>" with status rc. */
static cairn_status prefixed(cairn_error *err, cairn_status rc, const char *what,
                             const char *name) {
  char why[sizeof err->text];
  snprintf(why, sizeof why, "%s", err->text);
  return cairn__error_set(err, rc, "%s %.100s: %s", what, name, why);
}

/* Fetches input i into the cache (see fetch.h) and gives the task its own
 * copy in inputs/ (docs/worker.md, "Cache integrity"). */
static cairn_status fill_input(cairn__taskdir *d, const cairn__input *in, size_t i,
                               cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                               const cairn__cancel *cancel, cairn_error *err) {
  char *cached = NULL;
  cairn_status rc = cairn__fetch_input(cache, h, peers, in, cancel, &cached, err);
  if (rc == CAIRN_EIO)
    return rc;
  if (rc != CAIRN_OK)
    return prefixed(err, rc, "input", in->name);
  if (in->parent) { /* its folder inputs/ENC(parent) */
    char *slash = strrchr(d->input_paths[i], '/');
    *slash = '\0';
    if (mkdir(d->input_paths[i], 0755) != 0 && errno != EEXIST)
      rc = cairn__error_set(err, CAIRN_EIO, "cannot create %s: %s", d->input_paths[i],
                           strerror(errno));
    *slash = '/';
  }
  if (rc == CAIRN_OK)
    rc = cairn__clone_or_copy(cached, d->input_paths[i], err);
  free(cached);
  return rc;
}

/* Downloads parent i's output into parents/. */
static cairn_status fill_parent(cairn__taskdir *d, const cairn__parent *p, size_t i,
                                cairn__http *h, const cairn__cancel *cancel, cairn_error *err) {
  cairn__backoff b;
  cairn__backoff_init(&b, 100, 5000);
  for (;;) {
    long status = 0;
    if (cairn__cancelled(cancel))
      return cairn__error_set(err, CAIRN_EIO, "cancelled");
    cairn_status rc =
      cairn__http_download(h, p->url, d->parent_paths[i], NULL, CAIRN_MAX_OUTPUT, &status, err);
    if (rc == CAIRN_OK)
      return CAIRN_OK;
    if (cairn__cancelled(cancel))
      return cairn__error_set(err, CAIRN_EIO, "cancelled");
    if (rc == CAIRN_ETOOBIG || !(status == 0 || status == 429 || status >= 500))
      return prefixed(err, CAIRN_EINVAL, "output of parent", p->id);
    CAIRN_WARN(d->log, "output of parent %s: %s (retrying)", p->id, err->text);
    if (cairn__cancel_sleep(cancel, cairn__backoff_next(&b)))
      return cairn__error_set(err, CAIRN_EIO, "cancelled");
  }
}

/* The inputs of one task fill, fetched by up to CAIRN__FETCH_PARALLEL
 * threads, each on its own handle: each thread takes the next input not
 * taken yet until none is left or one failed. What the threads share is
 * safe for concurrent use: the cache (cache.h: one temp file per download,
 * atomic rename; two inputs of the same digest both end with the verified
 * file), peers (peerstate.h: every call under its mutex), the cache's relay
 * registry (relay.h: its own mutex; a second download of a file being
 * registered is checked unregistered), the pace (backoff.h) and the log.
 * Each input writes only its own d->input_paths[i]. */
typedef struct fill_pool {
  cairn__taskdir *d;
  const cairn__task *t;
  cairn__cache *cache;
  cairn__peerstate *peers;
  atomic_int failed;      /* set at the first failure: the others stop */
  cairn__cancel cancel;   /* the task's cancel, or failed */
  pthread_mutex_t mu;     /* guards next, rc, err */
  size_t next;            /* the next input to take */
  cairn_status rc;        /* the first failure's status and text */
  cairn_error err;
} fill_pool;

typedef struct fill_thread {
  fill_pool *p;
  cairn__http *h;          /* owned: a clone of the task's handle */
  pthread_t th;
} fill_thread;

static int pool_cancel_cb(void *ud) { return cairn__cancelled(ud); }

static void *fill_thread_main(void *ud) {
  fill_thread *ft = ud;
  fill_pool *p = ft->p;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = atomic_load(&p->failed) ? p->t->ninputs : p->next++;
    pthread_mutex_unlock(&p->mu);
    if (i >= p->t->ninputs)
      return NULL;
    cairn_error e = {0};
    cairn_status rc = fill_input(p->d, &p->t->inputs[i], i, p->cache, ft->h, p->peers,
                                 &p->cancel, &e);
    if (rc == CAIRN_OK)
      continue;
    pthread_mutex_lock(&p->mu);
    if (!atomic_load(&p->failed)) { /* the first: a fetch stopped by it comes later */
      p->rc = rc;
      p->err = e;
      atomic_store(&p->failed, 1);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
  }
}

/* Fetches t's inputs with up to CAIRN__FETCH_PARALLEL threads, joined
 * before return: memory, fds and connections are bounded by that cap,
 * whatever the task's number of inputs. *started is 0 when no thread
 * could be made (out of memory): nothing was fetched, the caller goes on
 * sequentially. Else the first failure's status, err its text. */
static cairn_status fill_inputs_parallel(cairn__taskdir *d, const cairn__task *t,
                                         cairn__cache *cache, cairn__http *h,
                                         cairn__peerstate *peers, const cairn__cancel *cancel,
                                         int *started, cairn_error *err) {
  fill_pool p = {.d = d, .t = t, .cache = cache, .peers = peers, .rc = CAIRN_OK};
  fill_thread ft[CAIRN__FETCH_PARALLEL];
  size_t k = t->ninputs < CAIRN__FETCH_PARALLEL ? t->ninputs : CAIRN__FETCH_PARALLEL, n = 0;
  atomic_init(&p.failed, 0);
  p.cancel = (cairn__cancel){cancel->stopper, &p.failed, cancel};
  if (pthread_mutex_init(&p.mu, NULL) != 0) {
    *started = 0;
    return CAIRN_OK;
  }
  for (; n < k; n++) {
    ft[n] = (fill_thread){.p = &p, .h = cairn__http_clone(h)};
    if (!ft[n].h)
      break;
    cairn__http_set_cancel(ft[n].h, pool_cancel_cb, &p.cancel);
    if (pthread_create(&ft[n].th, NULL, fill_thread_main, &ft[n]) != 0) {
      cairn__http_delete(ft[n].h);
      break;
    }
  }
  for (size_t i = 0; i < n; i++) {
    pthread_join(ft[i].th, NULL);
    cairn__http_delete(ft[i].h);
  }
  pthread_mutex_destroy(&p.mu);
  *started = n > 0;
  if (p.rc != CAIRN_OK)
    *err = p.err;
  return p.rc;
}

cairn_status cairn__taskdir_fill(cairn__taskdir *d, const cairn__task *t, cairn__cache *cache,
                                 cairn__http *h, cairn__peerstate *peers,
                                 const cairn__cancel *cancel, cairn_error *err) {
  cairn_status rc = CAIRN_OK;
  int started = 0;
  for (size_t i = 0; i < t->nparents; i++)
    if (!cairn__url_allowed(h, t, t->parents[i].url))
      return cairn__error_set(err, CAIRN_EINVAL, "output of parent %.100s: url %.200s is neither "
                             "the master's nor a peer's it named: refused", t->parents[i].id,
                             t->parents[i].url);
  if (t->ninputs > 1)
    rc = fill_inputs_parallel(d, t, cache, h, peers, cancel, &started, err);
  for (size_t i = 0; !started && i < t->ninputs && rc == CAIRN_OK; i++)
    rc = fill_input(d, &t->inputs[i], i, cache, h, peers, cancel, err);
  for (size_t i = 0; i < t->nparents && rc == CAIRN_OK; i++)
    rc = fill_parent(d, &t->parents[i], i, h, cancel, err);
  return rc;
}
