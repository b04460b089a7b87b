package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxDuration is the longest a definition may make anything wait: a sleep, a timeout, a retry
// interval, and how far from now a sleep's until may be. Every time GoRunner stores
// (now plus at most MaxDuration) stays far inside what time.Time.UnixNano can hold.
const MaxDuration = 10 * 365 * 24 * time.Hour

// ErrDurationRange means a duration or a time is further away than MaxDuration.
var ErrDurationRange = errors.New("further than 10 years (87600h) away")

// CheckUntil returns an error matching ErrDurationRange when t is more than MaxDuration after
// now.
func CheckUntil(t, now time.Time) error {
	if t.After(now.Add(MaxDuration)) {
		return fmt.Errorf("until %s: %w", t.Format(time.RFC3339), ErrDurationRange)
	}
	return nil
}

// Duration is a time.Duration written as a Go duration string ("100ms", "30s", "24h").
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String writes d as the shortest Go duration string: "24h", "1h30m", "500ms".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a Go duration string; a negative duration, or one over MaxDuration
// (an error matching ErrDurationRange), is refused.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a Go duration such as \"100ms\", \"30s\" or \"24h\"", s)
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	if v > MaxDuration {
		return fmt.Errorf("invalid duration %q: %w", s, ErrDurationRange)
	}
	*d = Duration(v)
	return nil
}
