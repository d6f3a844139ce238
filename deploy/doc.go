// Package deploy holds what it takes to run and watch paydispatch beyond
// one machine: Prometheus alert rules (prometheus/alerts.yml, with a
// promtool unit test per alert in prometheus/alerts_test.yml). Its Go
// tests run them through promtool, which .ci/run installs (Debian's
// prometheus package).
package deploy
