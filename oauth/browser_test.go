package oauth_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/internal/browsertest"
)

// TestAuthorizePageInChromium drives the authorize page in headless Chromium with the
// keyboard only: untick a scope, type the token, Tab to Approve, Enter. The page requests
// nothing outside GoRunner.
func TestAuthorizePageInChromium(t *testing.T) {
	ctx := browsertest.New(t, 60*time.Second)
	e := newEnv(t)
	callbackURL := e.clients.URL + "/callback"
	conf := e.config(e.documentClient("Browser Assistant", callbackURL), "runs:write", "runs:read")
	conf.RedirectURL = callbackURL
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("br0wser", oauth2.S256ChallengeOption(verifier))

	var mu sync.Mutex
	var requested []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, r.Request.URL)
			mu.Unlock()
		}
	}))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.ID("credential")),
	))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "Connect Browser Assistant to GoRunner", title)
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
	require.NoError(t, err)
	require.Equal(t, "Connect Browser Assistant to GoRunner", heading)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(`input[value="runs:read"]`)),
		chromedp.KeyEvent(" "),
		chromedp.SendKeys(chromedp.ID("credential"), e.admin),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent(kb.Enter),
	))

	var loc string
	require.Eventually(t, func() bool {
		loc, err = chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.HasPrefix(loc, callbackURL)
	}, 30*time.Second, 50*time.Millisecond, "the browser goes back to the client")
	u, err := url.Parse(loc)
	require.NoError(t, err)
	require.Equal(t, "br0wser", u.Query().Get("state"))

	tok, err := conf.Exchange(context.Background(), u.Query().Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.Equal(t, "runs:write", tok.Extra("scope"), "the scope unticked with the keyboard is not granted")

	mu.Lock()
	defer mu.Unlock()
	for _, r := range requested {
		require.True(t, strings.HasPrefix(r, e.url+"/") || strings.HasPrefix(r, e.clients.URL+"/"),
			"the browser requested %s, neither GoRunner nor the client it went back to", r)
	}
}
