package check

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// root is deploy/kubernetes: this module is deploy/kubernetes/check.
const root = ".."

// variants are the kustomizations under deploy/kubernetes and what each
// must be (docs/deploy.md describes them).
var variants = map[string]Expect{
	// Segment IDs: a Deployment; the registry (SQL, on the store's
	// database) comes from the Secret with the store's password.
	"segment": {Kind: "Deployment", ReadinessPath: "/readyz/segment"},
	// Snowflake IDs from the pods' ordinals.
	"statefulset": {Kind: "StatefulSet", ReadinessPath: "/readyz/snowflake", RegistryPrefix: "static:ordinal"},
	// Snowflake IDs from etcd leases.
	"etcd": {Kind: "Deployment", ReadinessPath: "/readyz/snowflake", RegistryPrefix: "etcd://"},
}

func self(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, filepath.Base(wd))
}

// Every YAML file under deploy/kubernetes decodes strictly into its API
// type (kustomization.yaml into kustomize's).
func TestEveryManifestDecodesStrictly(t *testing.T) {
	files, err := ManifestFiles(root, self(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3*5 {
		t.Fatalf("found %d manifest files under %s: %v; want the three variants' (at least 15)", len(files), root, files)
	}
	for _, f := range files {
		objs, err := DecodeFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		kinds := make([]string, len(objs))
		for i, o := range objs {
			kinds[i] = typeName(o)
		}
		t.Logf("%s: %s", f, strings.Join(kinds, ", "))
	}
}

// typeName is an object's Go type without its package: Deployment.
func typeName(o any) string {
	s := fmt.Sprintf("%T", o)
	return s[strings.LastIndexByte(s, '.')+1:]
}

// Every manifest belongs to a variant this test knows, and every variant
// lists all of its files.
func TestEveryDirectoryIsAVariant(t *testing.T) {
	files, err := ManifestFiles(root, self(t))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, f := range files {
		rel, _ := filepath.Rel(root, filepath.Dir(f))
		dirs[rel] = true
	}
	for d := range dirs {
		if _, ok := variants[d]; !ok {
			t.Errorf("deploy/kubernetes/%s holds manifests but is no variant of this test (add it to variants)", d)
		}
	}
	for v := range variants {
		if !dirs[v] {
			t.Errorf("variant %s: no manifests in deploy/kubernetes/%s", v, v)
		}
		for _, err := range CheckKustomizationLists(filepath.Join(root, v)) {
			t.Error(err)
		}
	}
}

// Each variant renders with kustomize, and its objects fit frond and each
// other (Check).
func TestVariants(t *testing.T) {
	for name, want := range variants {
		t.Run(name, func(t *testing.T) {
			objs, err := Render(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range Check(objs, want) {
				t.Error(err)
			}
			if t.Failed() {
				return
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, typeName(o))
			}
			t.Logf("%s: %d objects (%s): OK", name, len(objs), strings.Join(kinds, ", "))
		})
	}
}

// Strict decoding refuses what Kubernetes would refuse or silently drop.
func TestStrictDecodingRefusesBadDocuments(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"unknown field", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  replica: 3
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i:1}]}}
`, `unknown field "spec.replica"`},
		{"unknown field deep in a container", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i:1
          readinessProbe: {httpGet: {path: /readyz/segment, port: http}, period: 5}
`, `unknown field "spec.template.spec.containers[0].readinessProbe.period"`},
		{"duplicate field", `
apiVersion: v1
kind: Service
metadata: {name: x}
spec:
  selector: {a: b}
  selector: {a: c}
`, `already set in map`},
		{"wrong type", `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: x}
spec: {maxUnavailable: 1, selector: {matchLabels: "a=b"}}
`, `cannot unmarshal`},
		{"ServiceMonitor with a misspelt field", `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  endpoint: [{port: http}]
`, `unknown field "spec.endpoint"`},
		{"unknown kind", `
apiVersion: apps/v1
kind: Deploymnet
metadata: {name: x}
`, `not a kind these manifests use`},
		{"no kind", `
metadata: {name: x}
`, `without apiVersion or kind`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeStrict([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodeStrict: %v; want an error with %q", err, c.want)
			}
		})
	}
	if _, err := DecodeKustomization([]byte("resource:\n  - deployment.yaml\n")); err == nil || !strings.Contains(err.Error(), `unknown field "resource"`) {
		t.Errorf("kustomization with resource: (not resources:): %v; want unknown field", err)
	}
	// A file whose second document is bad fails as a whole.
	dir := t.TempDir()
	f := filepath.Join(dir, "two.yaml")
	os.WriteFile(f, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n# second\napiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {ports: [{port: 1, protocl: TCP}]}\n"), 0o644)
	if _, err := DecodeFile(f); err == nil || !strings.Contains(err.Error(), "document 2") {
		t.Errorf("DecodeFile: %v; want an error in document 2", err)
	}
}

func find[T any](objs []any) T {
	for _, o := range objs {
		if v, ok := o.(T); ok {
			return v
		}
	}
	var zero T
	return zero
}

func services(objs []any) []*corev1.Service {
	var out []*corev1.Service
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok {
			out = append(out, s)
		}
	}
	return out
}

func podSpec(objs []any) *corev1.PodSpec {
	if d := find[*appsv1.Deployment](objs); d != nil {
		return &d.Spec.Template.Spec
	}
	return &find[*appsv1.StatefulSet](objs).Spec.Template.Spec
}

func frondContainer(objs []any) *corev1.Container {
	spec := podSpec(objs)
	for i := range spec.Containers {
		if spec.Containers[i].Name == "frond" {
			return &spec.Containers[i]
		}
	}
	return nil
}

func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

func ptr[T any](v T) *T { return &v }

// A broken variant fails Check: each case breaks one rule in an otherwise
// good variant, and Check must name it.
func TestCheckRefusesBrokenVariants(t *testing.T) {
	cases := []struct {
		variant, name, want string
		breakIt             func(objs []any)
	}{
		{"segment", "selector does not match the pod labels", "does not match the pod template's labels", func(o []any) {
			find[*appsv1.Deployment](o).Spec.Template.Labels["app.kubernetes.io/instance"] = "other"
		}},
		{"segment", "no memory limit", "no memory limit", func(o []any) {
			delete(frondContainer(o).Resources.Limits, corev1.ResourceMemory)
		}},
		{"segment", "limit below request", "below its request", func(o []any) {
			frondContainer(o).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("10m")
		}},
		{"segment", "readiness on another kind", `readiness probe path "/readyz/snowflake"`, func(o []any) {
			frondContainer(o).ReadinessProbe.HTTPGet.Path = "/readyz/snowflake"
		}},
		{"segment", "readiness not frond's", `readiness probe path "/ready"`, func(o []any) {
			frondContainer(o).ReadinessProbe.HTTPGet.Path = "/ready"
		}},
		{"segment", "liveness on a port that does not exist", "liveness probe port metrics is no container port", func(o []any) {
			frondContainer(o).LivenessProbe.HTTPGet.Port = intstr.FromString("metrics")
		}},
		{"segment", "liveness on the gRPC port", "is not the HTTP port", func(o []any) {
			frondContainer(o).LivenessProbe.HTTPGet.Port = intstr.FromInt32(9090)
		}},
		{"segment", "HTTP address moved, port not", "no container port 9000", func(o []any) {
			setEnv(frondContainer(o), "FROND_HTTP_ADDR", ":9000")
		}},
		{"segment", "writable root", "readOnlyRootFilesystem is not true", func(o []any) {
			frondContainer(o).SecurityContext.ReadOnlyRootFilesystem = ptr(false)
		}},
		{"segment", "capabilities kept", "do not drop ALL", func(o []any) {
			frondContainer(o).SecurityContext.Capabilities.Drop = nil
		}},
		{"segment", "privilege escalation", "allowPrivilegeEscalation", func(o []any) {
			frondContainer(o).SecurityContext.AllowPrivilegeEscalation = nil
		}},
		{"segment", "root", "runAsNonRoot", func(o []any) {
			podSpec(o).SecurityContext.RunAsNonRoot = nil
			frondContainer(o).SecurityContext.RunAsNonRoot = nil
		}},
		{"segment", "no seccomp profile", "seccompProfile", func(o []any) {
			podSpec(o).SecurityContext.SeccompProfile = nil
			frondContainer(o).SecurityContext.SeccompProfile = nil
		}},
		{"segment", "service links", "enableServiceLinks", func(o []any) {
			podSpec(o).EnableServiceLinks = nil
		}},
		{"segment", "short grace period", "terminationGracePeriodSeconds 15", func(o []any) {
			podSpec(o).TerminationGracePeriodSeconds = ptr(int64(15))
		}},
		{"segment", "image latest", "not latest", func(o []any) {
			frondContainer(o).Image = "registry.example.com/frond:latest"
		}},
		{"segment", "no data volume", "no volume mounted at the data directory", func(o []any) {
			c := frondContainer(o)
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "data" })
		}},
		{"segment", "store in the pod", "local to the pod", func(o []any) {
			setEnv(frondContainer(o), "FROND_STORE", "sqlite:///var/lib/frond/frond.db")
		}},
		{"segment", "one worker ID for all pods", "every pod would have the same worker ID", func(o []any) {
			setEnv(frondContainer(o), "FROND_REGISTRY", "static:3")
		}},
		{"segment", "admin token not from a Secret", "no file of a mounted Secret", func(o []any) {
			setEnv(frondContainer(o), "FROND_ADMIN_TOKEN_FILE", "/etc/frond/admin-token")
		}},
		{"segment", "Service selects nothing", "does not select the pods", func(o []any) {
			services(o)[0].Spec.Selector["app.kubernetes.io/instance"] = "other"
		}},
		{"segment", "Service targets a missing port", `targets web`, func(o []any) {
			services(o)[0].Spec.Ports[0].TargetPort = intstr.FromString("web")
		}},
		{"segment", "PDB selects nothing", "PodDisruptionBudget frond-segment: selector", func(o []any) {
			find[*policyv1.PodDisruptionBudget](o).Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "leaf"
		}},
		{"segment", "PDB blocks evictions", "blocks every eviction", func(o []any) {
			b := find[*policyv1.PodDisruptionBudget](o)
			b.Spec.MaxUnavailable, b.Spec.MinAvailable = nil, ptr(intstr.FromInt32(3))
		}},
		{"segment", "ServiceMonitor on a missing port", `has no port named "metrics"`, func(o []any) {
			find[*monitoringv1.ServiceMonitor](o).Spec.Endpoints[0].Port = "metrics"
		}},
		{"segment", "ServiceMonitor on the gRPC port", "is not frond's HTTP port", func(o []any) {
			find[*monitoringv1.ServiceMonitor](o).Spec.Endpoints[0].Port = "grpc"
		}},
		{"segment", "ServiceMonitor path", `path "/prometheus"`, func(o []any) {
			find[*monitoringv1.ServiceMonitor](o).Spec.Endpoints[0].Path = "/prometheus"
		}},
		{"segment", "ServiceMonitor selects no Service", "selects 0 Services", func(o []any) {
			find[*monitoringv1.ServiceMonitor](o).Spec.Selector.MatchLabels["app.kubernetes.io/instance"] = "other"
		}},
		{"statefulset", "file registry", `FROND_REGISTRY "file"; want static:ordinal`, func(o []any) {
			setEnv(frondContainer(o), "FROND_REGISTRY", "file")
		}},
		{"statefulset", "no governing Service", `serviceName "frond-pods" names no Service`, func(o []any) {
			find[*appsv1.StatefulSet](o).Spec.ServiceName = "frond-pods"
		}},
		{"statefulset", "governing Service not headless", "is not headless", func(o []any) {
			for _, s := range services(o) {
				s.Spec.ClusterIP = ""
			}
		}},
		{"statefulset", "data on an emptyDir", "is not a volumeClaimTemplate", func(o []any) {
			s := find[*appsv1.StatefulSet](o)
			s.Spec.Template.Spec.Volumes = append(s.Spec.Template.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			for i, m := range frondContainer(o).VolumeMounts {
				if m.Name == "data" {
					frondContainer(o).VolumeMounts[i].Name = "scratch"
				}
			}
		}},
		{"statefulset", "ServiceMonitor on both Services", "selects 2 Services", func(o []any) {
			find[*monitoringv1.ServiceMonitor](o).Spec.Selector.MatchExpressions = nil
		}},
		{"etcd", "registry not etcd", `want etcd://`, func(o []any) {
			setEnv(frondContainer(o), "FROND_REGISTRY", "zk://zk:2181/snowflake/frond")
		}},
		{"etcd", "no registry", "every pod would be worker 0", func(o []any) {
			c := frondContainer(o)
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "FROND_REGISTRY" })
		}},
	}
	for _, c := range cases {
		t.Run(c.variant+"/"+c.name, func(t *testing.T) {
			objs, err := Render(filepath.Join(root, c.variant))
			if err != nil {
				t.Fatal(err)
			}
			if errs := Check(objs, variants[c.variant]); len(errs) > 0 {
				t.Fatalf("the variant fails before it is broken: %v", errs)
			}
			c.breakIt(objs)
			errs := Check(objs, variants[c.variant])
			for _, err := range errs {
				if strings.Contains(err.Error(), c.want) {
					return
				}
			}
			t.Fatalf("Check after breaking it: %v; want an error with %q", errs, c.want)
		})
	}
}
