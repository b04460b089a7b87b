package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gorunner/gorunner/client"
)

// Example starts a run with an idempotency key and reads its status. A stand-in server
// answers here as `gorunner serve` would.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"data": {"id": "run-1", "status": "completed", "key": %q}}`, r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()

	c, err := client.New(srv.URL, "gr_…", nil)
	if err != nil {
		panic(err)
	}
	var run struct{ ID, Status, Key string }
	status, _, err := c.Call(context.Background(), client.Request{
		Method: "POST", Path: "/api/workflows/greet/run", Body: []byte(`{"name": "Ada"}`), Key: "order-1001",
	}, &run)
	if err != nil {
		panic(err)
	}
	fmt.Println(status, run.ID, run.Status, run.Key)
	// Output: 202 run-1 completed order-1001
}
