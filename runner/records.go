package runner

import "strings"

// MaxListedRecords is how many step records a run object lists (SPEC §2): past it, it
// lists the top-level ones only, each compound one with the counts of the records under
// it (CountsUnder), and StepsUnder pages those.
const MaxListedRecords = 200

// Collapsed reports whether r's run object lists only its top-level records.
func Collapsed(r *Run) bool { return len(r.Steps) > MaxListedRecords }

// StepCounts counts step records by status.
type StepCounts struct {
	Total, Completed, Failed, Running, Waiting int
}

// CountsUnder counts, for each top-level step of r with records under it (nested in it,
// its compensation), those records, by the step's ID.
func CountsUnder(r *Run) map[string]*StepCounts {
	out := map[string]*StepCounts{}
	for _, rec := range r.Steps {
		top, _, nested := strings.Cut(rec.Path, "/")
		if !nested {
			continue
		}
		c := out[top]
		if c == nil {
			c = &StepCounts{}
			out[top] = c
		}
		c.Total++
		switch rec.Status {
		case StepCompleted:
			c.Completed++
		case StepFailed:
			c.Failed++
		case StepRunning:
			c.Running++
		case StepWaiting:
			c.Waiting++
		}
	}
	return out
}

// StepsUnder returns the records of r under parent (whose paths start with parent/), in
// record order, from the from-th of them on, at most limit, and the position of the next
// one (0: none follows).
func StepsUnder(r *Run, parent string, from, limit int) ([]*StepRecord, int) {
	var page []*StepRecord
	n, prefix := 0, parent+"/" // once: a long ?parent= is not copied for every record
	for _, rec := range r.Steps {
		if !strings.HasPrefix(rec.Path, prefix) {
			continue
		}
		if n >= from {
			if len(page) == limit {
				return page, n
			}
			page = append(page, rec)
		}
		n++
	}
	return page, 0
}
