package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/oauth"
)

// TestPublicOrigin: a public URL is an absolute http(s) URL, kept without its trailing
// slash; whatever it refuses, the OAuth server (which serve starts later, with the same
// --public-url) would refuse too, so that serve can check the flag before it listens.
func TestPublicOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want string
	}{
		{"https://runner.example/", "https://runner.example"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://runner.example/gr", "https://runner.example/gr"},
		{"runner.example", ""},
		{"ftp://runner.example", ""},
		{"javascript:alert(1)", ""},
		{"https://", ""},
		{"https://user:pw@runner.example", ""},
		{"https://runner.example/?x=1", ""},
		{"https://runner.example/#top", ""},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := api.PublicOrigin(tc.raw)
			_, oerr := oauth.New(nil, nil, &oauth.Config{PublicURL: tc.raw})
			if tc.want == "" {
				require.ErrorContains(t, err, "want an absolute http(s) URL")
				require.ErrorIs(t, oerr, oauth.ErrInvalidPublicURL)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.NoError(t, oerr, "what api takes, oauth takes")
		})
	}
}
