/* appver.c — fetch, verify and keep signed app versions (appver.h). */
#include "worker/appver.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/appsig.h"
#include "worker/fsutil.h"
#include "worker/verify.h"

#define TMP_PREFIX ".tmp-"
#define MAX_ANSWER (2u * CAIRN_APP_MAX_MANIFEST + 4096u) /* GET /v1/apps/... */

cairn_status cairn__appver_init(cairn__appver *a, const char *dir, const uint8_t key[32],
                                cairn__cache *cache, const cairn__logger *log, cairn_error *err) {
  memset(a, 0, sizeof *a);
  memcpy(a->key, key, 32);
  a->cache = cache;
  a->log = log;
  if (!(a->dir = strdup(dir)) || !(a->verified = cairn__verify_new())) {
    cairn__appver_destroy(a);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  pthread_mutex_init(&a->mu, NULL);
  a->mu_ok = 1;
  if (cairn__mkdirs(dir, 0755, err) != CAIRN_OK) {
    cairn__appver_destroy(a);
    return CAIRN_EIO;
  }
  /* a fetch a crash interrupted left its temporary directory */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
      cairn__remove_at(dirfd(d), e->d_name);
  if (d)
    closedir(d);
  else if (dfd >= 0)
    close(dfd);
  return CAIRN_OK;
}

void cairn__appver_destroy(cairn__appver *a) {
  if (a->mu_ok)
    pthread_mutex_destroy(&a->mu);
  cairn__verify_free(a->verified);
  free(a->dir);
  memset(a, 0, sizeof *a);
}

/* ---- checking a stored version ---- */

/* Reads dir/name (at most max bytes) into a new NUL-terminated string. */
static char *read_text(const char *dir, const char *name, size_t max) {
  char *p = cairn__path_join(dir, name);
  cairn__buf b;
  cairn_error e = {0};
  char *s = NULL;
  if (p && cairn__read_file(p, max, &b, &e) == CAIRN_OK) {
    if ((s = malloc(b.len + 1))) {
      memcpy(s, b.data, b.len);
      s[b.len] = '\0';
    }
    cairn__buf_free(&b);
  }
  free(p);
  return s;
}

/* CAIRN_OK when manifest (with its signature) verifies with a's key and is
 * the version asked for; fills m. */
static cairn_status check_manifest(cairn__appver *a, const char *manifest, const char *sig,
                                   const char *name, const char *version, const char *platform,
                                   cairn__app_manifest *m, cairn_error *err) {
  cairn_status st = cairn__app_verify(a->key, manifest, strlen(manifest), sig, err);
  if (st != CAIRN_OK)
    return st == CAIRN_EIO ? st : CAIRN_EFORBIDDEN;
  if (cairn__app_manifest_parse(manifest, strlen(manifest), m, err) != CAIRN_OK)
    return CAIRN_EFORBIDDEN;
  if (strcmp(m->name, name) != 0 || strcmp(m->version, version) != 0 ||
      strcmp(m->platform, platform) != 0)
    return cairn__error_set(err, CAIRN_EFORBIDDEN,
                           "the signed manifest is %s %s for %s, not the %s %s for %s asked for",
                           m->name, m->version, m->platform, name, version, platform);
  return CAIRN_OK;
}

/* CAIRN_OK when vdir/files/F holds the bytes of each file of m. */
static cairn_status check_files(cairn__appver *a, const char *vdir, const cairn__app_manifest *m,
                                cairn_error *err) {
  for (size_t i = 0; i < m->nfiles; i++) {
    char *p = NULL;
    if (asprintf(&p, "%s/files/%s", vdir, m->files[i].name) < 0)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(p);
    int v = fd < 0 ? CAIRN__VERIFY_ERROR
                   : cairn__verify_fd(a->verified, fd, m->files[i].sha256,
                                      (long long)m->files[i].size, NULL);
    if (fd >= 0)
      close(fd);
    if (v != CAIRN__VERIFY_OK)
      return cairn__error_set(err, CAIRN_EFORBIDDEN, "file \"%s\" %s", m->files[i].name,
                             v == CAIRN__VERIFY_ERROR ? "is missing"
                                                      : "does not match its SHA-256 in the "
                                                        "signed manifest");
  }
  return CAIRN_OK;
}

/* CAIRN_OK when vdir holds the version, verified now. */
static cairn_status check_stored(cairn__appver *a, const char *vdir, const char *name,
                                 const char *version, const char *platform,
                                 cairn__app_manifest *m, cairn_error *err) {
  char *manifest = read_text(vdir, "manifest", CAIRN_APP_MAX_MANIFEST);
  char *sig = manifest ? read_text(vdir, "signature", 256) : NULL;
  cairn_status st = !sig ? cairn__error_set(err, CAIRN_ENOTFOUND, "not stored")
                         : check_manifest(a, manifest, sig, name, version, platform, m, err);
  if (st == CAIRN_OK)
    st = check_files(a, vdir, m, err);
  free(manifest);
  free(sig);
  return st;
}

/* ---- fetching one ---- */

/* GET /v1/apps/NAME/VERSION/PLATFORM: the manifest and signature (new
 * strings). */
static cairn_status fetch_signed(cairn__http *h, const char *name, const char *version,
                                 const char *platform, char **manifest, char **sig,
                                 cairn_error *err) {
  char path[256];
  snprintf(path, sizeof path, "/v1/apps/%s/%s/%s", name, version, platform);
  cairn__http_response r;
  cairn_status st = cairn__http_request(h, "GET", path, NULL, NULL, 0, MAX_ANSWER, &r, err);
  if (st != CAIRN_OK)
    return st;
  json_t *o = r.status == 200 ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
  const char *ms = json_string_value(json_object_get(o, "manifest"));
  const char *ss = json_string_value(json_object_get(o, "signature"));
  if (r.status == 404)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "the master has no %s %s for %s", name, version,
                         platform);
  else if (r.status != 200)
    st = cairn__error_set(err, CAIRN_EIO, "GET %s: HTTP %ld", path, r.status);
  else if (!ms || !ss)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "GET %s: no manifest and signature", path);
  else if (!(*manifest = strdup(ms)) || !(*sig = strdup(ss)))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  json_decref(o);
  cairn__buf_free(&r.body);
  return st;
}

/* Writes text to dir/name (0444). */
static cairn_status put_text(const char *dir, const char *name, const char *text,
                             cairn_error *err) {
  char *p = cairn__path_join(dir, name);
  cairn_status st = p ? cairn__write_file_atomic(p, text, strlen(text), 0444, err)
                      : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  free(p);
  return st;
}

/* Fills tmp/files/ from the cache, each file fetched (and verified against
 * its digest) first. */
static cairn_status fill_files(cairn__appver *a, cairn__http *h, const char *tmp,
                               const cairn__app_manifest *m, cairn_error *err) {
  char *files = cairn__path_join(tmp, "files");
  cairn_status st = files ? cairn__mkdirs(files, 0755, err)
                          : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; st == CAIRN_OK && i < m->nfiles; i++) {
    const cairn__app_file *f = &m->files[i];
    char url[128], *cached = NULL, *dst = cairn__path_join(files, f->name);
    long status = 0;
    int reason = -1;
    snprintf(url, sizeof url, "/v1/files/%s", f->sha256);
    st = dst ? cairn__cache_fetch(a->cache, h, f->sha256, (long long)f->size, url, &cached,
                                  &status, &reason, err)
             : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    if (st == CAIRN_EINVAL) /* the bytes served are not the signed digest's */
      st = cairn__error_set(err, CAIRN_EFORBIDDEN,
                           "file \"%s\" from the master does not match its SHA-256 in the "
                           "signed manifest", f->name);
    if (st == CAIRN_OK)
      st = cairn__clone_or_copy(cached, dst, err);
    if (st == CAIRN_OK && chmod(dst, f->exec ? 0555 : 0444) != 0)
      st = cairn__error_set(err, CAIRN_EIO, "chmod %s: %s", dst, strerror(errno));
    free(cached);
    free(dst);
  }
  free(files);
  return st;
}

/* Fetches the version into a temporary directory, checks it whole and
 * renames it to vdir. */
static cairn_status fetch(cairn__appver *a, cairn__http *h, const char *vdir, const char *name,
                          const char *version, const char *platform, cairn__app_manifest *m,
                          cairn_error *err) {
  char *manifest = NULL, *sig = NULL, *tmp = NULL;
  cairn_error e = {0};
  cairn_status st = fetch_signed(h, name, version, platform, &manifest, &sig, err);
  if (st == CAIRN_OK)
    st = check_manifest(a, manifest, sig, name, version, platform, m, err);
  if (st == CAIRN_OK && asprintf(&tmp, "%s/" TMP_PREFIX "%lu", a->dir, a->counter++) < 0) {
    tmp = NULL;
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (st == CAIRN_OK) {
    cairn__remove_tree(tmp, &e);
    st = cairn__mkdirs(tmp, 0755, err);
  }
  if (st == CAIRN_OK)
    st = fill_files(a, h, tmp, m, err);
  if (st == CAIRN_OK)
    st = put_text(tmp, "signature", sig, err);
  if (st == CAIRN_OK)
    st = put_text(tmp, "manifest", manifest, err);
  if (st == CAIRN_OK)
    st = check_files(a, tmp, m, err); /* the copies, as they will run */
  if (st == CAIRN_OK) {
    char *parent = strdup(vdir);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (slash)
      *slash = '\0';
    cairn__remove_tree(vdir, &e);
    if (!parent || cairn__mkdirs(parent, 0755, err) != CAIRN_OK || rename(tmp, vdir) != 0)
      st = cairn__error_set(err, CAIRN_EIO, "cannot store %s: %s", vdir, strerror(errno));
    free(parent);
  }
  if (tmp && st != CAIRN_OK)
    cairn__remove_tree(tmp, &e);
  free(tmp);
  free(manifest);
  free(sig);
  return st;
}

cairn_status cairn__appver_get(cairn__appver *a, cairn__http *h, const char *name,
                               const char *version, const char *platform, char **exe,
                               char **vdir, cairn_error *err) {
  *exe = *vdir = NULL;
  cairn__app_manifest *m = malloc(sizeof *m);
  if (!m || asprintf(vdir, "%s/%s/%s/%s", a->dir, name, version, platform) < 0) {
    *vdir = NULL;
    free(m);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  pthread_mutex_lock(&a->mu);
  cairn_error why = {0};
  cairn_status st = check_stored(a, *vdir, name, version, platform, m, &why);
  if (st != CAIRN_OK) {
    if (st != CAIRN_ENOTFOUND)
      CAIRN_WARN(a->log, "app %s %s for %s: the stored copy does not verify (%s): fetching it "
                 "again", name, version, platform, why.text);
    st = fetch(a, h, *vdir, name, version, platform, m, err);
    if (st == CAIRN_OK)
      CAIRN_INFO(a->log, "app %s %s for %s: fetched and verified (%zu files)", name, version,
                 platform, m->nfiles);
  }
  pthread_mutex_unlock(&a->mu);
  if (st == CAIRN_OK && asprintf(exe, "%s/files/%s", *vdir, m->files[0].name) < 0) {
    *exe = NULL;
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (st == CAIRN_EFORBIDDEN)
    CAIRN_WARN(a->log, "app %s %s for %s refused: %s", name, version, platform, err->text);
  if (st != CAIRN_OK) {
    free(*vdir);
    *vdir = NULL;
  }
  free(m);
  return st;
}
