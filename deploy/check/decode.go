package check

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// ErrManifest is wrapped by every decoding error.
var ErrManifest = errors.New("check: manifest")

// typeMeta is the part of every object that names its type.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// newObject returns an empty object of the API type for apiVersion and kind.
func newObject(t typeMeta) (any, error) {
	switch t.APIVersion + " " + t.Kind {
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 Pod":
		return &corev1.Pod{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	}
	return nil, fmt.Errorf("%w: unknown apiVersion %q kind %q", ErrManifest, t.APIVersion, t.Kind)
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Decode decodes every document of a multi-document YAML stream strictly
// into its API type. Empty documents (comments only) are skipped.
func Decode(data []byte) ([]any, error) {
	var objs []any
	for i, doc := range docSep.Split(string(data), -1) {
		var t typeMeta
		if err := yaml.Unmarshal([]byte(doc), &t); err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrManifest, i, err)
		}
		if t == (typeMeta{}) {
			if len(bytes.TrimSpace(stripComments([]byte(doc)))) != 0 {
				return nil, fmt.Errorf("%w: document %d has no apiVersion and kind", ErrManifest, i)
			}
			continue
		}
		obj, err := newObject(t)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%w: document %d (%s): %w", ErrManifest, i, t.Kind, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// stripComments drops the lines that are YAML comments.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}
