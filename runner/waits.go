package runner

import (
	"encoding/json"
	"time"

	"github.com/gorunner/gorunner/schemas"
)

// StepWait is what one step of a run waits for, as a console shows it: a hook (its token,
// question and deadline), a sleep's end, a child run, or the time its next attempt is due.
type StepWait struct {
	Index      int
	Path       string
	Hook       string
	Ask        *schemas.HookAsk
	Deadline   *time.Time
	SleepUntil *time.Time
	ChildRunID string
	RetryAt    *time.Time
}

// waitState is the part of the step kinds' states (hookState, sleepState, childState) that
// says what a waiting step waits for.
type waitState struct {
	Token    string           `json:"token"`
	Ask      *schemas.HookAsk `json:"ask"`
	Deadline *time.Time       `json:"deadline"`
	Until    *time.Time       `json:"until"`
	Child    string           `json:"childRunId"`
}

// Waits lists what the steps of r wait for, in record order: every waiting step (each
// branch of a parallel or foreach has its own) and every step whose failed attempt waits
// for its retry (due at r's wake-up). A run that ended waits for nothing.
func Waits(r *Run) []StepWait {
	if r.Status.Terminal() {
		return nil
	}
	var out []StepWait
	for i, rec := range r.Steps {
		w := StepWait{Index: i, Path: PathOf(rec)}
		switch {
		case rec.Status == StepWaiting:
			var st waitState
			if json.Unmarshal(rec.State, &st) != nil {
				continue
			}
			w.Hook, w.Ask, w.Deadline, w.ChildRunID = st.Token, st.Ask, st.Deadline, st.Child
			if w.Hook == "" && w.ChildRunID == "" {
				w.SleepUntil = st.Until
			}
		case rec.Status == StepRunning && rec.Error != nil && !r.WakeAt.IsZero():
			at := r.WakeAt
			w.RetryAt = &at
		default:
			continue
		}
		out = append(out, w)
	}
	return out
}
