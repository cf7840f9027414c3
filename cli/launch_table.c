/* launch_table.c — the backends `cairn launch` knows (launch.h): one line each. */
#include "cli/launch.h"

const cairn_launch_backend *const cairn_launch_backends[] = {
  &cairn_launch_local,
  &cairn_launch_ssh,
  &cairn_launch_slurm,
  &cairn_launch_condor,
  NULL,
};
