package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/termgate/termgate/audit"
)

var (
	commandsDesc      = prometheus.NewDesc("termgate_commands_total", "One-off commands in instances (ssh INSTANCE@HOST CMD), by result.", []string{"result"}, nil)
	transfersDesc     = prometheus.NewDesc("termgate_transfers_total", "File transfers (sftp, scp, the files routes) by direction (upload, download; session: an SFTP session's own record) and result.", []string{"direction", "result"}, nil)
	transferBytesDesc = prometheus.NewDesc("termgate_transfer_bytes_total", "Bytes of transferred files, by direction.", []string{"direction"}, nil)
)

type auditCollector struct{ read func() audit.Counts }

// AuditCollector exports the command and transfer counts of the audit
// trail (audit.Log.Counts); pass it to Handler. The results a gateway
// writes are always present, at 0 before the first record.
func AuditCollector(read func() audit.Counts) prometheus.Collector {
	return auditCollector{read}
}

func (auditCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- commandsDesc
	ch <- transfersDesc
	ch <- transferBytesDesc
}

func (c auditCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.read()
	for _, r := range []string{"ok", "denied", "failed"} {
		if _, ok := st.Commands[r]; !ok {
			st.Commands[r] = 0
		}
		for _, d := range []string{"upload", "download"} {
			if _, ok := st.Transfers[[2]string{d, r}]; !ok {
				st.Transfers[[2]string{d, r}] = 0
			}
		}
	}
	for _, d := range []string{"upload", "download"} {
		if _, ok := st.TransferBytes[d]; !ok {
			st.TransferBytes[d] = 0
		}
	}
	for r, n := range st.Commands {
		ch <- prometheus.MustNewConstMetric(commandsDesc, prometheus.CounterValue, float64(n), r)
	}
	for k, n := range st.Transfers {
		ch <- prometheus.MustNewConstMetric(transfersDesc, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	for d, n := range st.TransferBytes {
		ch <- prometheus.MustNewConstMetric(transferBytesDesc, prometheus.CounterValue, float64(n), d)
	}
}
