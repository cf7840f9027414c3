-- 0021_ban_progress.sql — a ban runs in slices (docs/accountability.md,
-- "Banning a volunteer"): ban_pending is 1 from the ban's first step until
-- its last slice is durable, so a master stopped in between finishes the
-- ban when it starts. See schema/README.md.

ALTER TABLE volunteers ADD COLUMN ban_pending INTEGER NOT NULL DEFAULT 0;
