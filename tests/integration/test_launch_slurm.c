/* test_launch_slurm.c — `cairn launch slurm` (docs/launch.md) against a real
 * Slurm the test starts in its own folder: munged with its own key, socket,
 * pid, log and seed files; a throw-away slurm.conf (cluster cairntest,
 * slurmctld and slurmd on free loopback ports, one node "localhost" with
 * this machine's CPUs and memory, partition debug as the default, no
 * accounting storage, proctrack/pgid, task/none); slurmctld -D and slurmd -D
 * with SLURM_CONF pointing at it.
 *
 * A real master registering by invitation; the factory (--min 0 --max 4
 * --idle-exit 3) runs a 200-task DAG to completion on workers that ran as
 * Slurm array tasks (their ids and the pool size over time, from squeue, are
 * printed; each job's log ends with the worker's exit status 0; the
 * volunteers' cluster is the default partition), scales back to none, then
 * a second job's long tasks get workers again and a SIGTERM to the factory
 * while they run leaves no cairn-worker job in squeue. Before Slurm starts,
 * sbatch options that would break the backend are refused. When Slurm or munge
 * is missing or its daemons cannot start, the test says why and exits 77,
 * which ctest reports as skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
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

static char dir[4096], conf[4200];
static pid_t daemons[3] = {-1, -1, -1}; /* munged, slurmctld, slurmd */
static pid_t factory = -1;

static const char *const tools[] = {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd",
                                    "/usr/bin/sbatch",  "/usr/bin/squeue",     "/usr/bin/sinfo",
                                    "/usr/bin/scancel", NULL};

/* Prints the last lines of a daemon's log (why it did not start). */
static void show_tail(const char *name) {
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const char *argv[] = {"/usr/bin/tail", "-n", "15", path, NULL};
  char *out = NULL;
  harness_run(argv, &out);
  printf("--- %s:\n%s", name, out ? out : "(none)\n");
  free(out);
}

/* squeue's "%i %T" lines of the cairn-worker jobs; NULL when it failed. */
static char *queue(void) {
  const char *argv[] = {"/usr/bin/squeue", "-h", "-r", "-n", "cairn-worker", "-o", "%i %T",
                        NULL};
  char *out = NULL;
  if (harness_run(argv, &out) != 0) {
    free(out);
    return NULL;
  }
  return out ? out : strdup("");
}

/* Lines of s (that hold word, when not NULL). */
static int count_lines(const char *s, const char *word) {
  int n = 0;
  while (s && *s) {
    const char *nl = strchr(s, '\n'), *end = nl ? nl : s + strlen(s);
    const char *w = word ? strstr(s, word) : s;
    n += w && w < end;
    s = nl ? nl + 1 : end;
  }
  return n;
}

static int node_idle(void) {
  const char *argv[] = {"/usr/bin/sinfo", "-h", "-n", "localhost", "-o", "%t", NULL};
  char *out = NULL;
  int ok = harness_run(argv, &out) == 0 && out && strncmp(out, "idle", 4) == 0;
  free(out);
  return ok;
}

static long long mem_mib(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  long long kib = 0;
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemTotal: %lld kB", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib / 1024 * 9 / 10; /* slurmd drains a node that has less than it is said to */
}

static int write_conf(unsigned ctld_port, unsigned d_port) {
  struct passwd *pw = getpwuid(getuid());
  FILE *f = fopen(conf, "w");
  if (!f || !pw)
    return -1;
  fprintf(f,
          "ClusterName=cairntest\nSlurmctldHost=localhost\nSlurmctldPort=%u\nSlurmdPort=%u\n"
          "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%s/munge.sock\n"
          "SlurmUser=%s\nSlurmdUser=%s\nStateSaveLocation=%s/state\nSlurmdSpoolDir=%s/spool\n"
          "SlurmctldPidFile=%s/slurmctld.pid\nSlurmdPidFile=%s/slurmd.pid\n"
          "SlurmctldLogFile=%s/slurmctld.log\nSlurmdLogFile=%s/slurmd.log\n"
          "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nMpiDefault=none\n"
          "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
          "AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n"
          "JobCompType=jobcomp/none\nReturnToService=2\nSlurmctldDebug=info\nSlurmdDebug=info\n"
          "KillWait=5\n"
          "MailProg=/bin/true\n"
          "NodeName=localhost NodeAddr=127.0.0.1 CPUs=%ld RealMemory=%lld State=UNKNOWN\n"
          "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
          ctld_port, d_port, dir, pw->pw_name, pw->pw_name, dir, dir, dir, dir, dir, dir,
          sysconf(_SC_NPROCESSORS_ONLN), mem_mib());
  return fclose(f);
}

/* Starts munged, slurmctld and slurmd; 0, or -1 after printing why not. */
static int start_slurm(void) {
  char path[4400], key[4300], sock[4300], pid[4300], log[4300], seed[4300];
  for (int i = 0; tools[i]; i++)
    if (access(tools[i], X_OK))
      return printf("SKIP: %s is not installed (scripts/install-deps.sh installs slurm-wlm and "
                    "munge)\n", tools[i]), -1;
  snprintf(path, sizeof path, "%s/state", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/spool", dir);
  mkdir(path, 0700);
  snprintf(key, sizeof key, "%s/munge.key", dir);
  int fd = open(key, O_WRONLY | O_CREAT | O_EXCL, 0400), rnd = open("/dev/urandom", O_RDONLY);
  char bytes[1024];
  if (fd < 0 || rnd < 0 || read(rnd, bytes, sizeof bytes) != (ssize_t)sizeof bytes ||
      write(fd, bytes, sizeof bytes) != (ssize_t)sizeof bytes)
    return printf("SKIP: cannot write a munge key: %s\n", strerror(errno)), -1;
  close(fd);
  close(rnd);
  snprintf(sock, sizeof sock, "--socket=%s/munge.sock", dir);
  snprintf(pid, sizeof pid, "--pid-file=%s/munged.pid", dir);
  snprintf(log, sizeof log, "--log-file=%s/munged.log", dir);
  snprintf(seed, sizeof seed, "--seed-file=%s/munged.seed", dir);
  char keyopt[4400];
  snprintf(keyopt, sizeof keyopt, "--key-file=%s", key);
  const char *munged[] = {"/usr/sbin/munged", "--foreground", "--force", sock, keyopt, pid, log,
                          seed, NULL};
  snprintf(path, sizeof path, "%s/munged.out", dir);
  daemons[0] = harness_spawn(munged, path);
  unsigned p1 = harness_unused_port(0), p2 = harness_unused_port(p1);
  if (!p1 || !p2 || write_conf(p1, p2))
    return printf("SKIP: no free loopback ports or cannot write %s\n", conf), -1;
  setenv("SLURM_CONF", conf, 1);
  snprintf(sock, sizeof sock, "%s/munge.sock", dir);
  for (double until = harness_now() + 10; harness_now() < until && access(sock, F_OK);)
    usleep(100 * 1000);
  if (access(sock, F_OK))
    return printf("SKIP: munged did not start\n"), show_tail("munged.log"), -1;
  snprintf(log, sizeof log, "%s/slurmctld.out", dir);
  const char *ctld[] = {"/usr/sbin/slurmctld", "-D", "-i", NULL};
  daemons[1] = harness_spawn(ctld, log);
  snprintf(log, sizeof log, "%s/slurmd.out", dir);
  const char *slurmd[] = {"/usr/sbin/slurmd", "-D", "-N", "localhost", NULL};
  daemons[2] = harness_spawn(slurmd, log);
  for (double until = harness_now() + 40; harness_now() < until && !node_idle();)
    usleep(250 * 1000);
  if (node_idle())
    return 0;
  printf("SKIP: the Slurm node did not become idle in 40 s (slurmctld port %u, slurmd port "
         "%u)\n", p1, p2);
  show_tail("slurmctld.out");
  show_tail("slurmctld.log");
  show_tail("slurmd.out");
  show_tail("slurmd.log");
  return -1;
}

/* A job file: the first 200 tasks of an evolving mesh ("i,j" after "i-1,j"
 * and "i,j-1", levels i+j < 20; the 10 it leaves out have no successors),
 * each sleeping 0.2 s. */
static void write_mesh(const char *path) {
  FILE *f = fopen(path, "w");
  fputs("{\"name\": \"mesh200\", \"app\": \"cell\", \"policy\": \"ic\", \"tasks\": [", f);
  int n = 0;
  for (int l = 0; l < 20 && n < 200; l++)
    for (int i = 0; i <= l && n < 200; i++, n++) {
      int j = l - i;
      fprintf(f, "%s{\"id\": \"%d,%d\", \"args\": [\"0.2\"]", n ? ",\n " : "", i, j);
      if (i && j)
        fprintf(f, ", \"after\": [\"%d,%d\", \"%d,%d\"]", i - 1, j, i, j - 1);
      else if (i || j)
        fprintf(f, ", \"after\": [\"%d,%d\"]", i ? i - 1 : i, j ? j - 1 : j);
      fputs("}", f);
    }
  fputs("]}\n", f);
  fclose(f);
}

static const char *job_state(const char *url, int id) {
  static char st[32];
  char path[64];
  json_t *o = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%d", id);
  harness_http(url, "GET", path, ADMIN, NULL, 0, &o, NULL, NULL);
  const char *s = json_string_value(json_object_get(o, "state"));
  snprintf(st, sizeof st, "%s", s ? s : "");
  json_decref(o);
  return st;
}

/* Prints the pool (squeue) every second until job id is done or until
 * seconds pass; the most jobs squeue listed at once. */
static int watch(const char *url, int id, double seconds, double t0) {
  int most = 0, last = -1;
  for (double until = harness_now() + seconds; harness_now() < until;) {
    char *q = queue();
    int all = count_lines(q, NULL), run = count_lines(q, " RUNNING");
    if (all > most)
      most = all;
    if (all != last)
      printf("t=%5.1f s  pool %d (running %d, pending %d)\n", harness_now() - t0, all, run,
             count_lines(q, " PENDING"));
    last = all;
    free(q);
    if (strcmp(job_state(url, id), "done") == 0)
      break;
    usleep(1000 * 1000);
  }
  return most;
}

static char *read_all(const char *path) {
  const char *argv[] = {"/bin/cat", path, NULL};
  char *out = NULL;
  harness_run(argv, &out);
  return out ? out : strdup("");
}

/* Reads /proc/PID/NAME into buf with its NULs made blanks; bytes read. */
static size_t read_proc(const char *pid, const char *name, char *buf, size_t size) {
  char path[300];
  snprintf(path, sizeof path, "/proc/%s/%s", pid, name);
  FILE *fp = fopen(path, "r");
  if (!fp)
    return 0;
  size_t k = fread(buf, 1, size - 1, fp);
  fclose(fp);
  for (size_t i = 0; i < k; i++)
    if (!buf[i])
      buf[i] = ' ';
  buf[k] = '\0';
  return k;
}

/* cairn-worker processes whose command line holds mark; *leaks: how many
 * of them have CAIRN_ADMIN_TOKEN in their environment. */
static int workers_with(const char *mark, int *leaks) {
  DIR *d = opendir("/proc");
  int n = 0;
  *leaks = 0;
  static char buf[65536];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if (!read_proc(e->d_name, "cmdline", buf, sizeof buf) || !strstr(buf, "cairn-worker ") ||
        !strstr(buf, mark))
      continue;
    n++;
    read_proc(e->d_name, "environ", buf, sizeof buf);
    *leaks += strstr(buf, "CAIRN_ADMIN_TOKEN=") != NULL;
  }
  if (d)
    closedir(d);
  return n;
}

typedef struct run {
  server_fixture sf; /* the master, its database beside Slurm's files */
  char bin[4096], wbin[4096], wd[4300], flog[4300], node_tmp[4300];
  double t0;
} run;

/* Submits job file path to the master. */
static void submit(run *r, const char *path) {
  const char *sub[] = {r->bin, "submit", path, "--server", r->sf.srv.url, NULL};
  assert_int_equal(harness_run(sub, NULL), 0);
}

/* Starts the factory with the jobs' $TMPDIR in the test's folder. */
static void start_factory(run *r, const char *cell) {
  char wopts[4400];
  snprintf(r->wd, sizeof r->wd, "%s/launch", dir);
  snprintf(r->flog, sizeof r->flog, "%s/launch.log", dir);
  snprintf(wopts, sizeof wopts, "--app cell=%s --peer-listen off", cell);
  const char *argv[] = {r->bin, "launch", "slurm", "--server", r->sf.srv.url, "--min", "0",
                        "--max", "4", "--idle-exit", "3", "--poll", "1", "--worker", r->wbin,
                        "--work-dir", r->wd, "--batch-options", "--time 30 --comment cairn-test",
                        "--worker-options", wopts, NULL};
  char *tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
  snprintf(r->node_tmp, sizeof r->node_tmp, "%s/node-tmp", dir);
  mkdir(r->node_tmp, 0700);
  setenv("TMPDIR", r->node_tmp, 1);
  r->t0 = harness_now();
  factory = harness_spawn(argv, r->flog);
  if (tmp)
    setenv("TMPDIR", tmp, 1);
  else
    unsetenv("TMPDIR");
  free(tmp);
  assert_true(factory > 0);
}

/* After the work: squeue empties (--min 0) and the factory saw each exit. */
static void check_scaled_back(run *r) {
  char *q = NULL;
  for (double until = harness_now() + 60; harness_now() < until; usleep(500 * 1000)) {
    free(q);
    if ((q = queue()) && !*q)
      break;
  }
  assert_non_null(q);
  assert_string_equal(q, "");
  free(q);
  printf("t=%5.1f s  pool 0 (scaled back to --min 0)\n", harness_now() - r->t0);
  char *text = read_all(r->flog);
  for (double until = harness_now() + 10;
       harness_now() < until && !strstr(text, "exited (0 left)"); usleep(500 * 1000)) {
    free(text);
    text = read_all(r->flog);
  }
  printf("%s", text);
  assert_non_null(strstr(text, "exited (0 left)"));
  assert_null(strstr(text, " failed ("));
  free(text);
}

/* The workers were array tasks of partition debug: each log says so and
 * ends with status 0; the script passes the invitation as a path. */
static void check_jobs(run *r) {
  json_t *o = NULL;
  assert_int_equal(
    harness_http(r->sf.srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &o, NULL, NULL), 200);
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  assert_non_null(strstr(text, "\"cluster\":\"debug\""));
  free(text);
  char path[4400], *logs = NULL;
  snprintf(path, sizeof path, "%s/slurm/worker.sh", r->wd);
  text = read_all(path);
  assert_non_null(strstr(text, "--invitation-file"));
  free(text);
  snprintf(path, sizeof path, "%s/slurm", r->wd);
  const char *ls[] = {"/bin/sh", "-c", "cd \"$1\" && ls *.log", "sh", path, NULL};
  assert_int_equal(harness_run(ls, &logs), 0);
  printf("worker jobs (JOBID_TASK.log): %s", logs);
  int nlogs = 0;
  for (char *save = NULL, *l = strtok_r(logs, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char lp[4600];
    snprintf(lp, sizeof lp, "%s/%s", path, l);
    text = read_all(lp);
    assert_non_null(strstr(text, "cairn-slurm: job "));
    assert_non_null(strstr(text, "cairn-slurm: worker exit status 0"));
    free(text);
    nlogs++;
  }
  free(logs);
  assert_true(nlogs >= 2);
}

/* Waits for 2 workers running long tasks; none has the admin token; a
 * SIGTERM to the factory leaves no job in squeue and no worker folder. */
static void check_stop(run *r) {
  int running = 0;
  for (double until = harness_now() + 60; harness_now() < until && running < 2;
       usleep(500 * 1000)) {
    char *q = queue();
    running = count_lines(q, " RUNNING");
    free(q);
  }
  printf("t=%5.1f s  %d workers running job 2\n", harness_now() - r->t0, running);
  assert_true(running >= 2);
  char mark[4400];
  snprintf(mark, sizeof mark, "--invitation-file %s/invitation", r->wd);
  int leaks, seen = workers_with(mark, &leaks);
  printf("cairn-worker processes of the jobs: %d, with the admin token: %d\n", seen, leaks);
  assert_true(seen >= 2);
  assert_int_equal(leaks, 0); /* the factory has CAIRN_ADMIN_TOKEN in its environment */
  double t_stop = harness_now();
  kill(factory, SIGTERM);
  int status = harness_wait(factory, 120);
  factory = -1;
  printf("the factory stopped %.1f s after SIGTERM\n", harness_now() - t_stop);
  assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char *q = queue();
  assert_non_null(q);
  printf("cairn-worker jobs in squeue after the factory stopped: \"%s\"\n", q);
  assert_string_equal(q, "");
  free(q);
  char *text = read_all(r->flog);
  printf("--- the factory's log:\n%s", text);
  assert_non_null(strstr(text, "left the queue"));
  assert_non_null(strstr(text, "stopped "));
  free(text);
  const char *ls[] = {"/bin/ls", "-A", r->node_tmp, NULL};
  assert_int_equal(harness_run(ls, &text), 0);
  assert_string_equal(text ? text : "", ""); /* each job removed its worker's folder */
  free(text);
}

static void test_launch_slurm(void **state) {
  (void)state;
  run r = {0};
  char job[4300], cell[4300];
  assert_int_equal(server_fixture_open(&r.sf, NULL, 0), 0);
  snprintf(r.sf.db, sizeof r.sf.db, "%s/cairn.db", dir);
  const char *extra[] = {"--registration", "invite", NULL};
  assert_int_equal(server_fixture_restart(&r.sf, extra), 0);
  harness_bin(r.bin, sizeof r.bin, "cairn");
  harness_bin(r.wbin, sizeof r.wbin, "cairn-worker");
  snprintf(cell, sizeof cell, "%s/cell", dir);
  harness_write_file(cell, "#!/bin/sh\nsleep \"$1\"\n");
  chmod(cell, 0755);
  snprintf(job, sizeof job, "%s/mesh.json", dir);
  write_mesh(job);
  submit(&r, job);
  start_factory(&r, cell);
  int most = watch(r.sf.srv.url, 1, 240, r.t0);
  printf("job 1 %s after %.1f s; at most %d workers queued at once\n",
         job_state(r.sf.srv.url, 1), harness_now() - r.t0, most);
  assert_string_equal(job_state(r.sf.srv.url, 1), "done");
  assert_true(most >= 2 && most <= 4);
  check_scaled_back(&r);
  check_jobs(&r);
  /* more work: workers again, stopped while they run */
  snprintf(job, sizeof job, "%s/long.json", dir);
  harness_write_file(job, "{\"name\": \"long\", \"app\": \"cell\", \"tasks\": ["
                          "{\"id\": \"a\", \"args\": [\"60\"]},"
                          "{\"id\": \"b\", \"args\": [\"60\"]},"
                          "{\"id\": \"c\", \"args\": [\"60\"]}]}\n");
  submit(&r, job);
  check_stop(&r);
  server_fixture_stop(&r.sf, SIGTERM);
  assert_int_equal(server_fixture_close(&r.sf), 0);
}

/* `cairn launch slurm` with args refuses to start, saying want. */
static void refused(const char *want, const char *const *args) {
  char bin[4096], log[4300];
  const char *argv[32] = {bin, "launch", "slurm", "--server", "http://127.0.0.1:9", "--token",
                          ADMIN};
  int k = 7;
  for (int i = 0; args[i]; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(log, sizeof log, "%s/refused.log", dir);
  unlink(log);
  pid_t p = harness_spawn(argv, log);
  int status = harness_wait(p, 60);
  char *text = read_all(log);
  printf("%s", text);
  assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1);
  assert_non_null(strstr(text, want));
  free(text);
}

/* Options that would break the backend are refused before anything runs;
 * without a partition or --cluster and without a reachable Slurm, init
 * says sinfo failed; with a partition it needs no sinfo. Needs no Slurm. */
static void test_slurm_refuses(void **state) {
  (void)state;
  refused("--array is set by cairn launch",
          (const char *[]){"--cluster", "c", "--batch-options", "--array=0-3", NULL});
  refused("--out is set by cairn launch",
          (const char *[]){"--cluster", "c", "--batch-options", "--time 5 --out /tmp/x", NULL});
  refused("\"stray\" is not an sbatch option",
          (const char *[]){"--batch-options", "--exclusive stray -p debug", NULL});
  refused("--cpus-per-task is set by cairn launch",
          (const char *[]){"--cores", "2", "--batch-options", "-p debug --cpus-per-task 4", NULL});
  refused("--mem-per-cpu is set by cairn launch",
          (const char *[]){"--memory", "100", "--batch-options", "-pdebug --mem-per-cpu=9", NULL});
  refused("-M is set by cairn launch",
          (const char *[]){"--batch-options", "-M other --partition=debug", NULL});
  refused("--array-max wants an integer",
          (const char *[]){"--cluster", "c", "--array-max", "0", NULL});
  char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", dir, 1); /* no sinfo there */
  refused("sinfo failed (is Slurm's client installed", (const char *[]){"--max", "1", NULL});
  /* a partition in --batch-options is the default cluster: no sinfo needed */
  char bin[4096], log[4300];
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(log, sizeof log, "%s/accepted.log", dir);
  const char *argv[] = {bin, "launch", "slurm", "--server", "http://127.0.0.1:9", "--token", ADMIN,
                        "--batch-options", "--exclusive --requeue --part=debug -t 5 --qos low",
                        NULL};
  pid_t p = harness_spawn(argv, log);
  char *text = read_all(log);
  for (double until = harness_now() + 30; harness_now() < until && !strstr(text, "backend,");
       usleep(100 * 1000)) {
    free(text);
    text = read_all(log);
  }
  kill(p, SIGTERM);
  int status = harness_wait(p, 60);
  printf("%s", text);
  assert_non_null(strstr(text, "slurm backend, 0 to 4 workers"));
  assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  free(text);
  setenv("PATH", path, 1);
  free(path);
}

int main(void) {
  harness_tmpdir(dir, sizeof dir);
  snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
  const struct CMUnitTest plain[] = {
    cmocka_unit_test(test_slurm_refuses),
  };
  int rc = cmocka_run_group_tests(plain, NULL, NULL);
  if (rc == 0)
    rc = SKIP;
  if (rc == SKIP && start_slurm() == 0) {
    const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_slurm),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
  }
  /* after a failure: the factory cancels its jobs; any job left is
   * cancelled (they would outlive slurmd); then slurmd, slurmctld, munged */
  if (factory > 0)
    harness_stop_all(&factory, 1, 90);
  if (daemons[1] > 0) {
    const char *cancel[] = {"/usr/bin/scancel", "--name", "cairn-worker", NULL};
    harness_run(cancel, NULL);
    char *q = NULL;
    for (double until = harness_now() + 30; harness_now() < until; usleep(250 * 1000)) {
      free(q);
      if ((q = queue()) && !*q)
        break;
    }
    if (q && *q)
      printf("jobs left in squeue: %s", q);
    free(q);
  }
  pid_t order[3] = {daemons[2], daemons[1], daemons[0]};
  harness_stop_all(order, 3, 20);
  if (harness_rmtree(dir) && rc != SKIP)
    rc = 1;
  return rc;
}
