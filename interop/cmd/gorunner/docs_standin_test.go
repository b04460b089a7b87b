package main_test

import (
	"encoding/json"
	"net/http"
	"sync"
)

// standIn is the services the workflows of the runnable pages call, at 127.0.0.1:9000 in
// their text: a payments API, carriers' quotes, a jobs service, an alerts hook, an echo.
type standIn struct {
	mu    sync.Mutex
	polls map[string]int // GET /jobs/{id} calls so far, per job
	tries map[string]int // GET /flaky calls so far, per Idempotency-Key
}

func newStandIn() http.Handler {
	s := &standIn{polls: map[string]int{}, tries: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", s.charge)
	mux.HandleFunc("POST /refunds", s.echo)
	mux.HandleFunc("POST /alerts", s.echo)
	mux.HandleFunc("POST /echo", s.echo)
	mux.HandleFunc("POST /quotes/{carrier}", s.quote)
	mux.HandleFunc("GET /jobs/{id}", s.job)
	mux.HandleFunc("GET /flaky", s.flaky)
	return mux
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// charge charges an order: {order, amount} → {id}; an amount over 100 is declined (402).
func (s *standIn) charge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Order  string  `json:"order"`
		Amount float64 `json:"amount"`
	}
	if json.NewDecoder(r.Body).Decode(&in) != nil || in.Order == "" {
		reply(w, http.StatusBadRequest, map[string]string{"error": "want {order, amount}"})
		return
	}
	if in.Amount > 100 {
		reply(w, http.StatusPaymentRequired, map[string]string{"error": "card declined"})
		return
	}
	reply(w, http.StatusCreated, map[string]any{"id": "ch_" + in.Order, "amount": in.Amount})
}

// echo answers what it was sent, with the Idempotency-Key it came with.
func (s *standIn) echo(w http.ResponseWriter, r *http.Request) {
	var body any
	_ = json.NewDecoder(r.Body).Decode(&body)
	reply(w, http.StatusOK, map[string]any{"path": r.URL.Path, "body": body, "idempotencyKey": r.Header.Get("Idempotency-Key")})
}

// quote prices a parcel by carrier.
func (s *standIn) quote(w http.ResponseWriter, r *http.Request) {
	prices := map[string]float64{"fedex": 12.5, "ups": 9.9}
	price, ok := prices[r.PathValue("carrier")]
	if !ok {
		reply(w, http.StatusNotFound, map[string]string{"error": "no such carrier"})
		return
	}
	reply(w, http.StatusOK, map[string]any{"carrier": r.PathValue("carrier"), "price": price})
}

// job is ready from its third poll on.
func (s *standIn) job(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.polls[r.PathValue("id")]++
	n := s.polls[r.PathValue("id")]
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "ready": n >= 3, "polls": n})
}

// flaky answers 503 to the first try of each Idempotency-Key, then 200.
func (s *standIn) flaky(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.tries[r.Header.Get("Idempotency-Key")]++
	n := s.tries[r.Header.Get("Idempotency-Key")]
	s.mu.Unlock()
	if n == 1 {
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": "try again"})
		return
	}
	reply(w, http.StatusOK, map[string]any{"tries": n})
}
