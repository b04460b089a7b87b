package problem_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		retry  time.Duration
	}{
		{"wrapped sentinel", fmt.Errorf("getting run: %w", runner.ErrNotFound), http.StatusNotFound, problem.CodeNotFound, 0},
		{"validation", &schemas.ValidationError{Problems: []schemas.Problem{{Path: "/a", Message: "bad"}}}, http.StatusBadRequest, problem.CodeValidation, 0},
		{"body too large", &http.MaxBytesError{Limit: 10}, http.StatusRequestEntityTooLarge, problem.CodeTooLarge, 0},
		{"key limit", &idempotency.LimitError{RetryAfter: 3 * time.Second}, http.StatusTooManyRequests, problem.CodeRateLimited, 3 * time.Second},
		{"too many waits", runner.ErrTooManyWaits, http.StatusTooManyRequests, problem.CodeRateLimited, time.Second},
		{"key mismatch", idempotency.ErrKeyMismatch, http.StatusUnprocessableEntity, problem.CodeValidation, 0},
		{"already an Error", problem.New(http.StatusForbidden, problem.CodeForbidden, "no"), http.StatusForbidden, problem.CodeForbidden, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := problem.Classify(tc.err)
			require.True(t, ok)
			require.Equal(t, tc.status, e.Status)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.retry, e.RetryAfter)
		})
	}
	_, ok := problem.Classify(errors.New("disk on fire"))
	require.False(t, ok, "an unknown error is not the client's to see")
}

func TestForAgentAddsAdvice(t *testing.T) {
	e, ok := problem.ForAgent(fmt.Errorf("finding workflow: %w", catalog.ErrNotFound))
	require.True(t, ok)
	require.Contains(t, e.Message, "gorunner_find_workflows")
	plain, _ := problem.Classify(catalog.ErrNotFound)
	require.NotContains(t, plain.Message, "gorunner_find_workflows", "Classify stays advice-free")
}

// A start token owned by a run the caller may not reach names no run, also in the advice
// (SPEC §6); one it may reach names the owner to read.
func TestForAgentStartConflict(t *testing.T) {
	hidden, ok := problem.ForAgent(&runner.TokenConflictError{Environment: runner.EnvProduction, Token: "order:1"})
	require.True(t, ok)
	require.Equal(t, problem.CodeConflict, hidden.Code)
	require.Contains(t, hidden.Message, `"order:1"`)
	require.NotContains(t, hidden.Message, "gorunner_get_run")
	require.NotContains(t, hidden.Message, "run  ", "no empty run ID")

	shown, ok := problem.ForAgent(&runner.TokenConflictError{Environment: runner.EnvProduction, Token: "order:1", OwnerRunID: "run-1"})
	require.True(t, ok)
	require.Contains(t, shown.Message, "run run-1 already holds")
}
