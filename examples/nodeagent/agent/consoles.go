package agent

import (
	"encoding/json"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// consolesHandler serves the stream ports of the node's running VMIs as
// JSON: GET /consoles lists every VMIStreams entry (by namespace and
// name); GET /consoles/NAMESPACE/NAME is one VMI's entry, or 404 with
// {"error": ...} while it has none (not running on this node). With the
// ports off (streams nil) both answer 404 saying how to turn them on.
type consolesHandler struct {
	streams *streamServers
}

func (h consolesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{"only GET"})
		return
	}
	if h.streams == nil {
		writeJSON(w, http.StatusNotFound, errorBody{"the stream ports are off: start the agent with -stream-address 127.0.0.1 (Config.StreamAddress)"})
		return
	}
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/consoles"), "/")
	if rest == "" {
		writeJSON(w, http.StatusOK, h.streams.list())
		return
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		writeJSON(w, http.StatusNotFound, errorBody{"not a VMI: want /consoles or /consoles/NAMESPACE/NAME"})
		return
	}
	entry, ok := h.streams.get(types.NamespacedName{Namespace: ns, Name: name})
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody{"VMI " + ns + "/" + name + " does not run on this node (or has not started yet)"})
		return
	}
	writeJSON(w, http.StatusOK, entry)
}

// errorBody is the JSON of a refused request.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON answers with status and v as indented JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
