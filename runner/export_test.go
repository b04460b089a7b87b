package runner

import "time"

// SetMaxHTTPTimeout sets the cap on one http attempt of engines made with c, so that a test
// sees it cut an attempt without waiting schemas.MaxHTTPTimeout.
func SetMaxHTTPTimeout(c *Config, d time.Duration) { c.maxHTTPTimeout = d }

// HTTPTimeout is httpTimeout, for tests of the timeout an attempt gets.
var HTTPTimeout = httpTimeout

// NestsDeeper is nestsDeeper, for tests of the JSON bodies kept as text.
var NestsDeeper = nestsDeeper
