package deploy_test

import (
	"bytes"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// composeFile is the part of the compose format the files use; decoding refuses any other
// key, so that a misspelt one fails here rather than being ignored by compose.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck map[string]any `yaml:"healthcheck"`
}

func TestComposeFiles(t *testing.T) {
	tests := []struct {
		file, store, scheme, image string
	}{
		{"compose.yaml", "postgres", "postgres", "postgres:17"},
		{"compose.redis.yaml", "redis", "redis", "redis:7"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(tc.file)
			require.NoError(t, err)
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			var f composeFile
			require.NoError(t, dec.Decode(&f))
			require.Len(t, f.Services, 3)
			db, ok := f.Services[tc.store]
			require.True(t, ok, "a %s service", tc.store)
			require.Equal(t, tc.image, db.Image)
			require.NotEmpty(t, db.Healthcheck, "the processes wait for a healthy store")
			for _, v := range db.Volumes {
				require.Contains(t, f.Volumes, strings.Split(v, ":")[0], "the store's volume is declared")
			}
			for _, name := range []string{"gorunner-1", "gorunner-2"} {
				s, ok := f.Services[name]
				require.True(t, ok, name)
				require.Equal(t, "gorunner:latest", s.Image)
				require.Equal(t, []string{"serve", "--addr", "0.0.0.0:8080"}, s.Command)
				u, err := url.Parse(s.Environment["GORUNNER_STORE"])
				require.NoError(t, err)
				require.Equal(t, tc.scheme, u.Scheme, "the store")
				require.Equal(t, tc.store, u.Hostname(), "the store service")
				require.Equal(t, []string{"gorunner-data:/data"}, s.Volumes, "one secret.key for both")
				require.Len(t, s.Ports, 1)
			}
			require.Contains(t, f.Volumes, "gorunner-data")
			require.Equal(t, "..", f.Services["gorunner-1"].Build, "built from the root Dockerfile")
			require.Equal(t, "service_healthy", f.Services["gorunner-1"].DependsOn[tc.store].Condition)
			require.Equal(t, "service_healthy", f.Services["gorunner-2"].DependsOn["gorunner-1"].Condition,
				"the second starts once the first made the admin token and secret.key")
		})
	}
}
