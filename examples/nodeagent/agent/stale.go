package agent

import (
	"context"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// removeStale destroys and removes, before the agent runs anything, the
// domains of this node whose VMI the cluster gave up on while the agent
// was away: the node was declared dead (its VMI Failed with reason
// NodeUnresponsive), or the VMI was replaced (same name, another UID) or
// bound to another node. Their guests must not run beside the VMI that
// took their place. (A domain whose VMI is simply gone is the sweep's:
// shut down gracefully, then removed.) It returns how many it removed;
// errors are logged and the sweep retries the rest.
func removeStale(ctx context.Context, l *launcher.Launcher, api client.Reader, node string, log *slog.Logger) int {
	owned, err := l.List(ctx)
	if err != nil {
		log.Warn("nodeagent: listing the launcher's domains for stale ones failed", "err", err)
		return 0
	}
	removed := 0
	for _, dom := range owned {
		var vmi v1.VirtualMachineInstance
		err := api.Get(ctx, types.NamespacedName{Namespace: dom.Namespace, Name: dom.Name}, &vmi)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			log.Warn("nodeagent: reading a domain's VMI failed", "vmi", key(dom), "err", err)
			continue
		}
		why := staleReason(dom, &vmi, node)
		if why == "" {
			continue
		}
		if err := l.Delete(ctx, dom); err != nil {
			log.Error("nodeagent: removing a stale domain failed", "vmi", key(dom), "why", why, "err", err)
			continue
		}
		removed++
		log.Info("nodeagent: stale domain destroyed and removed", "vmi", key(dom), "uid", dom.UID, "why", why)
	}
	return removed
}

// staleReason says why the domain of dom (a VMI as the launcher knows it)
// must go, given the cluster's VMI of that name; "" when it may stay. A
// domain migrating here (the VMI's migrationState targets this node and
// has not ended) is bound to the source until the source says it arrived:
// it stays.
func staleReason(dom, vmi *v1.VirtualMachineInstance, node string) string {
	ms := vmi.Status.MigrationState
	switch {
	case vmi.UID != dom.UID:
		return "replaced by VMI " + string(vmi.UID)
	case ms != nil && ms.TargetNode == node && !ms.Completed:
		return ""
	case vmi.Labels[v1.NodeNameLabel] != node:
		return "bound to node " + vmi.Labels[v1.NodeNameLabel]
	case vmi.Status.Phase == v1.Failed && vmi.Status.Reason == nodeapi.NodeUnresponsiveReason:
		return "its node was declared dead (" + nodeapi.NodeUnresponsiveReason + ")"
	}
	return ""
}
