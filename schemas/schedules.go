package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gorunner/gorunner/schedule"
)

// Schedule starts runs of the published version on a clock (SPEC §2).
type Schedule struct {
	// Cron is five cron fields, or @hourly, @daily, @weekly, @monthly, @yearly or
	// @every <duration> (whole seconds, at least schedule.MinEvery).
	Cron string `json:"cron"`
	// Timezone is an IANA timezone; default UTC.
	Timezone string `json:"timezone,omitempty"`
	// Input is each run's input, checked against the input schema; default {}.
	Input json.RawMessage `json:"input,omitempty"`
	// CatchUp says what a process starting runs of the ticks missed while none ran:
	// the latest of them (default) or none.
	CatchUp string `json:"catchUp,omitempty" jsonschema:"enum=latest,enum=none"`
}

// Catch-up policies of a schedule.
const (
	CatchUpLatest = "latest"
	CatchUpNone   = "none"
)

// MaxSchedules is how many schedules one definition may have.
const MaxSchedules = 16

// RunInput is the input of the schedule's runs: Input, or {}.
func (s *Schedule) RunInput() json.RawMessage {
	if len(bytes.TrimSpace(s.Input)) == 0 || isNull(s.Input) {
		return json.RawMessage(`{}`)
	}
	return s.Input
}

// Spec parses the schedule's cron and timezone.
func (s *Schedule) Spec() (*schedule.Spec, error) { return schedule.Parse(s.Cron, s.Timezone) }

// schedules checks each schedule: its cron and timezone parse, its catchUp is known and
// its input fits the input schema (when that compiles; its problems are reported at
// /input).
func (v *validator) schedules(d *Definition) {
	if len(d.Schedules) > MaxSchedules {
		v.add("/schedules", "at most %d schedules are allowed, got %d", MaxSchedules, len(d.Schedules))
		return
	}
	var input *InputSchema
	if len(d.Schedules) > 0 {
		input, _ = CompileInput(d.Input)
	}
	for i := range d.Schedules {
		s := &d.Schedules[i]
		path := fmt.Sprintf("/schedules/%d", i)
		var fe *schedule.FieldError
		if _, err := s.Spec(); errors.As(err, &fe) {
			v.add(path+"/"+fe.Field, "%s", fe.Message)
		}
		if s.CatchUp != "" && s.CatchUp != CatchUpLatest && s.CatchUp != CatchUpNone {
			v.add(path+"/catchUp", "catchUp must be %s or %s", CatchUpLatest, CatchUpNone)
		}
		if input != nil {
			v.scheduleInput(path+"/input", input, s.RunInput())
		}
	}
}

func (v *validator) scheduleInput(path string, schema *InputSchema, raw json.RawMessage) {
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		v.add(path, "the input is not JSON: %v", err)
		return
	}
	if _, ok := value.(map[string]any); !ok {
		v.add(path, "the input must be an object")
		return
	}
	for _, p := range schema.Validate(value) {
		v.add(path+p.Path, "%s", p.Message)
	}
}
