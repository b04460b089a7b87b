package catalog

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/gorunner/gorunner/internal/names"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// Connection types.
const (
	ConnBearer = "bearer"
	ConnBasic  = "basic"
	ConnHeader = "header"
)

// ConnectionParams is what a caller gives to create a connection. Secret is the bearer
// token, the basic-auth password or the custom header's value.
type ConnectionParams struct {
	Name     string `json:"name"`
	Type     string `json:"type" jsonschema:"enum=bearer,enum=basic,enum=header"`
	Username string `json:"username,omitempty"`
	Header   string `json:"header,omitempty"`
	Secret   string `json:"secret"`
	// Hosts are the hosts the secret may be sent to: "host", "*.domain" (any name under
	// domain) or an IP address, each with an optional "http://" or "https://" and ":port"
	// (runner.HostPattern: https and its default port unless named, or a loopback host).
	Hosts []string `json:"hosts"`
}

// MaxConnectionHosts is how many hosts one connection may name.
const MaxConnectionHosts = 32

var headerPattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")

// ErrSecretsDisabled means the service has no key to seal connection secrets with.
var ErrSecretsDisabled = errors.New("connections are disabled: no secret key configured")

func (p *ConnectionParams) problems() []schemas.Problem {
	var out []schemas.Problem
	add := func(path, msg string) { out = append(out, schemas.Problem{Path: path, Message: msg}) }
	if !names.Valid(p.Name) {
		add("/name", "must match "+names.Pattern)
	}
	switch p.Type {
	case ConnBearer:
	case ConnBasic:
		if p.Username == "" || strings.Contains(p.Username, ":") {
			add("/username", "basic auth needs a username without ':'")
		}
	case ConnHeader:
		if !headerPattern.MatchString(p.Header) {
			add("/header", "a custom header connection needs a valid header name")
		}
	default:
		add("/type", "must be one of bearer, basic, header")
	}
	out = append(out, p.normaliseHosts()...)
	if p.Secret == "" || len(p.Secret) > 8192 || strings.ContainsAny(p.Secret, "\r\n") {
		add("/secret", "must be 1 to 8192 characters, with no line breaks")
	}
	return out
}

// normaliseHosts checks the hosts and rewrites them in their normal form.
func (p *ConnectionParams) normaliseHosts() []schemas.Problem {
	switch {
	case len(p.Hosts) == 0:
		return []schemas.Problem{{Path: "/hosts", Message: "name at least one host the secret may be sent to"}}
	case len(p.Hosts) > MaxConnectionHosts:
		return []schemas.Problem{{Path: "/hosts", Message: fmt.Sprintf("at most %d hosts", MaxConnectionHosts)}}
	}
	p.Hosts = slices.Clone(p.Hosts)
	var out []schemas.Problem
	for i, h := range p.Hosts {
		hp, err := runner.ParseHostPattern(h)
		if err != nil {
			out = append(out, schemas.Problem{Path: fmt.Sprintf("/hosts/%d", i), Message: fmt.Sprintf("%q: %v", h, err)})
			continue
		}
		p.Hosts[i] = hp.String()
	}
	return out
}

// CreateConnection seals the secret and stores a new connection.
func (s *Service) CreateConnection(ctx context.Context, p ConnectionParams) (*Connection, error) {
	if problems := p.problems(); len(problems) > 0 {
		return nil, &schemas.ValidationError{Problems: problems}
	}
	if s.sealer == nil {
		return nil, ErrSecretsDisabled
	}
	c := &Connection{
		ID:        uuid.Must(uuid.NewV7()).String(),
		Name:      p.Name,
		Type:      p.Type,
		Username:  p.Username,
		Header:    p.Header,
		Hosts:     p.Hosts,
		CreatedAt: s.now(),
	}
	sealed, err := s.sealer.seal([]byte(p.Secret), c.ID)
	if err != nil {
		return nil, err
	}
	c.Sealed = sealed
	if err := s.store.CreateConnection(ctx, c); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("a connection named %q already exists: %w", p.Name, ErrConflict)
		}
		return nil, err
	}
	return c, nil
}

// ListConnections lists connections; their secrets stay sealed.
func (s *Service) ListConnections(ctx context.Context) ([]*Connection, error) {
	return s.store.ListConnections(ctx)
}

// DeleteConnection removes a connection by ID or name.
func (s *Service) DeleteConnection(ctx context.Context, idOrName string) error {
	c, err := s.store.GetConnection(ctx, idOrName)
	if err != nil {
		return err
	}
	return s.store.DeleteConnection(ctx, c.ID)
}

// Credential gives the named connection's secret headers and hosts. It implements
// runner.Credentials.
func (s *Service) Credential(ctx context.Context, name string) (*runner.Credential, error) {
	c, err := s.store.GetConnection(ctx, name)
	if errors.Is(err, ErrNotFound) {
		// The caller names the connection: say what is wrong with it, once.
		return nil, fmt.Errorf("there is none of that name (create it with POST /api/connections): %w", ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if s.sealer == nil {
		return nil, ErrSecretsDisabled
	}
	secret, err := s.sealer.open(c.Sealed, c.ID)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	switch c.Type {
	case ConnBearer:
		h.Set("Authorization", "Bearer "+string(secret))
	case ConnBasic:
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.Username+":"+string(secret))))
	case ConnHeader:
		h.Set(c.Header, string(secret))
	default:
		return nil, fmt.Errorf("connection %q has unknown type %q", name, c.Type)
	}
	return &runner.Credential{Hosts: c.Hosts, Header: h}, nil
}
