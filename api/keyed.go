package api

import (
	"net/http"
	"strings"

	"github.com/gorunner/gorunner/admission"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/scheduler"
)

// keyedReplay puts a route behind the keyed-replay store. Principal routes keep keys per
// caller, sealing the kept answers that carry a webhook token; webhook routes per
// workflow, keeping every answer and evicting the oldest keys instead of refusing (SPEC §4
// rule 10).
func (s *Server) keyedReplay(k keyed) func(http.Handler) http.Handler {
	return s.deps.Idempotency.Middleware(func(r *http.Request) (string, idempotency.Policy, bool) {
		return keyScope(r, k)
	}, s.writeError)
}

// keyScope says whose a request's key is and under which policy; ok false: no principal,
// the request goes through without its key.
func keyScope(r *http.Request, k keyed) (scope string, policy idempotency.Policy, ok bool) {
	if k == webhookKeyed {
		return idempotency.WorkflowScope(webhookOf(r).ID), idempotency.Policy{KeepFailures: true, EvictOldest: true}, true
	}
	p, ok := auth.PrincipalFrom(r.Context())
	if !ok {
		return "", idempotency.Policy{}, false
	}
	return idempotency.PrincipalScope(p.ID), idempotency.Policy{Secret: k == secretKeyed}, true
}

// admissionOf is the admission a run request asks for: workflow wf (ID or name; name is
// its name, which the canonical form of SPEC §4 rule 11 uses) in env with the body as
// input, keyed when the request carries Idempotency-Key. A webhook's failures are kept as
// the answer its error would be.
func (s *Server) admissionOf(r *http.Request, k keyed, wf, name, env string) (admission.Request, error) {
	body, err := readBody(r)
	if err != nil {
		return admission.Request{}, err
	}
	req := admission.Request{Workflow: wf, Name: name, Environment: env, Input: body, By: starterOf(r),
		Trigger: runner.Trigger{Type: triggerType(r, k)}}
	keys, hasKey := r.Header[idempotency.HeaderKey]
	scope, policy, ok := keyScope(r, k)
	if !hasKey || !ok {
		return req, nil
	}
	if k == webhookKeyed && strings.HasPrefix(keys[0], scheduler.KeyPrefix) {
		return req, badRequest("", "an Idempotency-Key starting with "+scheduler.KeyPrefix+" is the workflow's schedules' own")
	}
	req.Keyed, req.Key, req.Scope, req.Policy = true, keys[0], scope, policy
	if policy.KeepFailures {
		req.Failed = func(err error) *idempotency.Response {
			return idempotency.Capture(func(w http.ResponseWriter) { s.writeError(w, r, err) })
		}
	}
	return req, nil
}

// cliAgent starts the User-Agent of the gorunner CLI (cmd/gorunner): its runs are cli runs.
const cliAgent = "gorunner-cli/"

// triggerType is what a run request over HTTP starts its run as: a webhook, the CLI (by its
// User-Agent: a label, which grants nothing), else api.
func triggerType(r *http.Request, k keyed) string {
	switch {
	case k == webhookKeyed:
		return runner.TriggerWebhook
	case strings.HasPrefix(r.UserAgent(), cliAgent):
		return runner.TriggerCLI
	}
	return runner.TriggerAPI
}
