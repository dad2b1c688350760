package target

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/valyala/fasthttp"
)

// The login flow of the built-in target, for scenarios that capture a
// token (examples/shop.yaml):
//
//	POST /auth/login  {"user": "u", "password": "p"} (both non-empty strings)
//	                  → 200 {"token": "...", "user": "u"}, else 400
//	/auth/<anything>  with "Authorization: Bearer <token>" → 200
//	                  {"user": "u", "path": "/auth/..."}, else 401
//
// Tokens are stateless (an HMAC of the user name under a key drawn when
// the server starts), so a login costs no memory and a token stays valid
// until the server restarts. Any password is accepted: the target checks
// that a client carries what it was given, not who it is.
var (
	prefixAuth = []byte("/auth/")
	pathLogin  = []byte("/auth/login")
)

// authKey signs tokens; drawn once per process.
var authKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
}()

// token returns the token of user: hex(user) "." hex(HMAC-SHA256(user)).
func token(user string) string {
	m := hmac.New(sha256.New, authKey)
	m.Write([]byte(user))
	return hex.EncodeToString([]byte(user)) + "." + hex.EncodeToString(m.Sum(nil))
}

// tokenUser returns the user a valid token was issued to.
func tokenUser(tok string) (string, bool) {
	u, _, ok := strings.Cut(tok, ".")
	if !ok {
		return "", false
	}
	user, err := hex.DecodeString(u)
	if err != nil || !hmac.Equal([]byte(token(string(user))), []byte(tok)) {
		return "", false
	}
	return string(user), true
}

func (s *Server) serveAuth(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	if string(ctx.Path()) == string(pathLogin) {
		if !ctx.IsPost() {
			ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
			ctx.Response.SetBodyString(`{"error":"POST a JSON {\"user\", \"password\"}"}` + "\n")
			return
		}
		var in struct {
			User     string `json:"user"`
			Password string `json:"password"`
		}
		if err := json.Unmarshal(ctx.PostBody(), &in); err != nil || in.User == "" || in.Password == "" {
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
			ctx.Response.SetBodyString(`{"error":"a JSON object with non-empty user and password is required"}` + "\n")
			return
		}
		b, _ := json.Marshal(map[string]string{"token": token(in.User), "user": in.User})
		ctx.Response.SetBody(append(b, '\n'))
		return
	}
	auth := string(ctx.Request.Header.Peek("Authorization"))
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	user, valid := tokenUser(tok)
	if !ok || !valid {
		ctx.SetStatusCode(fasthttp.StatusUnauthorized)
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="cicada target"`)
		ctx.Response.SetBodyString(`{"error":"a valid Authorization: Bearer token from POST /auth/login is required"}` + "\n")
		return
	}
	b, _ := json.Marshal(map[string]string{"user": user, "path": string(ctx.Path())})
	ctx.Response.SetBody(append(b, '\n'))
}
