/* test_sends.c — each broadcast file's count of copies under way per
 * source (mfilerec.sends, server/dist/dist_int.h), which the master reads to
 * choose a source in O(1) a candidate: after every change of the list of
 * copies under way (hand-outs to workers of two clusters, a copy reported
 * held, a source reported failing, a receiver banned, copies past their
 * deadline) the counts agree with the list, checked by recounting it
 * (cairn__dist_sends_ok), and a holder's local count is the number of
 * copies it sends into its own cluster. A core on a real SQLite file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b"
#define NRECV 12

static int64_t reg(cairn__core *c, const char *name, const char *cluster, int port) {
  char *apps[] = {"big"}, token[65], peer[64];
  int64_t id = 0, vid = 0;
  cairn_error err = {0};
  snprintf(peer, sizeof peer, "http://127.0.0.1:%d", port);
  if (cairn__core_register(c, name, cluster, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK ||
      cairn__core_auth(c, token, &vid, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return vid;
}

/* v asks for work (it may be told to wait for the file). */
static void ask(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  json_decref(w);
}

/* Read under the lock, checked after it (a failed check must not leave
 * the lock held): the counts agree with the list; *n gets the copies under
 * way, *local those from h into h's cluster (the receivers' clusters are
 * read after the lock, through the core's view). */
static void check(cairn__core *c, int64_t h, uint32_t *n, uint32_t *local) {
  enum { MAX = 64 };
  int64_t to[MAX];
  uint32_t from_h = 0, counted = 0, mine = 0;
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  int ok = f && cairn__dist_sends_ok(f);
  for (uint32_t i = 0; f && i < f->nxfers; i++)
    if (f->xfers[i].from == h && from_h++ < MAX)
      to[from_h - 1] = f->xfers[i].to;
  counted = f ? cairn__dist_sending(f, h, 1) : 0;
  *n = f ? f->nxfers : 0;
  cairn__core_unlock(c);
  assert_true(ok);
  assert_true(from_h <= MAX);
  cairn__vol_info hv = core_fixture_vol(c, h);
  for (uint32_t k = 0; k < from_h; k++)
    mine += strcmp(core_fixture_vol(c, to[k]).cluster, hv.cluster) == 0;
  *local = mine;
  assert_int_equal(counted, mine);
}

static void test_sends_follow_the_copies_under_way(void **state) {
  core_fixture *fx = *state;
  cairn__core *c = fx->c;
  core_fixture_broadcast_job(c, SHA, 1000, 2 * NRECV);
  int64_t ha = reg(c, "ha", "a", 7100), hb = reg(c, "hb", "b", 7101), r[NRECV];
  core_fixture_have(c, ha, SHA);
  core_fixture_have(c, hb, SHA);
  uint32_t n = 0, local = 0;
  for (int i = 0; i < NRECV; i++) {
    char name[16];
    snprintf(name, sizeof name, "r%d", i);
    r[i] = reg(c, name, i % 2 ? "b" : "a", 7200 + i);
    ask(c, r[i]);
    check(c, ha, &n, &local);
  }
  assert_true(n > 0);
  assert_int_equal(local, 1); /* a holder sends one local copy at once */
  /* receivers report their copies held, one fails its source, one is banned */
  for (int i = 0; i < 4; i++) {
    core_fixture_have(c, r[i], SHA);
    check(c, ha, &n, &local);
    ask(c, r[i + 4]);
    check(c, ha, &n, &local);
  }
  static cairn__report fr;
  memset(&fr, 0, sizeof fr);
  fr.fields = CAIRN_FEAT_FAILED;
  fr.failed[0] = (cairn__report_failed){SHA, "http://127.0.0.1:7101/v1/files/" SHA, 0};
  fr.nfailed = 1;
  core_fixture_heartbeat(c, r[5], &fr);
  check(c, ha, &n, &local);
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, r[6], "test", &report, &err), CAIRN_OK);
  json_decref(report);
  check(c, ha, &n, &local);
  for (int i = 8; i < NRECV; i++) {
    ask(c, r[i]);
    check(c, ha, &n, &local);
  }
  assert_true(n > 0);
  /* every copy past its deadline: none left, no count left */
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  for (uint32_t i = 0; i < f->nxfers; i++)
    f->xfers[i].deadline = 0;
  f->pruned = 0; /* a prune already this second would skip it */
  cairn__dist_prune(f, cairn__now());
  size_t left = f->nxfers + f->sends.count + cairn__dist_sending(f, 0, 0) +
                cairn__dist_sending(f, ha, 0);
  cairn__core_unlock(c);
  assert_int_equal(left, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_sends_follow_the_copies_under_way, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
