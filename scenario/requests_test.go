package scenario

import (
	"reflect"
	"testing"
	"time"

	"github.com/cicada-load/cicada/worker"
	"github.com/cicada-load/cicada/worker/httpc"
)

// TestRequestsAsData checks that tasks, on_start and on_stop carry their
// requests as data (worker.Task.Requests) beside the function.
func TestRequestsAsData(t *testing.T) {
	const src = `
users:
  - name: U
    wait: between(0.5, 2)
    on_start:
      - {method: post, path: /login, body: "u=1"}
    on_stop:
      - path: /logout
    tasks:
      - path: /a
        name: A
        headers: {X-K: v}
        checks: {status: [200, 204], max_response_time: 50}
      - name: two
        weight: 3
        requests:
          - path: /b
          - {method: PUT, path: /c, json: {k: 1}}
`
	f, err := Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Scenario.Classes[0]
	tests := []struct {
		name string
		got  []worker.Request
		want []worker.Request
	}{
		{"on_start", c.OnStartRequests, []worker.Request{{HTTP: httpc.Request{Method: "POST", Path: "/login", Body: []byte("u=1")}}}},
		{"on_stop", c.OnStopRequests, []worker.Request{{HTTP: httpc.Request{Method: "GET", Path: "/logout"}}}},
		{"single", c.Tasks[0].Requests, []worker.Request{{
			HTTP:   httpc.Request{Method: "GET", Path: "/a", Name: "A", Headers: []httpc.Header{{Key: "X-K", Value: "v"}}},
			Expect: &worker.Expect{Status: []int{200, 204}, MaxResponseTime: 50 * time.Millisecond},
		}}},
		{"list", c.Tasks[1].Requests, []worker.Request{
			{HTTP: httpc.Request{Method: "GET", Path: "/b"}},
			{HTTP: httpc.Request{Method: "PUT", Path: "/c", Body: []byte(`{"k":1}`),
				Headers: []httpc.Header{{Key: "Content-Type", Value: "application/json"}}}},
		}},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: requests\n got %+v\nwant %+v", tt.name, tt.got, tt.want)
		}
	}
	if want := (worker.WaitSpec{Kind: worker.WaitBetween, Min: 500 * time.Millisecond, Max: 2 * time.Second}); c.WaitSpec == nil || *c.WaitSpec != want || c.Wait == nil {
		t.Errorf("wait spec = %+v; want %+v", c.WaitSpec, want)
	}
	if c.Tasks[1].Weight != 3 || c.Tasks[0].Fn == nil || c.OnStart == nil || c.OnStop == nil {
		t.Errorf("weight %d, functions %v %v %v", c.Tasks[1].Weight, c.Tasks[0].Fn != nil, c.OnStart != nil, c.OnStop != nil)
	}
}
