// Package deploy holds no code: its directory holds frond's packaging (the
// compose file, the systemd unit, the Kubernetes manifests, the Prometheus
// rules and the Grafana dashboard; the Dockerfile is at the repository
// root), and its tests check them statically. The Kubernetes manifests are
// also decoded into the Kubernetes API types by their own module,
// deploy/kubernetes/check. See docs/deploy.md.
package deploy
