package subresources

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The paths anyone may read, served through a mux the server is
// registered on (as a program serves it), and the paths that need the
// aggregation layer's certificate refused without it.
func TestRegisterDiscovery(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	mux := http.NewServeMux()
	s.Register(mux)
	get := func(path string) (int, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}

	code, body := get("/apis/subresources.kubevirt.io/v1alpha3")
	var list metav1.APIResourceList
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil {
		t.Fatalf("resource list: %d %v\n%s", code, err, body)
	}
	if list.Kind != "APIResourceList" || list.APIVersion != "v1" || list.GroupVersion != "subresources.kubevirt.io/v1alpha3" || len(list.APIResources) != 31 {
		t.Errorf("resource list %s %s of %s with %d resources, want virt-api's 31 of subresources.kubevirt.io/v1alpha3", list.Kind, list.APIVersion, list.GroupVersion, len(list.APIResources))
	}
	for _, r := range list.APIResources {
		if !r.Namespaced || r.Kind != "" || r.Verbs != nil {
			t.Errorf("resource %+v, want virt-api's: a namespaced name only", r)
		}
	}

	code, body = get("/apis")
	var groups metav1.APIGroupList
	if err := json.Unmarshal([]byte(body), &groups); code != http.StatusOK || err != nil || len(groups.Groups) != 1 {
		t.Fatalf("/apis: %d %v\n%s", code, err, body)
	}
	g := groups.Groups[0]
	if g.Name != Group || g.PreferredVersion.GroupVersion != "subresources.kubevirt.io/v1" || len(g.Versions) != 2 || g.Versions[1].Version != "v1alpha3" {
		t.Errorf("group %+v, want subresources.kubevirt.io, v1 preferred, then v1alpha3", g)
	}

	code, body = get("/")
	want := `"paths": [
  "/apis",
  "/apis/subresources.kubevirt.io",
  "/apis/subresources.kubevirt.io/v1",
  "/apis/subresources.kubevirt.io",
  "/apis/subresources.kubevirt.io/v1alpha3"
 ]`
	if code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("/: %d\n%s\nwant\n%s", code, body, want)
	}

	code, body = get("/apis/subresources.kubevirt.io/v1/version")
	if code != http.StatusOK || !strings.Contains(body, `"gitVersion": "v1.8.0+vmi2libvirt"`) {
		t.Errorf("version: %d\n%s", code, body)
	}

	// virt-api authenticates the group's own path, and every VMI's.
	for _, p := range []string{"/apis/subresources.kubevirt.io", "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/tiny/console",
		"/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm/start"} {
		if code, body := get(p); code != http.StatusUnauthorized || body != "request is not authenticated" {
			t.Errorf("%s without a certificate: %d %q, want 401", p, code, body)
		}
	}
}
