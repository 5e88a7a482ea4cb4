package nodeapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The identities of the two ends.
const (
	// ServerName is the DNS name every agent's serving certificate holds,
	// and the name the control plane verifies, whatever address it dials.
	ServerName = "vmi2libvirt-nodeagent"
	// ClientName is the common name of the control plane's client
	// certificate, the only client an agent accepts.
	ClientName = "vmi2libvirt-controlplane"
)

// The files of a certificate folder, named as in a Kubernetes TLS secret
// (a folder can be one mounted as a volume).
const (
	CertFile = "tls.crt" // the certificate, PEM (with its intermediates)
	KeyFile  = "tls.key" // its private key, PEM
	CAFile   = "ca.crt"  // the authority that signs the other end's certificate, PEM
)

// ServerTLS is the TLS configuration of an agent serving the API: the
// certificate of dir, and only clients whose certificate the authority of
// dir signed for client authentication, with the common name ClientName.
// HTTP/1.1 only (WebSockets).
func ServerTLS(dir string) (*tls.Config, error) {
	cert, pool, err := load(dir)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		NextProtos:   []string{"http/1.1"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("nodeapi: no client certificate")
			}
			if cn := cs.PeerCertificates[0].Subject.CommonName; cn != ClientName {
				return fmt.Errorf("nodeapi: client certificate of %q, want %q (the control plane's)", cn, ClientName)
			}
			return nil
		},
	}, nil
}

// ClientTLS is the TLS configuration of the control plane calling agents:
// the client certificate of dir, and agents whose certificate the
// authority of dir signed for ServerName.
func ClientTLS(dir string) (*tls.Config, error) {
	cert, pool, err := load(dir)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   ServerName,
		NextProtos:   []string{"http/1.1"},
	}, nil
}

// load reads the certificate, key and authority of dir.
func load(dir string) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("nodeapi: certificate of %s: %w", dir, err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("nodeapi: authority of %s: %w", dir, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return tls.Certificate{}, nil, fmt.Errorf("nodeapi: %s holds no PEM certificate", filepath.Join(dir, CAFile))
	}
	return cert, pool, nil
}
