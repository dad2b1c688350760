// Command goapi is a cicada worker whose users are written in Go, the
// boomer way: build it, start a Locust (or cicada) master, and run
//
//	go run ./examples/goapi --master-host 127.0.0.1 -H http://127.0.0.1:8080
//
// It joins the master like `locust --worker` would, with two user classes.
package main

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// session is the per-user state kept in User.Data.
type session struct {
	token string
	seen  int
}

func main() {
	worker.Main(worker.Scenario{
		Host: "http://127.0.0.1:8080",
		HTTP: worker.HTTPOptions{Timeout: 10 * time.Second, UserAgent: "cicada-goapi-example"},
		Classes: []worker.UserClass{
			{
				Name:    "WebUser",
				Weight:  3,
				Wait:    worker.Between(500*time.Millisecond, 2*time.Second),
				OnStart: login,
				Tasks: []worker.Task{
					{Name: "index", Weight: 5, Fn: index},
					{Name: "item", Weight: 2, Fn: item},
				},
			},
			{
				// A user that measures something that is not an HTTP
				// request, reported with User.Record.
				Name:       "ComputeUser",
				FixedCount: 1,
				Wait:       worker.ConstantThroughput(2),
				Tasks:      []worker.Task{{Name: "compute", Fn: compute}},
			},
		},
	})
}

func login(ctx context.Context, u *worker.User) error {
	s := &session{}
	u.Data = s
	// Failures are recorded in the stats by Do; a task returns an error only
	// for problems that should appear as exceptions on the master.
	resp, err := u.Do(ctx, &httpc.Request{Path: "/", Name: "login"}, nil)
	if err == nil {
		s.token = resp.Header("ETag")
	}
	return nil
}

func index(ctx context.Context, u *worker.User) error {
	_ = u.DoDiscard(ctx, &httpc.Request{Path: "/"}, nil)
	u.Data.(*session).seen++
	return nil
}

func item(ctx context.Context, u *worker.User) error {
	id := strconv.Itoa(rand.IntN(100))
	// 404 is an expected answer here: accept it explicitly, and fail slow
	// responses, as a Locust catch_response block would.
	_ = u.DoDiscard(ctx, &httpc.Request{Path: "/item/" + id, Name: "/item/[id]"},
		&worker.Expect{Status: []int{200, 404}, MaxResponseTime: time.Second})
	return nil
}

func compute(ctx context.Context, u *worker.User) error {
	start := time.Now()
	n := 0
	for i := range 200000 {
		n += i % 7
	}
	var err error
	if n < 0 {
		err = context.Canceled // never; shows how a failure is reported
	}
	u.Record("compute", "sum", time.Since(start), int64(n%1000), err)
	return nil
}
