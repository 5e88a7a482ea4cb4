package subresources

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
)

// Where the API server publishes how an aggregated API server
// authenticates it (kube-apiserver's --requestheader-* flags).
const (
	authConfigMapNamespace = "kube-system"
	authConfigMapName      = "extension-apiserver-authentication"
	authConfigMapCAKey     = "requestheader-client-ca-file"
)

// Authentication is virt-api's: a request is authenticated when it comes
// from the API server's aggregation layer — a client certificate that the
// request-header authority of the extension-apiserver-authentication
// ConfigMap signed, with a common name it allows — and its user, groups
// and extras are the request headers that ConfigMap names (X-Remote-User,
// X-Remote-Group, X-Remote-Extra-). k8s.io/apiserver does the work, with
// the controllers that follow the ConfigMap as generic API servers do; no
// other credential (bearer token, other client certificate) is accepted,
// as virt-api accepts none.

// requestHeaderAuth is the request-header authenticator and the
// controllers that keep it current.
type requestHeaderAuth struct {
	authenticator.Request
	ca      *dynamiccertificates.ConfigMapCAController
	headers *headerrequest.RequestHeaderAuthRequestController
}

// newRequestHeaderAuth makes the authenticator; it fails when the API
// server publishes no request-header authority (kube-apiserver runs
// without --requestheader-client-ca-file: there is no aggregation layer),
// as virt-api fails.
func newRequestHeaderAuth(ctx context.Context, cs kubernetes.Interface) (*requestHeaderAuth, error) {
	cm, err := cs.CoreV1().ConfigMaps(authConfigMapNamespace).Get(ctx, authConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("subresources: reading configmap %s/%s: %w", authConfigMapNamespace, authConfigMapName, err)
	}
	if cm.Data[authConfigMapCAKey] == "" {
		return nil, fmt.Errorf("subresources: %s not found in configmap %s/%s: start kube-apiserver with the aggregation layer's flags (--requestheader-client-ca-file...)",
			authConfigMapCAKey, authConfigMapNamespace, authConfigMapName)
	}
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("requestheader-client-ca", authConfigMapNamespace, authConfigMapName, authConfigMapCAKey, cs)
	if err != nil {
		return nil, err
	}
	// Until the controller's informer has synced (Start, Run), the
	// authority is the one just read: a mounted server's program may serve
	// before Start runs, and the controller's RunOnce reads only its
	// informer's cache, empty then, so a request would find no authority
	// and be refused with 401.
	initial, err := dynamiccertificates.NewStaticCAContent("requestheader-client-ca-initial", []byte(cm.Data[authConfigMapCAKey]))
	if err != nil {
		return nil, fmt.Errorf("subresources: %s of configmap %s/%s: %w", authConfigMapCAKey, authConfigMapNamespace, authConfigMapName, err)
	}
	verify := func() (x509.VerifyOptions, bool) {
		if len(ca.CurrentCABundleContent()) > 0 {
			return ca.VerifyOptions()
		}
		return initial.VerifyOptions()
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(authConfigMapName, authConfigMapNamespace, cs,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	if err := headers.RunOnce(ctx); err != nil {
		return nil, err
	}
	provider := func(f func() []string) headerrequest.StringSliceProvider {
		return headerrequest.StringSliceProviderFunc(f)
	}
	return &requestHeaderAuth{
		Request: headerrequest.NewDynamicVerifyOptionsSecure(verify, provider(headers.AllowedClientNames),
			provider(headers.UsernameHeaders), provider(headers.UIDHeaders), provider(headers.GroupHeaders), provider(headers.ExtraHeaderPrefixes)),
		ca:      ca,
		headers: headers,
	}, nil
}

// run follows the ConfigMap until ctx ends.
func (a *requestHeaderAuth) run(ctx context.Context) {
	go a.ca.Run(ctx, 1)
	go a.headers.Run(ctx, 1)
}

// noAuthPaths are the paths anyone may read: discovery, health and
// version, as virt-api's noAuthEndpoints list them (those of the profiler
// and guestfs included, which this server does not serve).
var noAuthPaths = func() map[string]bool {
	m := map[string]bool{"/": true, "/apis": true, "/healthz": true, "/openapi/v2": true, "/openapi/v3": true,
		"/start-profiler": true, "/stop-profiler": true, "/dump-profiler": true}
	for _, v := range Versions {
		base := "/apis/" + Group + "/" + v
		m["/openapi/v3"+base] = true
		for _, p := range []string{"", "/version", "/guestfs", "/healthz", "/start-cluster-profiler", "/stop-cluster-profiler", "/dump-cluster-profiler"} {
			m[base+p] = true
		}
	}
	return m
}()

// authorize wraps next with virt-api's authentication and authorization:
// every path but noAuthPaths needs an authenticated request (401 "request
// is not authenticated" otherwise) whose user a SubjectAccessReview allows
// (401 with the review's reason otherwise; 500 when it cannot be made).
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noAuthPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			writeText(w, http.StatusUnauthorized, "request is not authenticated")
			return
		}
		resp, ok, err := s.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			s.log.Warn("subresources: request not authenticated", "path", r.URL.Path, "err", err)
			writeText(w, http.StatusUnauthorized, "request is not authenticated")
			return
		}
		review, err := accessReview(resp.User, r.Method, r.URL.Path)
		if err != nil {
			writeText(w, http.StatusUnauthorized, err.Error())
			return
		}
		if err := s.kube.Create(r.Context(), review); err != nil {
			s.log.Error("subresources: internal error during auth request", "err", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if !review.Status.Allowed {
			writeText(w, http.StatusUnauthorized, review.Status.Reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// accessReview is the SubjectAccessReview of a request by u, as virt-api
// builds it from the request's path and method:
// /apis/GROUP/VERSION/namespaces/NS/RESOURCE/NAME/SUB... reviews verb
// (from the method) on RESOURCE/SUB... (virtualmachineinstances or
// virtualmachines) named NAME; /apis/GROUP/VERSION/namespaces/NS/expand-vm-spec
// reviews the verb on expand-vm-spec; any other path is refused.
func accessReview(u user.Info, method, path string) (*authorizationv1.SubjectAccessReview, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
	}}
	parts := strings.Split(path, "/")
	switch {
	case len(parts) >= 9:
		resource, name := parts[6], parts[7]
		sub := strings.Join(parts[8:], "/")
		if parts[8] == "portforward" {
			sub = parts[8] // the port and protocol are not subject to RBAC
		}
		if resource != "virtualmachineinstances" && resource != "virtualmachines" {
			return nil, fmt.Errorf("unknown resource type %s", resource)
		}
		verb, err := rbacVerb(method, name)
		if err != nil {
			return nil, err
		}
		review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: parts[5], Verb: verb, Group: parts[2], Version: parts[3], Resource: resource, Subresource: sub, Name: name,
		}
	case len(parts) == 7:
		if parts[6] != "expand-vm-spec" {
			return nil, fmt.Errorf("unknown resource type %s", parts[6])
		}
		verb, err := rbacVerb(method, "")
		if err != nil {
			return nil, err
		}
		review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: parts[5], Verb: verb, Group: parts[2], Version: parts[3], Resource: parts[6],
		}
	default:
		return nil, fmt.Errorf("unknown api endpoint: %s", path)
	}
	return review, nil
}

// rbacVerbs are the RBAC verbs of the HTTP methods, of a named object and
// of a collection, as Kubernetes maps them.
var rbacVerbs = map[string][2]string{
	http.MethodPost:   {"create", "create"},
	http.MethodGet:    {"get", "list"},
	http.MethodHead:   {"get", "list"},
	http.MethodPut:    {"update", "update"},
	http.MethodPatch:  {"patch", "patch"},
	http.MethodDelete: {"delete", "deletecollection"},
}

// rbacVerb is the RBAC verb of a request with method on the object name
// (empty: a collection).
func rbacVerb(method, name string) (string, error) {
	v, ok := rbacVerbs[strings.ToUpper(method)]
	if !ok {
		return "", fmt.Errorf("unknown http verb in request: %v", method)
	}
	if name == "" {
		return v[1], nil
	}
	return v[0], nil
}
