package target

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAuthFlow: POST /auth/login issues a token; /auth/* answers 401
// without a valid one and names the user with it.
func TestAuthFlow(t *testing.T) {
	s := startServer(t, Options{Listen: "127.0.0.1:0"})
	do := func(method, path, auth, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("POST", "/auth/login", "", `{"user":"ann","password":"x"}`)
	var login struct{ Token, User string }
	if err := json.Unmarshal([]byte(body), &login); code != 200 || err != nil || login.Token == "" || login.User != "ann" {
		t.Fatalf("login = %d %q", code, body)
	}
	_, other := do("POST", "/auth/login", "", `{"user":"bob","password":"x"}`)
	var bob struct{ Token string }
	_ = json.Unmarshal([]byte(other), &bob)
	for _, tc := range []struct {
		name, method, path, auth, body string
		code                           int
		contains                       string
	}{
		{"token", "GET", "/auth/account", "Bearer " + login.Token, "", 200, `"user":"ann"`},
		{"token on POST", "POST", "/auth/cart/items", "Bearer " + login.Token, "{}", 200, `"path":"/auth/cart/items"`},
		{"other user's token", "GET", "/auth/account", "Bearer " + bob.Token, "", 200, `"user":"bob"`},
		{"no token", "GET", "/auth/account", "", "", 401, "Bearer token"},
		{"forged token", "GET", "/auth/account", "Bearer " + strings.Replace(login.Token, ".", ".0", 1), "", 401, ""},
		{"token of another name", "GET", "/auth/account", "Bearer 626f62" + login.Token[len("616e6e"):], "", 401, ""},
		{"not bearer", "GET", "/auth/account", "Basic " + login.Token, "", 401, ""},
		{"login without password", "POST", "/auth/login", "", `{"user":"ann"}`, 400, "non-empty"},
		{"login not JSON", "POST", "/auth/login", "", `user=ann`, 400, ""},
		{"login by GET", "GET", "/auth/login", "", "", 405, ""},
		{"outside /auth", "GET", "/account", "", "", 200, "cicada target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(tc.method, tc.path, tc.auth, tc.body)
			if code != tc.code || !strings.Contains(body, tc.contains) {
				t.Errorf("%s %s = %d %q; want %d containing %q", tc.method, tc.path, code, body, tc.code, tc.contains)
			}
		})
	}
}
