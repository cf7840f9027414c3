/* test_launch_ssh.c — `cairn launch ssh` (docs/launch.md) against a real
 * sshd the test starts on a free loopback port (listening on 127.0.0.1-3,
 * a throw-away host key and user key in the test's folder, StrictModes no,
 * its own AuthorizedKeysFile) and an ssh config mapping the host names node1
 * and node2 to 127.0.0.2 and 127.0.0.3. A real master registering by
 * invitation; the factory starts workers on both "hosts" (their clusters are
 * node1 and node2), the invitation reaches them through the ssh session's
 * stdin (its code is on no process's command line; the factory's file is
 * mode 0600), a 30-task DAG completes, and once the factory gets SIGTERM no
 * worker is left. When sshd cannot start (not installed, no privilege
 * separation folder, the port taken), the test says why and exits 77, which
 * ctest reports as skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define SKIP 77

static char dir[4096], ssh_cfg[4200];
static pid_t sshd = -1;

/* Processes whose command line holds every one of a and b (b may be NULL). */
static int count_procs(const char *a, const char *b) {
  DIR *d = opendir("/proc");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], buf[8192];
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
      continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    FILE *fp = fopen(path, "r");
    if (!fp)
      continue;
    size_t k = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    for (size_t i = 0; i < k; i++)
      if (!buf[i])
        buf[i] = ' ';
    buf[k] = '\0';
    n += strncmp(buf, "ssh ", 4) && strncmp(buf, "/usr/bin/ssh ", 13) && strstr(buf, a) &&
         (!b || strstr(buf, b)); /* not the factory's ssh commands */
  }
  if (d)
    closedir(d);
  return n;
}

static int ssh_ok(const char *host) {
  const char *argv[] = {"/usr/bin/ssh", "-F", ssh_cfg, "-o", "BatchMode=yes", host, "true", NULL};
  return harness_run(argv, NULL) == 0;
}

/* Starts sshd; 0, or -1 after printing why not. */
static int start_sshd(void) {
  char path[9000], key[4300], cfg[4300], log[4300];
  if (access("/usr/sbin/sshd", X_OK) || access("/usr/bin/ssh-keygen", X_OK) ||
      access("/usr/bin/ssh", X_OK))
    return printf("SKIP: openssh-server / openssh-client are not installed "
                  "(scripts/install-deps.sh installs them)\n"), -1;
  if (geteuid() == 0 && mkdir("/run/sshd", 0755) && errno != EEXIST)
    return printf("SKIP: sshd run as root needs /run/sshd and it cannot be made: %s\n",
                  strerror(errno)), -1;
  const char *names[] = {"hostkey", "userkey"};
  for (int i = 0; i < 2; i++) {
    snprintf(key, sizeof key, "%s/%s", dir, names[i]);
    const char *argv[] = {"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key, NULL};
    if (harness_run(argv, NULL) != 0)
      return printf("SKIP: ssh-keygen failed\n"), -1;
  }
  snprintf(path, sizeof path, "cp %s/userkey.pub %s/authorized_keys", dir, dir);
  if (system(path) != 0)
    return printf("SKIP: cannot copy the user key\n"), -1;
  unsigned port = harness_unused_port(0);
  snprintf(cfg, sizeof cfg, "%s/sshd_config", dir);
  FILE *fp = fopen(cfg, "w");
  fprintf(fp,
          "ListenAddress 127.0.0.1:%u\nListenAddress 127.0.0.2:%u\nListenAddress 127.0.0.3:%u\n"
          "HostKey %s/hostkey\nAuthorizedKeysFile %s/authorized_keys\nStrictModes no\n"
          "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
          "PermitRootLogin prohibit-password\nPidFile %s/sshd.pid\nLogLevel ERROR\n"
          "AcceptEnv TMPDIR\n",
          port, port, port, dir, dir, dir);
  fclose(fp);
  fp = fopen(ssh_cfg, "w");
  fprintf(fp,
          "Host node1\n  HostName 127.0.0.2\nHost node2\n  HostName 127.0.0.3\n"
          "Host *\n  Port %u\n  User %s\n  IdentityFile %s/userkey\n  IdentitiesOnly yes\n"
          "  UserKnownHostsFile %s/known_hosts\n  StrictHostKeyChecking accept-new\n"
          "  LogLevel ERROR\n  SetEnv TMPDIR=%s/remote\n",
          port, getenv("USER") && *getenv("USER") ? getenv("USER") : "root", dir, dir, dir);
  fclose(fp);
  snprintf(log, sizeof log, "%s/remote", dir); /* the hosts' $TMPDIR */
  mkdir(log, 0700);
  snprintf(log, sizeof log, "%s/sshd.log", dir);
  const char *argv[] = {"/usr/sbin/sshd", "-D", "-e", "-f", cfg, NULL};
  sshd = harness_spawn(argv, log);
  double until = harness_now() + 15;
  while (harness_now() < until && !(ssh_ok("node1") && ssh_ok("node2")))
    usleep(200 * 1000);
  if (ssh_ok("node1") && ssh_ok("node2"))
    return 0;
  char *out = NULL;
  const char *cat[] = {"/bin/cat", log, NULL};
  harness_run(cat, &out);
  printf("SKIP: sshd did not let us in on port %u: %s\n", port, out ? out : "");
  free(out);
  return -1;
}

static void test_launch_ssh(void **state) {
  (void)state;
  char job[4300], wd[4300], flog[4300], bin[4096], wbin[4096], inv[4400];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  snprintf(sf.db, sizeof sf.db, "%s/cairn.db", dir); /* beside the hosts' files */
  const char *extra[] = {"--registration", "invite", NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  snprintf(job, sizeof job, "%s/job.json", dir);
  FILE *fp = fopen(job, "w");
  fputs("{\"name\": \"ssh30\", \"app\": \"sleep\", \"tasks\": [{\"id\": \"t0\", \"args\": [\"0.1\"]}",
        fp);
  for (int i = 1; i < 30; i++)
    fprintf(fp, ", {\"id\": \"t%d\", \"args\": [\"0.5\"], \"after\": [\"t0\"]}", i);
  fputs("]}\n", fp);
  fclose(fp);
  harness_bin(bin, sizeof bin, "cairn");
  harness_bin(wbin, sizeof wbin, "cairn-worker");
  const char *sub[] = {bin, "submit", job, "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(sub, NULL), 0);

  snprintf(wd, sizeof wd, "%s/launch", dir);
  snprintf(flog, sizeof flog, "%s/launch.log", dir);
  char sshopt[4300];
  snprintf(sshopt, sizeof sshopt, "-F %s", ssh_cfg);
  const char *argv[] = {bin, "launch", "ssh", "--server", sf.srv.url, "--max", "2", "--hosts",
                        "node1,node2", "--ssh-options", sshopt, "--remote-worker", wbin,
                        "--idle-exit", "60", "--poll", "0.5", "--work-dir", wd,
                        "--worker-options", "--app sleep=/bin/sleep --peer-listen off", NULL};
  pid_t factory = harness_spawn(argv, flog);
  assert_true(factory > 0);

  json_t *o = NULL;
  const char *st = "";
  double until = harness_now() + 120;
  while (harness_now() < until) {
    json_decref(o);
    o = NULL;
    harness_http(sf.srv.url, "GET", "/v1/jobs/1", ADMIN, NULL, 0, &o, NULL, NULL);
    st = json_string_value(json_object_get(o, "state"));
    if (st && !strcmp(st, "done"))
      break;
    usleep(200 * 1000);
  }
  assert_non_null(st);
  assert_string_equal(st, "done");
  json_decref(o);

  /* workers ran on both hosts, registered with the invitation */
  assert_int_equal(
    harness_http(sf.srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &o, NULL, NULL), 200);
  char *text = json_dumps(o, JSON_COMPACT);
  printf("volunteers: %s\n", text);
  assert_non_null(strstr(text, "\"cluster\":\"node1\""));
  assert_non_null(strstr(text, "\"cluster\":\"node2\""));
  free(text);
  json_decref(o);
  struct stat sb;
  snprintf(inv, sizeof inv, "%s/invitation", wd);
  assert_int_equal(stat(inv, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  char code[256] = "";
  fp = fopen(inv, "r");
  assert_non_null(fgets(code, sizeof code, fp));
  fclose(fp);
  code[strcspn(code, "\n")] = '\0';
  assert_true(strlen(code) > 8);
  assert_int_equal(count_procs(code, NULL), 0);
  /* on the hosts too, the invitation is a file only its owner reads */
  char remote[4300], path[4600];
  snprintf(remote, sizeof remote, "%s/remote", dir);
  DIR *rd = opendir(remote);
  int invs = 0;
  for (struct dirent *e; rd && (e = readdir(rd));) {
    snprintf(path, sizeof path, "%s/%s/invitation", remote, e->d_name);
    if (e->d_name[0] == '.' || stat(path, &sb))
      continue;
    assert_int_equal(sb.st_mode & 0777, 0600);
    invs++;
  }
  if (rd)
    closedir(rd);
  assert_int_equal(invs, 2);
  int running = count_procs(sf.srv.url, "--exit-when-idle");
  printf("worker processes running before SIGTERM: %d\n", running);
  assert_true(running >= 2);

  kill(factory, SIGTERM);
  int status = harness_wait(factory, 60);
  assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  until = harness_now() + 15;
  while (harness_now() < until && count_procs(sf.srv.url, "--exit-when-idle") > 0)
    usleep(200 * 1000);
  assert_int_equal(count_procs(sf.srv.url, "--exit-when-idle"), 0);
  char *out = NULL;
  const char *cat[] = {"/bin/cat", flog, NULL};
  harness_run(cat, &out);
  printf("%s", out ? out : "");
  assert_non_null(out && strstr(out, "stopped 2 workers"));
  free(out);
  /* on the hosts, each worker's folder went with it; only its log stays */
  DIR *d = opendir(remote);
  int logs = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    size_t len = strlen(e->d_name);
    assert_true(len > 4 && strcmp(e->d_name + len - 4, ".log") == 0);
    logs++;
  }
  if (d)
    closedir(d);
  assert_int_equal(logs, 2);
  server_fixture_stop(&sf, SIGTERM);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  harness_tmpdir(dir, sizeof dir);
  snprintf(ssh_cfg, sizeof ssh_cfg, "%s/ssh_config", dir);
  if (start_sshd()) {
    if (sshd > 0)
      harness_stop_all(&sshd, 1, 5);
    harness_rmtree(dir);
    return SKIP;
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_launch_ssh),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  harness_stop_all(&sshd, 1, 5);
  if (harness_rmtree(dir))
    rc = 1;
  return rc;
}
