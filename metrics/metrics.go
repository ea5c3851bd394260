// Package metrics exposes termgate's state in the Prometheus text format.
// Values are read from the session registry at scrape time, so the byte
// relay carries no metrics code on its hot path.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/termgate/termgate/sessions"
)

// Source is what the collector reads: the registry's session list.
type Source interface {
	Sessions() []sessions.Info
}

var (
	sessionsDesc = prometheus.NewDesc("termgate_sessions", "Live terminal sessions.", nil, nil)
	clientsDesc  = prometheus.NewDesc("termgate_clients", "Clients attached to a session, by instance and session name (\"\" the default session).", []string{"instance", "name"}, nil)
	idleDesc     = prometheus.NewDesc("termgate_sessions_idle", "Sessions with no client attached.", nil, nil)
	bytesDesc    = prometheus.NewDesc("termgate_session_output_bytes", "Output bytes produced by the current session of an instance, by instance and session name (\"\" the default session).", []string{"instance", "name"}, nil)
)

type collector struct{ src Source }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- clientsDesc
	ch <- idleDesc
	ch <- bytesDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	list := c.src.Sessions()
	idle := 0
	for _, s := range list {
		if s.Clients == 0 {
			idle++
		}
		ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(s.Clients), s.Instance, s.Name)
		ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(s.BytesOut), s.Instance, s.Name)
	}
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(len(list)))
	ch <- prometheus.MustNewConstMetric(idleDesc, prometheus.GaugeValue, float64(idle))
}

// Handler serves the registry's metrics plus the Go runtime's, and those
// of more (ForwardCollector, say).
func Handler(src Source, more ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{src}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(more...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
