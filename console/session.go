package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorunner/gorunner/internal/seal"
)

// SessionTTL is how long a console sign-in lasts; the token's own revocation ends it sooner.
const SessionTTL = 12 * time.Hour

// cookieName is the session cookie.
const cookieName = "gorunner_session"

// errNoSession means no valid session cookie came with the request.
var errNoSession = errors.New("console: not signed in")

// session is what the sealed cookie holds: the API token the person signed in with (so that
// revoking the token ends the session on every process at once), a random ID the CSRF
// token is bound to, and when the session ends.
type session struct {
	Token   string `json:"t"`
	ID      string `json:"i"`
	Expires int64  `json:"e"`
}

// sessions seals sessions into cookies with AES-256-GCM (seal.Box) and derives their CSRF
// tokens with HMAC-SHA256, both keyed from the data directory's secret key, so every
// process sharing it accepts the same cookies and no session table is needed.
type sessions struct {
	box    *seal.Box
	csrf   []byte
	secure bool
	now    func() time.Time
}

// Purposes of the keys the sessions derive from the secret key (seal.Derive).
const (
	sessionPurpose = "gorunner console session v1"
	csrfPurpose    = "gorunner console csrf v1"
)

// newSessions keys the sessions with secret, at least 32 bytes (Config.validate checks it).
func newSessions(secret []byte, secure bool, now func() time.Time) (*sessions, error) {
	box, err := seal.For(secret, sessionPurpose)
	if err != nil {
		return nil, fmt.Errorf("console: session key: %w", err)
	}
	return &sessions{box: box, csrf: seal.Derive(secret, csrfPurpose), secure: secure, now: now}, nil
}

// start makes a new session for token and sets its cookie.
func (s *sessions) start(w http.ResponseWriter, token string) error {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return fmt.Errorf("making a session ID: %w", err)
	}
	sealed, err := s.seal(cookieName, session{Token: token, ID: base64.RawURLEncoding.EncodeToString(id),
		Expires: s.now().Add(SessionTTL).Unix()})
	if err != nil {
		return err
	}
	s.setCookie(w, cookieName, "/", sealed, int(SessionTTL.Seconds()))
	return nil
}

// end clears the session cookie.
func (s *sessions) end(w http.ResponseWriter) { s.setCookie(w, cookieName, "/", "", -1) }

func (s *sessions) setCookie(w http.ResponseWriter, name, path, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
}

// seal encrypts v for the cookie named name. The name is the associated data, so one
// cookie's value is never accepted as another's.
func (s *sessions) seal(name string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding cookie %s: %w", name, err)
	}
	sealed, err := s.box.SealText(plain, []byte(name))
	if err != nil {
		return "", fmt.Errorf("sealing cookie %s: %w", name, err)
	}
	return sealed, nil
}

// open decodes the request's cookie named name into v; false when it is missing or was
// not sealed by seal under that name.
func (s *sessions) open(r *http.Request, name string, v any) bool {
	c, err := r.Cookie(name)
	if err != nil {
		return false
	}
	plain, err := s.box.OpenText(c.Value, []byte(name))
	return err == nil && json.Unmarshal(plain, v) == nil
}

// read opens the request's session cookie; missing, forged or expired → errNoSession.
func (s *sessions) read(r *http.Request) (*session, error) {
	var sess session
	if !s.open(r, cookieName, &sess) || s.now().Unix() >= sess.Expires {
		return nil, errNoSession
	}
	return &sess, nil
}

// csrfToken is the synchronizer token of a session: every form carries it.
func (s *sessions) csrfToken(sess *session) string {
	m := hmac.New(sha256.New, s.csrf)
	m.Write([]byte(sess.ID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether a form's token belongs to the session.
func (s *sessions) checkCSRF(sess *session, token string) bool {
	return subtle.ConstantTimeCompare([]byte(s.csrfToken(sess)), []byte(token)) == 1
}
