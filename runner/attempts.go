package runner

import (
	"encoding/json"
	"strings"
	"time"
)

// MaxAttemptHistory is how many attempts of a step its record keeps (StepRecord.History):
// the latest, so that a step retried for days does not grow its record without bound.
const MaxAttemptHistory = 10

// MaxRecordedInput is the largest evaluated step definition a record keeps
// (StepRecord.Input), in bytes; a larger one is kept as {"truncated": true, "bytes": n}.
const MaxRecordedInput = 4096

// Redacted replaces the values a record never keeps: header values and credentials.
const Redacted = "[redacted]"

// Attempt is one attempt of a step: when it ran, how it ended and, for an http step, the
// request it made (method and URL, credentials in the URL redacted) and the status answered.
type Attempt struct {
	N          int
	StartedAt  time.Time
	FinishedAt time.Time
	Error      *Error
	Request    string
	Status     int
}

// recordAttempt appends the attempt that just ended (err: how it failed, nil when it
// completed) to the step's history, keeping the latest MaxAttemptHistory. A step that
// completes on its first attempt without a request keeps none: its record says it all.
func (s *stepExec) recordAttempt(err *Error) {
	rec := s.rec
	if err == nil && rec.Attempts <= 1 && s.request == "" && len(rec.History) == 0 {
		return
	}
	start := s.started
	if start.IsZero() && rec.StartedAt != nil { // a wait resumed: the attempt began before this pass
		start = *rec.StartedAt
	}
	a := Attempt{N: rec.Attempts, StartedAt: start, FinishedAt: s.engine().now(), Request: s.request, Status: s.status}
	if err != nil {
		e := *err
		a.Error = &e
	}
	keep := rec.History
	if len(keep) >= MaxAttemptHistory {
		keep = keep[len(keep)-MaxAttemptHistory+1:]
	}
	rec.History = append(append(make([]Attempt, 0, len(keep)+1), keep...), a)
}

// recordedInput is what a step record keeps of its evaluated definition raw: every header
// value and every credential-named field redacted (a connection's headers never reach it;
// those typed in the definition may hold secrets from the input), and at most
// MaxRecordedInput bytes.
func recordedInput(raw []byte) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	redact(v)
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(out) > MaxRecordedInput {
		out, _ = json.Marshal(map[string]any{"truncated": true, "bytes": len(out)})
	}
	return out
}

// redact replaces, in place, the values of every "headers" object and of every field whose
// name says it is a credential.
func redact(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch {
			case strings.EqualFold(k, "headers"):
				if h, ok := val.(map[string]any); ok {
					for name := range h {
						h[name] = Redacted
					}
					continue
				}
				x[k] = Redacted
			case credentialName(k):
				x[k] = Redacted
			default:
				redact(val)
			}
		}
	case []any:
		for _, val := range x {
			redact(val)
		}
	}
}

// credentialName reports whether a field named k holds a credential by its name.
func credentialName(k string) bool {
	k = strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(k))
	for _, w := range []string{"authorization", "password", "secret", "apikey", "cookie"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}
