package quiz

import "github.com/kubelab/kubelab/web/i18n"

// Anchors of the lesson page that prove each answer live.
const (
	anchorResourceVersion = "/lesson/resource-version#resource-version"
	anchorWatch           = "/lesson/resource-version#watch"
	anchorGone            = "/lesson/gone#gone"
	anchorEtcd            = "/lesson/etcd#etcd"
	anchorAggregation     = "/lesson/extending#aggregation"
)

// The lesson's quizzes.
const (
	// WatchQuizID is the lesson's five multiple-choice questions.
	WatchQuizID = "apiserver-watch"
	// SpotTheBugQuizID is the lesson's spot-the-bug exercise.
	SpotTheBugQuizID = "spot-the-bug"
)

// Lesson returns the bank of the lesson "API Server and etcd Watch": its
// five questions, and its spot-the-bug exercise on waitForPodReady. Each
// call returns a fresh copy.
func Lesson() *Bank {
	b, err := NewBank(watchQuiz(), spotTheBugQuiz())
	if err != nil {
		// The bank is data in this file; a mistake in it is a bug that the
		// package's tests catch.
		panic(err)
	}
	return b
}

func watchQuiz() *Quiz {
	return &Quiz{
		ID: WatchQuizID,
		Title: i18n.Text{
			EN: "API Server and etcd Watch: check yourself",
			TH: "API Server and etcd Watch: ทดสอบความเข้าใจ",
		},
		Intro: i18n.Text{
			EN: "Five questions on the lesson. Pick one answer each. Once your instructor's reveal policy allows (in a class, by default, once the instructor closes the quiz), every question shows why, with a link to the live proof in the lesson.",
			TH: "ห้าคำถามจากบทเรียน เลือกคำตอบเดียวต่อข้อ เมื่อนโยบายการเฉลยของผู้สอนอนุญาต (ในชั้นเรียน ค่าเริ่มต้นคือเมื่อผู้สอนปิดแบบทดสอบ) ทุกข้อจะแสดงเหตุผล พร้อมลิงก์ไปยังส่วนที่พิสูจน์สด ๆ ในบทเรียน",
		},
		Questions: []Question{
			{
				ID:   "gone-410",
				Kind: Choice,
				Prompt: i18n.Text{
					EN: "What does this response tell the client, and what should a watch client do next?",
					TH: "response นี้บอกอะไร client และ watch client ควรทำอะไรต่อ?",
				},
				Snippet: `$ kubectl get --raw "/api/v1/namespaces/internals-demo/pods?watch=1&resourceVersion=1&timeoutSeconds=6"
{"type":"ERROR","object":{"kind":"Status", ..., "message":"too old resource version: 1 (107)","reason":"Expired","code":410}}`,
				Options: []Option{
					{ID: "timeout-expired", Text: i18n.Text{
						EN: "The watch's timeoutSeconds=6 ran out and the server expired it; the client should reconnect from the same resourceVersion 1",
						TH: "timeoutSeconds=6 ของ watch หมดเวลา server จึงให้มัน expire ไป client ควรต่อใหม่จาก resourceVersion 1 เดิม",
					}},
					{ID: "compacted-relist", Text: i18n.Text{
						EN: "The watch cache no longer holds the history after resourceVersion 1; list again, then watch from the list's resourceVersion",
						TH: "watch cache ไม่มีประวัติหลัง resourceVersion 1 แล้ว ให้ list ใหม่ แล้ว watch จาก resourceVersion ของ list นั้น",
					}},
					{ID: "resume-window", Text: i18n.Text{
						EN: "Events after resourceVersion 1 have left the watch cache; the client should resume the watch from 107 and keep its cache",
						TH: "event หลัง resourceVersion 1 หลุดออกจาก watch cache แล้ว client ควร watch ต่อจาก 107 และเก็บ cache เดิมไว้ใช้ต่อ",
					}},
					{ID: "etcd-compacted", Text: i18n.Text{
						EN: "etcd has compacted its history up to revision 107; the client should list again, then watch from that list's resourceVersion",
						TH: "etcd compact ประวัติไปถึง revision 107 แล้ว client ควร list ใหม่ แล้ว watch จาก resourceVersion ของ list นั้น",
					}},
				},
				// The options offered before near misses replaced them.
				Retired: []Option{
					{ID: "cluster-broken", Text: i18n.Text{
						EN: "The API server's storage is damaged; the client should wait and retry the same watch until it succeeds",
						TH: "storage ของ API server เสียหาย client ควรรอแล้วลอง watch เดิมซ้ำจนกว่าจะสำเร็จ",
					}},
					{ID: "pod-gone", Text: i18n.Text{
						EN: "A Pod of the namespace was deleted at resourceVersion 1; the client should drop it from its local cache and keep on watching",
						TH: "Pod ใน namespace ถูกลบไปตั้งแต่ resourceVersion 1 client ควรลบมันออกจาก cache ของตัวเองแล้ว watch ต่อไปตามเดิมได้เลย",
					}},
					{ID: "rbac-revoked", Text: i18n.Text{
						EN: "The client's permission to watch pods has expired; it should get a fresh token and reconnect from resourceVersion 1",
						TH: "สิทธิ์ watch pods ของ client หมดอายุแล้ว ควรขอ token ใหม่แล้วต่อใหม่จาก resourceVersion 1",
					}},
				},
				Answer: "compacted-relist",
				Explanation: i18n.Text{
					EN: `410 Expired, "too old resource version: 1 (107)", comes from the API server's watch cache: it names the resourceVersion asked for (1) and where the cache's window of recent events begins, minus one (107: the revision the cache listed at when the server started, or its oldest kept event). The window starts at the server's start and keeps at least 100 events, more while its oldest is younger than 75 s; etcd compaction does not move it (compaction gives other messages, to reads that go to etcd), so the error says nothing of etcd's history. Nor is it the timeout: a watch that reaches timeoutSeconds just ends, with no ERROR event, and asking again from 1 gets 410 again. A watch from 107 would be accepted, but it would skip every change between 1 and 107: a Pod deleted in between would stay in the client's cache for good. The server refuses rather than silently under-deliver; the client re-lists, replacing its cache, and watches from the new list's resourceVersion, which is what client-go's Reflector does.`,
					TH: `410 Expired "too old resource version: 1 (107)" มาจาก watch cache ของ API server บอกทั้ง resourceVersion ที่ขอ (1) และจุดเริ่มของ window ของ event ล่าสุดใน cache ลบหนึ่ง (107 คือ revision ที่ cache list ไว้ตอน server start หรือ event เก่าสุดที่ยังเก็บอยู่) window เริ่มตอน server start และเก็บอย่างน้อย 100 event และมากกว่านั้นตราบที่ event เก่าสุดยังอายุไม่ถึง 75 วินาที etcd compaction ไม่ได้ขยับมัน (compaction ให้ข้อความอื่น กับการอ่านที่ไปถึง etcd) error นี้จึงไม่ได้บอกอะไรเรื่องประวัติของ etcd และก็ไม่ใช่เรื่อง timeout: watch ที่ถึง timeoutSeconds แค่จบไปเฉย ๆ โดยไม่มี event ERROR และขอใหม่จาก 1 ก็จะได้ 410 อีก watch จาก 107 server จะรับ แต่จะข้ามทุกการเปลี่ยนแปลงระหว่าง 1 ถึง 107 Pod ที่ถูกลบในช่วงนั้นจะค้างอยู่ใน cache ของ client ตลอดไป server ปฏิเสธแทนที่จะส่งข้อมูลไม่ครบแบบเงียบ ๆ client จึง list ใหม่ แทนที่ cache ทั้งหมด แล้ว watch ต่อจาก resourceVersion ของ list ใหม่ ซึ่งคือสิ่งที่ Reflector ของ client-go ทำ`,
				},
				Proof: Proof{Href: anchorGone, Label: i18n.Text{EN: "410 Gone, live", TH: "410 Gone แบบสด ๆ"}},
			},
			{
				ID:   "resource-version",
				Kind: Choice,
				Prompt: i18n.Text{
					EN: "What does a resourceVersion actually represent?",
					TH: "resourceVersion แทนอะไรจริง ๆ?",
				},
				Options: []Option{
					{ID: "per-object-counter", Text: i18n.Text{
						EN: "A counter of the object's own writes, like metadata.generation: each object starts at 1 and goes up by one per update",
						TH: "ตัวนับการเขียนของ object นั้นเอง แบบ metadata.generation: แต่ละ object เริ่มที่ 1 และเพิ่มทีละหนึ่งทุกครั้งที่ update",
					}},
					{ID: "namespace-counter", Text: i18n.Text{
						EN: "A count of the writes in the object's namespace, so a watch on one namespace resumes from that namespace's own count",
						TH: "จำนวนครั้งที่มีการเขียนใน namespace ของ object ดังนั้น watch บน namespace หนึ่งจะ resume จากตัวนับของ namespace นั้นเอง",
					}},
					{ID: "etcd-revision", Text: i18n.Text{
						EN: "An opaque marker that only increases, backed by etcd's revision, used to order a watch and resume it consistently",
						TH: "marker แบบ opaque ที่มีแต่เพิ่มขึ้น อิง revision ของ etcd ใช้เรียงลำดับ watch และ resume มันได้อย่างสอดคล้อง",
					}},
					{ID: "replica-sequence", Text: i18n.Text{
						EN: "A sequence number each API server keeps in its watch cache, so a watch must resume on the replica that served it",
						TH: "เลขลำดับที่ API server แต่ละตัวเก็บไว้ใน watch cache ของตัวเอง watch จึงต้อง resume กับ replica ตัวเดิมที่ serve มัน",
					}},
				},
				// The options offered before near misses replaced them.
				Retired: []Option{
					{ID: "object-count", Text: i18n.Text{
						EN: "A count of the objects in the namespace, which goes up by one each time an object is created there",
						TH: "จำนวน object ใน namespace ซึ่งเพิ่มขึ้นทีละหนึ่งทุกครั้งที่มี object ถูกสร้างใน namespace นั้น",
					}},
					{ID: "api-version", Text: i18n.Text{
						EN: "The version of the object's schema, such as v1 or v1beta1, which changes when its API is upgraded",
						TH: "เวอร์ชันของ schema ของ object เช่น v1 หรือ v1beta1 ซึ่งเปลี่ยนเมื่อ API ของมันถูก upgrade",
					}},
					{ID: "write-time", Text: i18n.Text{
						EN: "The time of the object's last write, in milliseconds since the epoch, which clients compare to tell which copy is newer",
						TH: "เวลาที่ object ถูกเขียนครั้งล่าสุด นับเป็นมิลลิวินาทีตั้งแต่ epoch ซึ่ง client ใช้เทียบกันว่าสำเนาไหนใหม่กว่ากัน",
					}},
				},
				Answer: "etcd-revision",
				Explanation: i18n.Text{
					EN: "A list's resourceVersion (125 in the lesson) is etcd's logical clock when the list was read: one revision for the whole etcd, moved on by every write to any key. It is not a count per object (that is metadata.generation, which counts changes to the spec), nor per namespace, and no API server keeps a numbering of its own: every replica reads the same etcd revision, so a watch can resume on any of them. watch=1&resourceVersion=125 means: stream every change after exactly this point, replaying nothing you have and skipping nothing.",
					TH: "resourceVersion ของ list (125 ในบทเรียน) คือ logical clock ของ etcd ตอนที่อ่าน list นั้น: revision เดียวของทั้ง etcd ที่ขยับทุกครั้งที่มีการเขียน key ใดก็ตาม ไม่ใช่ตัวนับของแต่ละ object (นั่นคือ metadata.generation ซึ่งนับการเปลี่ยน spec) ไม่ใช่ตัวนับของแต่ละ namespace และ API server ไม่ได้นับเลขของตัวเอง ทุก replica อ่าน revision เดียวกันจาก etcd watch จึง resume กับ replica ไหนก็ได้ watch=1&resourceVersion=125 หมายถึง stream ทุกการเปลี่ยนแปลงหลังจุดนี้เป๊ะ ไม่ replay สิ่งที่มีแล้ว และไม่ข้ามอะไร",
				},
				Proof: Proof{Href: anchorResourceVersion, Label: i18n.Text{EN: "resourceVersion, read live", TH: "อ่าน resourceVersion แบบสด ๆ"}},
			},
			{
				ID:   "initial-added",
				Kind: Choice,
				Prompt: i18n.Text{
					EN: "Why do ADDED lines appear for Pods that already existed before the watch even started?",
					TH: "ทำไมบรรทัด ADDED ถึงโผล่มาสำหรับ Pod ที่มีอยู่แล้วก่อน watch จะเริ่มด้วยซ้ำ?",
				},
				Snippet: `$ kubectl -n internals-demo get pods --watch --output-watch-events
EVENT      NAME                              READY   STATUS    RESTARTS   AGE
ADDED      gc-demo4-54cd5f4cd9-7jhlq         1/1     Running   0          116s
... (five more ADDED lines, one per existing Pod)
MODIFIED   ssa-demo                          1/1     Running   0          118s`,
				Options: []Option{
					{ID: "server-initial-state", Text: i18n.Text{
						EN: "kubectl opens its watch with no resourceVersion, so the API server sends the existing Pods as ADDED before any change",
						TH: "kubectl เปิด watch โดยไม่ระบุ resourceVersion API server จึงส่ง Pod ที่มีอยู่มาเป็น ADDED ก่อนการเปลี่ยนแปลงใด ๆ",
					}},
					{ID: "watchlist-bookmark", Text: i18n.Text{
						EN: "kubectl asks for sendInitialEvents=true, and the server streams the Pods as ADDED, then a BOOKMARK",
						TH: "kubectl ขอ sendInitialEvents=true แล้ว server stream Pod มาเป็น ADDED แล้วตามด้วย BOOKMARK",
					}},
					{ID: "initial-replay", Text: i18n.Text{
						EN: "kubectl lists the Pods, prints each as ADDED itself, then watches from the list's resourceVersion",
						TH: "kubectl list Pod ก่อนแล้วพิมพ์แต่ละตัวเป็น ADDED เอง จากนั้น watch จาก resourceVersion ของ list",
					}},
					{ID: "replicaset-recreated", Text: i18n.Text{
						EN: "The ReplicaSet re-created the Pods as the watch began, so each ADDED line is a new Pod being created",
						TH: "ReplicaSet สร้าง Pod ขึ้นใหม่ตอนที่ watch เริ่ม และ Pod ใหม่แต่ละตัวแสดงเป็น event ADDED จริง",
					}},
				},
				// The options offered before near misses replaced them.
				Retired: []Option{
					{ID: "kubectl-bug", Text: i18n.Text{
						EN: "A kubectl bug: it replays a stale local cache of the pods when it starts, which newer kubectl versions no longer do",
						TH: "บั๊กของ kubectl: มัน replay cache เก่าของ pod ที่อยู่ในเครื่องตอนเริ่มทำงาน ซึ่ง kubectl เวอร์ชันใหม่ ๆ ไม่ทำแล้ว",
					}},
					{ID: "recreated", Text: i18n.Text{
						EN: "The Pods really were created again: opening a watch makes the node restart the pods it watches",
						TH: "Pod เหล่านั้นถูกสร้างใหม่จริง ๆ: การเปิด watch ทำให้ node restart pod ที่ถูก watch อยู่",
					}},
					{ID: "added-means-new", Text: i18n.Text{
						EN: "ADDED always means an object new to the cluster, so these Pods were created just before the watch",
						TH: "ADDED แปลว่า object ใหม่กับ cluster เสมอ Pod เหล่านี้จึงเพิ่งถูกสร้างก่อน watch เริ่มไม่นาน",
					}},
				},
				Answer: "initial-replay",
				Explanation: i18n.Text{
					EN: "kubectl get --watch sends two requests (kubectl -v=6 shows them): a list, GET .../pods?limit=500, whose items kubectl itself prints as ADDED, one per existing Pod; then a watch from that list's resourceVersion, GET .../pods?resourceVersion=N&watch=true, which streams only real changes (the MODIFIED from the label). The server can send existing objects as ADDED too, but not to this watch: a watch with no resourceVersion starts with them (kept for compatibility), and one with sendInitialEvents=true streams them and ends them with a k8s.io/initial-events-end BOOKMARK, which is how client-go's Reflector starts since 1.35; kubectl's watch names a resourceVersion, so it gets only what changed after it. Nothing was created either: the AGE column says the Pods are about two minutes old.",
					TH: "kubectl get --watch ส่งสอง request (kubectl -v=6 แสดงให้เห็น): list คือ GET .../pods?limit=500 ซึ่ง kubectl พิมพ์ item ของมันเป็น ADDED เอง หนึ่งตัวต่อ Pod ที่มีอยู่ แล้วจึง watch จาก resourceVersion ของ list นั้น คือ GET .../pods?resourceVersion=N&watch=true ซึ่ง stream เฉพาะการเปลี่ยนแปลงจริง (MODIFIED จากการ label) server ก็ส่ง object ที่มีอยู่มาเป็น ADDED ได้ แต่ไม่ใช่กับ watch นี้: watch ที่ไม่ระบุ resourceVersion จะเริ่มด้วย ADDED เหล่านั้น (คงไว้เพื่อให้เข้ากันได้กับของเดิม) และ watch ที่มี sendInitialEvents=true จะ stream มันมาแล้วปิดท้ายด้วย BOOKMARK k8s.io/initial-events-end ซึ่งคือวิธีที่ Reflector ของ client-go เริ่มทำงานตั้งแต่ 1.35 ส่วน watch ของ kubectl ระบุ resourceVersion จึงได้เฉพาะสิ่งที่เปลี่ยนหลังจากนั้น และไม่มี Pod ไหนถูกสร้างใหม่: คอลัมน์ AGE บอกว่า Pod มีอายุราวสองนาทีแล้ว",
				},
				Proof: Proof{Href: anchorWatch, Label: i18n.Text{EN: "a watch and its MODIFIED event, live", TH: "watch และ event MODIFIED แบบสด ๆ"}},
			},
			{
				ID:   "etcd-raw",
				Kind: Choice,
				Prompt: i18n.Text{
					EN: "Why can't you simply cat a Pod's data out of etcd and read it as text?",
					TH: "ทำไมคุณ cat ข้อมูล Pod ออกจาก etcd แล้วอ่านเป็นข้อความตรง ๆ ไม่ได้?",
				},
				Options: []Option{
					{ID: "encrypted-default", Text: i18n.Text{
						EN: "kube-apiserver encrypts each value at rest by default, so the bytes stay ciphertext without the cluster's key",
						TH: "kube-apiserver เข้ารหัสค่าที่เก็บไว้โดย default byte จึงเป็น ciphertext ถ้าไม่มี key ของ cluster",
					}},
					{ID: "protobuf", Text: i18n.Text{
						EN: `The value is stored as binary protobuf behind a literal k8s\0 prefix, not as JSON or YAML text`,
						TH: `ค่าถูกเก็บเป็น protobuf แบบ binary หลัง prefix k8s\0 ตรงตัว ไม่ใช่ข้อความ JSON หรือ YAML`,
					}},
					{ID: "gzip-json", Text: i18n.Text{
						EN: "The value is the object's JSON, gzip-compressed by kube-apiserver before it is written, so it reads as binary",
						TH: "ค่าคือ JSON ของ object ที่ kube-apiserver บีบอัดด้วย gzip ก่อนเขียน จึงอ่านออกมาเป็น binary",
					}},
					{ID: "json-after-prefix", Text: i18n.Text{
						EN: `The value is the Pod's JSON behind a 4-byte k8s\0 header; skip those bytes and the rest reads as text`,
						TH: `ค่าคือ JSON ของ Pod หลัง header k8s\0 ขนาด 4 byte ข้าม byte เหล่านั้นไปแล้วส่วนที่เหลืออ่านเป็นข้อความได้`,
					}},
				},
				// The options offered before near misses replaced them.
				Retired: []Option{
					{ID: "encrypted", Text: i18n.Text{
						EN: "etcd encrypts every value at rest by default, so the bytes stay unreadable without the cluster's key",
						TH: "etcd เข้ารหัสทุกค่าที่เก็บไว้โดย default byte จึงอ่านไม่ออกถ้าไม่มี key ของ cluster",
					}},
					{ID: "no-direct-reads", Text: i18n.Text{
						EN: "etcd refuses reads from every client but the API server, so the command returns nothing",
						TH: "etcd ปฏิเสธการอ่านจากทุก client ยกเว้น API server คำสั่งจึงไม่คืนอะไรกลับมาเลย",
					}},
					{ID: "pods-special", Text: i18n.Text{
						EN: "Pods alone are compressed before they are stored; every other kind is kept as plain JSON",
						TH: "เฉพาะ Pod ถูกบีบอัดก่อนเก็บ ส่วน kind อื่นทุกชนิดเก็บเป็น JSON ธรรมดา",
					}},
				},
				Answer: "protobuf",
				Explanation: i18n.Text{
					EN: `etcdctl get /registry/pods/internals-demo/ssa-demo works (etcd allows the read) and prints a value that starts with k8s\0, a 4-byte magic prefix, then binary protobuf (a runtime.Unknown that wraps the Pod): the encoding of every built-in kind, ConfigMaps included. Only custom resources are stored as JSON, and kube-apiserver compresses no value. Nor is it encryption: encryption at rest is off until the cluster is given an EncryptionConfiguration, and then the value starts with k8s:enc: instead. Reading it needs a protobuf decoder, and reading it at all bypasses the API server's authentication, RBAC and watch cache (admission never sees reads).`,
					TH: `etcdctl get /registry/pods/internals-demo/ssa-demo อ่านได้ (etcd อนุญาต) และแสดงค่าที่ขึ้นต้นด้วย k8s\0 ซึ่งเป็น magic prefix ขนาด 4 byte ตามด้วย protobuf แบบ binary (runtime.Unknown ที่ห่อ Pod ไว้) ซึ่งเป็น encoding ของ built-in kind ทุกตัว รวมทั้ง ConfigMap มีแค่ custom resource ที่เก็บเป็น JSON และ kube-apiserver ไม่ได้บีบอัดค่าใดเลย และก็ไม่ใช่การเข้ารหัส: encryption at rest ปิดอยู่จนกว่า cluster จะได้ EncryptionConfiguration และเมื่อนั้นค่าจะขึ้นต้นด้วย k8s:enc: แทน จะอ่านได้ต้องมี protobuf decoder และการอ่านแบบนี้ก็ข้าม authentication, RBAC และ watch cache ของ API server ไปทั้งหมด (admission ไม่เคยเห็นการอ่าน)`,
				},
				Proof: Proof{Href: anchorEtcd, Label: i18n.Text{EN: "a Pod's raw bytes in etcd, live", TH: "byte ดิบของ Pod ใน etcd แบบสด ๆ"}},
			},
			{
				ID:   "crd-vs-aggregation",
				Kind: Choice,
				Prompt: i18n.Text{
					EN: "What is the real structural difference between a CRD and an aggregated APIService?",
					TH: "ความต่างเชิงโครงสร้างจริงระหว่าง CRD กับ APIService แบบ aggregated คืออะไร?",
				},
				Options: []Option{
					{ID: "crd-proxied", Text: i18n.Text{
						EN: "kube-apiserver proxies a CRD's requests to the controller that handles it; an APIService's go to the Service it names",
						TH: "kube-apiserver proxy request ของ CRD ไปยัง controller ที่ดูแลมัน ส่วนของ APIService ไปยัง Service ที่ระบุไว้",
					}},
					{ID: "apiservice-validates", Text: i18n.Text{
						EN: "Both keep their objects in this cluster's etcd; an APIService adds a server that validates and defaults them on write",
						TH: "ทั้งสองเก็บ object ไว้ใน etcd ของ cluster นี้ ส่วน APIService เพิ่ม server ที่ validate และใส่ค่า default ตอนเขียน",
					}},
					{ID: "where-stored", Text: i18n.Text{
						EN: "A CRD is kept in this cluster's etcd and served by kube-apiserver; an APIService proxies to a server with its own storage",
						TH: "CRD เก็บใน etcd ของ cluster นี้และ kube-apiserver serve เอง ส่วน APIService proxy ไปยัง server ที่มี storage ของตัวเอง",
					}},
					{ID: "crd-schemaless", Text: i18n.Text{
						EN: "A CRD's objects are stored as unvalidated JSON with no schema; an aggregated server checks its objects against its own types",
						TH: "object ของ CRD ถูกเก็บเป็น JSON ที่ไม่ผ่านการ validate และไม่มี schema ส่วน aggregated server ตรวจ object กับ type ของตัวเอง",
					}},
				},
				// The options offered before near misses replaced them.
				Retired: []Option{
					{ID: "same-thing", Text: i18n.Text{
						EN: "There is no real difference: both keep their objects in this cluster's etcd; the two names are only historical",
						TH: "ไม่มีความต่างจริง: ทั้งสองเก็บ object ไว้ใน etcd ของ cluster นี้ ชื่อที่ต่างกันเป็นแค่เรื่องในอดีตเท่านั้น",
					}},
					{ID: "crd-faster", Text: i18n.Text{
						EN: "A CRD runs a separate server process for each of its resources, while an aggregated API always runs inside kube-apiserver itself",
						TH: "CRD รัน server process แยกหนึ่งตัวต่อแต่ละ resource ของมัน ส่วน aggregated API รันอยู่ข้างใน kube-apiserver เองเสมอไม่มีข้อยกเว้น",
					}},
					{ID: "no-custom-fields", Text: i18n.Text{
						EN: "An aggregated API cannot define fields of its own; only a CRD can add new kinds with their own schema",
						TH: "aggregated API กำหนด field ของตัวเองไม่ได้เลย มีแค่ CRD เท่านั้นที่เพิ่ม kind ใหม่พร้อม schema ของตัวเองได้",
					}},
				},
				Answer: "where-stored",
				Explanation: i18n.Text{
					EN: "Both groups show up in /apis, but they are different mechanisms. apiextensions.k8s.io (CRDs) stores custom resources in this cluster's etcd, and kube-apiserver serves them itself, validated against the CRD's structural OpenAPI schema (which a v1 CRD must have); a controller is a client that watches them, and nothing is proxied to it. apiregistration.k8s.io (APIService) proxies a whole group to another server that owns its storage, like metrics-server for metrics.k8s.io. So restoring this cluster's etcd restores CRs, never an aggregated API's data. Validating and defaulting objects as they are written is admission's work (webhooks), not an APIService's.",
					TH: "ทั้งสองกลุ่มโผล่ใน /apis แต่เป็นกลไกต่างกัน apiextensions.k8s.io (CRD) เก็บ custom resource ใน etcd ของ cluster นี้ และ kube-apiserver serve เองโดยตรวจกับ structural OpenAPI schema ของ CRD (ที่ CRD v1 ต้องมี) controller เป็นแค่ client ที่ watch มัน ไม่มีอะไรถูก proxy ไปหา controller ส่วน apiregistration.k8s.io (APIService) proxy ทั้ง group ไปยัง server อื่นที่เป็นเจ้าของ storage เอง เช่น metrics-server สำหรับ metrics.k8s.io ดังนั้น restore etcd ของ cluster นี้ได้ CR กลับมา แต่ไม่เคยได้ข้อมูลของ aggregated API ส่วนการ validate และใส่ค่า default ให้ object ตอนเขียนเป็นงานของ admission (webhook) ไม่ใช่ของ APIService",
				},
				Proof: Proof{Href: anchorAggregation, Label: i18n.Text{EN: "API groups from discovery, live", TH: "API group จาก discovery แบบสด ๆ"}},
			},
		},
	}
}
