package compose_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBackupRestore runs the README's "Backup and restore" commands, read
// from the README itself so that they cannot drift: a snapshot of a class,
// a write after it, then the restore. The class is back as it was at the
// snapshot (the later write gone), its revision is past every
// resourceVersion handed out before (--bump-revision), and a watch from the
// lost write's resourceVersion gets 410 Gone rather than silently resuming
// in a history that reuses it (--mark-compacted).
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	save, restore := readmeBackupCommands(t)
	p := newProject(t, "backup")
	p.up(t)
	admin := p.adminKubeconfig(t)
	cs := clientset(t, admin)
	create := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	create("before-the-snapshot")
	dir := t.TempDir()
	p.shell(t, dir, save)
	if fi, err := os.Stat(filepath.Join(dir, "kubelab-snapshot.db")); err != nil || fi.Size() == 0 {
		t.Fatalf("the README's backup left no snapshot: %v", err)
	}
	lost := create("after-the-snapshot")

	p.shell(t, dir, restore)
	p.upAgain(t)
	cs = clientset(t, p.adminKubeconfig(t))
	if _, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "before-the-snapshot", metav1.GetOptions{}); err != nil {
		t.Fatalf("what was written before the snapshot: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), lost.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("what was written after the snapshot: %v, want NotFound", err)
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	old, _ := strconv.ParseInt(lost.ResourceVersion, 10, 64)
	if now <= old+1_000_000_000-1 {
		t.Fatalf("after the restore the resourceVersion is %d; the lost write had %d, and --bump-revision should put it past that by 1e9", now, old)
	}

	wantGone(t, cs, lost.ResourceVersion, "the lost write's")
}

// readmeBackupCommands are the two sh blocks of the README's "Backup and
// restore": the backup's, then the restore's.
func readmeBackupCommands(t *testing.T) (save, restore string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "### Backup and restore")
	if start < 0 {
		t.Fatal(`the README has no "### Backup and restore"`)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n#"); end >= 0 {
		section = section[:end]
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) != 2 {
		t.Fatalf("the README's backup and restore has %d sh blocks, want 2 (backup, restore)", len(blocks))
	}
	return blocks[0][1], blocks[1][1]
}

// shell runs commands of the README with bash in dir, as an instructor
// does in the directory of the compose file, with two differences that
// keep the test from touching an instructor's class on the same machine:
// the project's name (COMPOSE_PROJECT_NAME, which overrides the file's
// "kubelab"; the volumes named kubelab_* are renamed to match) and its
// .env.
func (p *project) shell(t *testing.T, dir, commands string) {
	t.Helper()
	commands = strings.ReplaceAll(commands, "kubelab_etcd-", p.name+"_etcd-")
	env := []string{
		"COMPOSE_PROJECT_NAME=" + p.name,
		"COMPOSE_FILE=" + strings.Join(append(p.composeFiles(), p.override), string(os.PathListSeparator)),
		"COMPOSE_ENV_FILES=" + p.envFile,
	}
	if out, err := runIn(context.Background(), dir, env, "bash", "-euo", "pipefail", "-c", commands); err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
}
