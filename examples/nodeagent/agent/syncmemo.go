package agent

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncMemo remembers, for each VMI, what this agent last synced
// successfully: its UID and a digest of what the launcher converts (spec
// and annotations). It only spares repeated Syncs of a VMI that runs as
// its spec says: it is empty after a restart, and a VMI missing from it
// is synced (Sync is idempotent).
type syncMemo struct {
	mu     sync.Mutex
	synced map[types.NamespacedName]syncedVersion
}

type syncedVersion struct {
	uid    types.UID
	digest [sha256.Size]byte
}

func newSyncMemo() *syncMemo {
	return &syncMemo{synced: map[types.NamespacedName]syncedVersion{}}
}

// version is what a Sync of vmi depends on.
func version(vmi *v1.VirtualMachineInstance) syncedVersion {
	data, err := json.Marshal(struct {
		Spec        v1.VirtualMachineInstanceSpec
		Annotations map[string]string
	}{vmi.Spec, vmi.Annotations})
	if err != nil {
		return syncedVersion{} // never equal to a recorded one: synced again
	}
	return syncedVersion{uid: vmi.UID, digest: sha256.Sum256(data)}
}

// record notes that vmi, as it is, was synced.
func (m *syncMemo) record(vmi *v1.VirtualMachineInstance) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced[client.ObjectKeyFromObject(vmi)] = version(vmi)
}

// has tells whether vmi, as it is, was synced.
func (m *syncMemo) has(vmi *v1.VirtualMachineInstance) bool {
	v := version(vmi)
	m.mu.Lock()
	defer m.mu.Unlock()
	got, ok := m.synced[client.ObjectKeyFromObject(vmi)]
	return ok && v.uid != "" && got == v
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
