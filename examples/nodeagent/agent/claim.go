package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/record"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// unboundSelector selects the VMIs no node has: those without the
// kubevirt.io/nodeName label. With Config.Claim the agent watches them in
// a cache of their own (its main cache holds only its node's VMIs).
func unboundSelector() labels.Selector {
	req, err := labels.NewRequirement(v1.NodeNameLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant requirement
	}
	return labels.NewSelector().Add(*req)
}

// claimReconciler binds unbound VMIs that may run on its node, as
// KubeVirt's scheduling does: by setting the kubevirt.io/nodeName label.
// Agents racing for one VMI each write the label with the resourceVersion
// they read as a precondition: the API server lets exactly one through
// and answers the others 409 Conflict; those leave the VMI to the winner.
type claimReconciler struct {
	unbound client.Reader // the claim cache: unbound VMIs, this node's Node
	api     client.Reader // reads from the API server itself: who won
	client  client.Writer
	node    string // this node's name: its Node's labels are matched
	// scheduling decides what a VMI requires of this node.
	scheduling nodeapi.Scheduling
	events     record.EventRecorder
	metrics    *agentMetrics
	log        *slog.Logger
}

// Reconcile binds one unbound VMI to this node when the VMI may run here.
func (c *claimReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vmi v1.VirtualMachineInstance
	if err := c.unbound.Get(ctx, req.NamespacedName, &vmi); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// No claim while the Node is missing or unschedulable (KubeVirt's
	// launcher pods select kubevirt.io/schedulable=true).
	node, err := c.schedulableNode(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		return reconcile.Result{RequeueAfter: claimRecheck}, nil
	}
	ok, err := claimable(&vmi, node, c.scheduling)
	if err != nil {
		c.log.Warn("nodeagent: not claiming a VMI whose node affinity cannot be read", "vmi", key(&vmi), "err", err)
		return reconcile.Result{}, nil
	}
	if !ok {
		return reconcile.Result{}, nil
	}
	winner, err := bind(ctx, c.client, c.api, &vmi, c.node)
	switch {
	case err != nil:
		return reconcile.Result{}, client.IgnoreNotFound(err)
	case winner == c.node:
		c.metrics.claims.WithLabelValues("won").Inc()
		c.log.Info("nodeagent: claimed a VMI", "vmi", key(&vmi))
		c.events.Event(&vmi, eventClaimed.Type, eventClaimed.Reason, fmt.Sprintf("Bound to node %s by its node agent.", c.node))
	case winner != "":
		c.metrics.claims.WithLabelValues("lost").Inc()
		c.log.Info("nodeagent: another node's agent claimed a VMI first", "vmi", key(&vmi), "node", winner)
	}
	// winner "" : the VMI changed and is still unbound; its update brings
	// it back here.
	return reconcile.Result{}, nil
}

// schedulableNode returns this node's Node when it is schedulable, nil
// when it is missing or not. It reads the claim cache, which watches this
// one Node; when the cache has it missing or unschedulable, it asks the API
// server, where the heartbeat may have just made it schedulable.
func (c *claimReconciler) schedulableNode(ctx context.Context) (*k8sv1.Node, error) {
	var node k8sv1.Node
	key := client.ObjectKey{Name: c.node}
	err := c.unbound.Get(ctx, key, &node)
	if err == nil && node.Labels[v1.NodeSchedulable] == "true" {
		return &node, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err := c.api.Get(ctx, key, &node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if node.Labels[v1.NodeSchedulable] != "true" {
		return nil, nil
	}
	return &node, nil
}

// claimable tells whether vmi is unbound, alive, not waiting for the
// control plane's topology hints (nodeapi.NeedsTopologyHints: KubeVirt
// schedules no such VMI before its hinter gave them), and may run on node
// (s.Fits).
func claimable(vmi *v1.VirtualMachineInstance, node *k8sv1.Node, s nodeapi.Scheduling) (bool, error) {
	if vmi.Labels[v1.NodeNameLabel] != "" || vmi.DeletionTimestamp != nil || domain.IsFinal(vmi.Status.Phase) || nodeapi.NeedsTopologyHints(vmi) {
		return false, nil
	}
	return s.Fits(vmi, node, nil)
}

// bind sets vmi's kubevirt.io/nodeName label to node with a JSON merge
// patch carrying vmi's resourceVersion, and returns the node the VMI is
// bound to afterwards: node when this call bound it; on a conflict,
// whatever the API server now says (another node, or "" when the VMI
// changed but is still unbound).
func bind(ctx context.Context, w client.Writer, r client.Reader, vmi *v1.VirtualMachineInstance, node string) (string, error) {
	orig := vmi.DeepCopy()
	metav1.SetMetaDataLabel(&vmi.ObjectMeta, v1.NodeNameLabel, node)
	err := w.Patch(ctx, vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err == nil {
		return node, nil
	}
	if !apierrors.IsConflict(err) {
		return "", err
	}
	var now v1.VirtualMachineInstance
	if err := r.Get(ctx, client.ObjectKeyFromObject(orig), &now); err != nil {
		return "", err
	}
	return now.Labels[v1.NodeNameLabel], nil
}

// claimRecheck is when an unbound VMI is looked at again while this
// node's Node is missing or unschedulable.
const claimRecheck = 2 * time.Second

// nodeObject is the Node as a heartbeat of a schedulable node with
// labels l writes it: its name, and its labels with kubernetes.io/hostname
// set to the name unless given.
func nodeObject(name string, l labels.Set) *k8sv1.Node {
	return &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels(name, beat{schedulable: true, labels: l})}}
}
