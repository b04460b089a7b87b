package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/schemas"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds one template set per page, each with the shared layout.
type pages struct {
	sets map[string]*template.Template
}

func loadPages() (*pages, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{sets: map[string]*template.Template{}}
	for _, name := range names {
		base := strings.TrimSuffix(path.Base(name), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("console: parsing %s: %w", name, err)
		}
		p.sets[base] = t
	}
	return p, nil
}

var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		case *time.Time:
			if v == nil {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		}
		return ""
	},
	"iso": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	},
	"took": took,
	"rel":  rel,
	"ptr":  func(t time.Time) *time.Time { return &t },
	"tookNow": func(start, end *time.Time, now time.Time) string {
		if start != nil && end == nil {
			return took(start, &now) + " so far"
		}
		return took(start, end)
	},
	"pretty": func(raw json.RawMessage) string {
		if len(raw) == 0 || string(raw) == "null" {
			return ""
		}
		var out bytes.Buffer
		if json.Indent(&out, raw, "", "  ") != nil {
			return string(raw)
		}
		return out.String()
	},
}

// rel is t relative to now ("3 min ago", "in 2 h") in a <time> element whose title is the
// absolute time, UTC.
func rel(now time.Time, t any) template.HTML {
	var at time.Time
	switch v := t.(type) {
	case time.Time:
		at = v
	case *time.Time:
		if v != nil {
			at = *v
		}
	}
	if at.IsZero() {
		return ""
	}
	abs := at.UTC().Format("2006-01-02 15:04:05Z")
	return template.HTML(`<time datetime="` + at.UTC().Format(time.RFC3339) + `" title="` + abs + `">` + relative(now.Sub(at)) + `</time>`)
}

// relative says how long ago d was (in the future when d < 0), to the unit a person uses.
func relative(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// took is how long from start to end, for a timeline: "" while not started.
func took(start, end *time.Time) string {
	if start == nil || end == nil {
		return ""
	}
	d := end.Sub(*start)
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// layout is what every page's frame needs.
type layout struct {
	Title     string
	Principal *auth.Principal
	CSRF      string
	Nav       string
	Page      any
}

// render writes page name with data in the layout.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	l := layout{Title: title, Nav: strings.SplitN(strings.TrimPrefix(r.URL.Path, "/console/"), "/", 2)[0], Page: data}
	if v := visitOf(r); v != nil {
		l.Principal, l.CSRF = &v.principal, v.csrf
	}
	var buf bytes.Buffer
	if err := c.pages.sets[name].ExecuteTemplate(&buf, "layout", l); err != nil {
		c.log.ErrorContext(r.Context(), "console: rendering a page failed", slog.String("page", name), slog.Any("error", err))
		http.Error(w, "internal error; the server log has the details", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// errorPage is the error page's data.
type errorPage struct {
	Message  string
	Problems []schemas.Problem
}

// problem says what went wrong in words a person may see, with the status to answer with;
// an error that is not theirs to see is logged and summarised.
func (c *Console) problem(r *http.Request, err error) (int, errorPage) {
	e, ok := problem.Classify(err)
	if !ok {
		c.log.ErrorContext(r.Context(), "console request failed", slog.String("path", r.URL.Path), slog.Any("error", err))
		return http.StatusInternalServerError, errorPage{Message: "Something went wrong on the server; its log has the details."}
	}
	return e.Status, errorPage{Message: e.Message, Problems: e.Details}
}

// fail answers with the error page for err.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, p := c.problem(r, err)
	c.render(w, r, status, "error", http.StatusText(status), p)
}

func staticFiles() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	return http.StripPrefix("/console/static/", http.FileServer(http.FS(sub)))
}

// favicon answers /favicon.ico, which browsers ask for whatever the page links, with the
// console's icon.
func favicon(w http.ResponseWriter, _ *http.Request) {
	icon, _ := staticFS.ReadFile("static/favicon.svg")
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(icon)
}
