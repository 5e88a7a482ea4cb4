package testcluster

import "testing"

// BenchmarkStartStop measures what each test that calls Start pays: etcd and
// kube-apiserver started and ready, the admin user, the CRDs installed and
// established, then both stopped. Run it with a small -benchtime, e.g.
// `go test -run XXX -bench StartStop -benchtime 3x ./internal/testcluster`.
func BenchmarkStartStop(b *testing.B) {
	root, err := RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_, stop := start(b, CRDPath(root))
		stop()
	}
}
