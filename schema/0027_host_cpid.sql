-- 0027_host_cpid.sql — each host's (volunteer's) own cross-project id, from
-- which the XML statistics derive the host_cpid they publish (BOINC's
-- definition: the MD5 of this id followed by the e-mail of the host's
-- account; docs/project.md, "Statistics exports"). See schema/README.md.

-- 32 random hex digits, set by a trigger at insertion; never changed, never
-- published as it is.
ALTER TABLE volunteers ADD COLUMN host_cpid TEXT NOT NULL DEFAULT '';
UPDATE volunteers SET host_cpid = lower(hex(randomblob(16)));
CREATE TRIGGER volunteers_host_cpid AFTER INSERT ON volunteers
  WHEN NEW.host_cpid = ''
BEGIN
  UPDATE volunteers SET host_cpid = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
