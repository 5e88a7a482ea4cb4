package vm

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationsTTL is how long a recorded expectation holds the VM back at
// most, as KubeVirt's ControllerExpectations (5 minutes): an event that
// was lost cannot stall a VM for ever.
const expectationsTTL = 5 * time.Minute

// expectations are KubeVirt's controller expectations, per VM: the VMI
// creations and deletions the controller asked the API server for and has
// not yet seen in its cache. While a VM has some, the controller does not
// act on it — its cache is older than its own last write, and a decision
// from it could create a second VMI or delete the new one — and its
// printable status says Starting or Stopping. Creations are counted, as
// KubeVirt counts them (the VMI's UID is not known before its Create
// returns, and its event may come first); deletions are keyed by the VMI's
// UID, since a VM's VMIs all have the VM's name.
//
// They live in memory only: a restarted controller starts with none and a
// cache listed afresh from the API server, which is as new as any write the
// old process made.
type expectations struct {
	mu  sync.Mutex
	m   map[types.NamespacedName]*expectation
	now func() time.Time
}

type expectation struct {
	creations int
	deletions map[types.UID]bool
	at        time.Time // when the last one was recorded
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{m: map[types.NamespacedName]*expectation{}, now: now}
}

func (e *expectations) get(vm types.NamespacedName) *expectation {
	x := e.m[vm]
	if x == nil {
		x = &expectation{deletions: map[types.UID]bool{}}
		e.m[vm] = x
	}
	x.at = e.now()
	return x
}

// expectCreation records that a VMI of vm is about to be created.
func (e *expectations) expectCreation(vm types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(vm).creations++
}

// creationObserved records that a VMI of vm was created (its event came),
// or that its creation failed.
func (e *expectations) creationObserved(vm types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[vm]; x != nil && x.creations > 0 {
		x.creations--
	}
}

// expectDeletion records that the VMI uid of vm is about to be deleted.
func (e *expectations) expectDeletion(vm types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(vm).deletions[uid] = true
}

// deletionObserved records that the VMI uid of vm is being deleted or gone
// (its event came), or that its deletion was refused.
func (e *expectations) deletionObserved(vm types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[vm]; x != nil {
		delete(x.deletions, uid)
	}
}

// pending returns how many creations and deletions of vm are not observed
// yet, expired or not.
func (e *expectations) pending(vm types.NamespacedName) (creations, deletions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[vm]; x != nil {
		return x.creations, len(x.deletions)
	}
	return 0, 0
}

// satisfied tells whether the controller may act on vm: everything it
// expected was observed, or the last expectation is older than
// expectationsTTL.
func (e *expectations) satisfied(vm types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[vm]
	return x == nil || (x.creations == 0 && len(x.deletions) == 0) || e.now().Sub(x.at) > expectationsTTL
}

// forget drops what was expected of vm (it is gone).
func (e *expectations) forget(vm types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, vm)
}
