package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func scheduledDef(name string, schedules ...map[string]any) map[string]any {
	def := greetDef(name)
	def["schedules"] = schedules
	return def
}

// TestSchedulesRefused: a definition whose schedule is wrong is refused with the pointer of
// the field at fault, on create as on update (so no version can be published with it).
func TestSchedulesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name     string
		schedule map[string]any
		path     string
	}{
		{"cron", map[string]any{"cron": "every day", "input": map[string]any{"name": "a"}}, "/schedules/0/cron"},
		{"timezone", map[string]any{"cron": "@daily", "timezone": "Berlin", "input": map[string]any{"name": "a"}}, "/schedules/0/timezone"},
		{"input", map[string]any{"cron": "@daily", "input": map[string]any{"name": 7}}, "/schedules/0/input/name"},
		{"required input", map[string]any{"cron": "@daily"}, "/schedules/0/input/name"},
	}
	e.create("s-upd")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range []answer{
				e.do("POST", "/api/workflows", scheduledDef("s-"+tc.name[:3], tc.schedule)),
				e.do("PUT", "/api/workflows/s-upd", scheduledDef("s-upd", tc.schedule)),
			} {
				require.Equal(t, http.StatusBadRequest, a.Status, string(a.Raw))
				details := a.Body["error"].(map[string]any)["details"].([]any)
				require.Equal(t, tc.path, details[0].(map[string]any)["path"], string(a.Raw))
			}
		})
	}
}

// TestListSchedules: GET /api/workflows/{id}/schedules lists the published version's
// schedules with their next five ticks; none before publishing.
func TestListSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("POST", "/api/workflows", scheduledDef("s-list",
		map[string]any{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "input": map[string]any{"name": "a"}},
		map[string]any{"cron": "@every 10m", "input": map[string]any{"name": "b"}, "catchUp": "none"}))
	require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
	list := e.do("GET", "/api/workflows/s-list/schedules", nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Empty(t, list.Body["data"], "a draft's schedules do not tick")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/s-list/publish", nil).Status)

	list = e.do("GET", "/api/workflows/s-list/schedules", nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	data := list.Body["data"].([]any)
	require.Len(t, data, 2)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for i, want := range []struct {
		cron, tz string
		check    func(time.Time) bool
	}{
		{"0 9 * * 1-5", "Europe/Berlin", func(t time.Time) bool {
			l := t.In(berlin)
			return l.Hour() == 9 && l.Minute() == 0 && l.Weekday() != time.Saturday && l.Weekday() != time.Sunday
		}},
		{"@every 10m", "UTC", func(t time.Time) bool { return t.Minute()%10 == 0 && t.Second() == 0 }},
	} {
		s := data[i].(map[string]any)
		require.Equal(t, float64(i), s["index"])
		require.Equal(t, want.cron, s["cron"])
		require.Equal(t, want.tz, s["timezone"])
		next := s["next"].([]any)
		require.Len(t, next, 5)
		var prev time.Time
		for _, n := range next {
			at, err := time.Parse(time.RFC3339, n.(string))
			require.NoError(t, err)
			require.True(t, want.check(at), "%s does not fit %s", at, want.cron)
			require.True(t, at.After(prev))
			prev = at
		}
	}
	require.Equal(t, http.StatusOK, e.do("POST", "/api/workflows/s-list/unpublish", nil).Status)
	require.Empty(t, e.do("GET", "/api/workflows/s-list/schedules", nil).Body["data"], "unpublished: none tick")
	require.Equal(t, http.StatusNotFound, e.do("GET", "/api/workflows/nope/schedules", nil).Status)
}

// TestWebhookCannotTakeATick performs the attack: a webhook caller sends the key of a
// coming tick (schedule:<index>:<tick>, which the workflow's webhook keys share a scope
// with) so that the tick would replay its answer instead of running. It is refused and
// nothing starts.
func TestWebhookCannotTakeATick(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wf := e.do("POST", "/api/workflows", scheduledDef("s-hook", map[string]any{"cron": "@daily", "input": map[string]any{"name": "a"}})).data()
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/s-hook/publish", nil).Status)
	hook := strings.TrimPrefix(wf["webhookUrl"].(string), e.srv.URL)
	a := e.doAs("", "POST", hook, map[string]any{"name": "a"}, "Idempotency-Key", "schedule:0:2030-01-01T00:00:00Z")
	require.Equal(t, http.StatusBadRequest, a.Status, string(a.Raw))
	require.Empty(t, e.do("GET", "/api/runs?workflow=s-hook", nil).Body["data"])
	a = e.doAs("", "POST", hook, map[string]any{"name": "a"}, "Idempotency-Key", "my-schedule:0")
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, a.Status, "another key works")
}
