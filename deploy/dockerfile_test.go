package deploy_test

import (
	"bufio"
	"debug/elf"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildLine is how the Dockerfile's line that builds the binary begins.
const buildLine = "RUN CGO_ENABLED=0 go build "

// dockerfile reads the root Dockerfile's lines.
func dockerfile(t *testing.T) []string {
	raw, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	require.NoError(t, err)
	return strings.Split(string(raw), "\n")
}

// TestDockerfileImage checks what the image promises: data in /data, a user without
// privileges, the health check done by the binary, the server on 0.0.0.0:8080.
func TestDockerfileImage(t *testing.T) {
	lines := dockerfile(t)
	for _, want := range []string{
		"FROM scratch",
		"USER 65532:65532",
		"VOLUME /data",
		"ENV GORUNNER_DATA=/data",
		`HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/gorunner", "health"]`,
		`CMD ["serve", "--addr", "0.0.0.0:8080"]`,
	} {
		require.Contains(t, lines, want)
	}
}

// TestDockerfileBuildsStaticBinary runs the Dockerfile's build line, checks that the binary
// is static (no interpreter, no shared library), and, as root, that it serves from a root
// holding nothing else, /healthz answered and `gorunner health` passing.
func TestDockerfileBuildsStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var build string
	for _, l := range dockerfile(t) {
		if strings.HasPrefix(l, buildLine) {
			build = strings.TrimPrefix(l, "RUN ")
		}
	}
	require.NotEmpty(t, build, "the Dockerfile has a line %q…", buildLine)
	root := t.TempDir()
	bin := filepath.Join(root, "gorunner")
	require.Contains(t, build, "-o /out/gorunner ")
	cmd := exec.Command("sh", "-c", strings.Replace(build, "/out/gorunner", bin, 1))
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no interpreter")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs)

	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	serveInChroot(t, root)
}

// serveInChroot serves the binary in root under chroot and checks its health.
func serveInChroot(t *testing.T, root string) {
	serve := exec.Command("chroot", root, "/gorunner", "serve", "--addr", "127.0.0.1:0", "--data-dir", "/data")
	serve.Stderr = os.Stderr
	pipe, err := serve.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, serve.Start())
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "GoRunner listening on "); ok {
				urls <- rest
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("gorunner serve did not start listening in the empty root")
	}
	res, err := http.Get(url + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	out, err := exec.Command("chroot", root, "/gorunner", "health", "--url", url).CombinedOutput()
	require.NoError(t, err, "the image's HEALTHCHECK passes: %s", out)
	require.FileExists(t, filepath.Join(root, "data", "secret.key"), "the data went to /data")

	out, err = exec.Command("chroot", root, "/gorunner", "health", "--url", "http://127.0.0.1:1").CombinedOutput()
	require.Error(t, err, "no server, no health: %s", out)
}
