package subresources

import (
	"net/http"
	"runtime"
	"runtime/debug"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
)

// Group is the API group of the subresources, KubeVirt's.
const Group = v1.SubresourceGroupName

// Versions are the group's versions, the preferred first, as KubeVirt
// serves them (v1.SubresourceGroupVersions): the paths of every version
// are the same.
var Versions = func() []string {
	var out []string
	for _, gv := range v1.SubresourceGroupVersions {
		out = append(out, gv.Version)
	}
	return out
}()

// resourceNames are the resources of the group's resource list, virt-api's
// list, in its order: Kubernetes' discovery asks each aggregated API
// server for one. The list names what virt-api serves; this server serves
// the lifecycle, console, VNC, guest agent and volume ones (routes), and answers
// the others 404.
var resourceNames = []string{
	"expand-vm-spec",
	"virtualmachineinstances/vnc",
	"virtualmachineinstances/vnc/screenshot",
	"virtualmachineinstances/console",
	"virtualmachineinstances/portforward",
	"virtualmachineinstances/backup",
	"virtualmachineinstances/redefine-checkpoint",
	"virtualmachineinstances/pause",
	"virtualmachineinstances/unpause",
	"virtualmachineinstances/freeze",
	"virtualmachineinstances/unfreeze",
	"virtualmachineinstances/reset",
	"virtualmachineinstances/softreboot",
	"virtualmachines/start",
	"virtualmachines/stop",
	"virtualmachines/restart",
	"virtualmachines/migrate",
	"virtualmachines/expand-spec",
	"virtualmachines/objectgraph",
	"virtualmachines/evacuate/cancel",
	"virtualmachineinstances/guestosinfo",
	"virtualmachineinstances/userlist",
	"virtualmachineinstances/filesystemlist",
	"virtualmachineinstances/addvolume",
	"virtualmachineinstances/removevolume",
	"virtualmachineinstances/objectgraph",
	"virtualmachineinstances/sev/fetchcertchain",
	"virtualmachineinstances/sev/querylaunchmeasurement",
	"virtualmachineinstances/sev/setupsession",
	"virtualmachineinstances/sev/injectlaunchsecret",
	"virtualmachineinstances/evacuate/cancel",
}

// resourceList is GET /apis/subresources.kubevirt.io/VERSION.
func resourceList(version string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: Group + "/" + version,
	}
	for _, name := range resourceNames {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Namespaced: true})
	}
	return list
}

// apiGroup is GET /apis/subresources.kubevirt.io, and the group of GET
// /apis. (virt-api names the group "subresource.kubevirt.io" there, a
// slip: here it is the group's name.)
func apiGroup() metav1.APIGroup {
	g := metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup"},
		Name:     Group,
		PreferredVersion: metav1.GroupVersionForDiscovery{
			GroupVersion: Group + "/" + Versions[0], Version: Versions[0],
		},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0"}},
	}
	for _, v := range Versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + v, Version: v})
	}
	return g
}

// rootPaths is GET /: the group's paths, as virt-api lists them (without
// /openapi/v2, which this server does not serve).
func rootPaths() metav1.RootPaths {
	paths := []string{"/apis"}
	for _, v := range Versions {
		paths = append(paths, "/apis/"+Group, "/apis/"+Group+"/"+v)
	}
	return metav1.RootPaths{Paths: paths}
}

// KubeVirtVersion is the KubeVirt release whose virt-api this server
// answers as: its paths, bodies, status codes and checks.
const KubeVirtVersion = "v1.8.0"

// versionInfo is GET .../version, in the fields of KubeVirt's
// version.Info (virtctl version prints it). Its gitVersion is
// KubeVirtVersion marked +vmi2libvirt: virtctl compares its own major and
// minor version with it after a failed command, and warns when they
// differ (or the version is not semver). The other fields are this
// program's Go build information: the VCS revision and state when the
// build recorded them, the Go version and platform.
type versionInfo struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

func buildVersion() versionInfo {
	v := versionInfo{GitVersion: KubeVirtVersion + "+vmi2libvirt", GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.GitCommit = s.Value
		case "vcs.modified":
			v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		case "vcs.time":
			v.BuildDate = s.Value
		}
	}
	return v
}

// healthz is GET /healthz and .../healthz: 200 with the API server's
// version when it answers, 500 with the error otherwise, in virt-api's
// shape ({"apiserver": {"connectivity": "ok", "version": ...}}).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	v, err := s.discovery.ServerVersion()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"apiserver": map[string]any{"connectivity": "failed", "error": err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiserver": map[string]any{"connectivity": "ok", "version": v}})
}
