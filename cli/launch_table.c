/* launch_table.c — the backends `cairn launch` knows (launch.h): one line each. */
#include "cli/launch.h"

const cairn__launch_backend *const cairn__launch_backends[] = {
  &cairn__launch_local,
  &cairn__launch_ssh,
  &cairn__launch_slurm,
  &cairn__launch_condor,
  NULL,
};
