package check

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		objects int
		wantErr bool
	}{
		{"configmap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n", 1, false},
		{"two documents and a comment one", "# c\n---\napiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Service\n", 2, false},
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatum: {k: v}\n", 0, true},
		{"wrong type", "apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: two}\n", 0, true},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\ndata: {k: w}\n", 0, true},
		{"unknown kind", "apiVersion: v1\nkind: Secretive\n", 0, true},
		{"no kind", "metadata: {name: a}\n", 0, true},
		{"not yaml", "apiVersion: [\n", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.yaml))
			if tc.wantErr {
				if !errors.Is(err, ErrManifest) {
					t.Fatalf("err %v, want one wrapping ErrManifest", err)
				}
				return
			}
			if err != nil || len(objs) != tc.objects {
				t.Fatalf("got %d objects, %v; want %d", len(objs), err, tc.objects)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n---\n# x\n")
	f.Add("apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 2}\n")
	f.Fuzz(func(t *testing.T, s string) {
		objs, err := Decode([]byte(s))
		if err != nil && !errors.Is(err, ErrManifest) {
			t.Fatalf("error %v does not wrap ErrManifest", err)
		}
		for _, o := range objs {
			if o == nil {
				t.Fatal("nil object")
			}
		}
	})
}

// decodeFile decodes a manifest file and fails t on any error.
func decodeFile(t *testing.T, path string) []any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", path)
	}
	return objs
}

func TestPlainManifests(t *testing.T) {
	files, err := filepath.Glob("../k8s/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("deploy/k8s: %d files, %v; want the 5 manifests", len(files), err)
	}
	more, _ := filepath.Glob("../podman/*.yaml")
	kinds := map[string]int{}
	for _, f := range append(files, more...) {
		for _, o := range decodeFile(t, f) {
			switch o := o.(type) {
			case *batchv1.Job:
				kinds["Job"]++
				if o.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || o.Spec.BackoffLimit == nil || *o.Spec.BackoffLimit != 0 {
					t.Errorf("%s: the master Job must not restart (its exit code is the verdict)", f)
				}
			case *appsv1.Deployment:
				kinds["Deployment"]++
			case *corev1.Service:
				kinds["Service"]++
				if o.Annotations["prometheus.io/scrape"] != "true" {
					t.Errorf("%s: no Prometheus scrape annotation", f)
				}
			case *corev1.ConfigMap:
				kinds["ConfigMap"]++
			case *corev1.Pod:
				kinds["Pod"]++
			}
		}
	}
	want := map[string]int{"Job": 1, "Deployment": 2, "Service": 1, "ConfigMap": 2, "Pod": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s objects, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
}

// helm returns the helm binary: $HELM, PATH, then GOPATH/bin.
func helm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		h := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(h); err == nil {
			return h
		}
	}
	msg := "helm missing: make check-deploy builds it (go install helm.sh/helm/v3/cmd/helm@VERSION)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("required under CI=true: %s", msg)
	}
	t.Skip(msg)
	return ""
}

func TestHelmChart(t *testing.T) {
	h := helm(t)
	const chart = "../helm/cicada"
	if out, err := exec.Command(h, "lint", "--strict", chart).CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	tests := []struct {
		name  string
		set   []string
		check func(t *testing.T, objs []any)
	}{
		{"defaults: headless Job", nil, func(t *testing.T, objs []any) {
			job := one[*batchv1.Job](t, objs)
			args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(args, "--headless --expect-workers 2") {
				t.Errorf("master args %q", args)
			}
			w := one[*appsv1.Deployment](t, objs)
			if w.Spec.Template.Spec.SecurityContext.Sysctls[0].Value != "1024 65535" || w.Spec.Template.Spec.Affinity == nil ||
				!strings.HasSuffix(strings.Join(w.Spec.Template.Spec.Containers[0].Args, " "), "-f -") || len(w.Spec.Template.Spec.Volumes) != 0 {
				t.Errorf("worker: sysctls %v, affinity %v, args %v, volumes %v", w.Spec.Template.Spec.SecurityContext.Sysctls,
					w.Spec.Template.Spec.Affinity, w.Spec.Template.Spec.Containers[0].Args, w.Spec.Template.Spec.Volumes)
			}
			one[*corev1.ConfigMap](t, objs)
		}},
		{"web UI master", []string{"master.headless=false"}, func(t *testing.T, objs []any) {
			n := 0
			for _, o := range objs {
				if d, ok := o.(*appsv1.Deployment); ok {
					n++
					if d.Name == "t-master" && !strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "--enable-rebalancing") {
						t.Errorf("web master args %v", d.Spec.Template.Spec.Containers[0].Args)
					}
				}
			}
			if n != 2 {
				t.Errorf("%d Deployments, want master and worker", n)
			}
		}},
		{"hostNetwork, source IPs, args, own ConfigMap", []string{"worker.hostNetwork=true", "worker.sourceIPs=10.0.0.1-10.0.0.8",
			"worker.replicas=5", "args={--loglevel,WARNING}", "scenarioConfigMap=mine", "image.tag=v1", "worker.fetchScenario=false"}, func(t *testing.T, objs []any) {
			for _, o := range objs {
				if _, ok := o.(*corev1.ConfigMap); ok {
					t.Error("a ConfigMap rendered though scenarioConfigMap is set")
				}
			}
			job := one[*batchv1.Job](t, objs)
			if !strings.Contains(strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "), "--expect-workers 5") {
				t.Errorf("master args %v", job.Spec.Template.Spec.Containers[0].Args)
			}
			w := one[*appsv1.Deployment](t, objs)
			s := w.Spec.Template.Spec
			args := strings.Join(s.Containers[0].Args, " ")
			if !s.HostNetwork || len(s.SecurityContext.Sysctls) != 0 || *w.Spec.Replicas != 5 ||
				!strings.Contains(args, "--source-ips 10.0.0.1-10.0.0.8 --loglevel WARNING") ||
				s.Volumes[0].ConfigMap.Name != "mine" || s.Containers[0].Image != "localhost/cicada:v1" {
				t.Errorf("worker: hostNetwork %v sysctls %v replicas %d args %q volume %v image %s",
					s.HostNetwork, s.SecurityContext.Sysctls, *w.Spec.Replicas, args, s.Volumes[0].ConfigMap.Name, s.Containers[0].Image)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "t", chart}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(h, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %v: %v\n%s", args, err, out)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			tc.check(t, objs)
		})
	}
	// A chart without a scenario is refused, not rendered with an empty file.
	if out, err := exec.Command(h, "template", "t", chart, "--set", "scenario=").CombinedOutput(); err == nil || !strings.Contains(string(out), "set scenario") {
		t.Errorf("empty scenario: %v\n%s", err, out)
	}
}

// one returns the only object of type T in objs.
func one[T any](t *testing.T, objs []any) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}
