package agent

import (
	"maps"
	"reflect"
	"sync"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncMemo remembers, for each VMI, what this agent last synced
// successfully: its UID, resourceVersion, spec and annotations (what the
// launcher converts). It only spares repeated Syncs of a VMI that runs as
// its spec says: it is empty after a restart, and a VMI missing from it
// is synced (Sync is idempotent). An object of the recorded
// resourceVersion is the recorded object (the API server gives every
// change a new one); another is compared field by field (a status write
// changes the resourceVersion, not the inputs), which costs no
// allocation, where a digest of the JSON cost about a hundred.
type syncMemo struct {
	mu     sync.Mutex
	synced map[types.NamespacedName]*syncedVersion
}

// syncedVersion is what a Sync of a VMI depends on, as it was synced.
type syncedVersion struct {
	uid             types.UID
	resourceVersion string
	spec            v1.VirtualMachineInstanceSpec
	annotations     map[string]string
}

func newSyncMemo() *syncMemo {
	return &syncMemo{synced: map[types.NamespacedName]*syncedVersion{}}
}

// record notes that vmi, as it is, was synced.
func (m *syncMemo) record(vmi *v1.VirtualMachineInstance) {
	v := &syncedVersion{uid: vmi.UID, resourceVersion: vmi.ResourceVersion,
		spec: *vmi.Spec.DeepCopy(), annotations: maps.Clone(vmi.Annotations)}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced[client.ObjectKeyFromObject(vmi)] = v
}

// has tells whether vmi, as it is, was synced.
func (m *syncMemo) has(vmi *v1.VirtualMachineInstance) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	got, ok := m.synced[client.ObjectKeyFromObject(vmi)]
	if !ok || vmi.UID == "" || got.uid != vmi.UID {
		return false
	}
	if vmi.ResourceVersion != "" && got.resourceVersion == vmi.ResourceVersion {
		return true
	}
	if !maps.Equal(got.annotations, vmi.Annotations) || !reflect.DeepEqual(&got.spec, &vmi.Spec) {
		return false
	}
	got.resourceVersion = vmi.ResourceVersion // the same inputs: this version too
	return true
}

// forget drops what was noted of the VMI key.
func (m *syncMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.synced, key)
}

// needsSync tells whether a VMI the launcher reports as observed, synced
// before, needs Sync all the same: it is not running, or is paused for a
// reason other than the user (Sync resumes it).
func needsSync(observed v1.VirtualMachineInstanceStatus) bool {
	if observed.Phase != v1.Running {
		return true
	}
	for _, c := range observed.Conditions {
		if c.Type == v1.VirtualMachineInstancePaused && c.Status == k8sv1.ConditionTrue && c.Reason != "PausedByUser" {
			return true
		}
	}
	return false
}
