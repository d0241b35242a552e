// Package check validates frond's Kubernetes manifests (deploy/kubernetes)
// offline, without a cluster: every document decodes strictly (an unknown or
// duplicate field is an error) into the Kubernetes API types and the
// Prometheus Operator's ServiceMonitor; each variant's kustomization renders
// as kubectl apply -k would (kustomize's own library); and the rendered
// objects fit together and fit frond (Check).
//
// It is a module of its own so that the root module does not depend on the
// Kubernetes API. Run it with
//
//	cd deploy/kubernetes/check && go test ./...
package check

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// What frond itself defines, that the manifests must agree with.
const (
	// DefaultDataDir and DefaultHTTPAddr are the image's ENV (Dockerfile):
	// FROND_DATA_DIR and FROND_HTTP_ADDR when a manifest does not set them.
	DefaultDataDir  = "/var/lib/frond"
	DefaultHTTPAddr = ":8080"
	// DefaultShutdownTimeout is shutdown_timeout's default
	// (docs/configuration.md).
	DefaultShutdownTimeout = 15 * time.Second
	// LivenessPath is frond's liveness endpoint; MetricsPath its metrics.
	LivenessPath = "/healthz"
	MetricsPath  = "/metrics"
)

// ReadinessPaths are frond's readiness endpoints (docs/api.md).
var ReadinessPaths = []string{"/readyz", "/readyz/segment", "/readyz/snowflake"}

// KustomizationFile is the name kustomize looks for in a directory.
const KustomizationFile = "kustomization.yaml"

// SplitDocuments splits a YAML stream at its "---" lines, dropping
// documents that hold nothing but comments and blank lines.
func SplitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = nil
		for _, l := range strings.Split(doc, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, []byte(doc+"\n"))
				return
			}
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "---" || strings.HasPrefix(line, "--- ") {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

// newObject returns an empty object of the API type of apiVersion and kind.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Secret":
		return &corev1.Secret{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: not a kind these manifests use (add it to check.newObject)", apiVersion, kind)
}

// DecodeStrict decodes one YAML document into the API type its apiVersion
// and kind name. Unknown fields, duplicate fields and unknown kinds are
// errors.
func DecodeStrict(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, errors.New("a document without apiVersion or kind")
	}
	obj, err := newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, err
	}
	if err := unmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// unmarshalStrict decodes YAML into obj as the API server does with
// fieldValidation=Strict: duplicate keys, unknown fields (named by their
// path, such as spec.template.spec.containers[0].readinessProbe.period)
// and values of the wrong type are errors. Field names are case-sensitive.
func unmarshalStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// DecodeKustomization decodes a kustomization.yaml strictly into
// kustomize's own type.
func DecodeKustomization(data []byte) (*kusttypes.Kustomization, error) {
	var k kusttypes.Kustomization
	if err := unmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("kustomization: %w", err)
	}
	if k.Kind != "" && k.Kind != kusttypes.KustomizationKind {
		return nil, fmt.Errorf("kustomization: kind %q", k.Kind)
	}
	return &k, nil
}

// DecodeFile decodes every document of a manifest file strictly (a
// kustomization.yaml into kustomize's type).
func DecodeFile(file string) ([]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if filepath.Base(file) == KustomizationFile {
		k, err := DecodeKustomization(data)
		if err != nil {
			return nil, err
		}
		return []any{k}, nil
	}
	var objs []any
	for i, doc := range SplitDocuments(data) {
		obj, err := DecodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return nil, errors.New("no document")
	}
	return objs, nil
}

// Render runs kustomize on dir, as kubectl apply -k dir does, and decodes
// every resulting object strictly.
func Render(dir string) ([]any, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, err
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	var objs []any
	for _, doc := range SplitDocuments(out) {
		obj, err := DecodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("rendered: %w", err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// Expect is what one variant must be.
type Expect struct {
	// Kind is the workload: Deployment or StatefulSet.
	Kind string
	// ReadinessPath is the readiness probe's path: the kind of ID the
	// variant is for (/readyz/segment or /readyz/snowflake).
	ReadinessPath string
	// RegistryPrefix, if set, is how FROND_REGISTRY's literal value starts
	// (static:ordinal, etcd://); empty: it may come from a Secret.
	RegistryPrefix string
}

// problems collects errors with a common prefix.
type problems struct{ errs []error }

func (p *problems) add(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// workload is the part of a Deployment or StatefulSet the checks need.
type workload struct {
	kind, name string
	replicas   int32
	selector   *metav1.LabelSelector
	template   corev1.PodTemplateSpec
	claims     []corev1.PersistentVolumeClaim // a StatefulSet's volumeClaimTemplates
	sts        *appsv1.StatefulSet
}

// Check checks one variant's rendered objects against frond and each
// other. It returns every problem found.
func Check(objs []any, want Expect) []error {
	p := &problems{}
	var works []workload
	var services []*corev1.Service
	var pdbs []*policyv1.PodDisruptionBudget
	var monitors []*monitoringv1.ServiceMonitor
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok && m.GetNamespace() != "" {
			p.add("%T %s: sets namespace %q; leave it to kubectl -n", o, m.GetName(), m.GetNamespace())
		}
		switch v := o.(type) {
		case *appsv1.Deployment:
			r := int32(1)
			if v.Spec.Replicas != nil {
				r = *v.Spec.Replicas
			}
			works = append(works, workload{kind: "Deployment", name: v.Name, replicas: r, selector: v.Spec.Selector, template: v.Spec.Template})
		case *appsv1.StatefulSet:
			r := int32(1)
			if v.Spec.Replicas != nil {
				r = *v.Spec.Replicas
			}
			works = append(works, workload{kind: "StatefulSet", name: v.Name, replicas: r, selector: v.Spec.Selector, template: v.Spec.Template, claims: v.Spec.VolumeClaimTemplates, sts: v})
		case *corev1.Service:
			services = append(services, v)
		case *policyv1.PodDisruptionBudget:
			pdbs = append(pdbs, v)
		case *monitoringv1.ServiceMonitor:
			monitors = append(monitors, v)
		}
	}
	if len(works) != 1 {
		p.add("want one workload (Deployment or StatefulSet), have %d", len(works))
		return p.errs
	}
	w := works[0]
	if w.kind != want.Kind {
		p.add("%s %s: want a %s", w.kind, w.name, want.Kind)
	}
	podLabels := labels.Set(w.template.Labels)
	if w.selector == nil || (len(w.selector.MatchLabels) == 0 && len(w.selector.MatchExpressions) == 0) {
		p.add("%s %s: no selector", w.kind, w.name)
	} else if sel, err := metav1.LabelSelectorAsSelector(w.selector); err != nil {
		p.add("%s %s: selector: %v", w.kind, w.name, err)
	} else if !sel.Matches(podLabels) {
		p.add("%s %s: selector %s does not match the pod template's labels %v", w.kind, w.name, sel, podLabels)
	}
	ports := checkPod(p, w, want)

	// Services: select the pods, name container ports.
	var clientServices int
	for _, s := range services {
		if len(s.Spec.Selector) == 0 {
			p.add("Service %s: no selector", s.Name)
			continue
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
			p.add("Service %s: selector %v does not select the pods (labels %v)", s.Name, s.Spec.Selector, podLabels)
		}
		if s.Spec.ClusterIP != corev1.ClusterIPNone {
			clientServices++
		}
		if len(s.Spec.Ports) == 0 {
			p.add("Service %s: no ports", s.Name)
		}
		for _, sp := range s.Spec.Ports {
			if !ports.has(sp.TargetPort, sp.Port) {
				p.add("Service %s: port %q targets %s, which no container port of %s %s is", s.Name, sp.Name, sp.TargetPort.String(), w.kind, w.name)
			}
		}
	}
	if clientServices == 0 {
		p.add("no Service with a cluster IP for clients")
	}
	if w.sts != nil {
		var gov *corev1.Service
		for _, s := range services {
			if s.Name == w.sts.Spec.ServiceName {
				gov = s
			}
		}
		switch {
		case w.sts.Spec.ServiceName == "":
			p.add("StatefulSet %s: no serviceName", w.name)
		case gov == nil:
			p.add("StatefulSet %s: serviceName %q names no Service here", w.name, w.sts.Spec.ServiceName)
		case gov.Spec.ClusterIP != corev1.ClusterIPNone:
			p.add("StatefulSet %s: its Service %s is not headless (clusterIP: None)", w.name, gov.Name)
		}
	}

	// PodDisruptionBudget: selects the pods and lets one go.
	if len(pdbs) == 0 {
		p.add("no PodDisruptionBudget")
	}
	for _, b := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		switch {
		case err != nil:
			p.add("PodDisruptionBudget %s: selector: %v", b.Name, err)
		case b.Spec.Selector == nil || sel.Empty():
			p.add("PodDisruptionBudget %s: no selector", b.Name)
		case !sel.Matches(podLabels):
			p.add("PodDisruptionBudget %s: selector %s does not select the pods (labels %v)", b.Name, sel, podLabels)
		}
		switch {
		case b.Spec.MinAvailable == nil && b.Spec.MaxUnavailable == nil:
			p.add("PodDisruptionBudget %s: neither minAvailable nor maxUnavailable", b.Name)
		case b.Spec.MinAvailable != nil && b.Spec.MinAvailable.Type == intstr.Int && b.Spec.MinAvailable.IntVal >= w.replicas:
			p.add("PodDisruptionBudget %s: minAvailable %d of %d replicas blocks every eviction", b.Name, b.Spec.MinAvailable.IntVal, w.replicas)
		case b.Spec.MaxUnavailable != nil && b.Spec.MaxUnavailable.Type == intstr.Int && b.Spec.MaxUnavailable.IntVal < 1:
			p.add("PodDisruptionBudget %s: maxUnavailable %d blocks every eviction", b.Name, b.Spec.MaxUnavailable.IntVal)
		}
	}

	// ServiceMonitor: selects one Service (two would scrape each pod twice)
	// and names its port; the path is frond's.
	if len(monitors) == 0 {
		p.add("no ServiceMonitor")
	}
	for _, m := range monitors {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil {
			p.add("ServiceMonitor %s: selector: %v", m.Name, err)
			continue
		}
		if sel.Empty() {
			p.add("ServiceMonitor %s: empty selector", m.Name)
			continue
		}
		if m.Spec.NamespaceSelector.Any || len(m.Spec.NamespaceSelector.MatchNames) > 0 {
			p.add("ServiceMonitor %s: namespaceSelector: the Service is in its own namespace", m.Name)
		}
		var selected []*corev1.Service
		for _, s := range services {
			if sel.Matches(labels.Set(s.Labels)) {
				selected = append(selected, s)
			}
		}
		if len(selected) != 1 {
			names := make([]string, len(selected))
			for i, s := range selected {
				names[i] = s.Name
			}
			p.add("ServiceMonitor %s: selector %s selects %d Services %v; want exactly one", m.Name, sel, len(selected), names)
		}
		if len(m.Spec.Endpoints) == 0 {
			p.add("ServiceMonitor %s: no endpoints", m.Name)
		}
		for _, e := range m.Spec.Endpoints {
			if e.Path != "" && e.Path != MetricsPath {
				p.add("ServiceMonitor %s: path %q; frond serves %s", m.Name, e.Path, MetricsPath)
			}
			if e.Port == "" {
				p.add("ServiceMonitor %s: an endpoint without a port name", m.Name)
				continue
			}
			for _, s := range selected {
				found := false
				for _, sp := range s.Spec.Ports {
					if sp.Name == e.Port {
						found = true
						if !ports.isHTTP(sp.TargetPort, sp.Port) {
							p.add("ServiceMonitor %s: port %q of Service %s is not frond's HTTP port", m.Name, e.Port, s.Name)
						}
					}
				}
				if !found {
					p.add("ServiceMonitor %s: Service %s has no port named %q", m.Name, s.Name, e.Port)
				}
			}
		}
	}
	return p.errs
}

// containerPorts are the frond container's ports, and which is HTTP.
type containerPorts struct {
	ports    []corev1.ContainerPort
	httpPort int32
}

// resolve returns the port number a probe or Service target names (0 if
// none).
func (c containerPorts) resolve(target intstr.IntOrString, servicePort int32) int32 {
	if target.Type == intstr.String {
		for _, p := range c.ports {
			if p.Name == target.StrVal {
				return p.ContainerPort
			}
		}
		return 0
	}
	n := target.IntVal
	if n == 0 { // a Service port without targetPort targets its own number
		n = servicePort
	}
	for _, p := range c.ports {
		if p.ContainerPort == n {
			return n
		}
	}
	return 0
}

func (c containerPorts) has(target intstr.IntOrString, servicePort int32) bool {
	return c.resolve(target, servicePort) != 0
}

func (c containerPorts) isHTTP(target intstr.IntOrString, servicePort int32) bool {
	return c.resolve(target, servicePort) == c.httpPort
}

// env is a container's environment: literal values, and the names of
// variables taken from Secrets.
type env struct {
	values  map[string]string
	secrets map[string]corev1.SecretKeySelector
}

func containerEnv(c corev1.Container) env {
	e := env{values: map[string]string{}, secrets: map[string]corev1.SecretKeySelector{}}
	for _, v := range c.Env {
		switch {
		case v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil:
			e.secrets[v.Name] = *v.ValueFrom.SecretKeyRef
		case v.ValueFrom == nil:
			e.values[v.Name] = v.Value
		}
	}
	return e
}

func (e env) set(name string) bool {
	_, a := e.values[name]
	_, b := e.secrets[name]
	return a || b
}

func (e env) get(name, def string) string {
	if v, ok := e.values[name]; ok {
		return v
	}
	return def
}

var tagged = regexp.MustCompile(`^[^@]+:[A-Za-z0-9_][A-Za-z0-9_.-]*$|@sha256:[0-9a-f]{64}$`)

// checkPod checks the pod template; it returns the frond container's ports.
func checkPod(p *problems, w workload, want Expect) containerPorts {
	spec := w.template.Spec
	where := w.kind + " " + w.name
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		p.add("%s: enableServiceLinks must be false: Kubernetes would set FROND_*_SERVICE_HOST and the like for Services named frond..., and frond refuses unknown FROND_* variables", where)
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		p.add("%s: pod runAsUser 0", where)
	}
	for _, t := range spec.TopologySpreadConstraints {
		if sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector); err != nil || sel.Empty() || !sel.Matches(labels.Set(w.template.Labels)) {
			p.add("%s: topologySpreadConstraints' labelSelector does not select the pods", where)
		}
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	claims := map[string]bool{}
	for _, c := range w.claims {
		claims[c.Name] = true
	}
	mounted := map[string]bool{}

	var frond *corev1.Container
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	if len(spec.Containers) == 0 {
		p.add("%s: no containers", where)
	}
	for i := range all {
		c := &all[i]
		cw := fmt.Sprintf("%s container %s", where, c.Name)
		if c.Name == "frond" {
			frond = c
		}
		if !tagged.MatchString(c.Image) || strings.HasSuffix(c.Image, ":latest") {
			p.add("%s: image %q: want an exact tag or digest, not latest", cw, c.Image)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okReq := c.Resources.Requests[r]
			lim, okLim := c.Resources.Limits[r]
			if !okReq {
				p.add("%s: no %s request", cw, r)
			}
			if !okLim {
				p.add("%s: no %s limit", cw, r)
			}
			if okReq && okLim && lim.Cmp(req) < 0 {
				p.add("%s: %s limit %s below its request %s", cw, r, lim.String(), req.String())
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		nonRoot := sc.RunAsNonRoot
		if nonRoot == nil {
			nonRoot = psc.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			p.add("%s: runAsNonRoot is not true (container or pod)", cw)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			p.add("%s: runAsUser 0", cw)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			p.add("%s: seccompProfile is not RuntimeDefault (container or pod)", cw)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			p.add("%s: readOnlyRootFilesystem is not true", cw)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			p.add("%s: allowPrivilegeEscalation is not false", cw)
		}
		if sc.Privileged != nil && *sc.Privileged {
			p.add("%s: privileged", cw)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			p.add("%s: capabilities do not drop ALL", cw)
		} else if len(sc.Capabilities.Add) > 0 {
			p.add("%s: adds capabilities %v", cw, sc.Capabilities.Add)
		}
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
			if _, ok := volumes[m.Name]; !ok && !claims[m.Name] {
				p.add("%s: mounts %q, which is no volume or volumeClaimTemplate", cw, m.Name)
			}
		}
	}
	for name := range volumes {
		if !mounted[name] {
			p.add("%s: volume %q is mounted nowhere", where, name)
		}
	}
	for name := range claims {
		if !mounted[name] {
			p.add("%s: volumeClaimTemplate %q is mounted nowhere", where, name)
		}
	}
	if frond == nil {
		p.add("%s: no container named frond", where)
		return containerPorts{}
	}
	cw := where + " container frond"
	e := containerEnv(*frond)

	// HTTP port: FROND_HTTP_ADDR's, a named container port.
	addr := e.get("FROND_HTTP_ADDR", DefaultHTTPAddr)
	var httpPort int32
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		fmt.Sscan(addr[i+1:], &httpPort)
	}
	cp := containerPorts{ports: frond.Ports, httpPort: httpPort}
	if httpPort == 0 || !cp.has(intstr.FromInt32(httpPort), 0) {
		p.add("%s: FROND_HTTP_ADDR %q: no container port %d", cw, addr, httpPort)
	}
	tls := e.set("FROND_TLS_CERT_FILE") || e.set("FROND_TLS__CERT_FILE")
	probe := func(kind string, pr *corev1.Probe, paths ...string) {
		if pr == nil || pr.HTTPGet == nil {
			p.add("%s: no %s probe with httpGet", cw, kind)
			return
		}
		g := pr.HTTPGet
		if !slices.Contains(paths, g.Path) {
			p.add("%s: %s probe path %q; want %s", cw, kind, g.Path, strings.Join(paths, " or "))
		}
		if n := cp.resolve(g.Port, 0); n == 0 {
			p.add("%s: %s probe port %s is no container port", cw, kind, g.Port.String())
		} else if n != httpPort {
			p.add("%s: %s probe port %s is not the HTTP port %d", cw, kind, g.Port.String(), httpPort)
		}
		wantScheme := corev1.URISchemeHTTP
		if tls {
			wantScheme = corev1.URISchemeHTTPS
		}
		if s := g.Scheme; s != "" && s != wantScheme || s == "" && tls {
			p.add("%s: %s probe scheme %q; frond speaks %s", cw, kind, s, wantScheme)
		}
	}
	if !slices.Contains(ReadinessPaths, want.ReadinessPath) {
		p.add("expectation: readiness path %q is none of frond's %v", want.ReadinessPath, ReadinessPaths)
	}
	probe("readiness", frond.ReadinessProbe, want.ReadinessPath)
	probe("liveness", frond.LivenessProbe, LivenessPath)

	// The data directory: a writable volume (the root file system is not).
	dataDir := path.Clean(e.get("FROND_DATA_DIR", DefaultDataDir))
	var dataMount *corev1.VolumeMount
	for i, m := range frond.VolumeMounts {
		if path.Clean(m.MountPath) == dataDir {
			dataMount = &frond.VolumeMounts[i]
		}
	}
	switch {
	case dataMount == nil:
		p.add("%s: no volume mounted at the data directory %s (the root file system is read-only)", cw, dataDir)
	case dataMount.ReadOnly:
		p.add("%s: the data directory %s is mounted read-only", cw, dataDir)
	case w.kind == "StatefulSet" && !claims[dataMount.Name]:
		p.add("%s: the data directory's volume %q is not a volumeClaimTemplate: the worker ID's last time would not survive the pod", cw, dataMount.Name)
	}

	// The admin token: from a Secret, as a file or a variable.
	switch {
	case e.set("FROND_ADMIN_TOKEN_FILE"):
		file := path.Clean(e.get("FROND_ADMIN_TOKEN_FILE", ""))
		ok := false
		for _, m := range frond.VolumeMounts {
			v, isVol := volumes[m.Name]
			if !isVol || v.Secret == nil || path.Dir(file) != path.Clean(m.MountPath) {
				continue
			}
			base := path.Base(file)
			if len(v.Secret.Items) == 0 {
				ok = true // every key of the Secret is a file; the key must be base
			}
			for _, it := range v.Secret.Items {
				if it.Path == base {
					ok = true
				}
			}
		}
		if !ok {
			p.add("%s: FROND_ADMIN_TOKEN_FILE %q is no file of a mounted Secret", cw, file)
		}
	case e.secrets["FROND_ADMIN_TOKEN"].Name != "":
	default:
		p.add("%s: no admin token from a Secret (FROND_ADMIN_TOKEN_FILE on a Secret volume, or FROND_ADMIN_TOKEN from secretKeyRef)", cw)
	}

	// The store: shared by every pod, never a file in the pod.
	if !e.set("FROND_STORE") {
		p.add("%s: no FROND_STORE: every pod would have its own SQLite store and hand out the same segment IDs", cw)
	} else if v, ok := e.values["FROND_STORE"]; ok && (strings.HasPrefix(v, "sqlite:") || strings.HasPrefix(v, "memory:")) {
		p.add("%s: FROND_STORE %q is local to the pod: the pods would hand out the same segment IDs", cw, v)
	}

	// The worker registry: distinct worker IDs for the pods.
	reg, literal := e.values["FROND_REGISTRY"]
	_, fromSecret := e.secrets["FROND_REGISTRY"]
	switch {
	case !literal && !fromSecret:
		p.add("%s: no FROND_REGISTRY: every pod would be worker 0 (the file registry)", cw)
	case literal && want.RegistryPrefix != "" && !strings.HasPrefix(reg, want.RegistryPrefix):
		p.add("%s: FROND_REGISTRY %q; want %s...", cw, reg, want.RegistryPrefix)
	case fromSecret && want.RegistryPrefix != "":
		p.add("%s: FROND_REGISTRY comes from a Secret; want a literal %s...", cw, want.RegistryPrefix)
	case literal && w.kind == "Deployment" && (reg == "" || reg == "file" || strings.HasPrefix(reg, "static:")):
		p.add("%s: FROND_REGISTRY %q in a Deployment: every pod would have the same worker ID", cw, reg)
	case literal && w.kind == "StatefulSet" && strings.HasPrefix(reg, "static:") && !strings.HasPrefix(reg, "static:ordinal"):
		p.add("%s: FROND_REGISTRY %q: every pod would have the same worker ID; want static:ordinal", cw, reg)
	}

	// Shutdown: the grace period covers preStop and shutdown_timeout.
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	need := DefaultShutdownTimeout
	if v, ok := e.values["FROND_SHUTDOWN_TIMEOUT"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			p.add("%s: FROND_SHUTDOWN_TIMEOUT %q: %v", cw, v, err)
		}
		need = d
	}
	if l := frond.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		need += time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	if time.Duration(grace)*time.Second <= need {
		p.add("%s: terminationGracePeriodSeconds %d is not longer than preStop plus shutdown_timeout (%v)", where, grace, need)
	}
	return cp
}

// ManifestFiles lists the YAML files under root, skipping the directory
// skip (this module).
func ManifestFiles(root, skip string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == skip {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// CheckKustomizationLists reports manifest files of dir that its
// kustomization does not list, and listed files that do not exist.
func CheckKustomizationLists(dir string) []error {
	p := &problems{}
	data, err := os.ReadFile(filepath.Join(dir, KustomizationFile))
	if err != nil {
		return []error{err}
	}
	k, err := DecodeKustomization(data)
	if err != nil {
		return []error{err}
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[filepath.Clean(r)] = true
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			p.add("%s: resource %s: %v", dir, r, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return append(p.errs, err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == KustomizationFile || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		if !listed[n] {
			p.add("%s: %s is not in %s's resources", dir, n, KustomizationFile)
		}
	}
	return p.errs
}
