package hostfiles

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// QEMUConf is where libvirt's QEMU driver names the user QEMU runs as.
var QEMUConf = "/etc/libvirt/qemu.conf"

// QEMUUser finds the user QEMU runs as from spec: "user[:group]", "" for
// the user and group set in QEMUConf, else "libvirt-qemu" (Debian) or
// "qemu" when such a user exists, "-" for none. It returns nil when
// ownership is to be left alone: "-", QEMU running as root, or a caller
// that is not root (it could not give files away).
func QEMUUser(spec string) (*hostplan.User, error) {
	if spec == "-" || os.Geteuid() != 0 {
		return nil, nil
	}
	explicit := spec != ""
	userName, groupName, _ := strings.Cut(spec, ":")
	if !explicit {
		userName, groupName = qemuConfUser()
	}
	var candidates []string
	if userName != "" {
		candidates = []string{userName}
	} else {
		candidates = []string{"libvirt-qemu", "qemu"}
	}
	for _, name := range candidates {
		u, err := lookupUser(name)
		if err != nil {
			if explicit || userName != "" {
				return nil, fmt.Errorf("QEMU's user %q: %w", name, err)
			}
			continue
		}
		if u.Uid == "0" {
			return nil, nil // QEMU runs as root: nothing to give
		}
		o := &hostplan.User{Name: u.Username}
		o.UID, _ = strconv.Atoi(u.Uid)
		o.GID, _ = strconv.Atoi(u.Gid)
		if groupName != "" {
			g, err := lookupGroup(groupName)
			if err != nil {
				return nil, fmt.Errorf("QEMU's group %q: %w", groupName, err)
			}
			o.GID, _ = strconv.Atoi(g.Gid)
		}
		o.Groups = []int{o.GID}
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil && !slices.Contains(o.Groups, n) {
					o.Groups = append(o.Groups, n)
				}
			}
		}
		return o, nil
	}
	return nil, nil
}

// lookupUser accepts a name, or "+N" for a numeric uid (qemu.conf syntax).
func lookupUser(s string) (*user.User, error) {
	if id, ok := strings.CutPrefix(s, "+"); ok {
		return user.LookupId(id)
	}
	return user.Lookup(s)
}

func lookupGroup(s string) (*user.Group, error) {
	if id, ok := strings.CutPrefix(s, "+"); ok {
		return user.LookupGroupId(id)
	}
	return user.LookupGroup(s)
}

// qemuConfUser reads the uncommented user and group settings of QEMUConf.
func qemuConfUser() (userName, groupName string) {
	f, err := os.Open(QEMUConf)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch strings.TrimSpace(key) {
		case "user":
			userName = val
		case "group":
			groupName = val
		}
	}
	return userName, groupName
}

// give makes path u's, so that QEMU can create its sockets in it. A nil u
// leaves it alone.
func give(u *hostplan.User, path string) error {
	if u == nil {
		return nil
	}
	if err := os.Chown(path, u.UID, u.GID); err != nil {
		return fmt.Errorf("give %s to QEMU's user %s: %w", path, u.Name, err)
	}
	return nil
}

// CanReach checks that u may walk down to dir: every folder on the way
// must let it search (x), by owner, group or others. A nil u can.
func CanReach(u *hostplan.User, dir string) error {
	if u == nil {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if !allows(u, *sys, 0o1) {
			return fmt.Errorf("QEMU's user %s cannot reach %s: folder %s has mode %#o (give others search permission, e.g. chmod o+x)", u.Name, dir, d, st.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// CanOpen tells whether u may open a file of stat st for reading and
// writing.
func CanOpen(u *hostplan.User, st syscall.Stat_t) bool {
	return allows(u, st, 0o6)
}

// allows tells whether u has the permission bits perm (of others' digit:
// 4 read, 2 write, 1 search) on a file of stat st, by owner, group or
// others.
func allows(u *hostplan.User, st syscall.Stat_t, perm uint32) bool {
	mode := st.Mode & 0o777
	switch {
	case int(st.Uid) == u.UID:
		return mode&(perm<<6) == perm<<6
	case slices.Contains(u.Groups, int(st.Gid)):
		return mode&(perm<<3) == perm<<3
	default:
		return mode&perm == perm
	}
}
