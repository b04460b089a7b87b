package mcpserver

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gorunner/gorunner/internal/seal"
)

// The requestState of a question (askState) travels through the client and comes back
// with the answer, so the server signs it (HMAC-SHA256): a client that forges or edits it —
// another run, another step, attempt reset to 1 — is refused. Signing does not stop a
// client from sending an older state it was given (an earlier attempt) again, so the
// answers that did not fit are also counted on the run itself (runner.Engine.MissAsk, one
// count per hook step shared by every process and every way of asking), and the higher of
// the two counts is the attempt.

// MinStateKeyBytes is the shortest Config.StateKey accepted.
const MinStateKeyBytes = 32

// errForgedState: a requestState this server did not sign.
var errForgedState = errors.New("the requestState is not one this server issued; answer the question with the requestState it came with, or call the tool again")

// stateSigner signs and opens askStates.
type stateSigner struct{ key []byte }

// newStateSigner keys a signer from secret (derived for this one purpose), or from a
// random key of this process when secret is nil.
func newStateSigner(secret []byte) (stateSigner, error) {
	if secret == nil {
		secret = make([]byte, MinStateKeyBytes)
		if _, err := rand.Read(secret); err != nil {
			return stateSigner{}, fmt.Errorf("mcpserver: making the requestState key: %w", err)
		}
	}
	if len(secret) < MinStateKeyBytes {
		return stateSigner{}, fmt.Errorf("mcpserver config: StateKey must be at least %d bytes", MinStateKeyBytes)
	}
	return stateSigner{key: seal.Derive(secret, "gorunner mcp requestState v1")}, nil
}

func (g stateSigner) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, g.key)
	m.Write(payload)
	return m.Sum(nil)
}

// seal is st as a requestState: its JSON and its signature, each base64url.
func (g stateSigner) seal(st askState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(g.mac(payload)), nil
}

// open checks a requestState's signature and decodes it.
func (g stateSigner) open(raw string) (askState, error) {
	enc := base64.RawURLEncoding
	p64, s64, _ := strings.Cut(raw, ".")
	payload, perr := enc.DecodeString(p64)
	sig, serr := enc.DecodeString(s64)
	var st askState
	if perr != nil || serr != nil || !hmac.Equal(sig, g.mac(payload)) || json.Unmarshal(payload, &st) != nil || st.RunID == "" {
		return askState{}, errForgedState
	}
	return st, nil
}
