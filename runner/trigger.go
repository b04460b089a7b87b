package runner

import (
	"fmt"
	"time"
)

// Trigger types: what started a run (SPEC §2, Run.Trigger).
const (
	TriggerAPI      = "api"
	TriggerMCP      = "mcp"
	TriggerWebhook  = "webhook"
	TriggerCLI      = "cli"
	TriggerSchedule = "schedule"
	TriggerRerun    = "rerun"
	TriggerChild    = "child"
)

// TriggerTypes lists every trigger type, in the order the documentation gives them.
func TriggerTypes() []string {
	return []string{TriggerAPI, TriggerMCP, TriggerWebhook, TriggerCLI, TriggerSchedule, TriggerRerun, TriggerChild}
}

// Trigger says what started a run. The zero value is a run stored before runs carried it.
type Trigger struct {
	// Type is one of the Trigger… constants.
	Type string
	// Schedule is the index of the definition's schedule that started a schedule run.
	Schedule int
	// At is the tick a schedule run was started for (UTC); zero for other types.
	At time.Time
}

// ScheduleTrigger is the trigger of the run schedule index starts for the tick at.
func ScheduleTrigger(index int, at time.Time) Trigger {
	return Trigger{Type: TriggerSchedule, Schedule: index, At: at.UTC()}
}

// ValidTriggerType reports whether t names a trigger type.
func ValidTriggerType(t string) bool {
	for _, known := range TriggerTypes() {
		if t == known {
			return true
		}
	}
	return false
}

// triggerOf is the trigger a submission records: its own, else api.
func triggerOf(p SubmitParams) (Trigger, error) {
	t := p.Trigger
	if t.Type == "" {
		t.Type = TriggerAPI
	}
	if p.RerunOf != "" {
		t = Trigger{Type: TriggerRerun}
	}
	if !ValidTriggerType(t.Type) {
		return t, fmt.Errorf("unknown trigger type %q", t.Type)
	}
	return t, nil
}
