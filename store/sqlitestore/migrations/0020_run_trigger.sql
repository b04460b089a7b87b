-- What started a run (runner.Run.Trigger, SPEC §2), storecodec.EncodeTrigger's JSON: api,
-- mcp, webhook, cli, schedule (with its index and tick), rerun or child. Runs from before
-- have none (NULL).
ALTER TABLE runs ADD COLUMN run_trigger BLOB;
