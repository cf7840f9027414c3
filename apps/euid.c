/* euid.c — cairn-app-euid: prints its effective and real user ids, "euid
 * E uid U". tests/security/test_sandbox.c runs a setuid-root copy of it from
 * inside a task to see whether the task can gain privileges. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("euid %ld uid %ld\n", (long)geteuid(), (long)getuid());
  return 0;
}
