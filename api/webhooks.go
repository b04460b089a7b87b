package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// WebhookWait is how long a webhook call waits for its run to finish before answering 202.
const WebhookWait = 30 * time.Second

type webhookKey struct{}

// webhookWorkflow finds the workflow a webhook token belongs to, once, for keyed replay
// (whose keys belong to that workflow) and the handler alike.
func (s *Server) webhookWorkflow(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wf, err := s.deps.Catalog.GetByWebhook(r.Context(), chi.URLParam(r, "token"))
		if errors.Is(err, catalog.ErrNotFound) {
			err = problem.New(http.StatusNotFound, problem.CodeNotFound, "no workflow answers at this webhook address")
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), webhookKey{}, wf)))
	})
}

// webhookOf returns the workflow webhookWorkflow found.
func webhookOf(r *http.Request) *catalog.Workflow {
	wf, _ := r.Context().Value(webhookKey{}).(*catalog.Workflow)
	return wf
}

// callWebhook runs the published version of the workflow the token belongs to and answers
// with the run once it ends, or as it stands after WebhookWait; "reused" marks the owner of
// its start token (SPEC §6). A replay (same key, same
// request) answers the same way about the first call's run, marked Idempotency-Replayed;
// a failure kept under the key replays as it was answered.
func (s *Server) callWebhook(w http.ResponseWriter, r *http.Request) {
	wf := webhookOf(r)
	res, err := s.admit(r, webhookKeyed, wf.ID, wf.Name, runner.EnvProduction)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.RunID == "" {
		idempotency.WriteResponse(w, res.Response)
		return
	}
	holdOpen(w)
	var run *runner.Run
	if res.Run != nil { // as admitted: when it settled there, nothing is read again
		run, err = s.deps.Engine.WaitFrom(r.Context(), res.Run, WebhookWait)
	} else {
		run, err = s.deps.Engine.Wait(r.Context(), res.RunID, WebhookWait)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusAccepted
	if run.Status.Terminal() {
		status = http.StatusOK
	}
	if res.Replayed {
		w.Header().Set(idempotency.HeaderReplayed, "true")
	}
	writeJSON(w, status, wire.Submitted{Data: wire.RunOf(run), Reused: res.Reused})
}
