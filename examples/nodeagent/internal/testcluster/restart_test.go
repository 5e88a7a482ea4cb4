package testcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRestartAPIServer: StopAPIServer makes the API server unreachable and
// StartAPIServer brings it back on the same address, trusted with the
// same configuration and kubeconfig (envtest alone would serve a new CA),
// with the objects written before, since etcd kept running.
func TestRestartAPIServer(t *testing.T) {
	c, cl, ctx := startWithClient(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"k": "v"}}
	if err := cl.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	err := cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kept"}, &corev1.ConfigMap{})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Get while the API server is stopped: %v, want connection refused", err)
	}

	if err := c.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kept"}, &got); err != nil {
		t.Fatalf("Get with the same client after the restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("ConfigMap after the restart: %v", got.Data)
	}
	if stdout, stderr, err := c.Kubectl(ctx, "get", "configmap", "kept", "-o", "jsonpath={.data.k}"); err != nil || stdout != "v" {
		t.Errorf("kubectl with the same kubeconfig after the restart: %v %q %s", err, stdout, stderr)
	}
}

// TestRestartEtcd: StopEtcd leaves the API server up but unable to read
// or write, and StartEtcd brings etcd back with its data: the API server
// reconnects, and an object written before is read again, one written
// after is kept.
func TestRestartEtcd(t *testing.T) {
	c, cl, ctx := startWithClient(t)
	key := types.NamespacedName{Namespace: "default", Name: "kept"}
	if err := cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}

	if err := c.StopEtcd(); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
	err := cl.Create(short, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lost"}})
	cancelShort()
	if err == nil {
		t.Fatal("Create while etcd is stopped: nil, want an error")
	}
	t.Logf("Create while etcd is stopped: %v", err)

	if err := c.StartEtcd(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var got corev1.ConfigMap
	for {
		err := cl.Get(ctx, key, &got)
		if err == nil {
			break
		}
		if time.Since(began) > 2*time.Minute {
			t.Fatalf("Get after etcd's restart: %v for 2 minutes", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the API server read from the restarted etcd %s after its start", time.Since(began).Round(time.Millisecond))
	if got.Data["k"] != "v" {
		t.Errorf("ConfigMap after etcd's restart: %v", got.Data)
	}
	if err := cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}}); err != nil {
		t.Errorf("Create after etcd's restart: %v", err)
	}
}

// startWithClient starts a cluster and returns it with a client of its
// administrator and a context that ends with the test, within 3 minutes.
func startWithClient(t *testing.T) (*Cluster, client.Client, context.Context) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, cl, ctx
}
