package console

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Values made under 32 bytes of 7 by the console's sessions before they moved onto
// internal/seal: cookies handed out then must still open, and CSRF tokens still match.
const (
	cookieBefore = "b7fDPZMU6IBFd_uasZrfHxuzGrqV56-7XcsietwQWSZbbCAXbNSS1kKu9RNRg9tyPtzVIqalYMhiKznW_6vTFQ"
	csrfBefore   = "1MbMRYyN8bQYxO1VeT_81s1lweSan7NabQfPaA5X-1g"
)

func TestSessionsOpenCookiesSealedBefore(t *testing.T) {
	t.Parallel()
	s, err := newSessions(bytes.Repeat([]byte{7}, 32), false, func() time.Time { return time.Unix(1_700_000_000, 0) })
	require.NoError(t, err)
	withCookie := func(name, value string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(&http.Cookie{Name: name, Value: value})
		return r
	}

	sess, err := s.read(withCookie(cookieName, cookieBefore))
	require.NoError(t, err)
	require.Equal(t, session{Token: "tok", ID: "sid", Expires: 4102444800}, *sess)
	require.Equal(t, csrfBefore, s.csrfToken(sess))

	var n notice
	require.False(t, s.open(withCookie(noticeCookie, cookieBefore), noticeCookie, &n),
		"a session cookie's value is not another cookie's")
}
