package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/testclock"
)

// TestMintedTokenNeverOutlivesItsCreator performs the attack of a holder of an expiring
// admin token (a contractor's, an agent's for a day) who mints itself tokens before its
// own runs out: one with no expiry, one asking for a month. Each is cut to its creator's
// end, as an OAuth grant ends with its approver's token, and stops working with it. A
// token may still be given a shorter life.
func TestMintedTokenNeverOutlivesItsCreator(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	e := newEnvConfig(t, envConfig{now: clock.Now})
	a := e.do("POST", "/api/tokens", map[string]any{"name": "for a day", "expiresIn": "24h"})
	require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
	daily := a.data()["token"].(string)
	end := clock.Now().Add(24 * time.Hour)

	minted := map[string]string{}
	for name, expiresIn := range map[string]string{"forever": "", "a month": "720h", "an hour": "1h"} {
		body := map[string]any{"name": name}
		if expiresIn != "" {
			body["expiresIn"] = expiresIn
		}
		a := e.doAs(daily, "POST", "/api/tokens", body)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
		require.NotNil(t, a.data()["expiresAt"], name)
		exp, err := time.Parse(time.RFC3339Nano, a.data()["expiresAt"].(string))
		require.NoError(t, err)
		want := end
		if name == "an hour" {
			want = clock.Now().Add(time.Hour)
		}
		require.Equal(t, want.UnixMilli(), exp.UnixMilli(), name)
		minted[name] = a.data()["token"].(string)
	}

	clock.Advance(24*time.Hour - time.Millisecond)
	require.Equal(t, http.StatusOK, e.doAs(minted["forever"], "GET", "/api/runs", nil).Status)
	clock.Advance(time.Millisecond)
	for _, tok := range []string{daily, minted["forever"], minted["a month"]} {
		require.Equal(t, http.StatusUnauthorized, e.doAs(tok, "GET", "/api/runs", nil).Status, "ends with its creator")
	}
	a = e.do("POST", "/api/tokens", map[string]any{"name": "root's own"})
	require.Nil(t, a.data()["expiresAt"], "a token that never expires mints ones that never do")
}
