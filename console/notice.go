package console

import (
	"net/http"
	"time"
)

// NoticeTTL is how long a notice (what a form just did, such as "Payload sent to
// approve:17.") waits in its cookie for the page the form redirects to.
const NoticeTTL = time.Minute

// noticeCookie carries a notice across a form's redirect, sealed like the session, and only
// to console pages.
const noticeCookie = "gorunner_notice"

// notice is what noticeCookie holds: the text and the page it is for.
type notice struct {
	Text    string `json:"n"`
	Path    string `json:"p"`
	Expires int64  `json:"e"`
}

// redirectWithNotice answers a form with a redirect to path and leaves text for that page in
// a sealed cookie. A URL would keep it (and the hook tokens it may name) in server and proxy
// logs, browser history and Referer headers, and would let any link write on the page.
func (c *Console) redirectWithNotice(w http.ResponseWriter, r *http.Request, path, text string) {
	sealed, err := c.sessions.seal(noticeCookie, notice{Text: text, Path: path, Expires: c.cfg.Now().Add(NoticeTTL).Unix()})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.sessions.setCookie(w, noticeCookie, "/console", sealed, int(NoticeTTL.Seconds()))
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// takeNotice returns the notice a form left for this page and clears it, so it shows once;
// "" when there is none, it expired or it is for another page.
func (c *Console) takeNotice(w http.ResponseWriter, r *http.Request) string {
	var n notice
	if !c.sessions.open(r, noticeCookie, &n) || n.Path != r.URL.EscapedPath() {
		return ""
	}
	c.sessions.setCookie(w, noticeCookie, "/console", "", -1)
	if c.cfg.Now().Unix() >= n.Expires {
		return ""
	}
	return n.Text
}
