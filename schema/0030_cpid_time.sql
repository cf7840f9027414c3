-- 0030_cpid_time.sql — when an account's cross-project id was made: the
-- creation time of the account it came from. A worker of several projects
-- offers each of its masters the oldest id it knows for the same e-mail,
-- and a master adopts an offer older than its own (docs/project.md,
-- "Cross-project ids"; BOINC's client sends the oldest cross-project id of
-- its projects of one e-mail, [BOINC-stats]). See schema/README.md.

-- Unix seconds; the account's own creation until it adopts another's id.
ALTER TABLE accounts ADD COLUMN cpid_time INTEGER NOT NULL DEFAULT 0;
UPDATE accounts SET cpid_time = created;
