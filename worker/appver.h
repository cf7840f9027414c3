/* appver.h — the signed app versions a worker runs for its project
 * (docs/apps.md): fetched from the master when a task needs one, verified
 * with the project's public key (the worker's --project-key) and kept under
 * DIR/apps/NAME/VERSION/PLATFORM/:
 *
 *   manifest    the manifest's text, as signed
 *   signature   its Ed25519 signature (base64)
 *   files/NAME  each file of the manifest (a link to, or copy of, its
 *               verified cache file DIR/cache/<sha256>); the executable
 *               0555, the others 0444
 *
 * Nothing runs before the signature and every file's digest verified: a
 * version is fetched into a temporary directory, checked whole and renamed
 * into place; at each use the stored signature is verified again and each
 * file re-checked (verify.h: hashed again unless unchanged since its last
 * check). A stored version that no longer verifies is removed and fetched
 * again. Private to worker/.
 *
 * Threads: any task thread; one mutex serializes the fetches and checks
 * (each is short next to the task it prepares).
 */
#ifndef CAIRN_APPVER_H
#define CAIRN_APPVER_H

#include <pthread.h>
#include <stdint.h>

#include "common/error.h"
#include "common/log.h"
#include "worker/cache.h"
#include "worker/transport.h"

typedef struct cairn__appver {
  char *dir;                  /* DIR/apps (owned) */
  uint8_t key[32];            /* the project's public key */
  cairn__cache *cache;        /* borrowed: the worker's input cache */
  const cairn__logger *log;   /* borrowed: the worker's */
  struct cairn__verify *verified; /* owned: the stored files checked since they changed */
  pthread_mutex_t mu;
  int mu_ok;
  unsigned long counter;      /* temporary directory names (under mu) */
} cairn__appver;

/* Sets a up for dir (created if needed; leftovers of an interrupted fetch
 * removed). CAIRN_EIO naming the problem. */
cairn_status cairn__appver_init(cairn__appver *a, const char *dir, const uint8_t key[32],
                                cairn__cache *cache, const cairn__logger *log, cairn_error *err);
void cairn__appver_destroy(cairn__appver *a);

/* Makes sure version (name, version, platform) is stored and verified,
 * fetching it through h when missing or no longer valid; *exe is its
 * executable and *vdir its directory (caller frees both). Returns:
 *   CAIRN_OK;
 *   CAIRN_EFORBIDDEN  the version does not verify: a signature by another
 *                     key, a manifest that is not this version's, a file
 *                     whose bytes are not its digest (err names which; the
 *                     task fails with reason "app_signature");
 *   CAIRN_EIO, CAIRN_ENOTFOUND, CAIRN_ENOMEM: could not fetch or store it. */
cairn_status cairn__appver_get(cairn__appver *a, cairn__http *h, const char *name,
                               const char *version, const char *platform, char **exe,
                               char **vdir, cairn_error *err); /* err: not NULL */

#endif
