package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/schedule"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/wire"
)

// UpcomingTicks is how many of a schedule's next ticks Upcoming lists.
const UpcomingTicks = 5

// VersionReader reads a published version (catalog.Service).
type VersionReader interface {
	Version(ctx context.Context, workflowID string, version int) (*catalog.Version, error)
}

// Upcoming lists the schedules of w's published version, each with its next UpcomingTicks
// ticks after now, in UTC; none when w is not published (its schedules do not tick).
func Upcoming(ctx context.Context, versions VersionReader, w *catalog.Workflow, now time.Time) ([]wire.Schedule, error) {
	out := []wire.Schedule{}
	if !w.Published || w.LatestVersion == 0 {
		return out, nil
	}
	v, err := versions.Version(ctx, w.ID, w.LatestVersion)
	if err != nil {
		return nil, fmt.Errorf("reading version %d of workflow %s: %w", w.LatestVersion, w.Name, err)
	}
	def, err := schemas.Decode(v.Definition)
	if err != nil {
		return nil, fmt.Errorf("decoding version %d of workflow %s: %w", v.Version, w.Name, err)
	}
	for i, sc := range def.Schedules {
		view := wire.Schedule{Index: i, Cron: sc.Cron, Timezone: sc.Timezone, Next: []time.Time{}}
		if view.Timezone == "" {
			view.Timezone = schedule.DefaultTimezone
		}
		if spec, err := sc.Spec(); err == nil {
			view.Next = spec.Upcoming(now, UpcomingTicks)
		}
		out = append(out, view)
	}
	return out, nil
}
