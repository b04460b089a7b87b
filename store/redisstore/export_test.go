package redisstore

// OnKeyReads makes s tell f how many index entries each key check of Claim and CreateRun
// read (the number claim_key and create_run return with a claim or a refusal).
func OnKeyReads(s *Store, f func(n int64)) { s.keyReads = f }
