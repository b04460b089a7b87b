package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

func ExampleService_Do() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "idempotency-example")
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "gorunner.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	svc, err := idempotency.New(st, nil)
	if err != nil {
		panic(err)
	}

	req := idempotency.Request{
		Scope:  idempotency.PrincipalScope("alice"),
		Key:    "order-1001",
		Method: http.MethodPost,
		Path:   "/api/workflows/process-order/run",
		Body:   []byte(`{"orderId": "1001"}`),
	}
	runs := 0
	startRun := func(context.Context) (*idempotency.Response, error) {
		runs++
		return &idempotency.Response{Status: http.StatusAccepted, Body: []byte(`{"data":{"id":"run-1"}}`)}, nil
	}
	for range 2 {
		resp, err := svc.Do(ctx, req, startRun)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Status, string(resp.Body), "replayed:", resp.Replayed)
	}
	fmt.Println("runs started:", runs)
	// Output:
	// 202 {"data":{"id":"run-1"}} replayed: false
	// 202 {"data":{"id":"run-1"}} replayed: true
	// runs started: 1
}
