-- 0002_file_holders.sql — which volunteer holds a verified copy of which
-- uploaded file, so that a restarted master still knows where broadcast
-- inputs can be fetched from. See schema/README.md.

CREATE TABLE file_holders (
  sha256       TEXT NOT NULL REFERENCES files(sha256),
  volunteer_id INTEGER NOT NULL REFERENCES volunteers(id),
  since        INTEGER NOT NULL,          -- when the master learnt it (unix seconds)
  PRIMARY KEY (sha256, volunteer_id)
) WITHOUT ROWID;
CREATE INDEX file_holders_volunteer ON file_holders(volunteer_id);
