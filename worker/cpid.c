/* cpid.c — the cross-project ids a worker's masters tell it (cpid.h). */
#include "worker/cpid.h"

#include <string.h>

#include "common/protocol.h"

void cairn__cpids_init(cairn__cpids *t, size_t n) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  t->n = n < CAIRN__CPID_MAX ? n : CAIRN__CPID_MAX;
}

void cairn__cpids_destroy(cairn__cpids *t) { pthread_mutex_destroy(&t->mu); }

/* 1 when s is 32 lowercase hex digits. */
static int hex32(const char *s) {
  if (!s || strlen(s) != 32)
    return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return 0;
  return 1;
}

void cairn__cpids_heard(cairn__cpids *t, size_t k, const json_t *o, long long now_ms) {
  if (k >= t->n)
    return;
  json_t *tm = json_object_get(o, "time");
  const char *hash = json_string_value(json_object_get(o, "email_hash")),
             *id = json_string_value(json_object_get(o, "id"));
  cairn__cpid_entry e = {.heard_ms = now_ms > 0 ? now_ms : 1};
  if (hex32(hash) && hex32(id) && json_is_integer(tm) && json_integer_value(tm) >= 0 &&
      json_integer_value(tm) <= CAIRN_MAX_CPID_TIME) {
    e.known = 1;
    memcpy(e.email_hash, hash, 33);
    memcpy(e.id, id, 33);
    e.time = (int64_t)json_integer_value(tm);
  }
  pthread_mutex_lock(&t->mu);
  t->e[k] = e;
  pthread_mutex_unlock(&t->mu);
}

/* 1 when a's id comes before b's: made earlier, or at the same second and
 * smaller. */
static int older(const cairn__cpid_entry *a, const cairn__cpid_entry *b) {
  return a->time < b->time || (a->time == b->time && strcmp(a->id, b->id) < 0);
}

/* The oldest entry of k's e-mail (mu held); k's own when it is, or is
 * not known. */
static const cairn__cpid_entry *oldest(const cairn__cpids *t, size_t k) {
  const cairn__cpid_entry *own = &t->e[k], *best = own;
  for (size_t j = 0; own->known && j < t->n; j++)
    if (t->e[j].known && strcmp(t->e[j].email_hash, own->email_hash) == 0 && older(&t->e[j], best))
      best = &t->e[j];
  return best;
}

int cairn__cpids_offer(cairn__cpids *t, size_t k, char id[33], int64_t *time) {
  if (k >= t->n)
    return 0;
  pthread_mutex_lock(&t->mu);
  const cairn__cpid_entry *best = oldest(t, k);
  int offer = best != &t->e[k];
  if (offer) {
    memcpy(id, best->id, 33);
    *time = best->time;
  }
  pthread_mutex_unlock(&t->mu);
  return offer;
}

int cairn__cpids_due(cairn__cpids *t, size_t k, long long now_ms) {
  if (k >= t->n)
    return 0;
  pthread_mutex_lock(&t->mu);
  long long heard = t->e[k].heard_ms;
  int due = !heard || now_ms - heard >= CAIRN__CPID_ASK_MS || oldest(t, k) != &t->e[k];
  pthread_mutex_unlock(&t->mu);
  return due;
}
