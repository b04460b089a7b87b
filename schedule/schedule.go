// Package schedule says when a workflow's schedules tick (SPEC §2): it reads a schedule's
// cron expression with robfig/cron's standard parser and its IANA timezone, and lists its
// ticks, with the rules for the days a timezone's clocks skip or repeat an hour. It knows
// nothing of runs or stores.
package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinEvery is the shortest @every interval a schedule may ask.
const MinEvery = time.Second

// DefaultTimezone is a schedule's timezone when it names none.
const DefaultTimezone = "UTC"

// starBit marks a cron field written "*" in robfig/cron's SpecSchedule.
const starBit = 1 << 63

// Spec is a parsed schedule: the ticks of a cron expression in a timezone.
type Spec struct {
	// every is an @every interval: ticks fall on its multiples since the Unix epoch, so
	// that every process computes the same ticks whenever it started.
	every time.Duration
	cron  *cron.SpecSchedule
	loc   *time.Location
	// wall says the hour field is not "*": ticks follow the wall clock (a time of day the
	// clock repeats ticks once, one it skips ticks when the clock jumps); with "*" they
	// follow real time (every hour that happens ticks, the repeated one twice).
	wall bool
}

// FieldError is a schedule's field that does not parse: Field is "cron" or "timezone".
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Parse reads a cron expression (five fields, or @hourly, @daily, @weekly, @monthly,
// @yearly, @every <duration> of whole seconds, at least MinEvery) and an IANA timezone
// ("" is DefaultTimezone). A field that does not parse is a *FieldError.
func Parse(expr, timezone string) (*Spec, error) {
	if timezone == "" {
		timezone = DefaultTimezone
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil || timezone == "Local" {
		return nil, &FieldError{Field: "timezone", Message: fmt.Sprintf("%q is not an IANA timezone (such as Europe/Berlin or UTC)", timezone)}
	}
	s, err := parseCron(strings.TrimSpace(expr))
	if err != nil {
		return nil, &FieldError{Field: "cron", Message: err.Error()}
	}
	s.loc = loc
	if s.Next(time.Now()).IsZero() {
		return nil, &FieldError{Field: "cron", Message: fmt.Sprintf("%q never ticks", expr)}
	}
	return s, nil
}

// parseCron reads expr with the standard parser (five fields or a descriptor). A timezone
// prefix is refused: the schedule's timezone field says it.
func parseCron(expr string) (*Spec, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("give the timezone in the timezone field, not in the expression")
	}
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", expr, err)
	}
	switch c := sched.(type) {
	case cron.ConstantDelaySchedule:
		return parseEvery(expr, c)
	case *cron.SpecSchedule:
		return &Spec{cron: c, wall: c.Hour&starBit == 0}, nil
	}
	return nil, fmt.Errorf("%q: unsupported schedule", expr)
}

// parseEvery checks an @every interval the parser read: robfig/cron rounds one under a
// second up and drops fractions of a second, which a schedule refuses instead.
func parseEvery(expr string, c cron.ConstantDelaySchedule) (*Spec, error) {
	d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(expr, "@every")))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q: %v", expr, err)
	case d < MinEvery:
		return nil, fmt.Errorf("%q: @every must be at least %s", expr, MinEvery)
	case d != c.Delay:
		return nil, fmt.Errorf("%q: @every must be whole seconds", expr)
	}
	return &Spec{every: d}, nil
}

// Location is the schedule's timezone.
func (s *Spec) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// Next is the first tick after t, in UTC; zero when there is none within five years.
func (s *Spec) Next(t time.Time) time.Time {
	switch {
	case s.every > 0:
		n := t.UnixNano() / int64(s.every)
		if t.UnixNano() < 0 {
			n-- // division truncates toward zero
		}
		return time.Unix(0, (n+1)*int64(s.every)).UTC()
	case !s.wall:
		return zeroOrUTC(s.cron.Next(t.In(s.Location())))
	}
	for w := wallOf(t, s.Location()); ; {
		if w = s.cron.Next(w); w.IsZero() {
			return w
		}
		if at := instant(w, s.Location()); at.After(t) {
			return at
		}
	}
}

func zeroOrUTC(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// lookBack are the spans Latest looks back over, shortest first: a cron ticks at least
// once in five years or never.
var lookBack = []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 5 * 367 * 24 * time.Hour}

// Latest is the last tick at or before at and not before since; false when there is none.
func (s *Spec) Latest(at, since time.Time) (time.Time, bool) {
	for _, back := range lookBack {
		from := at.Add(-back)
		clipped := !from.After(since)
		if clipped {
			from = since.Add(-time.Nanosecond)
		}
		if t := s.Next(from); !t.IsZero() && !t.After(at) {
			for n := s.Next(t); !n.IsZero() && !n.After(at); n = s.Next(n) {
				t = n
			}
			return t, true
		}
		if clipped {
			break
		}
	}
	return time.Time{}, false
}

// Upcoming is the next n ticks after t.
func (s *Spec) Upcoming(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for len(out) < n {
		if t = s.Next(t); t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// wallOf is what t's clock reads in loc, as a time in UTC: the floating time of day a
// wall-clock schedule is evaluated on.
func wallOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant is when the clock in loc first reads w (a floating time, see wallOf): the
// earlier of two instants on a day the clock repeats it, and the moment the clock jumps
// past it on a day it skips it.
func instant(w time.Time, loc *time.Location) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	start, end := t.ZoneBounds()
	var first time.Time
	for _, probe := range []time.Time{start.Add(-time.Nanosecond), t, end} {
		if probe.IsZero() || start.IsZero() && probe.Before(t) {
			continue
		}
		_, offset := probe.Zone()
		c := w.Add(-time.Duration(offset) * time.Second)
		if wallOf(c, loc).Equal(w) && (first.IsZero() || c.Before(first)) {
			first = c
		}
	}
	if !first.IsZero() {
		return first.UTC()
	}
	for _, jump := range []time.Time{start, end} {
		if !jump.IsZero() && wallOf(jump.Add(-time.Nanosecond), loc).Before(w) && wallOf(jump, loc).After(w) {
			return jump.UTC()
		}
	}
	return t.UTC()
}
