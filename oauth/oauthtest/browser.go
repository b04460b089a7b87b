package oauthtest

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Page is the authorize page (or the answer to its form) as a person's browser gets it.
type Page struct {
	Status int
	Body   string
	Header http.Header
	Form   url.Values // the hidden fields, csrf included
	Scopes []string   // the scope checkboxes
	URL    string     // where the form posts
}

var (
	hiddenRE   = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	checkboxRE = regexp.MustCompile(`<input type="checkbox" name="grant_scope" value="([^"]+)"`)
)

// Browser is a person's browser: it keeps cookies and does not follow redirects, so that
// the redirect back to the client can be read.
func Browser(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Open follows an authorization URL in b and reads the page.
func Open(t testing.TB, b *http.Client, authURL string) Page {
	t.Helper()
	resp, err := b.Get(authURL)
	require.NoError(t, err)
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	u.RawQuery = ""
	return read(t, resp, u.String())
}

// Submit sends the page's form with a credential, the scopes ticked and an action
// ("approve" or "deny").
func Submit(t testing.TB, b *http.Client, p Page, credential, action string, scopes ...string) Page {
	t.Helper()
	form := url.Values{}
	for k, v := range p.Form {
		form[k] = v
	}
	form.Set("credential", credential)
	form.Set("action", action)
	form["grant_scope"] = scopes
	resp, err := b.PostForm(p.URL, form)
	require.NoError(t, err)
	return read(t, resp, p.URL)
}

func read(t testing.TB, resp *http.Response, formURL string) Page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := Page{Status: resp.StatusCode, Body: string(body), Header: resp.Header, Form: url.Values{}, URL: formURL}
	for _, m := range hiddenRE.FindAllStringSubmatch(p.Body, -1) {
		p.Form.Set(m[1], html.UnescapeString(m[2]))
	}
	for _, m := range checkboxRE.FindAllStringSubmatch(p.Body, -1) {
		p.Scopes = append(p.Scopes, html.UnescapeString(m[1]))
	}
	return p
}

// Callback reads the redirect back to the client: its URL without the query, and the query.
func Callback(t testing.TB, p Page) (string, url.Values) {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	loc, err := url.Parse(p.Header.Get("Location"))
	require.NoError(t, err)
	q := loc.Query()
	loc.RawQuery = ""
	return loc.String(), q
}
