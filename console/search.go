package console

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// MaxSearchLength is the longest search text the runs page takes, in bytes.
const MaxSearchLength = 200

// MaxSearchExamined bounds the runs one runs page looks through for a search text or a
// date range: a search that has not filled its page by then ends short, with a link that
// goes on from there, so that no request scans a store without end.
const MaxSearchExamined = 500

// runFilter is the runs page's filters, all in its URL so that a view can be shared.
type runFilter struct {
	Workflow string
	Status   string
	Trigger  string
	Q        string // a run ID, text of the input, or an error code or message
	From, To string // dates, YYYY-MM-DD, UTC; To included
	from, to time.Time
}

// filterOf reads the runs page's filters; a bad one is a validation problem at its name.
func filterOf(q url.Values) (runFilter, error) {
	f := runFilter{Workflow: q.Get("workflow"), Status: q.Get("status"), Trigger: q.Get("trigger"),
		Q: strings.TrimSpace(q.Get("q")), From: q.Get("from"), To: q.Get("to")}
	switch {
	case len(f.Q) > MaxSearchLength:
		return f, invalid("/q", "the search text is over "+strconv.Itoa(MaxSearchLength)+" bytes")
	case f.Status != "" && !runner.Status(f.Status).Valid():
		return f, invalid("/status", "unknown run status "+strconv.Quote(f.Status))
	case f.Trigger != "" && !slices.Contains(runner.TriggerTypes(), f.Trigger):
		return f, invalid("/trigger", "unknown trigger "+strconv.Quote(f.Trigger))
	}
	var err error
	if f.from, err = day(f.From); err != nil {
		return f, invalid("/from", "from must be a date such as 2026-12-01")
	}
	if f.to, err = day(f.To); err != nil {
		return f, invalid("/to", "to must be a date such as 2026-12-01")
	}
	if !f.to.IsZero() {
		f.to = f.to.AddDate(0, 0, 1)
	}
	return f, nil
}

func day(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.DateOnly, s)
}

// query is the filters as a URL query, with cursor when set.
func (f runFilter) query(cursor string) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"workflow": f.Workflow, "status": f.Status, "trigger": f.Trigger,
		"q": f.Q, "from": f.From, "to": f.To, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// Encoded is the filters as a URL query.
func (f runFilter) Encoded() string { return f.query("").Encode() }

// Any reports whether a filter is set.
func (f runFilter) Any() bool { return len(f.query("")) > 0 }

// scans says the page must look at each run (search text, dates) beyond what the store
// filters.
func (f runFilter) scans() bool { return f.Q != "" || !f.from.IsZero() || !f.to.IsZero() }

// match reports whether run r passes the search text and the dates.
func (f runFilter) match(r *runner.Run) bool {
	if (!f.from.IsZero() && r.CreatedAt.Before(f.from)) || (!f.to.IsZero() && !r.CreatedAt.Before(f.to)) {
		return false
	}
	if f.Q == "" {
		return true
	}
	q := strings.ToLower(f.Q)
	if r.Error != nil && (strings.EqualFold(r.Error.Code, f.Q) || strings.Contains(strings.ToLower(r.Error.Message), q)) {
		return true
	}
	return strings.Contains(strings.ToLower(string(r.Input)), q)
}

// find lists the runs of one page that pass f, newest first, and the cursor after them.
// Without a search text or dates it is one store page; with them it looks through pages
// until PageSize runs match, MaxSearchExamined are examined, or the runs are older than
// From.
func (c *Console) find(ctx context.Context, f runFilter, params runner.ListRunsParams) ([]*runner.Run, string, error) {
	if !f.scans() {
		params.Limit = PageSize
		return c.deps.Engine.List(ctx, params)
	}
	var out []*runner.Run
	examined := 0
	for {
		params.Limit = min(PageSize, MaxSearchExamined-examined)
		runs, next, err := c.deps.Engine.List(ctx, params)
		if err != nil {
			return nil, "", err
		}
		examined += len(runs)
		for _, r := range runs {
			if f.match(r) {
				out = append(out, r)
			}
		}
		older := len(runs) > 0 && !f.from.IsZero() && runs[len(runs)-1].CreatedAt.Before(f.from)
		if next == "" || older {
			return out, "", nil
		}
		if len(out) >= PageSize || examined >= MaxSearchExamined {
			return out, next, nil
		}
		params.Cursor = next
	}
}

// byID is the run a search text names by its ID, when the principal may read it.
func (c *Console) byID(ctx context.Context, p auth.Principal, q string) *runner.Run {
	if _, err := uuid.Parse(q); err != nil {
		return nil
	}
	r, err := c.deps.Engine.Get(ctx, q)
	if err != nil || c.guard.RunAllowed(p, auth.RunsRead, r) != nil {
		return nil
	}
	return r
}
