-- 0007_resources.sql — resource requests and offers (docs/jobs.md
-- "Resources"): what a task asks for when it differs from the default (one
-- core, no memory, no disk), and what each volunteer last said it offers.
-- See schema/README.md.

CREATE TABLE task_resources (
  task_id    INTEGER PRIMARY KEY REFERENCES tasks(id),
  cores      INTEGER NOT NULL,
  memory_mib INTEGER NOT NULL,
  disk_mib   INTEGER NOT NULL
);

CREATE TABLE volunteer_offers (
  volunteer_id INTEGER PRIMARY KEY REFERENCES volunteers(id),
  cores        INTEGER NOT NULL,
  memory_mib   INTEGER NOT NULL,
  disk_mib     INTEGER NOT NULL
);
