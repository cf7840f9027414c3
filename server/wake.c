/* wake.c — part of the core: the tasks that became eligible under one hold
 * of c->lock, told to the held work requests (waiters.h) once the lock is
 * released (cairn__core_unlock). Bounds: a note is O(CAIRN__WAKE_APPS)
 * under the lock; the flush copies at most CAIRN__WAKE_APPS entries under
 * it and calls the waker after it. */
#include <string.h>

#include "server/core.h"

uint64_t cairn__hash_app(const char *name) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return h ? h : 1;
}

void cairn__wake_note(cairn_core *c, const char *app, uint32_t n) {
  if (!c->waker || n == 0)
    return;
  uint64_t h = cairn__hash_app(app);
  for (uint32_t i = 0; i < c->nwake; i++)
    if (c->wake[i].app == h) {
      c->wake[i].n += n;
      return;
    }
  if (c->nwake < CAIRN__WAKE_APPS)
    c->wake[c->nwake++] = (cairn__wake_entry){h, n};
  else
    c->wake_any += n; /* more apps than entries: wake any held request */
}

/* cairn__core_unlock's second half, after the seal: the one place besides
 * it that releases the mutex itself. */
void cairn__core_unlock_wake(cairn_core *c) {
  cairn__wake_entry e[CAIRN__WAKE_APPS];
  uint32_t n = c->nwake, any = c->wake_any;
  memcpy(e, c->wake, n * sizeof *e);
  c->nwake = 0;
  c->wake_any = 0;
  pthread_mutex_unlock(&c->lock);
  for (uint32_t i = 0; i < n; i++)
    c->waker(c->waker_ud, e[i].app, e[i].n);
  if (any)
    c->waker(c->waker_ud, 0, any);
}

void cairn__core_set_waker(cairn_core *c, void (*waker)(void *ud, uint64_t app, unsigned n),
                           void *ud) {
  pthread_mutex_lock(&c->lock);
  c->waker = waker;
  c->waker_ud = ud;
  c->nwake = 0;
  c->wake_any = 0;
  cairn__core_unlock(c);
}

int cairn__core_app_hashes(cairn_core *c, int64_t vol, uint64_t *out, int max) {
  cairn_status st;
  int n = 0;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, NULL);
  if (v) {
    n = v->napps;
    for (int i = 0; i < v->napps && i < max; i++)
      out[i] = cairn__hash_app(v->apps[i]);
  }
  cairn__core_unlock(c);
  return n;
}
