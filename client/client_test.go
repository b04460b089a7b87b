package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/client"
)

func TestNewRefusesABadBaseURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "://x"} {
		_, err := client.New(u, "t", nil)
		require.Error(t, err, u)
	}
}

func TestCallSendsTheRequestAndDecodesTheEnvelope(t *testing.T) {
	t.Parallel()
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		_, _ = w.Write([]byte(`{"data": [1, 2], "nextCursor": "c2"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL+"/", "gr_tok", &client.Config{UserAgent: "test/1"})
	require.NoError(t, err)
	var items []int
	status, env, err := c.Call(context.Background(), client.Request{Method: "GET", Path: "/api/runs", Query: map[string][]string{"limit": {"2"}}}, &items)
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.Equal(t, []int{1, 2}, items)
	require.Equal(t, "c2", env.NextCursor)
	require.Equal(t, "/api/runs", got.URL.Path)
	require.Equal(t, "2", got.URL.Query().Get("limit"))
	require.Equal(t, "Bearer gr_tok", got.Header.Get("Authorization"))
	require.Equal(t, "test/1", got.Header.Get("User-Agent"))
	require.Empty(t, got.Header.Get("Content-Type"), "no body, no content type")
	require.Empty(t, got.Header.Get("Idempotency-Key"))
}

func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   client.Error
		text   string
	}{
		{"envelope", 422, `{"error": {"code": "VALIDATION_ERROR", "message": "bad input", "details": [{"path": "/name", "message": "required"}]}}`,
			client.Error{Status: 422, Code: "VALIDATION_ERROR", Message: "bad input", Details: []client.Detail{{Path: "/name", Message: "required"}}},
			"VALIDATION_ERROR: bad input (/name: required)"},
		{"detail the message says", 404, `{"error": {"code": "NOT_FOUND", "message": "no run x", "details": [{"path": "id", "message": "no run x"}]}}`,
			client.Error{Status: 404, Code: "NOT_FOUND", Message: "no run x", Details: []client.Detail{{Path: "id", Message: "no run x"}}},
			"NOT_FOUND: no run x"},
		{"not GoRunner's", 502, "bad gateway\n", client.Error{Status: 502, Code: "Bad Gateway", Message: "bad gateway"}, "Bad Gateway: bad gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL, "t", nil)
			require.NoError(t, err)
			status, _, err := c.Call(context.Background(), client.Request{Method: "POST", Path: "/x", Body: []byte(`{}`)}, nil)
			require.Equal(t, tc.status, status)
			var e *client.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.want, *e)
			require.EqualError(t, err, tc.text)
			require.True(t, client.IsStatus(err, tc.status))
		})
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := client.New("http://"+addr, "t", nil)
	require.NoError(t, err)
	_, _, err = c.Send(context.Background(), client.Request{Method: "GET", Path: "/healthz"})
	var ue *client.UnreachableError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "http://"+addr, ue.URL)
	require.False(t, client.IsStatus(err, 404))
}
