package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names. The first two are KubeVirt's, with its meaning (a gauge of
// the node's VMIs by lowercase phase, and virt-controller's histogram of
// the time from a VMI's creation to each phase), so that KubeVirt's
// dashboards read them; controller-runtime adds its own (reconciles, work
// queue, API client) to the same registry.
const (
	metricPhaseCount   = "kubevirt_vmi_phase_count"
	metricFromCreation = "kubevirt_vmi_phase_transition_time_from_creation_seconds"
	metricClaims       = "vmi2libvirt_nodeagent_claims_total"
)

// fromCreationBuckets are the histogram's buckets in seconds: KubeVirt's,
// from half a second to an hour.
var fromCreationBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 40, 50, 60, 90, 120, 180, 240, 300, 600, 900, 1200, 1800, 2400, 3000, 3600}

// agentMetrics are the agent's own metrics, registered in
// controller-runtime's registry for the life of Run.
type agentMetrics struct {
	phases       *phaseCollector
	fromCreation *prometheus.HistogramVec
	claims       *prometheus.CounterVec
}

func newAgentMetrics(node string, reader client.Reader) *agentMetrics {
	return &agentMetrics{
		phases: &phaseCollector{node: node, reader: reader, desc: prometheus.NewDesc(metricPhaseCount,
			"VirtualMachineInstances of this node by phase.", []string{"node", "phase"}, nil)},
		fromCreation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricFromCreation,
			Help:    "Time from a VirtualMachineInstance's creation to each phase it entered on this node, in seconds.",
			Buckets: fromCreationBuckets,
		}, []string{"phase"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricClaims,
			Help: "Unbound VirtualMachineInstances this agent tried to bind to its node, by result (won: bound here; lost: another node's agent bound it first).",
		}, []string{"result"}),
	}
}

// register adds the metrics to controller-runtime's registry, and returns
// the function that removes them. A second agent in the same process is
// refused: the registry is the process's.
func (m *agentMetrics) register() (unregister func(), err error) {
	cs := []prometheus.Collector{m.phases, m.fromCreation, m.claims}
	for i, c := range cs {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			for _, done := range cs[:i] {
				ctrlmetrics.Registry.Unregister(done)
			}
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, errors.New("agent: another agent runs in this process (its metrics are registered)")
			}
			return nil, err
		}
	}
	return func() {
		for _, c := range cs {
			ctrlmetrics.Registry.Unregister(c)
		}
	}, nil
}

// observeTransitions records, for each phase a VMI entered (its new
// phase transitions), the time since the VMI's creation.
func (m *agentMetrics) observeTransitions(vmi *v1.VirtualMachineInstance, entered []v1.VirtualMachineInstancePhaseTransitionTimestamp) {
	for _, t := range entered {
		d := t.PhaseTransitionTimestamp.Sub(vmi.CreationTimestamp.Time)
		m.fromCreation.WithLabelValues(string(t.Phase)).Observe(max(0, d.Seconds()))
	}
}

// phaseCollector counts the node's VMIs by phase when scraped, from the
// agent's cache (which holds exactly this node's VMIs).
type phaseCollector struct {
	node   string
	reader client.Reader
	desc   *prometheus.Desc
}

// Describe sends the gauge's description.
func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect lists the cached VMIs and sends one gauge per phase present,
// plus zero for the phases the agent writes, so that a phase that empties
// reads 0 rather than vanishing.
func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1.VirtualMachineInstanceList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	counts := map[string]float64{}
	for p := range phaseEvents {
		counts[strings.ToLower(string(p))] = 0
	}
	for i := range list.Items {
		counts[strings.ToLower(string(list.Items[i].Status.Phase))]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, c.node, phase)
	}
}
