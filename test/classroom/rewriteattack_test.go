package classroom_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/internal/clitest"
)

// Finding: one student rewrote a ConfigMap of about
// 1 MiB with twelve `kubectl replace` loops in parallel. After about 440
// rewrites etcd's database had grown from 0.45 to 262 MB and kubelab from
// 0.78 to 1.8 GB (374 MB of it the embedded etcd's raft log), on the way
// to etcd's space quota. The attack again, as the student ran it: the
// real kubectl, a file made with `kubectl create --dry-run=client -o
// yaml`, twelve loops that each rewrite one annotation of it and replace
// the object with it, until 440 attempts or the test's time is up. The
// write budget (16 MiB at once, then 64 KiB/s) answers 429 with a
// Retry-After that kubectl sleeps through, so the loops hang rather than
// write; what got through, and etcd's and kubelab's growth, stay within
// what the budget allows, far below the figures. Another student
// creates on, during the attack and after it.
//
// With -artifacts, kubelab's heap profiles before and after the attack
// are kept (heap-before.pb.gz and heap-after.pb.gz for `go tool pprof`,
// and as text with runtime.MemStats).
func TestRewriteAttackIsBounded(t *testing.T) {
	t.Parallel()
	const (
		loops       = 12
		maxAttempts = 440                // the rewrites
		dataBytes   = 1 << 20            // the ConfigMap's data, "about 1 MiB"
		burst, rate = 16 << 20, 64 << 10 // server.WriteBurstBytes, server.WriteBytesPerSecond
		// No attempt starts after launchFor. kubectl sleeps through each
		// Retry-After, up to ten times, and once the burst is spent that
		// is the time the rate takes to pay for what is in flight (a
		// minute and more): the attempts still asleep at launchFor+grace
		// are cut off, so that the test ends in under three minutes.
		launchFor = 120 * time.Second
		grace     = 15 * time.Second
	)
	srv := limitsClass(t)
	alice, bob := join(t, srv.URL(), "Alice"), join(t, srv.URL(), "Bob")
	kubectl := clitest.Kubectl(t)
	dir := t.TempDir()

	// The student's file and the object, as they would make them.
	data := filepath.Join(dir, "data")
	line := strings.Repeat("0123456789abcdef", 4)[:63] + "\n"
	if err := os.WriteFile(data, []byte(strings.Repeat(line, dataBytes/len(line)+1)[:dataBytes]), 0o600); err != nil {
		t.Fatal(err)
	}
	big := clitest.KubectlWithOK(t, alice.kubeconfig, "create", "configmap", "big", "--from-file=data="+data, "-o", "yaml", "--dry-run=client")
	var manifest map[string]any
	if err := yaml.Unmarshal([]byte(big), &manifest); err != nil {
		t.Fatalf("kubectl's manifest: %v", err)
	}
	bigFile := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(bigFile, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	rssBefore, dbBefore := rssBytes(t, srv.Pid()), etcdFileBytes(t, srv)
	heapBefore := heapInUse(t, srv, "heap-before")
	start := time.Now()
	clitest.KubectlWithOK(t, alice.kubeconfig, "create", "-f", bigFile)

	// rewrite writes loop l's file for its attempt i: kubectl's manifest
	// with the annotation rewrite=l-i, so that each replace changes the
	// object.
	rewrite := func(l, i int) (string, error) {
		manifest["metadata"].(map[string]any)["annotations"] = map[string]any{"rewrite": fmt.Sprintf("%d-%d", l, i)}
		out, err := yaml.Marshal(manifest)
		if err != nil {
			return "", err
		}
		file := filepath.Join(dir, fmt.Sprintf("big-%d.yaml", l))
		return file, os.WriteFile(file, out, 0o600)
	}
	var (
		mu                                 sync.Mutex // the counts', and manifest's
		attempts, conflicts, races, gaveUp int
		cutOff, answers429                 int
		versions                           []string // of the accepted rewrites
		retryAfter                         time.Duration
		launched                           = map[string]bool{}
		answer429                          = regexp.MustCompile(`verb="PUT" .*status="429 `)
		retryDelay                         = regexp.MustCompile(`"Got a Retry-After response" delay="([^"]+)"`)
	)
	stopLaunching, cut := start.Add(launchFor), start.Add(launchFor+grace)
	var wg sync.WaitGroup
	for l := range loops {
		wg.Go(func() {
			for i := 0; time.Now().Before(stopLaunching); i++ {
				mu.Lock()
				if attempts == maxAttempts {
					mu.Unlock()
					return
				}
				attempts++
				launched[fmt.Sprintf("%d-%d", l, i)] = true
				file, err := rewrite(l, i)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				// -v=6 logs each answer (not bodies), so that the 429s
				// kubectl retries are counted; stdout is the version.
				stdout, stderr, err := clitest.RunWith(t, clitest.Options{Timeout: time.Until(cut)}, kubectl,
					"--kubeconfig", alice.kubeconfig, "replace", "-f", file, "-o", "jsonpath={.metadata.resourceVersion}", "-v=6")
				mu.Lock()
				answers429 += len(answer429.FindAllString(stderr, -1))
				for _, m := range retryDelay.FindAllStringSubmatch(stderr, -1) {
					if d, perr := time.ParseDuration(m[1]); perr == nil {
						retryAfter = max(retryAfter, d)
					}
				}
				switch {
				case err == nil:
					versions = append(versions, strings.TrimSpace(stdout))
				case !time.Now().Before(cut):
					cutOff++
				case strings.Contains(stderr, "the object has been modified"):
					// kubectl replace reads the object's version, then
					// writes with it: another loop's rewrite came first.
					conflicts++
				case strings.Contains(stderr, "status unknown for quota"):
					// Writers at once race for the quota's usage, as in kube.
					races++
				case strings.Contains(stderr, "too many bytes written"):
					gaveUp++ // after kubectl's ten retries
				default:
					t.Errorf("kubectl replace: %v\n%s", err, stderr[max(0, len(stderr)-1000):])
				}
				mu.Unlock()
			}
		})
	}
	// Bob, while Alice's loops are refused or asleep.
	time.Sleep(30 * time.Second)
	bobStart := time.Now()
	if out, stderr, err := bob.kubectl(t, "create", "configmap", "during", "--from-literal=a=b"); err != nil {
		t.Errorf("bob is held back during alice's rewrites: %v %s%s", err, out, stderr)
	}
	bobTook := time.Since(bobStart)
	wg.Wait()
	took := time.Since(start)
	rssAfter, dbAfter := rssBytes(t, srv.Pid()), etcdFileBytes(t, srv)
	heapAfter := heapInUse(t, srv, "heap-after")
	if out, stderr, err := bob.kubectl(t, "create", "configmap", "after", "--from-literal=a=b"); err != nil {
		t.Errorf("bob is held back after alice's rewrites: %v %s%s", err, out, stderr)
	}

	// Bounds. Each write of the object costs at least its data (1 MiB).
	// The budget lets through the burst, what the rate adds while the
	// attack runs, the write that overdraws it, and the twelve in flight
	// when it runs out, which are paid for after; the create counts too.
	// A budget that did nothing would accept hundreds.
	const MiB = 1 << 20
	accepted := len(versions)
	allowedBytes := burst + int64(took.Seconds()+1)*rate + (1+loops)*dataBytes
	allowed := int(allowedBytes/dataBytes) - 1 // less the create
	// etcd keeps every revision until the next compaction (five minutes)
	// and its file grows in bbolt's 16 MiB steps: three times what the
	// budget lets through is room for the pages bbolt frees but cannot
	// reuse while a read holds them, and its freelist. The attack
	// grew it by 262 MB.
	etcdBound := 3 * allowedBytes
	// kubelab's memory: each rewrite let through stays in the embedded
	// etcd's raft log (until its next snapshot, 2,000 entries on) and,
	// decoded, in the watch cache's history (100 events at least): about
	// 2.3 MiB live for each MiB stored. Most of the growth is not live,
	// though: the requests in flight, refused ones too, each hold the
	// body, the decoded object and its encodings, and Go's GC lets the
	// heap grow to twice what is live before it collects. Measured: RSS
	// +178 MiB and the heap in use after a GC +58 MiB for 23 writes stored
	// of 36 allowed, about 7.7 MiB of RSS for each MiB stored. Sixteen
	// times what the budget allows (600 MiB and more) is twice that for
	// every allowed write; the attack grew it by 1 GB.
	rssBound := 16 * allowedBytes
	versionsDistinct := len(slices.Compact(slices.Sorted(slices.Values(versions)))) == accepted
	t.Logf("rewrite attack, %d kubectl replace loops of a 1 MiB ConfigMap for %s: %d attempts, %d accepted (at most %d allowed), %d conflicts, %d quota races, %d gave up on 429, %d cut off asleep; %d 429 answers, longest Retry-After %s; kubelab RSS %d → %d MiB (bound +%d), Go heap in use %d → %d MiB, etcd file %d → %d MiB (bound +%d); bob's create during it took %s",
		loops, took.Round(time.Second), attempts, accepted, allowed, conflicts, races, gaveUp, cutOff, answers429, retryAfter,
		rssBefore/MiB, rssAfter/MiB, rssBound/MiB, heapBefore/MiB, heapAfter/MiB, dbBefore/MiB, dbAfter/MiB, etcdBound/MiB, bobTook.Round(100*time.Millisecond))
	if accepted == 0 || answers429 == 0 {
		t.Errorf("the attack did not reach the budget: %d accepted, %d 429 answers", accepted, answers429)
	}
	if accepted > allowed {
		t.Errorf("%d rewrites accepted in %s, want at most %d", accepted, took, allowed)
	}
	if !versionsDistinct {
		t.Errorf("the accepted rewrites did not each make a new version: %v", versions)
	}
	if got := clitest.KubectlWithOK(t, alice.kubeconfig, "get", "configmap", "big", "-o", "jsonpath={.metadata.annotations.rewrite}"); !launched[got] {
		t.Errorf("the object's annotation after the attack is %q, not one a loop wrote", got)
	}
	if growth := dbAfter - dbBefore; growth > etcdBound {
		t.Errorf("etcd's file grew by %d MiB, want at most %d", growth/MiB, etcdBound/MiB)
	}
	if growth := rssAfter - rssBefore; growth > rssBound {
		t.Errorf("kubelab's RSS grew by %d MiB, want at most %d", growth/MiB, rssBound/MiB)
	}
}

// heapInUse saves kubelab's heap profile, after a GC, as the test's
// artifact name.pb.gz, read with the instructor's kubeconfig (the
// profiler answers cluster-admin), and returns the heap in use.
func heapInUse(t *testing.T, c *class, name string) int64 {
	t.Helper()
	profile := clitest.KubectlWithOK(t, c.adminKubeconfig(), "get", "--raw", "/debug/pprof/heap?gc=1")
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".pb.gz"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	// The text form ends with runtime.MemStats, one "# Name = value" a line.
	text := clitest.KubectlWithOK(t, c.adminKubeconfig(), "get", "--raw", "/debug/pprof/heap?debug=1")
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".txt"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^# HeapInuse = (\d+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no HeapInuse in kubelab's heap profile: %.500s", text)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
