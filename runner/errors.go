package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// Sentinel errors of the engine, beside the store's (ErrNotFound, ErrFinished, …).
var (
	// ErrWorkflowNotFound means no workflow has that ID or name. Workflows implementations
	// wrap it.
	ErrWorkflowNotFound = errors.New("workflow not found")
	// ErrNotPublished means the workflow exists but has no published version to run in
	// production. Workflows implementations wrap it.
	ErrNotPublished = errors.New("workflow has no published version")
	// ErrInvalidInput means a run input (or a bulk request) is not valid; see *InputError.
	ErrInvalidInput = errors.New("invalid input")
)

// Error codes a failed run or step carries besides those a definition sets with fail.
const (
	CodeFailed           = "FAILED"
	CodeExpression       = "EXPRESSION_ERROR"
	CodeExpressionLimit  = "EXPRESSION_LIMIT"
	CodeInvalidDuration  = "INVALID_DURATION"
	CodeHookConflict     = "HOOK_CONFLICT"
	CodeHookTimeout      = "HOOK_TIMEOUT"
	CodeHTTP             = "HTTP_ERROR"
	CodeNetwork          = "NETWORK_ERROR"
	CodeTimeout          = "TIMEOUT"
	CodeResponseTooLarge = "RESPONSE_TOO_LARGE"
	CodeConnection       = "CONNECTION_ERROR"
	CodeHostMismatch     = "CONNECTION_HOST_MISMATCH"
	CodeEgressDenied     = "EGRESS_DENIED"
	CodeInvalidStep      = "INVALID_STEP"
	CodeNotFound         = "NOT_FOUND"
	CodeRunFailed        = "RUN_FAILED"
	CodeChildFailed      = "CHILD_FAILED"
	CodeValidation       = "VALIDATION_ERROR"
	CodeStep             = "STEP_ERROR"
	CodeDefinition       = "DEFINITION_ERROR"
	CodeAbandoned        = "RUN_ABANDONED"
	CodeDepthLimit       = "DEPTH_LIMIT"
	CodeOutputInvalid    = "OUTPUT_INVALID"
	CodeInvalidItems     = "INVALID_ITEMS"
	CodeTooManyItems     = "TOO_MANY_ITEMS"
	CodeLoopLimit        = "LOOP_LIMIT"
	CodeCancelled        = "CANCELLED"
)

// InputError lists why a run input is not valid. It matches ErrInvalidInput.
type InputError struct {
	Problems []schemas.Problem
}

func (e *InputError) Error() string {
	return "invalid input: " + e.list()
}

// list is the problems as "path: message" joined with "; ".
func (e *InputError) list() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
		if p.Path != "" {
			msgs[i] = p.Path + ": " + p.Message
		}
	}
	return strings.Join(msgs, "; ")
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

func inputProblem(path, format string, args ...any) *InputError {
	return &InputError{Problems: []schemas.Problem{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// Permanent marks a custom step handler's error as not worth retrying: the step fails at
// once whatever its retry policy.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// stepError is how a step fails: the code and message the run records, and whether the
// retry policy may try the step again.
type stepError struct {
	code       string
	msg        string
	retryable  bool
	retryAfter time.Duration
	// at is the path of the nested step that failed a compound step, when it did.
	at string
}

func (e *stepError) Error() string { return e.code + ": " + e.msg }

func permanent(code, format string, args ...any) *stepError {
	return &stepError{code: code, msg: fmt.Sprintf(format, args...)}
}

func retryable(code, format string, args ...any) *stepError {
	return &stepError{code: code, msg: fmt.Sprintf(format, args...), retryable: true}
}

// evalFailed is the error of a step (or the result) whose expressions failed: limits and
// durations out of range have their own codes, the rest is CodeExpression.
func evalFailed(err error, format string, args ...any) *stepError {
	code := CodeExpression
	switch {
	case errors.Is(err, expression.ErrLimit):
		code = CodeExpressionLimit
	case errors.Is(err, schemas.ErrDurationRange):
		code = CodeInvalidDuration
	}
	return permanent(code, format, args...)
}

// Causes a worker's run context is cancelled with.
var (
	errCancelRequested = errors.New("run cancelled")
	errLeaseLost       = errors.New("lease lost")
	errShutdown        = errors.New("engine stopping")
)
