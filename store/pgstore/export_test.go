package pgstore

// SweepExpiredKeys is the sweep the store runs every keySweepInterval, for tests.
var SweepExpiredKeys = (*Store).sweepExpiredKeys

// SweepBatch is sweepBatch, for tests.
const SweepBatch = sweepBatch
