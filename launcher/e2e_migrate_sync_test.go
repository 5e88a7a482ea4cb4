package launcher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// TestE2EMigrateSyncWaiting: a Sync of the VMI called while its migration
// runs waits for the VMI's lock, and once the migration completed fails
// with ErrDeleted: the source defines nothing again, the guest runs on the
// target alone. (The soak saw the source start the guest a second time
// 20 ms after the migration completed: its agent's Sync had been decided
// before the migration began.)
func TestE2EMigrateSyncWaiting(t *testing.T) {
	vmi := migrationVMI(t, "waiting", "")
	a, b := migrationPair(t, "y", "", vmi)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	attachShell(t, a.l, vmi).waitBoot()

	synced := make(chan error, 1)
	began := false
	_, err := a.l.Migrate(ctx, vmi, b.l, launcher.MigrateOptions{PollInterval: 50 * time.Millisecond, Progress: func(p launcher.MigrationProgress) {
		if !began && p.DataProcessed > 0 {
			began = true
			go func() { synced <- a.l.Sync(ctx, vmi) }() // waits for the migration's lock
		}
	}})
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if !began {
		t.Fatal("the migration reported no progress: no Sync was made to wait")
	}
	select {
	case err := <-synced:
		if !errors.Is(err, launcher.ErrDeleted) {
			t.Errorf("the Sync that waited for the migration: %v, want ErrDeleted", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the Sync that waited for the migration did not return")
	}
	name := convert.DomainName(vmi)
	if on := domains(t, a.uri); strings.Contains(on, name) {
		t.Errorf("the source defines the migrated VMI again: %s", on)
	}
	if on := domains(t, b.uri); !strings.Contains(on, name) {
		t.Errorf("the target lost the VMI: %s", on)
	}
}
