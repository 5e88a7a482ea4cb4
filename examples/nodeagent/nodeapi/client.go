package nodeapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Subprotocol is the WebSocket subprotocol of Console and VNC, KubeVirt's.
const Subprotocol = "plain.kubevirt.io"

// requestTimeout bounds a Put or Get, as virt-api's client of virt-handler
// does.
const requestTimeout = 10 * time.Second

// Client calls agents' APIs, as the control plane: with its client
// certificate, verifying each agent's. It is safe for concurrent use.
type Client struct {
	http *http.Client // Put and Get, with requestTimeout
	ws   *http.Client // WebSocket handshakes, no timeout of their own
}

// NewClient makes a client with the certificate folder dir (ClientTLS).
func NewClient(dir string) (*Client, error) {
	cfg, err := ClientTLS(dir)
	if err != nil {
		return nil, err
	}
	return newClient(cfg), nil
}

func newClient(cfg *tls.Config) *Client {
	transport := func() *http.Transport {
		return &http.Transport{TLSClientConfig: cfg.Clone(), TLSHandshakeTimeout: requestTimeout, IdleConnTimeout: time.Minute}
	}
	return &Client{
		http: &http.Client{Transport: transport(), Timeout: requestTimeout},
		ws:   &http.Client{Transport: transport()},
	}
}

// StatusError is an agent's answer other than success: its status code and
// what its body says.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("unexpected return code %d (%s), message: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Put runs operation op (Pause, Unpause, SoftReboot) on the VMI
// namespace/name at the agent of addr.
func (c *Client) Put(ctx context.Context, addr, namespace, name, op string) error {
	_, err := c.do(ctx, http.MethodPut, addr, namespace, name, op)
	return err
}

// Get runs operation op (GuestOSInfo, UserList, FilesystemList) and
// decodes its JSON answer into v.
func (c *Client) Get(ctx context.Context, addr, namespace, name, op string, v any) error {
	body, err := c.do(ctx, http.MethodGet, addr, namespace, name, op)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("nodeapi: %s of %s/%s at %s: %w", op, namespace, name, addr, err)
	}
	return nil
}

func (c *Client) do(ctx context.Context, method, addr, namespace, name, op string) ([]byte, error) {
	u := url.URL{Scheme: "https", Host: addr, Path: Path(namespace, name, op)}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(body))}
	}
	return body, nil
}

// Dial opens the stream of operation op (Console, VNC) of the VMI
// namespace/name at the agent of addr, with query (VNC's
// PreserveSessionParam), as a connection whose bytes are the stream's. It
// closes when ctx ends. A refusal is a *StatusError.
func (c *Client) Dial(ctx context.Context, addr, namespace, name, op string, query url.Values) (net.Conn, error) {
	u := url.URL{Scheme: "wss", Host: addr, Path: Path(namespace, name, op), RawQuery: query.Encode()}
	dialCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dialCtx, u.String(), &websocket.DialOptions{
		HTTPClient:   c.ws,
		Subprotocols: []string{Subprotocol},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return nil, &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(body))}
		}
		return nil, fmt.Errorf("nodeapi: %s of %s/%s at %s: %w", op, namespace, name, addr, err)
	}
	return websocket.NetConn(ctx, conn, websocket.MessageBinary), nil
}
