package fanout

import "testing"

// TestQueueKeepsLatest: a reader that falls behind loses the oldest events
// of a key, never its latest; an initial event after a newer one of its
// key is not queued; other keys keep their order.
func TestQueueKeepsLatest(t *testing.T) {
	const max = 32
	q := New[string](max)
	q.Offer("b", "b:Scheduled", false)
	q.Offer("a", "a:Scheduled", false)
	q.Offer("a", "a:Pending", true) // an initial snapshot after a change of the same key
	for range max + 5 {
		q.Offer("a", "a:Running", false)
	}
	q.Offer("a", "a:Succeeded", false)
	var got []string
	for {
		e, ok := q.Next()
		if !ok {
			break
		}
		got = append(got, e)
	}
	if len(got) != max+1 {
		t.Fatalf("%d events queued, want %d (b, then a's bounded queue): %v", len(got), max+1, got)
	}
	if got[0] != "b:Scheduled" {
		t.Errorf("first event %s, want b:Scheduled (a's oldest dropped)", got[0])
	}
	if last := got[len(got)-1]; last != "a:Succeeded" {
		t.Errorf("last event %s, want the latest a:Succeeded", last)
	}
	if d := q.Dropped(); d != 7 {
		t.Errorf("dropped %d, want 7", d)
	}
	if len(q.perKey) != 0 {
		t.Errorf("per-key counts left: %v", q.perKey)
	}
	select {
	case <-q.Ready():
	default:
		t.Error("Ready delivers nothing after offers")
	}
}
