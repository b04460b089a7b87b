package wire

import "time"

// Schedule is one schedule of a workflow's published version with its next ticks:
// GET /api/workflows/{id}/schedules.
type Schedule struct {
	Index    int         `json:"index"`
	Cron     string      `json:"cron"`
	Timezone string      `json:"timezone"`
	Next     []time.Time `json:"next"`
}
