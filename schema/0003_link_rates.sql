-- 0003_link_rates.sql — the transfer rates the master measured between
-- clusters, so that a restarted master plans broadcasts with them at once.
-- See schema/README.md.

CREATE TABLE link_rates (
  src              TEXT NOT NULL,          -- source cluster; '' = the master
  dst              TEXT NOT NULL,          -- receiving cluster
  bytes_per_second INTEGER NOT NULL,       -- weighted mean (newest sample half)
  samples          INTEGER NOT NULL,
  PRIMARY KEY (src, dst)
) WITHOUT ROWID;
