package launcher

import "testing"

// TestDecideSettle: each reading of both sides of a migration no launcher
// watched gives one outcome; the guest is never declared on both sides or
// moved while libvirt still moves it.
func TestDecideSettle(t *testing.T) {
	for _, c := range []struct {
		sides settleSides
		want  settleOutcome
	}{
		{settleSides{sourceJob: true, sourceRuns: true}, settleWait},
		{settleSides{sourceJob: true, sourceRuns: true, targetReceiving: true}, settleWait},
		{settleSides{targetReceiving: true}, settleWait},              // the source's job ended, the target not resumed yet
		{settleSides{sourceRuns: true}, settleStayed},                 // failed or aborted, the target gone
		{settleSides{sourceRuns: true, targetRuns: true}, settleBoth}, // never decided by guessing
		{settleSides{targetRuns: true}, settleLeft},                   // source shut off as migrated, or removed at New
		{settleSides{}, settleLost},                                   // neither
	} {
		if got := decideSettle(c.sides); got != c.want {
			t.Errorf("%+v: %s, want %s", c.sides, settleNames[got], settleNames[c.want])
		}
	}
}
