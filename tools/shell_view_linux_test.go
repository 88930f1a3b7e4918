package tools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/tools/txtar"

	"lab/tools"
)

// viewShell makes a run's layout as `lab run` makes it, results/<run>/ beside the sandbox's
// project and the shell's home, and the Shell of that project.
func viewShell(t *testing.T) (sh tools.Shell, results string) {
	t.Helper()
	base := t.TempDir()
	results = filepath.Join(base, "results", "run_id=t")
	sh = tools.Shell{Project: filepath.Join(base, "sandbox", "demo"), Home: filepath.Join(base, "sandbox", ".home"), Limit: 20 * time.Second}
	for _, d := range []string{results, sh.Project, sh.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sh.Project, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sh, results
}

func runView(t *testing.T, sh tools.Shell, command string) tools.ShellResult {
	t.Helper()
	res, err := sh.Run(context.Background(), sh.Project, command)
	if errors.Is(err, tools.ErrNoIsolation) {
		if refused := namespacesRefused(); refused != nil {
			t.Skipf("this machine refuses the shell's namespaces: %v (%v)", refused, err)
		}
		t.Fatalf("the machine allows the shell's namespaces, yet the view failed: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Isolation != tools.IsolationView {
		t.Fatalf("isolation %q, want %q", res.Isolation, tools.IsolationView)
	}
	return res
}

// namespacesRefused starts /bin/true in the namespaces the view is built in (user, mount,
// network, PID, IPC, UTS, cgroup), without the view: the error is the machine's refusal of them, nil
// where it allows them (a view that fails there is the lab's fault, not the machine's).
func namespacesRefused() error {
	cmd := exec.Command("/bin/true")
	uid, gid := os.Geteuid(), os.Getegid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	return cmd.Run()
}

// The shell writes in the project and its home, and nowhere else: not the run's results folder,
// not the lab's temporary folder or its working folder, not the system's folders, not the root.
// Its /tmp is its own.
func TestShellWritesOnlyTheProject(t *testing.T) {
	sh, results := viewShell(t)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("leak-%d", time.Now().UnixNano())
	outside := []string{
		filepath.Join(results, name),
		filepath.Join(filepath.Dir(sh.Project), name), // the sandbox folder, beside the project
		filepath.Join(os.TempDir(), name),
		filepath.Join(cwd, name),
		filepath.Join("/etc", name),
		filepath.Join("/usr", name),
		"/" + name,
	}
	t.Cleanup(func() {
		for _, p := range outside {
			os.Remove(p)
		}
	})
	var cmd strings.Builder
	for _, p := range outside {
		fmt.Fprintf(&cmd, "echo x > %q 2>/dev/null && echo wrote %q; ", p, p)
	}
	// Nor can it undo the view: no remount, no unmount, not in a user namespace of its own, where
	// it has every capability (made by perl, in its own process: an exec there would drop them;
	// unshare -r cannot map the view's root in it, a map only CAP_SETFCAP may write).
	fmt.Fprintf(&cmd, "mount -o remount,bind,rw /etc 2>/dev/null; umount -l /etc 2>/dev/null; echo x > %q 2>/dev/null; ", filepath.Join("/etc", name+"-mount"))
	fmt.Fprintf(&cmd, `perl -e 'my ($none, $etc) = ("", "/etc"); syscall(%d, %d) == 0 or die "unshare: $!\n"; print "in a user namespace of its own\n"; syscall(%d, $none, $etc, $none, %d, 0) == 0 and print "remounted /etc\n"; syscall(%d, $etc, %d) == 0 and print "unmounted /etc\n"; open(F, ">", "%s") and print "wrote in /etc\n"'; `,
		unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS, unix.SYS_MOUNT, unix.MS_REMOUNT|unix.MS_BIND, unix.SYS_UMOUNT2, unix.MNT_DETACH, filepath.Join("/etc", name+"-userns"))
	outside = append(outside, filepath.Join("/etc", name+"-mount"), filepath.Join("/etc", name+"-userns"))
	cmd.WriteString("echo made > made.txt; echo kept > ~/kept.txt; echo t > /tmp/" + name + " && cat /tmp/" + name)
	// A write under the machine's /tmp lands in the view's private /tmp: only the host can tell.
	res := runView(t, sh, cmd.String())
	for _, p := range outside {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: the shell wrote outside the project", p)
		}
	}
	if !strings.Contains(res.Output, "in a user namespace of its own\n") || strings.Contains(res.Output, " /etc\n") {
		t.Errorf("output %q; want the nested user namespace made, and nothing undone in it", res.Output)
	}
	if !strings.HasSuffix(res.Output, "\nt\n") {
		t.Errorf("output %q; want the private /tmp's file read back", res.Output)
	}
	// The lab sees what the command wrote in the project and at home.
	for p, want := range map[string]string{filepath.Join(sh.Project, "made.txt"): "made\n", filepath.Join(sh.Home, "kept.txt"): "kept\n"} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
}

// The shell sees no host process: its /proc is its PID namespace's, so the lab's own command
// line (and any other's) cannot be read.
func TestShellCannotReadTheHostsProcesses(t *testing.T) {
	sh, _ := viewShell(t)
	self, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	arg0 := strings.Split(string(self), "\x00")[0]
	res := runView(t, sh, fmt.Sprintf("cat /proc/%d/cmdline; echo; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done", os.Getpid()))
	if strings.Contains(res.Output, arg0) || strings.Contains(res.Output, filepath.Base(arg0)) {
		t.Errorf("the shell read the lab's command line %q:\n%s", arg0, res.Output)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "/bin/sh -c") && !strings.HasPrefix(line, "tr ") && !strings.Contains(line, "No such file") {
			t.Errorf("the shell sees a process that is not its own: %q\n%s", line, res.Output)
		}
	}
}

// The shell sees the project's files and runs the system's common tools; the sandbox's other
// folders, the results folder and the host's home are absent.
func TestShellSeesTheProjectAndRunsCommonTools(t *testing.T) {
	sh, results := viewShell(t)
	res := runView(t, sh, `cat main.go; ls; echo hi | sed s/hi/ho/ | grep ho; ls /usr/bin/sed >/dev/null && echo sed; head -c 4 /dev/urandom | wc -c; ls `+results+` 2>&1 | grep -c "No such file"`)
	want := "package main\nmain.go\nho\nsed\n4\n1\n"
	if res.Output != want || res.ExitCode != 0 {
		t.Errorf("output %q, exit %d; want %q, 0", res.Output, res.ExitCode, want)
	}
}

// Where the machine refuses the sandbox, Unsandboxed runs the command all the same, weaker, and
// says how; without it the command is refused. (A view the machine cannot build is played by a
// home that does not exist, which the view cannot bind.)
func TestShellUnsandboxedRunsWhereTheViewIsRefused(t *testing.T) {
	sh, _ := viewShell(t)
	runView(t, sh, "true") // skips where the machine refuses the namespaces
	sh.Home = filepath.Join(sh.Home, "missing")
	if res, err := sh.Run(context.Background(), sh.Project, "echo ran"); !errors.Is(err, tools.ErrNoIsolation) || res.Output != "" {
		t.Errorf("Run = %+v, %v; want it refused, nothing run", res, err)
	}
	sh.Unsandboxed = true
	res, err := sh.Run(context.Background(), sh.Project, "echo ran")
	if err != nil || res.Output != "ran\n" || res.Isolation != tools.IsolationNamespaces || len(res.Refused) != 1 || !strings.Contains(res.Refused[0], sh.Home) {
		t.Errorf("Run = %+v, %v; want it run with namespaces only, the refusal named", res, err)
	}
}

// The shell has no terminal: it runs in a session of its own, so the lab's controlling terminal
// is not its own, and the view holds no /dev/tty, so it cannot type into the user's terminal
// (TIOCSTI) or read from it.
func TestShellHasNoTerminal(t *testing.T) {
	sh, _ := viewShell(t)
	res := runView(t, sh, `ls /dev; echo "session $(cut -d' ' -f6 /proc/$$/stat) of $$"; (exec 3<>/dev/tty) 2>/dev/null && echo "opened /dev/tty"`)
	if strings.Contains(res.Output, "tty") {
		t.Errorf("the view's command has a terminal:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "session 1 of 1\n") {
		t.Errorf("the view's command is not the leader of a session of its own (the session of the lab's is 0 in its PID namespace):\n%s", res.Output)
	}
}

// A command inherits no file descriptor beyond stdin, stdout and stderr: one the lab was given
// open without close-on-exec (a shell redirection, make's jobserver, a supervisor's), here the
// results folder, would reach the host outside the view through /proc/self/fd.
func TestShellInheritsNoFileDescriptor(t *testing.T) {
	sh, results := viewShell(t)
	fd, err := syscall.Open(results, syscall.O_RDONLY|syscall.O_DIRECTORY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	res := runView(t, sh, fmt.Sprintf("ls /proc/self/fd/; (echo leaked > /proc/self/fd/%d/escaped) 2>/dev/null && echo wrote", fd))
	if b, err := os.ReadFile(filepath.Join(results, "escaped")); err == nil {
		t.Errorf("the command wrote %q into the results folder through the inherited fd %d", strings.TrimSpace(string(b)), fd)
	}
	// ls's own descriptors: 0, 1, 2 and the folder it reads (3).
	if got := strings.Fields(res.Output); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Errorf("the command's open descriptors: %q; want 0 1 2 (and ls's 3)", res.Output)
	}
}

// The command has IPC, UTS and cgroup namespaces of its own, besides user, mount, network and PID.
func TestShellHasNamespacesOfItsOwn(t *testing.T) {
	sh, _ := viewShell(t)
	names := []string{"ipc", "uts", "cgroup", "net", "pid", "mnt", "user"}
	res := runView(t, sh, `for n in `+strings.Join(names, " ")+`; do echo "$n $(readlink /proc/self/ns/$n)"; done`)
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if len(lines) != len(names) {
		t.Fatalf("output %q; want a line for each of %v", res.Output, names)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		host, err := os.Readlink("/proc/self/ns/" + f[0])
		if err != nil {
			t.Skip(err)
		}
		if len(f) != 2 || host == f[1] {
			t.Errorf("the view's command shares the host's %s namespace (%s): %q", f[0], host, line)
		}
	}
}

// The command cannot read the host's System V shared memory (its IPC namespace is its own).
func TestShellCannotReadTheHostsSharedMemory(t *testing.T) {
	id, err := unix.SysvShmGet(0x1ab5eed, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Skip(err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmDetach(b)
	copy(b, "host-secret-in-shm")
	sh, _ := viewShell(t)
	res := runView(t, sh, fmt.Sprintf(`perl -e 'my $v; shmread(%d, $v, 0, 18) or die "shmread: $!\n"; print "$v\n"'`, id))
	if strings.Contains(res.Output, "host-secret-in-shm") {
		t.Errorf("the view's command read the host's shared memory segment %d: %q", id, strings.TrimSpace(res.Output))
	}
}

// The command cannot read the lab's session keyring (a user namespace does not give a process a
// keyring of its own): a key the lab's session holds (a Kerberos or AFS token, a credential a tool
// stashed there) stays the lab's.
func TestShellCannotReadTheLabsKeyring(t *testing.T) {
	runtime.LockOSThread() // the keyring is the thread's, and the command is forked from it
	defer runtime.UnlockOSThread()
	if _, err := unix.KeyctlJoinSessionKeyring("lab-shell-test"); err != nil {
		t.Skip(err)
	}
	id, err := unix.AddKey("user", "lab-shell-test-token", []byte("host-secret-in-keyring"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Skip(err)
	}
	sh, _ := viewShell(t)
	// keyctl(KEYCTL_READ = 11, id, buffer, length)
	res := runView(t, sh, fmt.Sprintf(`perl -e 'my $b = "\0" x 64; my $n = syscall(%d, 11, %d, $b, 64); die "keyctl read: $!\n" if $n < 0; print substr($b, 0, $n), "\n"'`, unix.SYS_KEYCTL, id))
	if strings.Contains(res.Output, "host-secret-in-keyring") {
		t.Errorf("the view's command read key %d of the lab's session keyring: %q", id, strings.TrimSpace(res.Output))
	}
}

// The command writes no kernel setting of the host, whoever runs the lab (root included): the
// view's /proc has no /proc/sys and no /proc/sysrq-trigger to open, or has them read-only, and the
// hostname is its own UTS namespace's. Nothing is written: each file is opened for appending and
// closed.
func TestShellWritesNoKernelSetting(t *testing.T) {
	sh, _ := viewShell(t)
	res := runView(t, sh, `for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/hostname /proc/sys/vm/drop_caches /proc/sysrq-trigger /proc/sys/kernel/modprobe /proc/irq/default_smp_affinity; do if (exec 3>>"$f") 2>/dev/null; then echo "open for writing: $f"; fi; done; hostname lab-shell-test 2>/dev/null && echo "set the hostname"`)
	if res.Output != "" {
		t.Errorf("the view's command may write kernel settings:\n%s", res.Output)
	}
}

// A lab running as root runs the command as an unprivileged host user: what it writes in the
// project belongs to that user, not to root, and the lab still reads it; the command may change
// the lab's own files in the project and at home.
func TestShellOfARootLabIsNoHostRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only a lab running as root maps the command to another user")
	}
	sh, _ := viewShell(t)
	if err := os.WriteFile(filepath.Join(sh.Home, ".profile"), []byte("# lab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runView(t, sh, `id -u; echo more >> main.go && echo more >> ~/.profile && mkdir -p sub && echo made > sub/made.txt && echo ok`)
	if !strings.HasSuffix(res.Output, "ok\n") {
		t.Fatalf("the command could not change the project:\n%s", res.Output)
	}
	made := filepath.Join(sh.Project, "sub", "made.txt")
	fi, err := os.Stat(made)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid == 0 {
		t.Errorf("%s belongs to host uid %d: the command ran as the host's root", made, uid)
	}
	if b, err := os.ReadFile(made); err != nil || string(b) != "made\n" {
		t.Errorf("the lab reads %s = %q, %v; want %q", made, b, err, "made\n")
	}
}

// The command cannot type into the lab's terminal (TIOCSTI, which Linux still allows where
// dev.tty.legacy_tiocsti is 1): the test reruns itself under script(1), which gives it a
// terminal, and the command tries to type into /dev/tty and into its stdin, stdout and stderr.
func TestShellCannotTypeIntoTheLabsTerminal(t *testing.T) {
	const mark = "LAB_SHELL_TTY_TEST"
	if os.Getenv(mark) == "" {
		script, err := exec.LookPath("script")
		if err != nil {
			t.Skip("no script(1) to give the test a terminal")
		}
		out, err := exec.Command(script, "-qec", fmt.Sprintf("%s=1 %q -test.run '^%s$' -test.v", mark, os.Args[0], t.Name()), "/dev/null").CombinedOutput()
		if strings.Contains(string(out), "typed into") || !strings.Contains(string(out), "--- PASS") {
			t.Errorf("under a terminal: %v\n%s", err, out)
		}
		return
	}
	if _, err := os.Stat("/dev/tty"); err != nil {
		t.Skipf("no terminal: %v", err)
	}
	sh, _ := viewShell(t)
	// TIOCSTI is 0x5412; nothing is typed but a comment, and no newline.
	res := runView(t, sh, `for f in /dev/tty /dev/stdin /dev/stdout /dev/stderr; do perl -e 'open(T, "+<", $ARGV[0]) or exit; for (split //, "#lab-shell-typed") { ioctl(T, 0x5412, $_) or exit } print "typed into $ARGV[0]\n"' "$f"; done`)
	if strings.Contains(res.Output, "typed into") {
		t.Errorf("the view's command typed into the lab's terminal: %s", res.Output)
	}
}

// A workspace in a private folder is shown at its shown path: the view mounts the real folder
// there, so pwd, $HOME, error messages and find name the shown path, never the real one, and
// what a command writes is in the real folder, where the file tools read it. A shell without
// the view cannot show it there, and refuses to run.
func TestShellShowsAPrivateSandboxAtItsShownPath(t *testing.T) {
	real := filepath.Join(t.TempDir(), strings.Repeat("long-real-folder-", 4))
	sb := tools.Sandbox{Dir: real, Shown: "/tmp/lab-sandbox/shown-test"}
	ws, err := tools.NewSandboxWorkspace([]txtar.File{{Name: "main.go", Data: []byte("package main\n")}}, sb, "demo")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	if ws.Root != "/tmp/lab-sandbox/shown-test/demo" {
		t.Fatalf("Root %s; want the shown path", ws.Root)
	}
	sh, err := ws.Shell()
	if err != nil {
		t.Fatal(err)
	}
	sh.Limit = 20 * time.Second
	res := runView(t, sh, `pwd; echo $HOME; cat nothing.txt; find "$PWD" -name '*.go'; echo new > made.txt`)
	want := "/tmp/lab-sandbox/shown-test/demo\n/tmp/lab-sandbox/shown-test/.home\ncat: nothing.txt: No such file or directory\n/tmp/lab-sandbox/shown-test/demo/main.go\n"
	if res.Output != want {
		t.Errorf("output %q; want %q", res.Output, want)
	}
	if strings.Contains(res.Output, real) {
		t.Errorf("output names the real folder %s", real)
	}
	if b, err := os.ReadFile(filepath.Join(real, "demo", "made.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("made.txt in the real folder: %q, %v; want the command's file", b, err)
	}
	// Without the view the command would name the real folder: refused, nothing run.
	sh.Unsandboxed = true
	plain := sh
	plain.Home = filepath.Join(sh.Home, "missing") // the view cannot bind it: the next levels run
	plain.HomeDir = filepath.Join(sh.HomeDir, "missing")
	if res, err := plain.Run(context.Background(), plain.Project, "echo ran"); err == nil || res.Output != "" {
		t.Errorf("Run without the view = %+v, %v; want it refused, nothing run", res, err)
	}
}
