/* apps.c — the registry of signed app versions (apps.h). */
#include "server/core/apps.h"

#include <stdlib.h>
#include <string.h>

#include "common/appsig.h"
#include "server/base/hmap.h"
#include "server/base/util.h"
#include "server/core/core.h"
#include "server/dist/dist.h"
#include "server/store/journal.h"
#include "server/store/store.h"

typedef struct appv {
  int64_t id, published;
  int retired;
  char *name, *version, *platform, *manifest, *signature;
  uint64_t bytes;
  size_t nfiles;
  struct appv *older; /* the next version under the same (app, platform) key */
} appv;

typedef struct cairn__apps cairn__apps;
struct cairn__apps {
  appv *v[CAIRN__APPS_MAX]; /* n, in publish order */
  size_t n;
  int64_t next_id;
  cairn__hmap by_pair;      /* pair_key(app, platform) -> newest appv (chain: older) */
  cairn__hmap files;        /* cairn__hash_key(sha256) -> a version naming it */
  uint8_t key[32];
  int has_key;
};

static uint64_t pair_key(const char *app, const char *platform) {
  return (cairn__hash_app(app) * 31u + cairn__hash_app(platform)) | 1u;
}

int cairn__apps_open(cairn__core *c) {
  if (!(c->apps = calloc(1, sizeof *c->apps)))
    return -1;
  cairn__hmap_init(&c->apps->by_pair);
  cairn__hmap_init(&c->apps->files);
  c->apps->next_id = 1;
  return 0;
}

static void appv_free(appv *x) {
  if (!x)
    return;
  free(x->name);
  free(x->version);
  free(x->platform);
  free(x->manifest);
  free(x->signature);
  free(x);
}

void cairn__apps_close(cairn__core *c) {
  if (!c->apps)
    return;
  for (size_t i = 0; i < c->apps->n; i++)
    appv_free(c->apps->v[i]);
  cairn__hmap_free(&c->apps->by_pair);
  cairn__hmap_free(&c->apps->files);
  free(c->apps);
  c->apps = NULL;
}

void cairn__core_set_app_key(cairn__core *c, const uint8_t pk[32]) {
  memcpy(c->apps->key, pk, 32);
  c->apps->has_key = 1;
}

/* Adds x (its manifest m) to the registry: O(files). -1 out of memory
 * (x is then not added). */
static int add(cairn__apps *a, appv *x, const cairn__app_manifest *m) {
  if (a->n == CAIRN__APPS_MAX)
    return -1;
  uint64_t k = pair_key(x->name, x->platform);
  x->older = cairn__hmap_get(&a->by_pair, k);
  if (cairn__hmap_put(&a->by_pair, k, x))
    return -1;
  for (size_t i = 0; i < m->nfiles; i++) {
    x->bytes += m->files[i].size;
    if (cairn__hmap_put(&a->files, cairn__hash_key(m->files[i].sha256), x))
      return -1; /* the version stays, its file unknown to reads: out of memory anyway */
  }
  x->nfiles = m->nfiles;
  a->v[a->n++] = x;
  if (x->id >= a->next_id)
    a->next_id = x->id + 1;
  return 0;
}

static appv *appv_new(const cairn__store_app_row *r) {
  appv *x = calloc(1, sizeof *x);
  if (!x)
    return NULL;
  *x = (appv){.id = r->id, .published = r->published, .retired = r->retired,
              .name = cairn__strdup(r->name), .version = cairn__strdup(r->version),
              .platform = cairn__strdup(r->platform), .manifest = cairn__strdup(r->manifest),
              .signature = cairn__strdup(r->signature)};
  if (!x->name || !x->version || !x->platform || !x->manifest || !x->signature) {
    appv_free(x);
    return NULL;
  }
  return x;
}

static int load_row(void *ud, const cairn__store_app_row *r) {
  cairn__core *c = ud;
  cairn__app_manifest *m = malloc(sizeof *m);
  appv *x = m ? appv_new(r) : NULL;
  int rc = -1;
  if (x && cairn__app_manifest_parse(r->manifest, strlen(r->manifest), m, NULL) == CAIRN_OK)
    rc = add(c->apps, x, m);
  if (rc)
    appv_free(x);
  free(m);
  return rc;
}

cairn_status cairn__apps_load(cairn__core *c, cairn_error *err) {
  return cairn__store_load_apps(c->store, load_row, c, err);
}

/* The version (name, version, platform), or NULL. O(versions of the pair). */
static appv *find(const cairn__apps *a, const char *name, const char *version,
                  const char *platform) {
  for (appv *x = cairn__hmap_get(&a->by_pair, pair_key(name, platform)); x; x = x->older)
    if (strcmp(x->name, name) == 0 && strcmp(x->platform, platform) == 0 &&
        strcmp(x->version, version) == 0)
      return x;
  return NULL;
}

const char *cairn__apps_pick(const cairn__core *c, const char *app, const char *platform,
                             const char *pin) {
  for (appv *x = cairn__hmap_get(&c->apps->by_pair, pair_key(app, platform)); x; x = x->older)
    if (!x->retired && strcmp(x->name, app) == 0 && strcmp(x->platform, platform) == 0 &&
        (!pin || strcmp(x->version, pin) == 0))
      return x->version;
  return NULL;
}

int cairn__apps_has_file(const cairn__core *c, const char *sha256) {
  return cairn__hmap_get(&c->apps->files, cairn__hash_key(sha256)) != NULL;
}

const char *cairn__vol_platform(const mvol *v) {
  for (int i = 0; i < v->napps; i++)
    if (v->apps[i][0] == '@')
      return v->apps[i] + 1;
  return NULL;
}

static json_t *row_json(const appv *x) {
  return json_pack("{s:s, s:s, s:s, s:I, s:I, s:b, s:I}", "name", x->name, "version", x->version,
                   "platform", x->platform, "files", (json_int_t)x->nfiles, "bytes",
                   (json_int_t)x->bytes, "retired", x->retired, "published",
                   (json_int_t)x->published);
}

/* Checks what can be checked without the lock: the key, the signature, the
 * manifest. */
static cairn_status check_signed(cairn__core *c, const char *manifest, const char *signature,
                                 cairn__app_manifest *m, cairn_error *err) {
  if (!c->apps->has_key) /* set before serving, never changed */
    return cairn__error_set(err, CAIRN_ECONFLICT,
                           "this master has no app key: start it with --app-key PUBKEY");
  cairn_status st = cairn__app_verify(c->apps->key, manifest, strlen(manifest), signature, err);
  if (st != CAIRN_OK)
    return st;
  return cairn__app_manifest_parse(manifest, strlen(manifest), m, err);
}

/* Under c->lock: every file of m in the file store with its size. */
static cairn_status files_present(cairn__core *c, const cairn__app_manifest *m, cairn_error *err) {
  for (size_t i = 0; i < m->nfiles; i++) {
    int64_t size = -1;
    if (!cairn__dist_has_file(c->dist, m->files[i].sha256, &size) ||
        cairn__dist_remote(c->dist, m->files[i].sha256))
      return cairn__error_set(err, CAIRN_EINVAL,
                             "file \"%s\" (%.12s…) is not on the master: upload it first "
                             "(PUT /v1/files/{sha256})",
                             m->files[i].name, m->files[i].sha256);
    if ((uint64_t)size != m->files[i].size)
      return cairn__error_set(err, CAIRN_EINVAL,
                             "file \"%s\": the manifest says %llu bytes, the master holds %lld",
                             m->files[i].name, (unsigned long long)m->files[i].size,
                             (long long)size);
  }
  return CAIRN_OK;
}

/* Under c->lock: journals x and its files. */
static void journal_version(cairn__core *c, const appv *x, const cairn__app_manifest *m) {
  const char *shas[CAIRN_APP_MAX_FILES];
  for (size_t i = 0; i < m->nfiles; i++)
    shas[i] = m->files[i].sha256;
  cairn__store_app_row r = {.id = x->id, .published = x->published, .name = x->name,
                            .version = x->version, .platform = x->platform,
                            .manifest = x->manifest, .signature = x->signature, .shas = shas,
                            .nshas = m->nfiles};
  cairn__journal_put(c->journal, cairn__jrec_app(&r));
}

json_t *cairn__core_app_publish(cairn__core *c, const char *manifest, const char *signature,
                                int *created, cairn_error *err) {
  cairn__app_manifest *m = malloc(sizeof *m);
  if (!m) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  json_t *o = NULL;
  *created = 0;
  cairn__store_app_row row = {.manifest = manifest, .signature = signature,
                              .published = cairn__now()};
  appv *x = NULL;
  if (check_signed(c, manifest, signature, m, err) != CAIRN_OK)
    goto out;
  row.name = m->name, row.version = m->version, row.platform = m->platform;
  if (!(x = appv_new(&row))) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  pthread_mutex_lock(&c->lock);
  appv *old = find(c->apps, m->name, m->version, m->platform);
  if (old && strcmp(old->manifest, manifest) == 0) {
    o = row_json(old); /* the same version again: published already */
  } else if (old) {
    cairn__error_set(err, CAIRN_ECONFLICT, "%s %s for %s is published already, with another "
                    "manifest: publish a new version", m->name, m->version, m->platform);
  } else if (c->apps->n == CAIRN__APPS_MAX) {
    cairn__error_set(err, CAIRN_ECONFLICT, "the master holds %u app versions, its most",
                    CAIRN__APPS_MAX);
  } else if (files_present(c, m, err) == CAIRN_OK) {
    x->id = c->apps->next_id;
    if (add(c->apps, x, m) == 0) {
      journal_version(c, x, m);
      o = row_json(x);
      *created = 1;
      x = NULL; /* the registry's now */
    } else
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  if (o && cairn__journal_wait(c->journal, seq, err) != CAIRN_OK) {
    json_decref(o);
    o = NULL;
  }
out:
  appv_free(x);
  free(m);
  return o;
}

cairn_status cairn__core_app_retire(cairn__core *c, const char *name, const char *version,
                                    cairn_error *err) {
  size_t found = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->apps->n; i++) {
    appv *x = c->apps->v[i];
    if (strcmp(x->name, name) != 0 || strcmp(x->version, version) != 0)
      continue;
    found++;
    if (!x->retired) {
      x->retired = 1;
      cairn__journal_put(c->journal, cairn__jrec_app_retire(x->id));
    }
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  if (!found)
    return cairn__error_set(err, CAIRN_ENOTFOUND, "no version \"%s\" of app \"%s\"", version,
                           name);
  return cairn__journal_wait(c->journal, seq, err);
}

json_t *cairn__core_apps_list(cairn__core *c, const char *platform) {
  json_t *a = json_array();
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; a && i < c->apps->n; i++) {
    const appv *x = c->apps->v[i];
    if ((!platform || strcmp(x->platform, platform) == 0) &&
        json_array_append_new(a, row_json(x))) {
      json_decref(a);
      a = NULL;
    }
  }
  cairn__core_unlock(c);
  return a ? json_pack("{s:o}", "apps", a) : NULL;
}

json_t *cairn__core_app_get(cairn__core *c, const char *name, const char *version,
                            const char *platform, cairn_error *err) {
  json_t *o = NULL;
  pthread_mutex_lock(&c->lock);
  const appv *x = find(c->apps, name, version, platform);
  if (x)
    o = json_pack("{s:s, s:s, s:b}", "manifest", x->manifest, "signature", x->signature,
                  "retired", x->retired);
  cairn__core_unlock(c);
  if (!x)
    cairn__error_set(err, CAIRN_ENOTFOUND, "no version \"%s\" of app \"%s\" for %s", version,
                    name, platform);
  else if (!o)
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return o;
}
