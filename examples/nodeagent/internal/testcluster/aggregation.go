package testcluster

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FrontProxyName is the common name of the aggregation layer's client
// certificate, the one name the API server's request-header settings
// allow (--requestheader-allowed-names), as kubeadm names it.
const FrontProxyName = "front-proxy-client"

// The request headers the aggregation layer sets, Kubernetes' defaults.
const (
	UserHeader        = "X-Remote-User"
	GroupHeader       = "X-Remote-Group"
	ExtraHeaderPrefix = "X-Remote-Extra-"
)

// frontProxyDir is the folder of the aggregation layer's certificates
// below the API server's certificate folder (which outlives a restart).
func frontProxyDir(certDir string) string { return filepath.Join(certDir, "front-proxy") }

// configureAggregation turns on the API server's aggregation layer, as a
// kubeadm cluster has it: a front-proxy authority and client certificate
// (made once in certDir), the request-header flags that make
// kube-system/extension-apiserver-authentication tell aggregated API
// servers how to authenticate it, and that client certificate for the
// requests it proxies to them. Aggregated servers are reached through
// their Service's address (an ExternalName service names a host), so no
// --enable-aggregator-routing.
func configureAggregation(certDir string, args *envtest.Arguments) error {
	dir := frontProxyDir(certDir)
	ca, err := NewCA("front-proxy-ca")
	if err != nil {
		return err
	}
	if err := ca.Issue(dir, FrontProxyName, x509.ExtKeyUsageClientAuth); err != nil {
		return err
	}
	args.Set("requestheader-client-ca-file", filepath.Join(dir, "ca.crt"))
	args.Set("requestheader-allowed-names", FrontProxyName)
	args.Set("requestheader-username-headers", UserHeader)
	args.Set("requestheader-group-headers", GroupHeader)
	args.Set("requestheader-extra-headers-prefix", ExtraHeaderPrefix)
	args.Set("proxy-client-cert-file", filepath.Join(dir, "tls.crt"))
	args.Set("proxy-client-key-file", filepath.Join(dir, "tls.key"))
	return nil
}

// APIService says which aggregated API server to register.
type APIService struct {
	Group    string
	Versions []string // one APIService each, the same priority
	// Namespace and Service name the Service the API server reaches the
	// server through: an ExternalName service of "localhost" and Port.
	// The server's certificate must name SERVICE.NAMESPACE.svc.
	Namespace, Service string
	Port               int
	CABundle           []byte // the authority of the server's certificate
}

// RegisterAPIService creates the Namespace, the Service and the
// APIServices of a, and waits until the API server reports every
// APIService Available (it has reached the server's discovery).
func (c *Cluster) RegisterAPIService(ctx context.Context, a APIService) error {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	objs := []*unstructured.Unstructured{
		object("v1", "Namespace", map[string]any{"metadata": map[string]any{"name": a.Namespace}}),
		object("v1", "Service", map[string]any{
			"metadata": map[string]any{"name": a.Service, "namespace": a.Namespace},
			"spec": map[string]any{"type": "ExternalName", "externalName": "localhost",
				"ports": []any{map[string]any{"port": int64(a.Port), "protocol": "TCP"}}},
		}),
	}
	for _, v := range a.Versions {
		objs = append(objs, object("apiregistration.k8s.io/v1", "APIService", map[string]any{
			"metadata": map[string]any{"name": v + "." + a.Group},
			"spec": map[string]any{
				"group": a.Group, "version": v, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
				"caBundle": base64.StdEncoding.EncodeToString(a.CABundle),
				"service":  map[string]any{"namespace": a.Namespace, "name": a.Service, "port": int64(a.Port)},
			},
		}))
	}
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil {
			return fmt.Errorf("testcluster: create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	for _, v := range a.Versions {
		if err := waitAvailable(ctx, cl, v+"."+a.Group); err != nil {
			return err
		}
	}
	return nil
}

// object is an object of apiVersion and kind with fields.
func object(apiVersion, kind string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

// waitAvailable waits until the APIService name is Available.
func waitAvailable(ctx context.Context, cl client.Client, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	for {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"})
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, u); err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Available" {
					if m["status"] == "True" {
						return nil
					}
					last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testcluster: APIService %s not Available: %v (last: %s)", name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
