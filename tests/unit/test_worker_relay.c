/* test_worker_relay.c — worker/relay.h: a chunk list is read only when it
 * names the file, its size and the right number of well-formed digests; a
 * registered download is readable only up to its last checked chunk; a
 * chunk that does not match is refused and what follows it never becomes
 * readable; a download is registered at its first checked chunk, one
 * file once; a failed download ends its readers with an error, a finished
 * one lets them read to the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "common/sha256.h"
#include "worker/relay.h"

#define SIZE (2u * CAIRN_CHUNK_SIZE + 1000u) /* three chunks, the last short */

static unsigned char *bytes;
static char sha[65], list[3 * 67 + 256];

static int setup(void **state) {
  (void)state;
  bytes = malloc(SIZE);
  for (size_t i = 0; bytes && i < SIZE; i++)
    bytes[i] = (unsigned char)(i * 7 + 3);
  cairn__sha256_hex(bytes, SIZE, sha);
  size_t k = (size_t)snprintf(list, sizeof list,
                              "{\"sha256\":\"%s\",\"size\":%u,\"chunk_size\":%u,\"chunks\":[",
                              sha, SIZE, CAIRN_CHUNK_SIZE);
  for (size_t i = 0; i < 3; i++) {
    char hex[65];
    size_t off = i * CAIRN_CHUNK_SIZE, n = i < 2 ? CAIRN_CHUNK_SIZE : SIZE - off;
    cairn__sha256_hex(bytes + off, n, hex);
    k += (size_t)snprintf(list + k, sizeof list - k, "%s\"%s\"", i ? "," : "", hex);
  }
  snprintf(list + k, sizeof list - k, "]}");
  return bytes ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  free(bytes);
  return 0;
}

static void test_chunk_list(void **state) {
  (void)state;
  cairn__chunklist l;
  cairn_error err = {0};
  assert_int_equal(cairn__chunklist_parse(list, strlen(list), sha, SIZE, &l, &err), CAIRN_OK);
  assert_int_equal(l.n, 3);
  assert_int_equal(l.size, SIZE);
  cairn__chunklist_free(&l);
  /* another size, another file, a missing chunk, a bad digest: refused */
  assert_int_equal(cairn__chunklist_parse(list, strlen(list), sha, SIZE + 1, &l, &err),
                   CAIRN_EINVAL);
  char other[65];
  memcpy(other, sha, 65);
  other[0] = other[0] == 'a' ? 'b' : 'a';
  assert_int_equal(cairn__chunklist_parse(list, strlen(list), other, SIZE, &l, &err),
                   CAIRN_EINVAL);
  char *cut = strdup(list);
  char *last = strrchr(cut, ',');
  strcpy(last, "]}");
  assert_int_equal(cairn__chunklist_parse(cut, strlen(cut), sha, SIZE, &l, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "2 chunks"));
  free(cut);
  char *bad = strdup(list);
  char *q = strstr(bad, "\"chunks\":[\"") + 11;
  q[3] = 'X';
  assert_int_equal(cairn__chunklist_parse(bad, strlen(bad), sha, SIZE, &l, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "chunks[0] is not a sha256"));
  free(bad);
  assert_int_equal(cairn__chunklist_parse("[]", 2, sha, SIZE, &l, &err), CAIRN_EINVAL);
}

/* A registered download of the file into a temporary file; the path in
 * path (caller unlinks). */
static cairn__relay_in *begin(cairn__relay *r, char path[64], cairn__chunklist *l) {
  cairn_error err = {0};
  snprintf(path, 64, "/tmp/relay-test-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(cairn__chunklist_parse(list, strlen(list), sha, SIZE, l, &err), CAIRN_OK);
  cairn__relay_in *in = cairn__relay_begin(r, sha, path, l);
  assert_non_null(in);
  return in;
}

/* Appends bytes [off, off + n) (as given in src) to the file, then tells in. */
static int feed(cairn__relay_in *in, const char *path, const unsigned char *src, size_t off,
                size_t n) {
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, (long)off, SEEK_SET);
  assert_int_equal(fwrite(src + off, 1, n, f), n);
  fclose(f);
  return cairn__relay_data(in, src + off, n);
}

static void test_reads_checked_chunks_only(void **state) {
  (void)state;
  const cairn__logger *log = NULL;
  cairn__relay *r = cairn__relay_new(&log);
  char path[64];
  cairn__chunklist l;
  cairn__relay_in *in = begin(r, path, &l);
  long long size = 0;
  char *buf = malloc(SIZE);
  /* half a chunk arrived: not registered yet, nothing to relay */
  assert_int_equal(feed(in, path, bytes, 0, CAIRN_CHUNK_SIZE / 2), 0);
  assert_null(cairn__relay_open(r, sha, &size));
  /* the first chunk is whole and matches: registered, readable, no further */
  unsigned gen = cairn__relay_gen(r);
  assert_int_equal(feed(in, path, bytes, CAIRN_CHUNK_SIZE / 2, CAIRN_CHUNK_SIZE / 2 + 10), 0);
  assert_true(cairn__relay_gen(r) != gen);
  cairn__relay_rd *rd = cairn__relay_open(r, sha, &size);
  assert_non_null(rd);
  assert_int_equal(size, SIZE);
  assert_true(cairn__relay_was_partial(rd));
  /* a second download of the same file is checked, never registered */
  cairn__relay_in *twin = cairn__relay_begin(r, sha, "/nonexistent", &l);
  assert_non_null(twin);
  assert_int_equal(cairn__relay_data(twin, bytes, CAIRN_CHUNK_SIZE), 0);
  cairn__relay_end(twin, 0);
  ssize_t k = cairn__relay_read(rd, 0, buf, SIZE, 10);
  assert_int_equal(k, CAIRN_CHUNK_SIZE);
  assert_memory_equal(buf, bytes, CAIRN_CHUNK_SIZE);
  assert_int_equal(cairn__relay_read(rd, CAIRN_CHUNK_SIZE, buf, SIZE, 10), -1);
  /* the rest, and the end: readable to the last byte, then the end */
  assert_int_equal(feed(in, path, bytes, CAIRN_CHUNK_SIZE + 10, SIZE - CAIRN_CHUNK_SIZE - 10), 0);
  cairn__relay_end(in, 1);
  size_t got = CAIRN_CHUNK_SIZE;
  while ((k = cairn__relay_read(rd, got, buf + got, SIZE - got, 10)) > 0)
    got += (size_t)k;
  assert_int_equal(k, 0);
  assert_int_equal(got, SIZE);
  assert_memory_equal(buf, bytes, SIZE);
  cairn__relay_close(rd);
  /* ended: no longer registered */
  assert_null(cairn__relay_open(r, sha, &size));
  cairn__chunklist_free(&l);
  unlink(path);
  free(buf);
  cairn__relay_free(r);
}

static void test_bad_chunk_refused(void **state) {
  (void)state;
  const cairn__logger *log = NULL;
  cairn__relay *r = cairn__relay_new(&log);
  char path[64];
  cairn__chunklist l;
  cairn__relay_in *in = begin(r, path, &l);
  long long size = 0;
  unsigned char *wrong = malloc(SIZE);
  memcpy(wrong, bytes, SIZE);
  wrong[CAIRN_CHUNK_SIZE + 5] ^= 1; /* chunk 1 */
  char *buf = malloc(SIZE);
  assert_int_equal(feed(in, path, wrong, 0, CAIRN_CHUNK_SIZE), 0);
  cairn__relay_rd *rd = cairn__relay_open(r, sha, &size);
  assert_non_null(rd);
  assert_int_equal(feed(in, path, wrong, CAIRN_CHUNK_SIZE, CAIRN_CHUNK_SIZE), -1);
  /* only chunk 0 is readable; the download failed: the reader ends */
  assert_int_equal(cairn__relay_read(rd, 0, buf, SIZE, 10), CAIRN_CHUNK_SIZE);
  cairn__relay_end(in, 0);
  assert_int_equal(cairn__relay_read(rd, CAIRN_CHUNK_SIZE, buf, SIZE, 1000), -1);
  cairn__relay_close(rd);
  cairn__chunklist_free(&l);
  unlink(path);
  /* more bytes than the size are refused too */
  in = begin(r, path, &l);
  unsigned char *more = calloc(1, SIZE + 1);
  memcpy(more, bytes, SIZE);
  assert_int_equal(cairn__relay_data(in, more, SIZE + 1), -1);
  cairn__relay_end(in, 0);
  cairn__chunklist_free(&l);
  unlink(path);
  /* a wrong first chunk: never registered, nothing relayed */
  in = begin(r, path, &l);
  assert_int_equal(cairn__relay_data(in, more + 1, CAIRN_CHUNK_SIZE), -1);
  assert_null(cairn__relay_open(r, sha, &size));
  cairn__relay_end(in, 0);
  cairn__chunklist_free(&l);
  unlink(path);
  free(more);
  free(wrong);
  free(buf);
  cairn__relay_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_chunk_list),
    cmocka_unit_test(test_reads_checked_chunks_only),
    cmocka_unit_test(test_bad_chunk_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
