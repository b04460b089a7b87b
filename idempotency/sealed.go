package idempotency

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/gorunner/gorunner/internal/seal"
)

// sealPurpose names the key kept answers are sealed under, derived from Config.SecretKey.
const sealPurpose = "gorunner kept answer v1"

// sealedPrefix starts the kept body of an answer sealed at rest; a JSON answer cannot start
// with it, so a body kept in the clear (by a route without Policy.Secret, or before answers
// were sealed) still replays as it is.
var sealedPrefix = []byte("\x00gorunner sealed answer v1\x00")

// newAnswerBox is the Box kept answers are sealed with: under secret, or under a random key
// of the Service's own when secret is nil.
func newAnswerBox(secret []byte) (*seal.Box, error) {
	secret, err := seal.OrRandom(secret)
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	box, err := seal.For(secret, sealPurpose)
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	return box, nil
}

// answerAD binds a sealed body to its scope and key, so that it opens under no other key.
func answerAD(scope, key string) []byte {
	return []byte(strconv.Itoa(len(scope)) + ":" + scope + key)
}

// sealBody seals the body of rec, a finished key's answer, in place. A body that cannot be
// sealed is not kept: the key is only taken, as when the body is too big.
func (s *Service) sealBody(rec *Record) {
	if rec.State != StateDone {
		return
	}
	sealed, err := s.box.Seal(rec.Body, answerAD(rec.Scope, rec.Key))
	if err != nil {
		rec.State, rec.Header, rec.Body = StateTaken, nil, nil
		return
	}
	rec.Body = append(bytes.Clone(sealedPrefix), sealed...)
}

// openBody returns rec's kept body in the clear: as kept when it was not sealed, else
// opened; a sealed body this Service cannot open (another secret key, or moved to another
// key) → ErrAnswerUnreadable.
func (s *Service) openBody(rec *Record) ([]byte, error) {
	sealed, ok := bytes.CutPrefix(rec.Body, sealedPrefix)
	if !ok {
		return rec.Body, nil
	}
	body, err := s.box.Open(sealed, answerAD(rec.Scope, rec.Key))
	if err != nil {
		return nil, ErrAnswerUnreadable
	}
	return body, nil
}
