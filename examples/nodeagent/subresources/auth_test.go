package subresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The SubjectAccessReview of each request, as virt-api's authorizer
// builds it from the path and the method; refused paths with its
// messages.
func TestAccessReview(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a"}}}
	base := "/apis/subresources.kubevirt.io/v1/namespaces/ns1/"
	attrs := func(verb, resource, sub, name string) *authorizationv1.ResourceAttributes {
		return &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: verb, Group: "subresources.kubevirt.io", Version: "v1", Resource: resource, Subresource: sub, Name: name}
	}
	cases := []struct {
		method, path string
		want         *authorizationv1.ResourceAttributes
		err          string
	}{
		{"GET", base + "virtualmachineinstances/tiny/console", attrs("get", "virtualmachineinstances", "console", "tiny"), ""},
		{"GET", base + "virtualmachineinstances/tiny/vnc", attrs("get", "virtualmachineinstances", "vnc", "tiny"), ""},
		{"GET", base + "virtualmachineinstances/tiny/vnc/screenshot", attrs("get", "virtualmachineinstances", "vnc/screenshot", "tiny"), ""},
		{"GET", base + "virtualmachineinstances/tiny/portforward/22/tcp", attrs("get", "virtualmachineinstances", "portforward", "tiny"), ""},
		{"PUT", base + "virtualmachineinstances/tiny/pause", attrs("update", "virtualmachineinstances", "pause", "tiny"), ""},
		{"PUT", base + "virtualmachines/vm/start", attrs("update", "virtualmachines", "start", "vm"), ""},
		{"PUT", base + "virtualmachines/vm/evacuate/cancel", attrs("update", "virtualmachines", "evacuate/cancel", "vm"), ""},
		{"PUT", base + "expand-vm-spec", &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: "update", Group: "subresources.kubevirt.io", Version: "v1", Resource: "expand-vm-spec"}, ""},
		{"GET", base + "expand-vm-spec", &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: "list", Group: "subresources.kubevirt.io", Version: "v1", Resource: "expand-vm-spec"}, ""},
		{"GET", base + "pods/p/log", nil, "unknown resource type pods"},
		{"GET", base + "other", nil, "unknown resource type other"},
		{"GET", "/apis/subresources.kubevirt.io", nil, "unknown api endpoint: /apis/subresources.kubevirt.io"},
		{"TRACE", base + "virtualmachineinstances/tiny/console", nil, "unknown http verb in request: TRACE"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			review, err := accessReview(u, c.method, c.path)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: c.want, User: "alice", UID: "u-1",
				Groups: []string{"devs", "system:authenticated"}, Extra: map[string]authorizationv1.ExtraValue{"scopes": {"a"}}}
			if diff := cmp.Diff(want, review.Spec); diff != "" {
				t.Errorf("review (-want +got):\n%s", diff)
			}
		})
	}
}

// The paths anyone may read are virt-api's noAuthEndpoints.
func TestNoAuthPaths(t *testing.T) {
	for _, p := range []string{"/", "/apis", "/healthz", "/openapi/v2", "/openapi/v3",
		"/apis/subresources.kubevirt.io/v1", "/apis/subresources.kubevirt.io/v1/version", "/apis/subresources.kubevirt.io/v1/healthz",
		"/apis/subresources.kubevirt.io/v1alpha3", "/apis/subresources.kubevirt.io/v1alpha3/version", "/openapi/v3/apis/subresources.kubevirt.io/v1"} {
		if !noAuthPaths[p] {
			t.Errorf("%s needs authentication, virt-api lets anyone read it", p)
		}
	}
	for _, p := range []string{"/apis/subresources.kubevirt.io", "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/x/console", "/version"} {
		if noAuthPaths[p] {
			t.Errorf("anyone may read %s, virt-api authenticates it", p)
		}
	}
}
