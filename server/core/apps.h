/* apps.h — the registry of signed app versions (docs/apps.md): what the
 * operator published with `cairn app publish`, checked against the
 * master's --app-key, stored (0023_app_versions.sql) and served to the
 * workers that run the project's apps for their platform. Private to
 * server/.
 *
 * State (struct cairn__apps, c->apps): every version, at most
 * CAIRN__APPS_MAX, never freed before close (retire only marks one), so a
 * version's strings stay valid while the core lives; a map from (app,
 * platform) to its versions, newest first; a map of the files versions
 * name. All of it under c->lock.
 *
 * Bounds under c->lock: cairn__apps_pick is O(versions of one app and
 * platform); publish O(files of the version); retire and the list
 * O(versions), at most CAIRN__APPS_MAX.
 */
#ifndef CAIRN_CORE_APPS_H
#define CAIRN_CORE_APPS_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "server/model/state.h"

#define CAIRN__APPS_MAX 1024u

/* Makes and frees c->apps (cairn__core_open, cairn__core_close); open
 * returns -1 out of memory. */
int cairn__apps_open(cairn__core *c);
void cairn__apps_close(cairn__core *c);
/* Loads the stored versions (cairn__core_load). */
cairn_status cairn__apps_load(cairn__core *c, cairn_error *err);

/* Sets the project's public key (32 bytes; the master's --app-key) before
 * serving; without one, publishing is refused. */
void cairn__core_set_app_key(cairn__core *c, const uint8_t pk[32]);

/* Publishes a version: manifest (its text, as signed) and signature
 * (base64) verified with the app key, every file present in the file
 * store with its size; the version's row as JSON once durable.
 * CAIRN_ECONFLICT without an app key or when (name, version, platform)
 * exists with another text; CAIRN_EFORBIDDEN when the signature does not
 * verify; CAIRN_EINVAL for a bad manifest or a missing file. Publishing
 * the same signed text again answers the existing row (*created 0;
 * 1 for a new version). */
json_t *cairn__core_app_publish(cairn__core *c, const char *manifest, const char *signature,
                                int *created, cairn_error *err);
/* Retires every platform's build of app name's version: no new task uses
 * it. CAIRN_ENOTFOUND when there is none. */
cairn_status cairn__core_app_retire(cairn__core *c, const char *name, const char *version,
                                    cairn_error *err);
/* {"apps": [{"name", "version", "platform", "files", "bytes", "retired",
 * "published"}, ...]} in publish order; platform non-NULL: only its. */
json_t *cairn__core_apps_list(cairn__core *c, const char *platform);
/* {"manifest", "signature", "retired"} of one version; CAIRN_ENOTFOUND. */
json_t *cairn__core_app_get(cairn__core *c, const char *name, const char *version,
                            const char *platform, cairn_error *err);

/* Under c->lock: the version of app a worker of platform runs, the newest
 * published one not retired, or pin when it exists for the platform and
 * is not retired; NULL when none. */
const char *cairn__apps_pick(const cairn__core *c, const char *app, const char *platform,
                             const char *pin);
/* Under c->lock: 1 when sha256 is a file of a published version. O(1). */
int cairn__apps_has_file(const cairn__core *c, const char *sha256);

/* A volunteer's entry for the platform it runs the project's apps for: its
 * app list holds "@PLATFORM" (volunteers.c); NULL when it has none. */
const char *cairn__vol_platform(const mvol *v);

#endif
