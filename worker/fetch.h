/* fetch.h — one input file into the verified cache, from the sources the
 * master named (docs/protocol.md, "Data distribution"): peers first, each
 * tried once, the master last and retried. A source that cannot be reached,
 * stalls (see cairn__http_set_stall_timeout()), answers anything but 200 or
 * sends bytes whose SHA-256 or size is wrong is logged at warn and skipped;
 * a peer that failed so is also reported to the master ("failed", through
 * cairn__peerstate_failed()), not the master itself, nor a failure of this
 * worker's own (disk, memory, cancel).
 * Peers get the grant in the source URL, never the volunteer token. Nothing unverified
 * ever enters the cache. Private to worker/.
 */
#ifndef CAIRN_FETCH_H
#define CAIRN_FETCH_H

#include "common/error.h"
#include "worker/cache.h"
#include "worker/peerstate.h"
#include "worker/stopper.h"
#include "worker/task.h"
#include "worker/transport.h"

/* Makes sure the cache holds input in, verified; *path is the cached file
 * (caller frees). peers (may be NULL) hears of the
 * new holding and, when the file was downloaded (not found in the cache),
 * of the source it came from, its bytes and the milliseconds that
 * successful download took; it also hears of each peer source that failed
 * and why. The master is retried with backoff while it fails
 * transiently (no answer, 429, 5xx, stall) and up to three times when its
 * bytes are wrong, until cancel. Returns CAIRN_OK; CAIRN_EIO when
 * cancelled; another status (err explains) when the master refuses the
 * file or keeps sending wrong bytes. */
cairn_status cairn__fetch_input(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                                const cairn__input *in, const cairn__cancel *cancel, char **path,
                                cairn_error *err);

/* 1 when the worker may download url for task t (a parent's output): a path
 * on the master ("/...", not "//..."), or an http(s) URL whose origin
 * (scheme://host[:port], no user part) is the master's or that of a peer
 * source the master named for one of t's inputs. Anything else (another
 * scheme, another host) is refused: the master's offer cannot make the
 * worker read local files or reach hosts the master did not name. */
int cairn__url_allowed(cairn__http *h, const cairn__task *t, const char *url);

#endif
