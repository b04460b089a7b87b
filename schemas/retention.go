package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// MinRetention is the shortest retention there is (`serve --retention`, a definition's
// `retention`); the server's 0 means keep runs forever.
const MinRetention = time.Second

// ParseRetention reads a retention: a Go duration (`90m`, `24h`) or a whole number of days
// (`30d`); `0` means keep forever. Anything else shorter than MinRetention, or longer than
// MaxDuration, is refused.
func ParseRetention(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int64
		n, err = strconv.ParseInt(days, 10, 64)
		d = time.Duration(n) * 24 * time.Hour
		if err == nil && (n < 0 || d > MaxDuration) {
			err = ErrDurationRange
		}
	} else if d, err = time.ParseDuration(s); err == nil && d > MaxDuration {
		err = ErrDurationRange
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("retention %q: use a duration such as \"30d\", \"24h\" or \"90m\": %w", s, err)
	case d != 0 && d < MinRetention:
		return 0, fmt.Errorf("retention %q: at least %s", s, MinRetention)
	}
	return d, nil
}

// Retention is a definition's `retention`: how long after their end its runs are kept, at
// most the server's --retention (a longer one keeps them no longer). Written as
// ParseRetention reads it; 0 is refused (omit it to keep the server's).
type Retention time.Duration

// Std returns r as a time.Duration.
func (r Retention) Std() time.Duration { return time.Duration(r) }

// MarshalJSON writes r in days when it is whole days, else as a Go duration.
func (r Retention) MarshalJSON() ([]byte, error) {
	d := time.Duration(r)
	if d%(24*time.Hour) == 0 {
		return json.Marshal(strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d")
	}
	return json.Marshal(Duration(d).String())
}

// UnmarshalJSON reads a retention (ParseRetention), other than 0.
func (r *Retention) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`retention must be a string such as "7d" or "12h"`)
	}
	d, err := ParseRetention(s)
	if err == nil && d == 0 {
		err = errors.New(`retention must not be 0: omit it to keep runs as long as the server does`)
	}
	if err != nil {
		return err
	}
	*r = Retention(d)
	return nil
}

// JSONSchema describes Retention as a duration or a number of days.
func (Retention) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^([0-9]+d|` + durationPattern[1:len(durationPattern)-1] + `)$`,
		Description: `How long ended runs of this workflow are kept: days ("7d") or a Go duration ("12h"), at least 1s; at most the server's --retention.`,
		Examples:    []any{"7d", "12h"},
	}
}
