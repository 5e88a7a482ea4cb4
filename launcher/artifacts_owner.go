package launcher

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// qemuConf is where libvirt's QEMU driver names the user QEMU runs as.
var qemuConf = "/etc/libvirt/qemu.conf"

// qemuOwner is the user and groups QEMU runs as. A nil *qemuOwner means
// "leave ownership alone": QEMU runs as the caller (or as root).
type qemuOwner struct {
	name   string
	uid    int
	gid    int
	groups map[int]bool // gid and supplementary groups
}

// resolveQEMUOwner finds QEMU's user from spec ("user[:group]", "" for
// qemu.conf or the distribution's default, "-" for none).
func resolveQEMUOwner(spec string) (*qemuOwner, error) {
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
		o := &qemuOwner{name: u.Username, groups: map[int]bool{}}
		o.uid, _ = strconv.Atoi(u.Uid)
		o.gid, _ = strconv.Atoi(u.Gid)
		if groupName != "" {
			g, err := lookupGroup(groupName)
			if err != nil {
				return nil, fmt.Errorf("QEMU's group %q: %w", groupName, err)
			}
			o.gid, _ = strconv.Atoi(g.Gid)
		}
		o.groups[o.gid] = true
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil {
					o.groups[n] = true
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

// qemuConfUser reads the uncommented user and group settings of qemu.conf.
func qemuConfUser() (userName, groupName string) {
	f, err := os.Open(qemuConf)
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

// give makes dir QEMU's, so that QEMU can create its sockets in it.
func (o *qemuOwner) give(dir string) error {
	if o == nil {
		return nil
	}
	if err := os.Chown(dir, o.uid, o.gid); err != nil {
		return fmt.Errorf("give %s to QEMU's user %s: %w", dir, o.name, err)
	}
	return nil
}

// canReach checks that QEMU's user may walk down to dir: every folder on
// the way must let it search (x), by owner, group or others.
func (o *qemuOwner) canReach(dir string) error {
	if o == nil {
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
		mode := st.Mode().Perm()
		var can bool
		switch {
		case int(sys.Uid) == o.uid:
			can = mode&0o100 != 0
		case o.groups[int(sys.Gid)]:
			can = mode&0o010 != 0
		default:
			can = mode&0o001 != 0
		}
		if !can {
			return fmt.Errorf("QEMU's user %s cannot reach %s: folder %s has mode %#o (give others search permission, e.g. chmod o+x)", o.name, dir, d, mode)
		}
		if d == "/" {
			return nil
		}
	}
}
