-- Who a run acts for when it reaches another workflow's runs (runner.Run.ActsFor) and who
-- published each version (catalog.Version.PublishedBy), SPEC §6: storecodec's encoding of
-- principals with their scopes. Runs and versions from before have none recorded: such a
-- run acts for no one, and such a version limits its runs by no publisher (README).
ALTER TABLE runs ADD COLUMN acts_for TEXT NOT NULL DEFAULT '';
ALTER TABLE workflow_versions ADD COLUMN published_by TEXT NOT NULL DEFAULT '';
