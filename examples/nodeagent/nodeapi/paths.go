package nodeapi

import (
	"net/http"
	"net/url"
)

// The operations of the API, each the last segment of its path, as
// virt-handler names them.
const (
	// Console is the VMI's serial console: GET, a WebSocket (subprotocol
	// plain.kubevirt.io) whose binary messages carry the console's raw
	// bytes. A new connection takes the console over from an earlier one.
	Console = "console"
	// VNC is the VMI's VNC display: GET, a WebSocket of RFB bytes. A new
	// connection closes the VMI's earlier one, unless its query says
	// preserveSession=true (PreserveSessionParam): then it is refused with
	// 503 while the earlier one lasts.
	VNC = "vnc"
	// Pause, Unpause and SoftReboot are PUT, answered 202 Accepted once
	// done.
	Pause      = "pause"
	Unpause    = "unpause"
	SoftReboot = "softreboot"
	// GuestOSInfo, UserList and FilesystemList are GET, answered with the
	// JSON of KubeVirt's VirtualMachineInstanceGuestAgentInfo,
	// VirtualMachineInstanceGuestOSUserList and
	// VirtualMachineInstanceFileSystemList.
	GuestOSInfo    = "guestosinfo"
	UserList       = "userlist"
	FilesystemList = "filesystemlist"
)

// PreserveSessionParam is the query parameter of VNC that keeps an
// earlier connection (virt-handler's).
const PreserveSessionParam = "preserveSession"

// Methods are the HTTP method of each operation.
var Methods = map[string]string{
	Console:        http.MethodGet,
	VNC:            http.MethodGet,
	Pause:          http.MethodPut,
	Unpause:        http.MethodPut,
	SoftReboot:     http.MethodPut,
	GuestOSInfo:    http.MethodGet,
	UserList:       http.MethodGet,
	FilesystemList: http.MethodGet,
}

// Path is the path of operation op on the VMI namespace/name:
// /v1/namespaces/NAMESPACE/virtualmachineinstances/NAME/OP, virt-handler's.
func Path(namespace, name, op string) string {
	return "/v1/namespaces/" + url.PathEscape(namespace) + "/virtualmachineinstances/" + url.PathEscape(name) + "/" + op
}

// Pattern is the http.ServeMux pattern of operation op, with the wildcards
// {namespace} and {name}.
func Pattern(op string) string {
	return Methods[op] + " /v1/namespaces/{namespace}/virtualmachineinstances/{name}/" + op
}
