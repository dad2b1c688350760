// Package check decodes every Kubernetes manifest cicada ships strictly into
// the Kubernetes API types: the plain manifests of deploy/k8s, the podman
// pod of deploy/podman, and the Helm chart deploy/helm/cicada rendered by
// `helm template` with several value sets, after `helm lint`. Unknown fields,
// wrong types and kinds the check does not know are errors.
//
// It is a module of its own (deploy/check/go.mod) so that k8s.io/api stays
// out of the main module's dependencies. `make check-deploy` runs it (part of
// `make test`); it builds helm from the Go module proxy when it is missing.
// The helm binary is taken from $HELM, then PATH, then $(go env GOPATH)/bin.
package check
