// Package deploy holds what it takes to run and watch paydispatch beyond
// one machine (docs/operating.md, "Running on a cluster", says which role
// scales how):
//
//   - compose.yaml: every role in a container of its own (the image of the
//     repository's Dockerfile), with PostgreSQL, a Temporal server
//     (temporal/dynamicconfig.yaml is its dynamic config) and Prometheus;
//   - k8s/: Kubernetes manifests, a Deployment per role, a Service for
//     serve, the settings as ConfigMaps and Secrets, the migrate Job;
//   - prometheus/: the scrape config (prometheus.yml) and the alert rules
//     (alerts.yml, with a promtool unit test per alert in alerts_test.yml);
//   - grafana/paydispatch.json: a Grafana dashboard on the same metrics.
//
// MetricNames lists the metrics the rules and the dashboard read, for the
// cmd tests to find each at serve's /metrics. Its Go tests run the rules,
// the dashboard's queries and the scrape config through promtool,
// which .ci/run installs (Debian's prometheus package), and check every
// command line and variable the Dockerfile, compose.yaml and k8s/ give
// the binary against its own --help (files_test.go).
package deploy
