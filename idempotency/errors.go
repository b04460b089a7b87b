package idempotency

import (
	"errors"
	"fmt"
	"time"
)

// Errors Do returns; the api package maps them to the SPEC envelope.
var (
	// ErrInvalidKey: the key is empty or longer than 255 characters (400 VALIDATION_ERROR).
	ErrInvalidKey = errors.New("the Idempotency-Key must be 1 to 255 characters of valid UTF-8")
	// ErrKeyMismatch: the key was used for another request (422 VALIDATION_ERROR).
	ErrKeyMismatch = errors.New("idempotency key was already used for a different request")
	// ErrInProgress: the first request with the key is still being answered (409 CONFLICT).
	ErrInProgress = errors.New("a request with this idempotency key is still in progress; retry later")
	// ErrAnswerNotKept: the request was done but its answer was too big to keep (409 CONFLICT).
	ErrAnswerNotKept = errors.New("the request with this idempotency key was already done but its answer was too large to keep; read the result with a GET")
	// ErrAnswerUnreadable: the request was done but its answer was kept sealed under another
	// secret key and cannot be opened (409 CONFLICT, as ErrAnswerNotKept: errors.Is holds).
	ErrAnswerUnreadable error = unreadableError{}
	// ErrLimit: the scope holds the maximum number of kept keys (429 RATE_LIMITED); the
	// error is a *LimitError that says when to retry.
	ErrLimit = errors.New("too many idempotency keys kept")
)

// LimitError refuses a new key because its scope holds the maximum number of kept keys.
// errors.Is(err, ErrLimit) holds for it.
type LimitError struct {
	// RetryAfter is how long until the oldest key expires: whole seconds, at least one.
	RetryAfter time.Duration
}

// Error says when to retry.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%v; retry after %v", ErrLimit, e.RetryAfter)
}

// Is makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// newLimitError rounds the wait until oldest expires up to whole seconds, at least one.
func newLimitError(now, oldest time.Time) *LimitError {
	wait := max(oldest.Sub(now), time.Nanosecond)
	return &LimitError{RetryAfter: (wait + time.Second - 1).Truncate(time.Second)}
}

// unreadableError is ErrAnswerUnreadable: the key stays taken, as ErrAnswerNotKept says.
type unreadableError struct{}

func (unreadableError) Error() string {
	return "the request with this idempotency key was already done but its kept answer can no longer be opened (the secret key changed); read the result with a GET"
}

// Is makes errors.Is(err, ErrAnswerNotKept) hold.
func (unreadableError) Is(target error) bool { return target == ErrAnswerNotKept }
