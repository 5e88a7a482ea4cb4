package admission

import (
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// Options configure the webhooks.
type Options struct {
	// Cluster is the KubeVirt cluster configuration the defaults follow
	// (api.ClusterConfig; the zero value is KubeVirt's default).
	Cluster api.ClusterConfig
	// KubeVirtUsers are the user names whose changes of a VMI's spec are
	// KubeVirt's own (the control plane's: its VM controller and
	// subresource API hot-plug volumes); a spec change by anyone else is
	// refused, as KubeVirt refuses it but from its service accounts.
	KubeVirtUsers []string
	// LiveUpdate decides on the KubeVirtUsers' spec changes of existing
	// VMIs; nil: HotplugUpdate, KubeVirt's.
	LiveUpdate LiveUpdate
	// Logger receives the webhooks' log (controller-runtime's admission
	// package logs through it); the zero value is silent.
	Logger logr.Logger
}

// Register serves the webhooks on mux at their paths (VMIMutatePath...).
func Register(mux *http.ServeMux, opts Options) {
	if opts.LiveUpdate == nil {
		opts.LiveUpdate = HotplugUpdate
	}
	users := map[string]bool{}
	for _, u := range opts.KubeVirtUsers {
		users[u] = true
	}
	handlers := map[string]admission.Handler{
		VMIMutatePath:         &vmiMutator{cluster: opts.Cluster, now: time.Now},
		VMICreateValidatePath: vmiCreateValidator{},
		VMIUpdateValidatePath: &vmiUpdateValidator{users: users, live: opts.LiveUpdate},
		VMMutatePath:          &vmMutator{cluster: opts.Cluster},
		VMValidatePath:        &vmValidator{cluster: opts.Cluster},
	}
	for path, h := range handlers {
		w := &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}
		w.LogConstructor = func(logr.Logger, *admission.Request) logr.Logger { return opts.Logger.WithValues("webhook", path) }
		mux.Handle(path, w)
	}
}
