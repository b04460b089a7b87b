package client

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Error is an error answer of the API: its status and the SPEC error envelope.
type Error struct {
	Status int
	// Code is the SPEC error code (NOT_FOUND, VALIDATION_ERROR, …), or the status text
	// when the answer was not GoRunner's envelope (a proxy's page).
	Code    string
	Message string
	Details []Detail
}

// Detail names one wrong field of a request.
type Detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func newError(status int, body []byte) *Error {
	var env struct {
		Error Error `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error.Code == "" {
		return &Error{Status: status, Code: http.StatusText(status), Message: strings.TrimSpace(string(body))}
	}
	env.Error.Status = status
	return &env.Error
}

// Error is the code, the message and the details the message does not already say.
func (e *Error) Error() string {
	msg := e.Code + ": " + e.Message
	var details []string
	for _, d := range e.Details {
		if d.Path != "" && !strings.Contains(e.Message, d.Message) {
			details = append(details, d.Path+": "+d.Message)
		}
	}
	if len(details) > 0 {
		msg += " (" + strings.Join(details, "; ") + ")"
	}
	return msg
}

// IsStatus reports whether err is an API answer with the given status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// UnreachableError is the error of a call whose server could not be dialled: nothing
// listens at URL, or it cannot be reached.
type UnreachableError struct {
	URL string
	Err error
}

// Error names the address and why it could not be reached.
func (e *UnreachableError) Error() string {
	return "cannot reach GoRunner at " + e.URL + ": " + e.Err.Error()
}

// Unwrap is the dial error.
func (e *UnreachableError) Unwrap() error { return e.Err }
