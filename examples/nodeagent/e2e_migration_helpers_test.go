package main

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// migrationBandwidth caps the agents' migrations in the tests that act
// while libvirt's job runs (-migration-bandwidth), so that the job of the
// 128 MiB test guest lasts seconds, not the fraction of one it takes on
// loopback.
const migrationBandwidth = "4Mi"

// jobReading is one reading of libvirt's job on a domain.
type jobReading struct {
	elapsed              time.Duration
	processed, remaining uint64
}

// readJob reads the job libvirt runs on the VMI ns/name's domain on conn;
// ok is false when none runs (or there is no domain).
func readJob(conn *libvirt.Connect, ns, name string) (r jobReading, ok bool) {
	dom, err := conn.LookupDomainByName(domainName(ns, name))
	if err != nil {
		return r, false
	}
	defer dom.Free()
	j, err := dom.GetJobStats(0)
	if err != nil || j.Type == libvirt.DOMAIN_JOB_NONE {
		return r, false
	}
	return jobReading{elapsed: time.Duration(j.TimeElapsed) * time.Millisecond, processed: j.DataProcessed, remaining: j.DataRemaining}, true
}

// waitJob waits until libvirt's migration job on the VMI ns/name's domain
// on conn has moved data, and returns that reading.
func waitJob(t testing.TB, conn *libvirt.Connect, ns, name string, timeout time.Duration) jobReading {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r, ok := readJob(conn, ns, name); ok && r.processed > 0 {
			return r
		}
	}
	t.Fatalf("no migration job moved data on %s within %s", domainName(ns, name), timeout)
	return jobReading{}
}

// waitNoJob waits until no job runs on the VMI ns/name's domain on conn,
// and returns the last reading that had moved data.
func waitNoJob(t testing.TB, conn *libvirt.Connect, ns, name string, timeout time.Duration) jobReading {
	t.Helper()
	var last jobReading
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, ok := readJob(conn, ns, name)
		if !ok {
			return last
		}
		if r.processed > 0 {
			last = r // an ending job reads all zero
		}
	}
	t.Fatalf("the job on %s still runs after %s: %+v", domainName(ns, name), timeout, last)
	return last
}

// runningMigration waits until the VMI's migration in ns that has not
// ended is listed, and returns it.
func (w *world) runningMigration(t testing.TB, ns, vmi string, timeout time.Duration) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var list virtv1.VirtualMachineInstanceMigrationList
		if err := w.client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if m := &list.Items[i]; m.Spec.VMIName == vmi && m.Status.Phase != virtv1.MigrationSucceeded && m.Status.Phase != virtv1.MigrationFailed {
				return m
			}
		}
	}
	t.Fatalf("no migration of %s/%s under way within %s", ns, vmi, timeout)
	return nil
}

// waitMigrationEnd waits until the migration mig has ended and returns it;
// gone says it was deleted meanwhile.
func (w *world) waitMigrationEnd(t testing.TB, mig *virtv1.VirtualMachineInstanceMigration, timeout time.Duration) (got *virtv1.VirtualMachineInstanceMigration, gone bool) {
	t.Helper()
	got = &virtv1.VirtualMachineInstanceMigration{}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		err := w.client.Get(context.Background(), client.ObjectKeyFromObject(mig), got)
		if apierrors.IsNotFound(err) {
			return nil, true
		}
		if err != nil {
			t.Fatal(err)
		}
		if p := got.Status.Phase; p == virtv1.MigrationSucceeded || p == virtv1.MigrationFailed {
			return got, false
		}
	}
	t.Fatalf("the migration %s did not end within %s: %+v", mig.Name, timeout, got.Status)
	return nil, false
}
