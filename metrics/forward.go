package metrics

import "github.com/prometheus/client_golang/prometheus"

// ForwardStats are the SSH listener's forwarded-connection counters
// (sshd.Server.ForwardStats), read at scrape time.
type ForwardStats struct {
	Opened, Refused, Failed        uint64 // channels: relayed, refused by policy, failed to connect
	BytesToTarget, BytesFromTarget uint64 // of ended forwards
}

var (
	forwardsDesc     = prometheus.NewDesc("termgate_forwards_total", "Forwarded TCP connections (ssh -L, -D, -W), by result.", []string{"result"}, nil)
	forwardBytesDesc = prometheus.NewDesc("termgate_forward_bytes_total", "Bytes relayed by ended forwarded connections, by direction.", []string{"direction"}, nil)
)

type forwardCollector struct{ read func() ForwardStats }

// ForwardCollector exports read's counters; pass it to Handler.
func ForwardCollector(read func() ForwardStats) prometheus.Collector {
	return forwardCollector{read}
}

func (forwardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- forwardsDesc
	ch <- forwardBytesDesc
}

func (c forwardCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.read()
	for result, n := range map[string]uint64{"ok": st.Opened, "denied": st.Refused, "failed": st.Failed} {
		ch <- prometheus.MustNewConstMetric(forwardsDesc, prometheus.CounterValue, float64(n), result)
	}
	ch <- prometheus.MustNewConstMetric(forwardBytesDesc, prometheus.CounterValue, float64(st.BytesToTarget), "to_target")
	ch <- prometheus.MustNewConstMetric(forwardBytesDesc, prometheus.CounterValue, float64(st.BytesFromTarget), "from_target")
}
