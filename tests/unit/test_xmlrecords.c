/* test_xmlrecords.c — the records of the XML statistics (common/xmlstats.c;
 * BOINC's XmlStats, docs/references.md [BOINC-stats]): a user, a team
 * and a host record and tables.xml as whole texts, field by field in
 * BOINC's order; the cpid as BOINC defines it, MD5 of the cross-project
 * id followed by the e-mail (digests from coreutils' md5sum), a host
 * without an account hashed with no e-mail; XML escaping of the five
 * special characters; text that is not valid UTF-8 or not allowed in XML
 * (controls, overlong forms, surrogates, U+FFFE, a cut sequence) becomes
 * '?' while valid characters of 2 to 4 bytes, tab and line feed pass;
 * numbers with six decimals whatever their size, 0 for what is not
 * finite; a 40,000-byte name reaches the sink in pieces of at most 512
 * bytes; a sink that fails makes the writer fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/xmlstats.h"

/* A sink into a buffer; fail_after >= 0: the call after that many fails. */
typedef struct mem {
  char text[65536];
  size_t len, largest;
  int calls, fail_after;
} mem;

static int mem_sink(void *ud, const char *p, size_t n) {
  mem *m = ud;
  if (m->fail_after >= 0 && m->calls >= m->fail_after)
    return -1;
  m->calls++;
  assert_true(m->len + n < sizeof m->text);
  memcpy(m->text + m->len, p, n);
  m->len += n;
  m->text[m->len] = '\0';
  if (n > m->largest)
    m->largest = n;
  return 0;
}

static mem *mem_new(void) {
  mem *m = calloc(1, sizeof *m);
  assert_non_null(m);
  m->fail_after = -1;
  return m;
}

static void escaped(const char *in, const char *want) {
  mem *m = mem_new();
  assert_int_equal(cairn__xs_escape(mem_sink, m, in), 0);
  if (strcmp(m->text, want))
    fail_msg("escaped \"%s\" as \"%s\", wanted \"%s\"", in, m->text, want);
  free(m);
}

static void test_escape(void **state) {
  (void)state;
  escaped("a&b<c>\"d'e", "a&amp;b&lt;c&gt;&quot;d&apos;e");
  escaped("Zo\xc3\xab \xe6\x97\xa5 \xf0\x9f\x98\x80", "Zo\xc3\xab \xe6\x97\xa5 \xf0\x9f\x98\x80");
  escaped("tab\there\nline\r", "tab\there\nline\r");
  escaped("bell\x07", "bell?");
  escaped("\xff!", "?!");                   /* not a lead byte */
  escaped("\xc0\xafz", "?\?z");             /* an overlong form (of "/") */
  escaped("\xed\xa0\x80x", "???x");         /* a surrogate */
  escaped("\xef\xbf\xbe.", "???.");         /* U+FFFE */
  escaped("\xf4\x90\x80\x80", "????");      /* above U+10FFFF */
  escaped("cut \xe2\x82", "cut ??");        /* a sequence cut by the end */
  escaped("", "");
}

static void test_numbers(void **state) {
  (void)state;
  char out[48];
  cairn__xs_number(12.5, out);
  assert_string_equal(out, "12.500000");
  cairn__xs_number(0, out);
  assert_string_equal(out, "0.000000");
  cairn__xs_number(-3.0000004, out);
  assert_string_equal(out, "-3.000000");
  cairn__xs_number(1795944676.25, out);
  assert_string_equal(out, "1795944676.250000");
  cairn__xs_number(1.2345678, out); /* to the nearest millionth */
  assert_string_equal(out, "1.234568");
  cairn__xs_number(2.5e13, out); /* past 9e12: whole credits */
  assert_string_equal(out, "25000000000000.000000");
  cairn__xs_number(NAN, out);
  assert_string_equal(out, "0.000000");
  cairn__xs_number(INFINITY, out);
  assert_string_equal(out, "0.000000");
}

static void test_cpid(void **state) {
  (void)state;
  char hex[33];
  /* md5sum of "0123456789abcdef0123456789abcdefann@example.org" */
  cairn__xs_cpid("0123456789abcdef0123456789abcdef", "ann@example.org", hex);
  assert_string_equal(hex, "b5b67eff9e29e678a4b9b41ecffd31ce");
  /* a host without an account: the id alone */
  cairn__xs_cpid("0123456789abcdef0123456789abcdef", "", hex);
  assert_string_equal(hex, "8516ac99dc60603295de7bdb6a153530");
  cairn__xs_cpid(NULL, NULL, hex); /* MD5 of nothing (RFC 1321 A.5) */
  assert_string_equal(hex, "d41d8cd98f00b204e9800998ecf8427e");
}

static void test_user_record(void **state) {
  (void)state;
  mem *m = mem_new();
  cairn__xs_user u = {.id = 7, .create_time = 1700000000, .teamid = 3, .name = "Ann & <Co>",
                      .country = "Norway", .total_credit = 12.5, .expavg_credit = 3.25,
                      .expavg_time = 1700000100.5,
                      .cross_project_id = "0123456789abcdef0123456789abcdef",
                      .email = "ann@example.org"};
  assert_int_equal(cairn__xs_user_write(mem_sink, m, &u), 0);
  assert_string_equal(m->text, "<user>\n"
                               " <id>7</id>\n"
                               " <name>Ann &amp; &lt;Co&gt;</name>\n"
                               " <create_time>1700000000</create_time>\n"
                               " <total_credit>12.500000</total_credit>\n"
                               " <expavg_credit>3.250000</expavg_credit>\n"
                               " <expavg_time>1700000100.500000</expavg_time>\n"
                               " <cpid>b5b67eff9e29e678a4b9b41ecffd31ce</cpid>\n"
                               " <country>Norway</country>\n"
                               " <teamid>3</teamid>\n"
                               "</user>\n");
  assert_null(strstr(m->text, "example.org")); /* never the e-mail */
  assert_null(strstr(m->text, "0123456789abcdef")); /* never the cross-project id */
  /* no team, no country: neither element */
  m->len = 0;
  u.teamid = 0;
  u.country = "";
  assert_int_equal(cairn__xs_user_write(mem_sink, m, &u), 0);
  assert_null(strstr(m->text, "<teamid>"));
  assert_null(strstr(m->text, "<country>"));
  free(m);
}

static void test_team_and_host_records(void **state) {
  (void)state;
  mem *m = mem_new();
  cairn__xs_team t = {.id = 3, .founder = 7, .create_time = 1700000001, .name = "Red",
                      .founder_name = "Ann", .url = "", .description = "We <3 science",
                      .country = "", .total_credit = 40, .expavg_credit = 1.5,
                      .expavg_time = 1700000200};
  assert_int_equal(cairn__xs_team_write(mem_sink, m, &t), 0);
  assert_string_equal(m->text, "<team>\n"
                               " <id>3</id>\n"
                               " <name>Red</name>\n"
                               " <userid>7</userid>\n"
                               " <total_credit>40.000000</total_credit>\n"
                               " <expavg_credit>1.500000</expavg_credit>\n"
                               " <expavg_time>1700000200.000000</expavg_time>\n"
                               " <founder_name>Ann</founder_name>\n"
                               " <create_time>1700000001</create_time>\n"
                               " <description>We &lt;3 science</description>\n"
                               " <country></country>\n"
                               "</team>\n");
  m->len = 0;
  cairn__xs_host h = {.id = 12, .create_time = 1700000002, .userid = 7, .total_credit = 2,
                      .expavg_credit = 0.25, .expavg_time = 1700000300, .os_name = "linux",
                      .ncpus = 4, .m_nbytes = 2147483648.0, .d_total = 0,
                      .host_cpid = "0123456789abcdef0123456789abcdef",
                      .email = "ann@example.org"};
  assert_int_equal(cairn__xs_host_write(mem_sink, m, &h), 0);
  assert_string_equal(m->text, "<host>\n"
                               " <id>12</id>\n"
                               " <userid>7</userid>\n"
                               " <total_credit>2.000000</total_credit>\n"
                               " <expavg_credit>0.250000</expavg_credit>\n"
                               " <expavg_time>1700000300.000000</expavg_time>\n"
                               " <p_vendor></p_vendor>\n"
                               " <p_model></p_model>\n"
                               " <os_name>linux</os_name>\n"
                               " <os_version></os_version>\n"
                               " <create_time>1700000002</create_time>\n"
                               " <ncpus>4</ncpus>\n"
                               " <m_nbytes>2147483648.000000</m_nbytes>\n"
                               " <d_total>0.000000</d_total>\n"
                               " <host_cpid>b5b67eff9e29e678a4b9b41ecffd31ce</host_cpid>\n"
                               "</host>\n");
  free(m);
}

static void test_tables_and_files(void **state) {
  (void)state;
  mem *m = mem_new();
  cairn__xs_tables t = {.update_time = 1700000400, .nusers = 2, .nteams = 1, .nhosts = 3,
                        .total_credit = 44.5};
  assert_int_equal(cairn__xs_tables_head(mem_sink, m, &t), 0);
  assert_int_equal(cairn__xs_tables_app(mem_sink, m, "sum"), 0);
  assert_int_equal(cairn__xs_tables_end(mem_sink, m), 0);
  assert_string_equal(m->text, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                               "<tables>\n"
                               " <update_time>1700000400</update_time>\n"
                               " <nusers_total>2</nusers_total>\n"
                               " <nteams_total>1</nteams_total>\n"
                               " <nhosts_total>3</nhosts_total>\n"
                               " <total_credit>44.500000</total_credit>\n"
                               " <applications>\n"
                               "  <application>\n"
                               "  <name>sum</name>\n"
                               "  </application>\n"
                               " </applications>\n"
                               "</tables>\n");
  m->len = 0;
  assert_int_equal(cairn__xs_open(mem_sink, m, "users"), 0);
  assert_int_equal(cairn__xs_close(mem_sink, m, "users"), 0);
  assert_string_equal(m->text, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<users>\n</users>\n");
  free(m);
}

static void test_pieces_and_failure(void **state) {
  (void)state;
  mem *m = mem_new();
  char *name = malloc(10001);
  assert_non_null(name);
  memset(name, '&', 10000); /* 50,000 bytes escaped */
  name[10000] = '\0';
  cairn__xs_user u = {.id = 1, .name = name, .cross_project_id = "x", .email = "y"};
  assert_int_equal(cairn__xs_user_write(mem_sink, m, &u), 0);
  assert_true(m->largest <= 512);
  assert_true(m->calls > 90);
  assert_non_null(strstr(m->text, "&amp;&amp;</name>"));
  for (int k = 0; k < 5; k++) { /* the sink fails at its call k: the writer says so */
    mem *f = mem_new();
    f->fail_after = k;
    assert_int_equal(cairn__xs_user_write(mem_sink, f, &u), -1);
    free(f);
  }
  free(name);
  free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_escape),
    cmocka_unit_test(test_numbers),
    cmocka_unit_test(test_cpid),
    cmocka_unit_test(test_user_record),
    cmocka_unit_test(test_team_and_host_records),
    cmocka_unit_test(test_tables_and_files),
    cmocka_unit_test(test_pieces_and_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
