-- Runs count the answers to a hook's question (MCP elicitation) that did not fit its
-- schema, for the hook step at index ask_step, so that every process sharing the store
-- counts the same answers and agrees when the question is withdrawn (runner.Store.MissAsk).
ALTER TABLE runs ADD COLUMN ask_step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN ask_misses INTEGER NOT NULL DEFAULT 0;
