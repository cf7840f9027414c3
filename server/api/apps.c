/* apps.c — the routes of signed app versions (docs/apps.md, core/apps.h):
 * publish and retire (admin), the list and one version's signed manifest
 * (the admin or any volunteer: a worker fetches what it verifies). */
#include <stdio.h>
#include <string.h>

#include "common/appsig.h"
#include "server/api/api.h"
#include "server/core/apps.h"

/* POST /v1/apps (admin): {"manifest": TEXT, "signature": BASE64}, the
 * manifest's files uploaded before (PUT /v1/files/{sha256}). 201 with the
 * version's row; 200 when that exact signed text is published already. */
void cairn__api_app_publish(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"manifest", "signature", NULL};
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  const char *manifest = json_string_value(json_object_get(o, "manifest"));
  const char *sig = json_string_value(json_object_get(o, "signature"));
  if (!manifest || !sig) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"manifest\" and \"signature\" must be strings");
    json_decref(o);
    return;
  }
  cairn_error err = {0};
  int created = 0;
  json_t *row = cairn__core_app_publish(m->core, manifest, sig, &created, &err);
  json_decref(o);
  if (!row)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, created ? 201 : 200, row);
}

/* GET /v1/apps: every published version. */
void cairn__api_apps_list(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  (void)rq;
  json_t *o = cairn__core_apps_list(m->core, NULL);
  if (!o)
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  cairn__api_json(rs, 200, o);
}

/* The segments of /v1/apps/{name}/{version}[/{platform}] (nseg 2 or 3)
 * into the caller's buffers; -1 with the 400 in rs when one is not a name. */
static int segments(const char *path, int nseg, char name[CAIRN_APP_MAX_NAME + 1],
                    char version[CAIRN_APP_MAX_VERSION + 1],
                    char third[CAIRN_APP_MAX_PLATFORM + 1], cairn__resp *rs) {
  const char *p = path + strlen("/v1/apps/");
  char *out[3] = {name, version, third};
  size_t caps[3] = {CAIRN_APP_MAX_NAME + 1, CAIRN_APP_MAX_VERSION + 1, CAIRN_APP_MAX_PLATFORM + 1};
  for (int i = 0; i < nseg; i++) {
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= caps[i]) {
      cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\": expected /v1/apps/NAME/VERSION/PLATFORM",
                       path);
      return -1;
    }
    memcpy(out[i], p, n);
    out[i][n] = '\0';
    p += n + (p[n] == '/');
  }
  if (!cairn__app_name_ok(name) || !cairn__app_version_ok(version)) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\": not an app name and version", path);
    return -1;
  }
  return 0;
}

/* GET /v1/apps/{name}/{version}/{platform}: {"manifest", "signature",
 * "retired"}, what a worker verifies with its --project-key. */
void cairn__api_app_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  char name[CAIRN_APP_MAX_NAME + 1], version[CAIRN_APP_MAX_VERSION + 1],
    platform[CAIRN_APP_MAX_PLATFORM + 1];
  if (segments(rq->path, 3, name, version, platform, rs))
    return;
  if (!cairn__app_platform_ok(platform))
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" is not a platform", platform);
  cairn_error err = {0};
  json_t *o = cairn__core_app_get(m->core, name, version, platform, &err);
  if (!o)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, o);
}

/* PATCH /v1/apps/{name}/{version} {"retired": true} (admin): no new task
 * uses that version, on any platform (a retired version stays retired). */
void cairn__api_app_retire(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"retired", NULL};
  char name[CAIRN_APP_MAX_NAME + 1], version[CAIRN_APP_MAX_VERSION + 1],
    third[CAIRN_APP_MAX_PLATFORM + 1];
  if (segments(rq->path, 2, name, version, third, rs))
    return;
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  int yes = json_is_true(json_object_get(o, "retired"));
  json_decref(o);
  if (!yes)
    return cairn__api_failf(rs, CAIRN_EINVAL, "the body must be {\"retired\": true}");
  cairn_error err = {0};
  if (cairn__core_app_retire(m->core, name, version, &err) != CAIRN_OK)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, json_pack("{s:s, s:s, s:b}", "name", name, "version", version,
                                     "retired", 1));
}
