package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"

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
}

var (
	connNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	headerPattern   = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
)

// ErrSecretsDisabled means the service has no key to seal connection secrets with.
var ErrSecretsDisabled = errors.New("connections are disabled: no secret key configured")

func (p *ConnectionParams) problems() []schemas.Problem {
	var out []schemas.Problem
	add := func(path, msg string) { out = append(out, schemas.Problem{Path: path, Message: msg}) }
	if !connNamePattern.MatchString(p.Name) {
		add("/name", "must match ^[a-z0-9][a-z0-9_-]{0,63}$")
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
	if p.Secret == "" || len(p.Secret) > 8192 || strings.ContainsAny(p.Secret, "\r\n") {
		add("/secret", "must be 1 to 8192 characters, with no line breaks")
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

// Apply adds the named connection's credentials to req. It implements runner.Credentials.
func (s *Service) Apply(ctx context.Context, name string, req *http.Request) error {
	c, err := s.store.GetConnection(ctx, name)
	if err != nil {
		return fmt.Errorf("connection %q: %w", name, err)
	}
	if s.sealer == nil {
		return ErrSecretsDisabled
	}
	secret, err := s.sealer.open(c.Sealed, c.ID)
	if err != nil {
		return err
	}
	switch c.Type {
	case ConnBearer:
		req.Header.Set("Authorization", "Bearer "+string(secret))
	case ConnBasic:
		req.SetBasicAuth(c.Username, string(secret))
	case ConnHeader:
		req.Header.Set(c.Header, string(secret))
	default:
		return fmt.Errorf("connection %q has unknown type %q", name, c.Type)
	}
	return nil
}
