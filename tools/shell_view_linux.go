package tools

// This file is the live shell's filesystem view: a mount namespace whose root holds only the
// project copy and the shell's HOME (read-write), the system's programs and libraries
// (read-only), a private /tmp, a minimal /dev and a /proc of the command's own PID namespace
// (its processes, no kernel setting).
// Go has no hook between fork and exec, so the lab starts its own executable (/proc/self/exe,
// the test binary in tests) as a tiny init: the init() below recognises it, builds the view
// inside the new namespaces, drops every capability and execs /bin/sh, which is then the PID
// namespace's first process as before.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The marks of the shell's init: its argv[0], and an environment variable (removed before the
// shell runs) so that no other start of the lab is taken for it.
const (
	shellInitArg0 = "lab-shell-init"
	shellInitEnv  = "LAB_SHELL_INIT"
)

// shellInitReport is the init's file descriptor 3: a pipe to the lab, on which it writes why it
// could not build the view. It is closed on the shell's exec: a pipe that ends empty means the
// shell runs.
const shellInitReport = 3

// The sizes of the view's in-memory filesystems, in bytes: the private /tmp (what a command may
// keep there: 256 MiB), the root (only the folders the view's mounts need) and /dev.
const (
	ShellTmpBytes = 256 << 20
	viewRootBytes = 1 << 20
	viewDevBytes  = 64 << 10
)

// viewSpec is what the init needs to build the view and start the command: Root is an empty
// folder of the host the view's root is mounted on; the host folders ProjectDir and HomeDir are
// bound read-write at the paths Project and Home (the shown ones: [Shell]); Dir is where the
// command starts (in Project or Home, as shown).
// Unprivileged (a lab running as root) has the init become the namespace's root, the host's
// [viewHostID], before the exec.
type viewSpec struct {
	Root, Project, Home, ProjectDir, HomeDir, Dir, Command string
	Unprivileged                                           bool
}

// viewHostID is the host uid and gid a root lab's command runs as: 65534, the overflow uid and
// gid of Linux (nobody, nogroup), which owns nothing of the host's. A lab run by another user
// runs the command as that user.
const viewHostID = 65534

func init() {
	if len(os.Args) != 2 || os.Args[0] != shellInitArg0 || os.Getenv(shellInitEnv) != "1" {
		return
	}
	// The capabilities are dropped on this thread, the one that execs the shell.
	runtime.LockOSThread()
	report := os.NewFile(shellInitReport, "report")
	err := shellInit(os.Args[1])
	fmt.Fprint(report, err)
	os.Exit(125)
}

// shellInit builds the view, for a root lab becomes the namespace's root (the host's
// [viewHostID]), drops every capability, joins a session keyring of its own, closes every
// descriptor but stdin, stdout and stderr on the exec, and execs the shell; it returns only with
// what went wrong.
func shellInit(arg string) error {
	var sp viewSpec
	if err := json.Unmarshal([]byte(arg), &sp); err != nil {
		return fmt.Errorf("shell init: %w", err)
	}
	syscall.CloseOnExec(shellInitReport)
	if err := buildView(sp); err != nil {
		return fmt.Errorf("filesystem view: %w", err)
	}
	if sp.Unprivileged {
		// From the namespace's viewHostID (the host's root: what the view's mounts needed) to
		// its root, the host's viewHostID, with no supplementary group (root's would stay). The
		// parent-death signal, which a change of user clears, is set again.
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(0, 0, 0); err != nil {
			return fmt.Errorf("setresgid: %w", err)
		}
		if err := syscall.Setresuid(0, 0, 0); err != nil {
			return fmt.Errorf("setresuid: %w", err)
		}
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
			return fmt.Errorf("parent-death signal: %w", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	// A new anonymous session keyring (keyctl(2) KEYCTL_JOIN_SESSION_KEYRING with no name): the
	// lab's session keyring, and the keys it holds, stay the lab's. A kernel without keys has
	// none to leak.
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 && e != unix.ENOSYS {
		return fmt.Errorf("new session keyring: %w", e)
	}
	// Every descriptor from 3 up is closed on the exec (the report pipe among them), those the
	// lab inherited without close-on-exec (a redirection, a jobserver's, a supervisor's) too:
	// one of a host folder would reach outside the view through /proc/self/fd.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		// Before close_range(2) (Linux 5.11): each one /proc/self/fd lists.
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return fmt.Errorf("close the inherited descriptors: %w", err)
		}
		for _, e := range fds {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 3 {
				syscall.CloseOnExec(fd)
			}
		}
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, shellInitEnv+"=") })
	err := syscall.Exec(shellPath, []string{shellPath, "-c", sp.Command}, env)
	return fmt.Errorf("exec %s: %w", shellPath, err)
}

// viewSystemDirs are the host's folders the view holds read-only (with the /lib* folders the
// host has): what a command needs to run the system's programs.
var viewSystemDirs = []string{"/usr", "/bin", "/sbin", "/etc"}

// viewDevices are the devices the view's /dev holds (those the host has), bound from the host's.
// No tty: the command has no terminal (it runs in a session of its own).
var viewDevices = []string{"null", "zero", "full", "random", "urandom"}

// buildView mounts the view on sp.Root and makes it the root (pivot_root(2)), the old root
// detached: nothing else of the host is reachable. Every mount is private to the namespace
// (none propagates to the host), and dies with it.
func buildView(sp viewSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	nr := sp.Root
	if err := unix.Mount("tmpfs", nr, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0755,size=%d", viewRootBytes)); err != nil {
		return fmt.Errorf("mount the root: %w", err)
	}
	libs, _ := filepath.Glob("/lib*")
	for _, d := range append(slices.Clone(viewSystemDirs), libs...) {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		t := filepath.Join(nr, d)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0: // /bin → usr/bin, as the host has it
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, t); err != nil {
				return err
			}
		case fi.IsDir():
			if err := os.Mkdir(t, 0o755); err != nil {
				return err
			}
			if err := bindReadOnly(d, t); err != nil {
				return err
			}
		}
	}
	if err := viewDev(filepath.Join(nr, "dev")); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	proc := filepath.Join(nr, "proc")
	if err := os.Mkdir(proc, 0o555); err != nil {
		return err
	}
	if err := viewProc(proc); err != nil {
		return fmt.Errorf("mount /proc of the PID namespace: %w", err)
	}
	tmp := filepath.Join(nr, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", ShellTmpBytes)); err != nil {
		return fmt.Errorf("mount /tmp: %w", err)
	}
	// The project and HOME last, so that one under /tmp is bound over the private /tmp: each
	// host folder at its shown path, which the command then sees (pwd, error messages, find).
	for _, b := range [][2]string{{sp.ProjectDir, sp.Project}, {sp.HomeDir, sp.Home}} {
		src, d := b[0], b[1]
		if d == "" || !filepath.IsAbs(d) || src == "" || !filepath.IsAbs(src) {
			return fmt.Errorf("%q at %q: want absolute paths", src, d)
		}
		t := filepath.Join(nr, d)
		if err := os.MkdirAll(t, 0o755); err != nil {
			return fmt.Errorf("bind %s: %w (a folder under one the view holds read-only cannot be bound)", d, err)
		}
		if err := unix.Mount(src, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s at %s: %w", src, d, err)
		}
	}
	// No new file in the root itself.
	if err := unix.Mount("", nr, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("make the root read-only: %w", err)
	}
	old, err := unix.Open("/", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(old)
	if err := unix.Chdir(nr); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	// The old root is stacked under the new one: detach it.
	if err := unix.Fchdir(old); err != nil {
		return err
	}
	if err := unix.Mount("", ".", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("old root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	return unix.Chdir(sp.Dir)
}

// viewProcHidden are the kernel's settings in a full /proc, made read-only in the view where the
// kernel cannot mount a /proc of processes only: sysctls (whose files check their owner, not a
// capability: a root lab's command could write them), the SysRq trigger, interrupt routing, the
// bus and filesystem settings.
var viewProcHidden = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}

// viewProc mounts the view's /proc at proc, of the command's PID namespace: with subset=pid
// (Linux 5.8) it holds only the processes' folders (and self, thread-self), no kernel setting;
// else a full /proc with each of [viewProcHidden] bound read-only over itself.
func viewProc(proc string) error {
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	err := unix.Mount("proc", proc, "proc", flags, "subset=pid")
	if err == nil || !errors.Is(err, unix.EINVAL) {
		return err
	}
	if err := unix.Mount("proc", proc, "proc", flags, ""); err != nil {
		return err
	}
	for _, n := range viewProcHidden {
		p := filepath.Join(proc, n)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := bindReadOnly(p, p); err != nil {
			return err
		}
	}
	return nil
}

// viewDev mounts the view's /dev at dev: a small tmpfs holding the host's null, zero, full,
// random and urandom (each bound from the host's node: a user namespace may not make
// devices), the links fd, stdin, stdout and stderr to /proc/self/fd, then made read-only.
func viewDev(dev string) error {
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, fmt.Sprintf("mode=0755,size=%d", viewDevBytes)); err != nil {
		return err
	}
	for _, n := range viewDevices {
		src := "/dev/" + n
		if fi, err := os.Stat(src); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			continue
		}
		t := filepath.Join(dev, n)
		if err := os.WriteFile(t, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount(src, t, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
}

// bindReadOnly binds the host's folder src, and every mount below it, at dst, read-only:
// mount_setattr(2) makes the whole tree read-only at once (Linux 5.12); before it, the top mount
// is remounted read-only keeping the flags the user namespace locks (nosuid, nodev, noexec and
// the atime ones, read with statfs(2): a remount that clears a locked flag is refused), and the
// mounts below it stay as the host has them.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	err := unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("make %s read-only: %w", src, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", src, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", src, err)
	}
	return nil
}

// dropCapabilities leaves the calling thread (the one that execs the shell) no capability, now
// or after exec, whatever the user it runs as: the ambient and bounding sets emptied, then the
// effective, permitted and inheritable ones, and no_new_privs set (a setuid program gains
// nothing). So the command cannot undo the view: no remount, no unmount, no new mount.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient: %w", err)
	}
	for c := uintptr(0); c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		} else if err != nil {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// viewCommand returns the command that runs command in dir in the view of sh (see
// [Shell.Run]): the lab's own executable started as the init, in new user, mount, network, PID,
// IPC, UTS and cgroup namespaces (for a root lab, the command then runs as the host's
// [viewHostID], which the project and HOME are given to), with the pipe the init reports on
// (read it once the command ended; close it) and done, which removes the host folder the view's
// root was mounted on.
func viewCommand(ctx context.Context, sh Shell, dir, command string) (cmd *exec.Cmd, report *os.File, done func(), err error) {
	root, err := os.MkdirTemp("", "lab-shell-root-")
	if err != nil {
		return nil, nil, nil, err
	}
	done = func() { os.Remove(root) }
	attr, err := isolation()
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	// The init keeps, across its exec, only the capabilities it needs to build the view (and,
	// for a root lab, to become the namespace's root); it drops them before the shell's exec.
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	root0 := os.Geteuid() == 0
	hostProject, hostHome := sh.hostDirs()
	if root0 {
		// A root lab's command is not the host's root: the namespace's root is the host's
		// viewHostID, and the host's root is the namespace's viewHostID (its files show as
		// nobody's, as unmapped ones would), the init's user until it execs the shell. The
		// project and HOME become viewHostID's, so that the command may change the lab's files
		// there; the lab, root, reads and writes them still.
		for _, d := range []string{hostProject, hostHome} {
			if err := chownTree(d, viewHostID); err != nil {
				done()
				return nil, nil, nil, err
			}
		}
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: viewHostID, Size: 1}, {ContainerID: viewHostID, HostID: 0, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: viewHostID, Size: 1}, {ContainerID: viewHostID, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = true // for the init to drop root's groups
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SETUID, unix.CAP_SETGID)
	}
	spec, err := json.Marshal(viewSpec{Root: root, Project: sh.Project, Home: sh.Home, ProjectDir: hostProject, HomeDir: hostHome, Dir: dir, Command: command, Unprivileged: root0})
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	attr.Cloneflags |= syscall.CLONE_NEWNS
	cmd = exec.CommandContext(ctx, "/proc/self/exe", string(spec))
	cmd.Args[0] = shellInitArg0
	cmd.Env = append(ShellEnv(sh.Home), shellInitEnv+"=1")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = attr
	return cmd, r, done, nil
}

// chownTree gives dir and everything in it (symbolic links themselves, not their targets) to the
// host uid and gid id, leaving what is id's already.
func chownTree(dir string, id int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == id && int(st.Gid) == id {
			return nil
		}
		if err := os.Lchown(p, id, id); err != nil {
			return fmt.Errorf("give the shell %s: %w", p, err)
		}
		return nil
	})
}
