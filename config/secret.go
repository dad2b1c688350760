package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// ClusterSecretEnv is the environment variable that holds the cluster
// secret itself. The secret has no command-line option of its own, so that
// it never shows in the process list; --cluster-secret-file (or
// CICADA_CLUSTER_SECRET_FILE, or cluster-secret-file in a config file) names
// a file holding it instead.
const ClusterSecretEnv = "CICADA_CLUSTER_SECRET"

// MaxClusterSecret is the longest cluster secret in bytes: ZMTP PLAIN sends
// the password with a one-byte length (RFC 24/ZMTP-PLAIN).
const MaxClusterSecret = 255

// maxSecretFile bounds what is read of a secret file: the secret and any
// line breaks after it.
const maxSecretFile = 4096

// resolveClusterSecret sets Config.ClusterSecret from CICADA_CLUSTER_SECRET
// or from the file of --cluster-secret-file; giving both is refused, since
// it is not clear which one the cluster expects.
func (p *Parser) resolveClusterSecret() error {
	c := p.cfg
	env := p.getenv(ClusterSecretEnv)
	switch {
	case env != "" && c.ClusterSecretFile != "":
		return fmt.Errorf("%w: %s and --cluster-secret-file are both set; give the cluster secret once", ErrUsage, ClusterSecretEnv)
	case env != "":
		if err := checkClusterSecret(env); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUsage, ClusterSecretEnv, err)
		}
		c.ClusterSecret = env
	case c.ClusterSecretFile != "":
		s, err := ReadClusterSecret(c.ClusterSecretFile)
		if err != nil {
			return fmt.Errorf("%w: --cluster-secret-file: %w", ErrUsage, err)
		}
		c.ClusterSecret = s
	}
	return nil
}

// ReadClusterSecret reads a cluster secret file: a regular file whose
// content, without trailing line breaks, is 1-255 bytes. Anything else (a
// directory, a device such as /dev/zero, an empty or longer file) is an
// error.
func ReadClusterSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	// A huge file is never read whole: whatever it holds past
	// maxSecretFile bytes makes the secret too long.
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s: more than %d bytes; the cluster secret is at most %d", path, maxSecretFile, MaxClusterSecret)
	}
	b = bytes.TrimRight(b, "\r\n")
	if err := checkClusterSecret(string(b)); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(b), nil
}

// checkClusterSecret checks the length of a secret.
func checkClusterSecret(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("the cluster secret is empty")
	case len(s) > MaxClusterSecret:
		return fmt.Errorf("the cluster secret is longer than %d bytes", MaxClusterSecret)
	}
	return nil
}
