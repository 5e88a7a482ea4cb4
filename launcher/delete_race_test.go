package launcher

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// TestSyncOvertakenByDelete: a Sync that waits for a VMI's record while a
// Delete of it holds the record returns ErrDeleted once the Delete is
// done, and leaves the VMI unmanaged. (Sync reaches the check before any
// libvirt call or file work, so no libvirtd is needed.)
func TestSyncOvertakenByDelete(t *testing.T) {
	l := &Launcher{vmis: map[string]*record{}}
	vmi, err := api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: racer, namespace: ns1}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
`))
	if err != nil {
		t.Fatal(err)
	}
	v := vmi.DeepCopy()
	api.Default(v, l.cfg.Cluster)

	// A Sync called just before a Delete: it reads the count of Deletes,
	// then Delete counts itself, takes the record first (as Delete does
	// with an unmanaged VMI), and retires it.
	name := "ns1_racer"
	rec := l.lockRecord(v)
	done := make(chan error, 1)
	go func() { done <- l.Sync(context.Background(), vmi) }()
	time.Sleep(300 * time.Millisecond) // Sync reads the count and waits for the record
	l.countDelete(name)
	l.forget(rec)
	rec.syncMu.Unlock()

	select {
	case err := <-done:
		if !errors.Is(err, ErrDeleted) {
			t.Fatalf("Sync overtaken by Delete: %v, want ErrDeleted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync did not return")
	}
	if rec := l.lookupRecord(name); rec != nil {
		t.Errorf("the VMI is still managed after ErrDeleted")
	}
}
