package agent

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestConsolesHandler: the /consoles listing and its per-VMI entries, and
// the answers to what is not one. (The ports behind the entries are
// served and reached in the end-to-end test TestE2EConsoleVNC.)
func TestConsolesHandler(t *testing.T) {
	streams := newStreamServers("127.0.0.1", nil, nil, slog.New(slog.DiscardHandler))
	tiny := VMIStreams{Namespace: "default", Name: "tiny", UID: "u1", Console: "127.0.0.1:40001", VNC: "127.0.0.1:40002", VNCWebSocket: "127.0.0.1:40003"}
	headless := VMIStreams{Namespace: "default", Name: "headless", UID: "u2", ConsoleError: "no console", VNCError: "no vnc"}
	other := VMIStreams{Namespace: "apps", Name: "web", UID: "u3", Console: "127.0.0.1:40004"}
	for _, e := range []VMIStreams{tiny, headless, other} {
		streams.vmis[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = &vmiServers{entry: e}
	}
	cases := []struct {
		name, method, path string
		off                bool
		status             int
		want               any    // decoded body, for 200
		err                string // part of the error, otherwise
	}{
		{name: "list", path: "/consoles", status: 200, want: []VMIStreams{other, headless, tiny}},
		{name: "list slash", path: "/consoles/", status: 200, want: []VMIStreams{other, headless, tiny}},
		{name: "entry", path: "/consoles/default/tiny", status: 200, want: tiny},
		{name: "entry without ports", path: "/consoles/default/headless", status: 200, want: headless},
		{name: "not here", path: "/consoles/default/gone", status: 404, err: "VMI default/gone does not run on this node"},
		{name: "namespace only", path: "/consoles/default", status: 404, err: "want /consoles or /consoles/NAMESPACE/NAME"},
		{name: "too deep", path: "/consoles/default/tiny/vnc", status: 404, err: "want /consoles or /consoles/NAMESPACE/NAME"},
		{name: "POST", method: http.MethodPost, path: "/consoles", status: 405, err: "only GET"},
		{name: "off", path: "/consoles", off: true, status: 404, err: "-stream-address 127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := consolesHandler{streams: streams}
			if c.off {
				h.streams = nil
			}
			method := c.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, c.path, nil))
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d\n%s", rec.Code, c.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if c.want == nil {
				var body errorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !strings.Contains(body.Error, c.err) {
					t.Errorf("body %s (%v), want an error holding %q", rec.Body, err, c.err)
				}
				return
			}
			var got any
			var err error
			switch c.want.(type) {
			case VMIStreams:
				var e VMIStreams
				err, got = json.Unmarshal(rec.Body.Bytes(), &e), e
			default:
				var l []VMIStreams
				err, got = json.Unmarshal(rec.Body.Bytes(), &l), l
			}
			if err != nil {
				t.Fatalf("decode %s: %v", rec.Body, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}
