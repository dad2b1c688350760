package main

import "github.com/cicada-load/cicada/protocol/zmtp"

// clusterUsername is the ZMTP PLAIN username of a cicada cluster; the
// cluster secret (--cluster-secret-file or CICADA_CLUSTER_SECRET) is the
// password.
const clusterUsername = "cicada"

// clusterAuth returns the PLAIN credentials for the master/worker port, or
// nil (the NULL mechanism, as Locust) when no cluster secret is set.
func (a *app) clusterAuth() *zmtp.PlainAuth {
	if a.cfg.ClusterSecret == "" {
		return nil
	}
	return &zmtp.PlainAuth{Username: clusterUsername, Password: a.cfg.ClusterSecret}
}
