package hostfiles

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/iso"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// artifactVMI decodes and defaults a VMI for the artifact tests.
func artifactVMI(t *testing.T, yaml string) *v1.VirtualMachineInstance {
	t.Helper()
	vmi, err := api.Decode([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	api.Default(vmi, api.ClusterConfig{})
	return vmi
}

// oneDiskVMI is the VMI ns1/<name> with one virtio disk, "disk", on the
// volume whose source volume gives in YAML (such as "hostDisk: {path: /x}").
func oneDiskVMI(t *testing.T, name, volume string) *v1.VirtualMachineInstance {
	t.Helper()
	return artifactVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: `+name+`, namespace: ns1}
spec:
  domain:
    devices: {disks: [{name: disk, disk: {bus: virtio}}]}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - name: disk
    `+volume+`
`)
}

// ConfigSources are the config source folders of a test, and the user
// QEMU runs as, as the launcher's Config names them.
type ConfigSources struct {
	ConfigMaps, Secrets, ServiceAccounts map[string]string
	QEMUUser                             string
}

// prepareArtifacts is what the launcher does for a VMI's artifacts: it
// admits the VMI, reads its config sources, makes its plan for layout and
// applies it.
func prepareArtifacts(ctx context.Context, vmi *v1.VirtualMachineInstance, layout convert.HostLayout, sources ConfigSources) error {
	qemu, err := QEMUUser(sources.QEMUUser)
	if err != nil {
		return err
	}
	host := hostplan.Host{Owner: "test", Options: convert.Options{Layout: layout, DomainType: "qemu"}, QEMU: qemu}
	req, err := hostplan.Prepare(vmi, host)
	if err != nil {
		return err
	}
	var in hostplan.Inputs
	folders := Folders{hostplan.ConfigMap: sources.ConfigMaps, hostplan.Secret: sources.Secrets, hostplan.ServiceAccount: sources.ServiceAccounts}
	if in.Sources, err = ReadSources(req.Sources, folders); err != nil {
		return err
	}
	p, err := hostplan.Make(req, host, in)
	if err != nil {
		return err
	}
	_, err = Apply(ctx, p)
	return err
}

// removeArtifacts removes the VMI's state folder, as Delete does.
func removeArtifacts(vmi *v1.VirtualMachineInstance, layout convert.HostLayout) error {
	return RemoveStateFolder(layout.StateDir, layout.StateFolder(vmi))
}

// configDriveMetadata is ConfigDrive's openstack/latest/meta_data.json.
type configDriveMetadata struct {
	InstanceID    string            `json:"instance_id"`
	Hostname      string            `json:"hostname"`
	UUID          string            `json:"uuid"`
	PublicSSHKeys map[string]string `json:"public_keys"`
}

// testLayout is a layout in fresh folders. QEMU's user is left alone
// ("-"): t.TempDir folders are 0700, which QEMU could not walk.
func testLayout(t *testing.T) (convert.HostLayout, ConfigSources) {
	t.Helper()
	root := t.TempDir()
	return convert.HostLayout{StateDir: filepath.Join(root, "vmis"), ImageStore: filepath.Join(root, "images")},
		ConfigSources{QEMUUser: "-"}
}

func needQemuImg(t *testing.T) {
	t.Helper()
	hosttest.Tools(t, "qemu-img")
}

func readISO(t *testing.T, path string) (string, map[string][]byte) {
	t.Helper()
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	label, files, err := iso.Read(img)
	if err != nil {
		t.Fatal(err)
	}
	return label, files
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

type imgInfo struct {
	Format          string `json:"format"`
	VirtualSize     int64  `json:"virtual-size"`
	BackingFilename string `json:"backing-filename"`
	BackingFormat   string `json:"backing-filename-format"`
}

func qemuImgInfo(t *testing.T, path string) imgInfo {
	t.Helper()
	out, err := exec.Command("qemu-img", "info", "-U", "--output=json", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var info imgInfo
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	return info
}

const noCloudVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web.example, namespace: shop}
spec:
  domain:
    devices:
      disks:
      - {name: scratch, disk: {bus: virtio}}
      - {name: cloudinit, disk: {bus: virtio}}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - name: scratch
    emptyDisk: {capacity: 64Mi}
  - name: cloudinit
    cloudInitNoCloud:
      userData: |
        #cloud-config
        password: hunter2
      networkData: |
        version: 2
`

// TestNoCloudAndEmptyDisk checks the NoCloud ISO (label, files, meta-data
// as KubeVirt writes it, mode) and the empty disk (qcow2 of the capacity).
func TestNoCloudAndEmptyDisk(t *testing.T) {
	needQemuImg(t)
	layout, sources := testLayout(t)
	vmi := artifactVMI(t, noCloudVMI)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	state := layout.StateFolder(vmi)
	if m := mode(t, state); m != 0o700 {
		t.Errorf("state folder mode %#o, want 0700", m)
	}
	isoPath := filepath.Join(state, "cloud-init", "nocloud.iso")
	if m := mode(t, isoPath); m != 0o600 {
		t.Errorf("NoCloud ISO mode %#o, want 0600", m)
	}
	label, files := readISO(t, isoPath)
	if label != "cidata" {
		t.Errorf("label %q", label)
	}
	if got := string(files["user-data"]); got != "#cloud-config\npassword: hunter2\n" {
		t.Errorf("user-data %q", got)
	}
	if got := string(files["network-config"]); got != "version: 2\n" {
		t.Errorf("network-config %q", got)
	}
	var meta map[string]any
	if err := json.Unmarshal(files["meta-data"], &meta); err != nil {
		t.Fatalf("meta-data %q: %v", files["meta-data"], err)
	}
	// KubeVirt: instance-id is the firmware UUID, local-hostname the name up
	// to its first dot.
	if meta["instance-id"] != string(vmi.Spec.Domain.Firmware.UUID) || meta["instance-id"] == "" || meta["local-hostname"] != "web" {
		t.Errorf("meta-data %v (firmware uuid %q)", meta, vmi.Spec.Domain.Firmware.UUID)
	}
	disk := filepath.Join(state, "disks", "scratch.qcow2")
	if info := qemuImgInfo(t, disk); info.Format != "qcow2" || info.VirtualSize != 64<<20 {
		t.Errorf("empty disk %+v", info)
	}
	if m := mode(t, disk); m != 0o600 {
		t.Errorf("empty disk mode %#o", m)
	}
}

// TestPrepareIsIdempotent: a second call leaves disks and unchanged ISOs
// alone; a changed user-data rewrites the ISO only.
func TestPrepareIsIdempotent(t *testing.T) {
	needQemuImg(t)
	layout, sources := testLayout(t)
	vmi := artifactVMI(t, noCloudVMI)
	ctx := context.Background()
	if err := prepareArtifacts(ctx, vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	state := layout.StateFolder(vmi)
	disk := filepath.Join(state, "disks", "scratch.qcow2")
	isoPath := filepath.Join(state, "cloud-init", "nocloud.iso")
	// The guest wrote to its disk: a marker past the qcow2 header.
	f, err := os.OpenFile(disk, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("guest data")
	f.Close()
	inode := func(p string) uint64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	diskIno, isoIno := inode(disk), inode(isoPath)
	before, _ := os.ReadFile(disk)

	if err := prepareArtifacts(ctx, vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(disk)
	if inode(disk) != diskIno || string(after) != string(before) {
		t.Error("second call touched the disk")
	}
	if inode(isoPath) != isoIno {
		t.Error("second call rewrote an unchanged ISO")
	}

	vmi.Spec.Volumes[1].CloudInitNoCloud.UserData = "#cloud-config\npassword: changed\n"
	if err := prepareArtifacts(ctx, vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	if _, files := readISO(t, isoPath); string(files["user-data"]) != "#cloud-config\npassword: changed\n" {
		t.Errorf("user-data not rewritten: %q", files["user-data"])
	}
	if inode(disk) != diskIno {
		t.Error("changed user-data touched the disk")
	}
	leftovers, _ := filepath.Glob(filepath.Join(state, "*", ".tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestConfigDriveFromSecret reads user and network data from secret folders
// and the SSH keys of accessCredentials.
func TestConfigDriveFromSecret(t *testing.T) {
	layout, sources := testLayout(t)
	secret, keys := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(secret, "userData"), []byte("#!/bin/sh\necho secret\n"), 0o600)
	os.WriteFile(filepath.Join(secret, "networkdata"), []byte(`{"links":[]}`), 0o600)
	os.WriteFile(filepath.Join(keys, "a"), []byte("ssh-ed25519 AAAA one\n"), 0o600)
	os.WriteFile(filepath.Join(keys, "b"), []byte("ssh-ed25519 BBBB two\n"), 0o600)
	sources.Secrets = map[string]string{"ud": secret, "keys": keys}
	vmi := artifactVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: win, namespace: ns1}
spec:
  hostname: winhost
  accessCredentials:
  - sshPublicKey:
      source: {secret: {secretName: keys}}
      propagationMethod: {configDrive: {}}
  domain:
    devices: {disks: [{name: cd, disk: {bus: virtio}}]}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - name: cd
    cloudInitConfigDrive:
      secretRef: {name: ud}
      networkDataSecretRef: {name: ud}
`)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	label, files := readISO(t, filepath.Join(layout.StateFolder(vmi), "cloud-init", "configdrive.iso"))
	if label != "config-2" {
		t.Errorf("label %q", label)
	}
	if string(files["openstack/latest/user_data"]) != "#!/bin/sh\necho secret\n" || string(files["openstack/latest/network_data.json"]) != `{"links":[]}` {
		t.Errorf("files %q", files)
	}
	var meta configDriveMetadata
	if err := json.Unmarshal(files["openstack/latest/meta_data.json"], &meta); err != nil {
		t.Fatal(err)
	}
	want := configDriveMetadata{InstanceID: "win.ns1", Hostname: "winhost", UUID: string(vmi.Spec.Domain.Firmware.UUID),
		PublicSSHKeys: map[string]string{"0": "ssh-ed25519 AAAA one", "1": "ssh-ed25519 BBBB two"}}
	if meta.InstanceID != want.InstanceID || meta.Hostname != want.Hostname || meta.UUID != want.UUID || meta.UUID == "" ||
		meta.PublicSSHKeys["0"] != want.PublicSSHKeys["0"] || meta.PublicSSHKeys["1"] != want.PublicSSHKeys["1"] {
		t.Errorf("meta_data.json %+v, want %+v", meta, want)
	}
}

// TestCloudInitErrorsNameTheFieldAndHideUserData: user-data that is not
// base64 and missing secrets are refused with the volume's field path, and
// the error never holds the user-data itself; no state folder is left.
func TestCloudInitErrorsNameTheFieldAndHideUserData(t *testing.T) {
	layout, sources := testLayout(t)
	secretValue := "c2VjcmV0LXZhbHVl!!!" // not base64
	cases := []struct {
		volume string
		path   string
	}{
		{`cloudInitNoCloud: {userDataBase64: "` + secretValue + `"}`, "spec.volumes[0].cloudInitNoCloud.userDataBase64"},
		{`cloudInitNoCloud: {secretRef: {name: nope}}`, "spec.volumes[0].cloudInitNoCloud.secretRef.name"},
		{`cloudInitConfigDrive: {networkDataSecretRef: {name: nope}}`, "spec.volumes[0].cloudInitConfigDrive.networkDataSecretRef.name"},
	}
	for _, c := range cases {
		vmi := oneDiskVMI(t, "bad", c.volume)
		err := prepareArtifacts(context.Background(), vmi, layout, sources)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != c.path {
			t.Errorf("%s: error %v, want a field error on %s", c.volume, err, c.path)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("error shows the user data: %v", err)
		}
		if _, err := os.Stat(layout.StateFolder(vmi)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: state folder left behind after the error", c.path)
		}
	}
}

// TestContainerDiskOverlay: an overlay over the image store's disk, with
// the backing format probed; a missing image is an error naming the field
// and nothing is left behind.
func TestContainerDiskOverlay(t *testing.T) {
	needQemuImg(t)
	layout, sources := testLayout(t)
	const image = "quay.io/example/disk:1.0"
	vmiYAML := `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: cd, namespace: ns1}
spec:
  domain:
    devices:
      disks:
      - {name: ci, disk: {bus: virtio}}
      - {name: root, disk: {bus: virtio}}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - name: ci
    cloudInitNoCloud: {userData: "#cloud-config\n"}
  - name: root
    containerDisk: {image: "` + image + `"}
`
	vmi := artifactVMI(t, vmiYAML)
	err := prepareArtifacts(context.Background(), vmi, layout, sources)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.volumes[1].containerDisk.image" || !strings.Contains(err.Error(), "image store") {
		t.Fatalf("missing image: %v", err)
	}
	if _, err := os.Stat(layout.StateFolder(vmi)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("state folder (with the cloud-init ISO made before the error) left behind")
	}

	folder := layout.ImageFolder(image)
	os.MkdirAll(folder, 0o755)
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", filepath.Join(folder, "disk.img"), "32M").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	info := qemuImgInfo(t, filepath.Join(layout.StateFolder(vmi), "disks", "root.qcow2"))
	if info.Format != "qcow2" || info.BackingFilename != filepath.Join(folder, "disk.img") || info.BackingFormat != "qcow2" || info.VirtualSize != 32<<20 {
		t.Errorf("overlay %+v", info)
	}
}

// TestContainerDiskImageWithBackingFileIsRefused: an image must not lead
// QEMU outside the image store.
func TestContainerDiskImageWithBackingFileIsRefused(t *testing.T) {
	needQemuImg(t)
	layout, sources := testLayout(t)
	outside := filepath.Join(t.TempDir(), "outside.raw")
	os.WriteFile(outside, make([]byte, 1<<20), 0o600)
	folder := layout.ImageFolder("evil")
	os.MkdirAll(folder, 0o755)
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", outside, filepath.Join(folder, "disk.img")).CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}
	vmi := oneDiskVMI(t, "evil", `containerDisk: {image: evil}`)
	err := prepareArtifacts(context.Background(), vmi, layout, sources)
	if err == nil || !strings.Contains(err.Error(), "backing file of its own") {
		t.Fatalf("got %v", err)
	}
}

// TestHostDiskOrCreate: a sparse file of the capacity, left alone later.
func TestHostDiskOrCreate(t *testing.T) {
	layout, sources := testLayout(t)
	dir := t.TempDir()
	layout.HostDiskAllow = []string{dir}
	vmi := oneDiskVMI(t, "hd", `hostDisk: {path: `+dir+`/data.img, type: DiskOrCreate, capacity: 10Mi}`)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "data.img")
	st, err := os.Stat(p)
	if err != nil || st.Size() != 10<<20 || st.Mode().Perm() != 0o600 {
		t.Fatalf("hostDisk %v %v", st, err)
	}
	if blocks := st.Sys().(*syscall.Stat_t).Blocks; blocks > 64 {
		t.Errorf("hostDisk is not sparse: %d blocks", blocks)
	}
	os.WriteFile(p, []byte("guest data"), 0o600)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "guest data" {
		t.Error("second call touched the hostDisk")
	}
	// Delete removes the state folder, never the hostDisk.
	if err := removeArtifacts(vmi, layout); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("removeArtifacts removed the hostDisk: %v", err)
	}
}

// TestConfigISOs: configMap from a kubelet-style folder (..data links),
// optional missing secret, downwardAPI labels; a link out of the folder is
// refused.
func TestConfigISOs(t *testing.T) {
	layout, sources := testLayout(t)
	cm := t.TempDir()
	ts := filepath.Join(cm, "..2026_11_29")
	os.Mkdir(ts, 0o755)
	os.WriteFile(filepath.Join(ts, "app.conf"), []byte("a=1\n"), 0o644)
	os.Symlink("..2026_11_29", filepath.Join(cm, "..data"))
	os.Symlink("..data/app.conf", filepath.Join(cm, "app.conf"))
	sources.ConfigMaps = map[string]string{"app": cm}
	vmi := artifactVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: cfg
  namespace: ns1
  labels: {tier: web, app: shop}
spec:
  domain:
    devices:
      disks:
      - {name: app, disk: {bus: virtio}}
      - {name: creds, disk: {bus: virtio}}
      - {name: info, disk: {bus: virtio}}
    resources: {requests: {memory: 128Mi}}
  volumes:
  - {name: app, configMap: {name: app, volumeLabel: appcfg}}
  - {name: creds, secret: {secretName: creds, optional: true}}
  - name: info
    downwardAPI:
      fields:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: ns, fieldRef: {fieldPath: metadata.namespace}}
      - {path: tier, fieldRef: {fieldPath: "metadata.labels['tier']"}}
`)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(layout.StateFolder(vmi), "config")
	label, files := readISO(t, filepath.Join(config, "app.iso"))
	if label != "appcfg" || len(files) != 1 || string(files["app.conf"]) != "a=1\n" {
		t.Errorf("configMap ISO %q %q", label, files)
	}
	if label, files := readISO(t, filepath.Join(config, "creds.iso")); label != "cfgdata" || len(files) != 0 {
		t.Errorf("optional secret ISO %q %q", label, files)
	}
	_, files = readISO(t, filepath.Join(config, "info.iso"))
	if string(files["labels"]) != "app=\"shop\"\ntier=\"web\"" || string(files["ns"]) != "ns1" || string(files["tier"]) != "web" {
		t.Errorf("downwardAPI ISO %q", files)
	}

	os.Symlink("/etc/passwd", filepath.Join(cm, "escape"))
	err := prepareArtifacts(context.Background(), vmi, layout, sources)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.volumes[0].configMap.name" || !strings.Contains(err.Error(), "outside") {
		t.Errorf("escaping link: %v", err)
	}
}

// TestKernelBootFilesMustBeInTheStore: a kernelBoot container's kernel and
// initrd must be files of the image store; each missing one is refused with
// its field path, and the VMI prepares once both are there.
func TestKernelBootFilesMustBeInTheStore(t *testing.T) {
	layout, sources := testLayout(t)
	vmi := artifactVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: kb, namespace: ns1}
spec:
  domain:
    firmware:
      kernelBoot:
        kernelArgs: console=ttyS0
        container: {image: "local/kernel:1", kernelPath: /boot/vmlinuz, initrdPath: /boot/initrd.img}
    resources: {requests: {memory: 128Mi}}
`)
	err := prepareArtifacts(context.Background(), vmi, layout, sources)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.domain.firmware.kernelBoot.container.image" {
		t.Fatalf("missing image: %v", err)
	}
	boot := filepath.Join(layout.ImageFolder("local/kernel:1"), "boot")
	os.MkdirAll(boot, 0o755)
	os.WriteFile(filepath.Join(boot, "vmlinuz"), []byte("kernel"), 0o644)
	err = prepareArtifacts(context.Background(), vmi, layout, sources)
	if !errors.As(err, &fe) || fe.Field != "spec.domain.firmware.kernelBoot.container.initrdPath" {
		t.Fatalf("missing initrd: %v", err)
	}
	os.WriteFile(filepath.Join(boot, "initrd.img"), []byte("initrd"), 0o644)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
}

// TestStateFolderBelongsToQEMU: as root, the state folder is given to
// QEMU's user (it creates its VNC and serial sockets there), and a
// StateDir QEMU cannot walk into is refused with a clear error.
func TestStateFolderBelongsToQEMU(t *testing.T) {
	hosttest.Root(t)
	u, err := user.Lookup("libvirt-qemu")
	if err != nil {
		hosttest.Missing(t, "needs the user libvirt-qemu (package libvirt-daemon-system)")
	}
	root := hosttest.Dir(t, os.TempDir(), "artifacts-owner-")
	layout := convert.HostLayout{StateDir: filepath.Join(root, "vmis"), ImageStore: filepath.Join(root, "images")}
	vmi := artifactVMI(t, noCloudVMI)
	vmi.Spec.Volumes = vmi.Spec.Volumes[1:]
	vmi.Spec.Domain.Devices.Disks = vmi.Spec.Domain.Devices.Disks[1:]
	if err := prepareArtifacts(context.Background(), vmi, layout, ConfigSources{QEMUUser: "libvirt-qemu"}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(layout.StateFolder(vmi))
	if uid := strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Uid)); uid != u.Uid || st.Mode().Perm() != 0o700 {
		t.Errorf("state folder owner %s mode %#o, want %s and 0700", uid, st.Mode().Perm(), u.Uid)
	}
	if m := mode(t, layout.StateDir); m != 0o711 {
		t.Errorf("created StateDir mode %#o, want 0711", m)
	}

	closed := convert.HostLayout{StateDir: filepath.Join(t.TempDir(), "vmis")}
	err = prepareArtifacts(context.Background(), vmi, closed, ConfigSources{QEMUUser: "libvirt-qemu"})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("StateDir under a 0700 folder: %v", err)
	}
}

func TestRemoveArtifactsRefusesBadLayouts(t *testing.T) {
	vmi := artifactVMI(t, noCloudVMI)
	for _, dir := range []string{"", "relative/dir", "/"} {
		if err := removeArtifacts(vmi, convert.HostLayout{StateDir: dir}); err == nil {
			t.Errorf("StateDir %q: no error", dir)
		}
	}
	layout, _ := testLayout(t)
	if err := removeArtifacts(vmi, layout); err != nil {
		t.Errorf("removing what does not exist: %v", err)
	}
}

// TestUserDataBase64 decodes userDataBase64.
func TestUserDataBase64(t *testing.T) {
	layout, sources := testLayout(t)
	vmi := oneDiskVMI(t, "b64", `cloudInitNoCloud: {userDataBase64: "`+base64.StdEncoding.EncodeToString([]byte("#cloud-config\nx: 1\n"))+`"}`)
	if err := prepareArtifacts(context.Background(), vmi, layout, sources); err != nil {
		t.Fatal(err)
	}
	_, files := readISO(t, filepath.Join(layout.StateFolder(vmi), "cloud-init", "nocloud.iso"))
	if string(files["user-data"]) != "#cloud-config\nx: 1\n" || files["network-config"] != nil {
		t.Errorf("files %q", files)
	}
}

// TestConcurrentPrepare: eight calls for the same VMI at once all succeed
// and leave one set of artifacts.
func TestConcurrentPrepare(t *testing.T) {
	needQemuImg(t)
	layout, sources := testLayout(t)
	vmi := artifactVMI(t, noCloudVMI)
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- prepareArtifacts(context.Background(), vmi.DeepCopy(), layout, sources) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	var names []string
	filepath.WalkDir(layout.StateFolder(vmi), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, layout.StateFolder(vmi)+"/"))
		}
		return nil
	})
	if strings.Join(names, " ") != "cloud-init/nocloud.iso disks/scratch.qcow2" {
		t.Errorf("files %q", names)
	}
}

// TestFullDiskLeavesNothingBehind: on a file system without room for the
// cloud-init ISO, the error is clear and the half-made state folder goes.
func TestFullDiskLeavesNothingBehind(t *testing.T) {
	needQemuImg(t)
	hosttest.Root(t)
	hosttest.Tools(t, "mount")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	layout := convert.HostLayout{StateDir: filepath.Join(dir, "vmis")}
	// More user data than inline user data may hold (KubeVirt allows 2 KiB
	// there): from a secret.
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "userdata"), []byte("#cloud-config\n# "+strings.Repeat("x", 1<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vmi := artifactVMI(t, noCloudVMI)
	vmi.Spec.Volumes[1].CloudInitNoCloud = &v1.CloudInitNoCloudSource{UserDataSecretRef: &k8sv1.LocalObjectReference{Name: "big"}}
	err := prepareArtifacts(context.Background(), vmi, layout, ConfigSources{QEMUUser: "-", Secrets: map[string]string{"big": secret}})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("got %v, want no space left", err)
	}
	if strings.Contains(err.Error(), "xxxx") {
		t.Error("error shows user data")
	}
	if _, err := os.Stat(layout.StateFolder(vmi)); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(layout.StateFolder(vmi))
		t.Errorf("state folder left behind: %v", entries)
	}
}
