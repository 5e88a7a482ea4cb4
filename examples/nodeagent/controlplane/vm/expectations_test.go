package vm

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestExpectations: creations are counted, deletions kept by UID, the VM
// held back until each is observed or the last is older than the TTL.
func TestExpectations(t *testing.T) {
	clock := now
	e := newExpectations(func() time.Time { return clock })
	vm := types.NamespacedName{Namespace: "ns", Name: "vm"}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	if !e.satisfied(vm) {
		t.Fatal("nothing expected, not satisfied")
	}
	e.expectCreation(vm)
	if e.satisfied(vm) || !e.satisfied(other) {
		t.Fatal("a creation expected: vm satisfied, or the other VM held back")
	}
	if c, d := e.pending(vm); c != 1 || d != 0 {
		t.Errorf("pending %d %d, want 1 0", c, d)
	}
	e.creationObserved(vm)
	e.creationObserved(vm) // a VMI created by another process: no count below 0
	if !e.satisfied(vm) {
		t.Error("creation observed, not satisfied")
	}
	e.expectCreation(vm)
	if e.satisfied(vm) {
		t.Error("a count below 0 let a later creation through")
	}
	e.creationObserved(vm)

	e.expectDeletion(vm, "a")
	e.deletionObserved(vm, "b") // another VMI of the name
	if e.satisfied(vm) {
		t.Error("the deletion of another UID satisfied the expectation")
	}
	if _, d := e.pending(vm); d != 1 {
		t.Errorf("pending deletions %d, want 1", d)
	}
	e.deletionObserved(vm, "a")
	if !e.satisfied(vm) {
		t.Error("deletion observed, not satisfied")
	}

	e.expectDeletion(vm, "c")
	clock = clock.Add(expectationsTTL + time.Second)
	if !e.satisfied(vm) {
		t.Error("an expectation older than the TTL still holds the VM back")
	}
	e.forget(vm)
	if c, d := e.pending(vm); c != 0 || d != 0 {
		t.Errorf("after forget: pending %d %d", c, d)
	}
}
