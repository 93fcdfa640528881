package labs

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubelab/kubelab/pipeline"
	"github.com/kubelab/kubelab/web/i18n"
)

// Lesson sections the labs practise: the named anchors of the lesson's
// headings (web/content's "{#id}").
const (
	LessonPipeline        = "/lesson/request-path#pipeline"
	LessonResourceVersion = "/lesson/resource-version#resource-version"
	LessonWatch           = "/lesson/resource-version#watch"
	LessonBookmarks       = "/lesson/resource-version#bookmarks"
	LessonGone            = "/lesson/gone#gone"
	LessonEtcd            = "/lesson/etcd#etcd"
	LessonAggregation     = "/lesson/extending#aggregation"
	LessonOpenAPI         = "/lesson/extending#openapi"
	// Inspector is the etcd inspector, on the lesson's etcd page.
	Inspector = "/lesson/etcd#insp-h"
)

// All returns the lesson's seven labs, freshly built, in the order the
// lesson's pages link them: lesson 1's lab is lab 1.
func All() []*Lab {
	return []*Lab{pipelineLab(), watchLab(), bookmarksLab(), goneLab(), etcdLab(), extendLab(), discoveryLab()}
}

func watchLab() *Lab {
	return &Lab{
		ID:     "watch",
		Title:  i18n.Text{EN: "A watch and a live MODIFIED", TH: "watch และ MODIFIED สด ๆ"},
		Intro:  i18n.Text{EN: "Hold a watch open on your pods, change one, and see the change arrive on the same connection: no polling.", TH: "เปิด watch ค้างไว้กับ pod ของคุณ แก้ pod หนึ่งตัว แล้วดูการเปลี่ยนแปลงมาถึงบน connection เดิม โดยไม่ต้อง poll"},
		Lesson: LessonWatch,
		Steps: []Step{{
			ID:      "watch-pods",
			Title:   i18n.Text{EN: "Watch your pods", TH: "watch pod ของคุณ"},
			Do:      i18n.Text{EN: "Start a watch on the pods of your namespace and leave it running (in a second terminal, or the live view of the lesson).", TH: "เริ่ม watch pod ใน namespace ของคุณแล้วปล่อยค้างไว้ (ในเทอร์มินัลที่สอง หรือใน live view ของบทเรียน)"},
			Command: "kubectl -n NS get pods --watch --output-watch-events",
			Hint:    i18n.Text{EN: "--watch (or -w) keeps the request open; curl needs ?watch=1 on the pods URL.", TH: "--watch (หรือ -w) ทำให้ request เปิดค้างไว้ ถ้าใช้ curl ให้ใส่ ?watch=1 ต่อท้าย URL ของ pods"},
			How:     i18n.Text{EN: "The server saw a watch request from you on pods in your namespace.", TH: "server เห็น watch request ของคุณบน pods ใน namespace ของคุณ"},
			Check:   watchOnPods,
			Views:   runItLive,
		}, {
			ID:      "modify",
			Title:   i18n.Text{EN: "Make a MODIFIED", TH: "ทำให้เกิด MODIFIED"},
			Do:      i18n.Text{EN: "While the watch runs, change a label or an annotation of one of your pods.", TH: "ระหว่างที่ watch ยังรันอยู่ ให้แก้ label หรือ annotation ของ pod ตัวใดตัวหนึ่ง"},
			Command: "kubectl -n NS label pod ssa-demo demo-round=$(date +%s) --overwrite",
			Hint: i18n.Text{EN: "$(date +%s) makes a new value each time, so the command always changes what is stored. If kubectl printed \"not labeled\", the label already had that value: nothing changed in etcd, no MODIFIED was sent, and that is why the step has not passed; use a new value. kubectl annotate works too, and so does the lesson's Run it live button with a new value.",
				TH: "$(date +%s) ให้ค่าใหม่ทุกครั้ง คำสั่งจึงเปลี่ยนสิ่งที่เก็บไว้เสมอ ถ้า kubectl พิมพ์ว่า \"not labeled\" แปลว่า label มีค่านั้นอยู่แล้ว: ใน etcd ไม่มีอะไรเปลี่ยน ไม่มี MODIFIED ถูกส่ง ขั้นนี้จึงยังไม่ผ่าน ให้ใช้ค่าใหม่ ใช้ kubectl annotate ก็ได้ หรือกดปุ่ม Run it live ในบทเรียนด้วยค่าใหม่"},
			How: i18n.Text{EN: "A change of yours to a pod of your namespace left etcd holding labels or annotations different from what they were when this step began. A change to the value a label already had stores nothing, and does not count (kubectl label then prints \"not labeled\" and sends nothing).",
				TH: "การเปลี่ยนของคุณกับ pod ใน namespace ของคุณทำให้ label หรือ annotation ใน etcd ต่างจากตอนที่ขั้นนี้เริ่ม การตั้ง label เป็นค่าที่มันมีอยู่แล้วไม่ได้เก็บอะไรใหม่จึงไม่นับ (kubectl label จะพิมพ์ \"not labeled\" และไม่ส่งอะไรไปเลย)"},
			Check: labelChanged,
			Views: runItLive,
		}, {
			ID:    "see-modified",
			Title: i18n.Text{EN: "See it arrive", TH: "เห็นมันมาถึง"},
			Do:    i18n.Text{EN: "Look at the watch: the change arrived as a MODIFIED event with a new resourceVersion, on the connection that was already open.", TH: "ดูที่ watch: การเปลี่ยนแปลงมาถึงเป็น event MODIFIED พร้อม resourceVersion ใหม่ บน connection ที่เปิดค้างอยู่แล้ว"},
			Hint:  i18n.Text{EN: "If your watch had ended, start it again and change the label once more.", TH: "ถ้า watch จบไปแล้ว ให้เริ่มใหม่แล้วแก้ label อีกครั้ง"},
			How:   i18n.Text{EN: "The server sent a MODIFIED event on a watch of yours since the lab began.", TH: "server ส่ง event MODIFIED บน watch ของคุณตั้งแต่เริ่ม lab นี้"},
			Check: watchDelivered("MODIFIED"),
			Views: runItLive,
		}},
	}
}

func bookmarksLab() *Lab {
	return &Lab{
		ID:     "bookmarks",
		Title:  i18n.Text{EN: "Bookmarks and resuming from a resourceVersion", TH: "Bookmark และการ resume จาก resourceVersion"},
		Intro:  i18n.Text{EN: "A list is stamped with a resourceVersion; a watch can start exactly there, and bookmarks tell a watcher how far the server has got, even when nothing it watches changed.", TH: "list ทุกครั้งมี resourceVersion ประทับอยู่ watch เริ่มจากจุดนั้นได้พอดี และ bookmark บอก watcher ว่า server ไปถึง revision ไหนแล้ว แม้สิ่งที่มัน watch จะไม่เปลี่ยนเลย"},
		Lesson: LessonBookmarks,
		Steps: []Step{{
			ID:      "list-rv",
			Title:   i18n.Text{EN: "Read a list's resourceVersion", TH: "อ่าน resourceVersion ของ list"},
			Do:      i18n.Text{EN: "List the pods of your namespace as the server sends the list, and read its metadata.resourceVersion.", TH: "list pod ใน namespace ของคุณแบบที่ server ส่ง list มา แล้วอ่าน metadata.resourceVersion ของมัน"},
			Command: "kubectl get --raw /api/v1/namespaces/NS/pods | jq -r .metadata.resourceVersion",
			Hint: i18n.Text{EN: "Any list of pods in your namespace counts; the number is etcd's revision when the list was read. kubectl get -o json prints an empty resourceVersion: it wraps the items in a List of its own, so read the raw list.",
				TH: "list pod ใน namespace ของคุณแบบไหนก็ได้ ตัวเลขนั้นคือ revision ของ etcd ตอนที่อ่าน list ส่วน kubectl get -o json จะได้ resourceVersion ว่าง เพราะมันห่อ item ไว้ใน List ของตัวเอง จึงต้องอ่าน list ดิบ"},
			How:   i18n.Text{EN: "The server answered a list of pods in your namespace.", TH: "server ตอบ list pod ใน namespace ของคุณ"},
			Check: requested(verb("list"), resource("", "pods"), nsOf, code(200, 299)),
			Views: runItLive,
		}, {
			ID:      "bookmark",
			Title:   i18n.Text{EN: "Receive a BOOKMARK", TH: "รับ BOOKMARK"},
			Do:      i18n.Text{EN: "Watch your pods with allowWatchBookmarks=true: after one ADDED per pod, the server ends the initial events with a BOOKMARK annotated k8s.io/initial-events-end.", TH: "watch pod ของคุณพร้อม allowWatchBookmarks=true หลัง ADDED หนึ่งครั้งต่อ pod หนึ่งตัว server จะปิดท้าย initial events ด้วย BOOKMARK ที่มี annotation k8s.io/initial-events-end"},
			Command: `kubectl get --raw "/api/v1/namespaces/NS/pods?watch=1&timeoutSeconds=6&allowWatchBookmarks=true"`,
			Hint:    i18n.Text{EN: "The bookmark carries only a resourceVersion. A watch from no resourceVersion (or 0) gets it at once; later bookmarks (every minute, and 2 s before the timeout) come only if pods changed somewhere since the watch began, so a watch from a resourceVersion on a quiet cluster gets none.", TH: "bookmark มีแค่ resourceVersion watch ที่ไม่ระบุ resourceVersion (หรือระบุ 0) จะได้ bookmark นี้ทันที ส่วน bookmark ที่ตามมา (ทุกหนึ่งนาที และ 2 วินาทีก่อนหมดเวลา) จะมาก็ต่อเมื่อมี pod เปลี่ยนที่ใดที่หนึ่งหลัง watch เริ่ม watch ที่เริ่มจาก resourceVersion บน cluster ที่เงียบจึงไม่ได้ bookmark เลย"},
			How:     i18n.Text{EN: "The server sent you a BOOKMARK event on a watch of pods in your namespace.", TH: "server ส่ง event BOOKMARK ให้คุณบน watch ของ pods ใน namespace ของคุณ"},
			Check:   watchDelivered("BOOKMARK"),
			Views:   runItLive,
		}, {
			ID:    "bookmark-rv",
			Title: i18n.Text{EN: "Which resourceVersion did your BOOKMARK carry?", TH: "BOOKMARK ของคุณพา resourceVersion อะไรมา"},
			Do: i18n.Text{EN: "Type the resourceVersion of the BOOKMARK your watch received. It is yours alone: the revision the server had reached when it sent it to you.",
				TH: "พิมพ์ resourceVersion ของ BOOKMARK ที่ watch ของคุณได้รับ ค่านี้เป็นของคุณคนเดียว คือ revision ที่ server ไปถึงตอนส่งมันให้คุณ"},
			Hint: i18n.Text{EN: "It is the BOOKMARK event's object.metadata.resourceVersion, the only field it carries besides its kind. Any BOOKMARK sent on your own watches in this lab counts.",
				TH: "อยู่ที่ object.metadata.resourceVersion ของ event BOOKMARK ซึ่งเป็น field เดียวที่มันมีนอกจาก kind ทุก BOOKMARK ที่ส่งมาบน watch ของคุณเองใน lab นี้นับหมด"},
			How: i18n.Text{EN: "Your answer is compared with the resourceVersions of the BOOKMARKs the server sent on your watches of your pods since the lab began.",
				TH: "คำตอบของคุณถูกเทียบกับ resourceVersion ของ BOOKMARK ที่ server ส่งบน watch pod ของคุณตั้งแต่เริ่ม lab นี้"},
			Answer: bookmarkAnswer,
			Views:  runItLive,
		}, {
			ID:      "resume",
			Title:   i18n.Text{EN: "Resume from a resourceVersion", TH: "resume จาก resourceVersion"},
			Do:      i18n.Text{EN: "Start a watch from the resourceVersion you read (the list's or the bookmark's; put it in place of RV): it replays nothing you already had.", TH: "เริ่ม watch จาก resourceVersion ที่คุณอ่านได้ (ของ list หรือของ bookmark ใส่แทน RV) มันจะไม่ส่งซ้ำสิ่งที่คุณมีอยู่แล้ว"},
			Command: `kubectl get --raw "/api/v1/namespaces/NS/pods?watch=1&resourceVersion=RV&timeoutSeconds=6"`,
			Hint:    i18n.Text{EN: "No synthetic ADDED events this time: only changes after that resourceVersion.", TH: "รอบนี้ไม่มี ADDED สังเคราะห์ มีแค่การเปลี่ยนแปลงหลัง resourceVersion นั้น"},
			How:     i18n.Text{EN: "The server served you a watch of pods in your namespace that started from a resourceVersion and was not refused with 410.", TH: "server ให้ watch pods ใน namespace ของคุณที่เริ่มจาก resourceVersion และไม่ถูกปฏิเสธด้วย 410"},
			Check:   resumed,
			Views:   runItLive,
		}},
	}
}

func goneLab() *Lab {
	return &Lab{
		ID:     "gone",
		Title:  i18n.Text{EN: "The watch cache's window, 410 Gone and relisting", TH: "หน้าต่างของ watch cache, 410 Gone และการ list ใหม่"},
		Intro:  i18n.Text{EN: "Let a watcher fall behind until the API server's watch cache no longer holds what it missed, get the real 410, and recover the way client-go's Reflector does: list again. Your own changes move the window; no one else's watches break.", TH: "ปล่อยให้ watcher ตามหลังจน watch cache ของ API server ไม่เก็บสิ่งที่มันพลาดไว้แล้ว รับ 410 จริง แล้วกู้คืนแบบที่ Reflector ของ client-go ทำ คือ list ใหม่ การเปลี่ยนแปลงของคุณเองเป็นตัวเลื่อนหน้าต่าง watch ของคนอื่นไม่เสีย"},
		Lesson: LessonGone,
		Steps: []Step{{
			ID:    "window",
			Title: i18n.Text{EN: "Move the window past a paused watcher", TH: "เลื่อนหน้าต่างให้พ้น watcher ที่หยุดไว้"},
			Do: i18n.Text{EN: "On the watch timeline of the 410 Gone page: pause watcher B, press Change the pod so that B misses a change, wait until that change is 75 s old, then press Push the window past B. Or do the same with kubectl: one change, 76 s for it to pass 75 s, then enough changes to fill the window (the command below takes about a minute and a half); the timeline shows how many events the window holds.",
				TH: "ใน watch timeline ของหน้า 410 Gone: หยุด watcher B กดเปลี่ยน pod เพื่อให้ B พลาดการเปลี่ยนแปลงหนึ่งครั้ง รอจนการเปลี่ยนแปลงนั้นอายุ 75 วินาที แล้วกดดันหน้าต่างให้เลย B หรือทำแบบเดียวกันด้วย kubectl: เปลี่ยนหนึ่งครั้ง รอ 76 วินาทีให้มันอายุเกิน 75 วินาที แล้วเปลี่ยนจนเต็มหน้าต่าง (คำสั่งด้านล่างใช้เวลาราวนาทีครึ่ง) โดย timeline บอกว่าหน้าต่างเก็บ event ได้กี่ตัว"},
			Command: `kubectl -n NS label pod ssa-demo round=start --overwrite; sleep 76; for i in $(seq 120); do kubectl -n NS label pod ssa-demo round=$i --overwrite; done`,
			Hint: i18n.Text{EN: "The pods watch cache keeps at least 100 events and grows, up to 102,400, rather than drop one younger than 75 s: a watcher that missed a change less than 75 s ago can always resume. etcd compaction does not move this window.",
				TH: "watch cache ของ pods เก็บ event อย่างน้อย 100 ตัว และจะขยาย (สูงสุด 102,400) แทนที่จะทิ้ง event ที่อายุไม่ถึง 75 วินาที watcher ที่พลาดการเปลี่ยนแปลงไปไม่ถึง 75 วินาทีจึง resume ได้เสมอ การ compact ของ etcd ไม่ได้เลื่อนหน้าต่างนี้"},
			How: i18n.Text{EN: "The pods watch cache's window now starts after the revision this step began at (a watch from it would get 410), and you changed a pod of yours since.",
				TH: "หน้าต่างของ watch cache ของ pods ตอนนี้เริ่มหลัง revision ตอนที่ขั้นนี้เริ่ม (watch จาก revision นั้นจะได้ 410) และคุณได้เปลี่ยน pod ของคุณเองตั้งแต่นั้น"},
			Check: windowMoved,
			Views: timelineOrRunItLive,
		}, {
			ID:      "gone",
			Title:   i18n.Text{EN: "Get a 410", TH: "รับ 410"},
			Do:      i18n.Text{EN: "Resume watcher B, or watch your pods from a resourceVersion before the window's start, such as the one B stopped at, or 1.", TH: "ให้ watcher B ทำงานต่อ หรือ watch pod ของคุณจาก resourceVersion ก่อนจุดเริ่มหน้าต่าง เช่นที่ B หยุดไว้ หรือ 1"},
			Command: `kubectl get --raw "/api/v1/namespaces/NS/pods?watch=1&resourceVersion=1&timeoutSeconds=6"`,
			Hint:    i18n.Text{EN: "The answer is an ERROR event: too old resource version: X (Y), code 410, where Y is where the window starts.", TH: "คำตอบคือ event ERROR: too old resource version: X (Y) code 410 โดย Y คือจุดเริ่มหน้าต่าง"},
			How:     i18n.Text{EN: "The server ended a watch of yours with 410 Expired.", TH: "server จบ watch ของคุณด้วย 410 Expired"},
			Check:   expired,
			Views:   timelineOrRunItLive,
		}, {
			ID:    "window-start",
			Title: i18n.Text{EN: "Where did the window start?", TH: "หน้าต่างเริ่มที่ไหน"},
			Do: i18n.Text{EN: "Read the 410 your watch got, too old resource version: X (Y), and type Y: where the watch cache's window started when it refused you.",
				TH: "อ่าน 410 ที่ watch ของคุณได้รับ too old resource version: X (Y) แล้วพิมพ์ Y คือจุดที่หน้าต่างของ watch cache เริ่มตอนที่มันปฏิเสธคุณ"},
			Hint: i18n.Text{EN: "X is the resourceVersion you asked for; Y is the oldest one a watch may still start from (a watch from Y itself is accepted): the revision the cache listed at, or the oldest event it keeps minus one. Every later watch can get a different Y: type the one yours got.",
				TH: "X คือ resourceVersion ที่คุณขอ ส่วน Y คือ resourceVersion เก่าสุดที่ยังเริ่ม watch ได้ (watch จาก Y เองยังได้) คือ revision ที่ cache list ไว้ หรือ event เก่าสุดที่เก็บอยู่ลบหนึ่ง watch แต่ละครั้งอาจได้ Y ต่างกัน ให้พิมพ์ค่าที่ watch ของคุณได้"},
			How: i18n.Text{EN: "Your answer is compared with the Y of the 410 messages the server sent on your own watches since the lab began.",
				TH: "คำตอบของคุณถูกเทียบกับ Y ในข้อความ 410 ที่ server ส่งบน watch ของคุณเองตั้งแต่เริ่ม lab นี้"},
			Answer: windowStartAnswer,
			Views:  timelineOrRunItLive,
		}, {
			ID:      "relist",
			Title:   i18n.Text{EN: "Relist", TH: "list ใหม่"},
			Do:      i18n.Text{EN: "Do what a Reflector does after a 410: list again, and note the new resourceVersion to watch from.", TH: "ทำแบบที่ Reflector ทำหลังได้ 410 คือ list ใหม่ แล้วจด resourceVersion ใหม่ไว้ watch ต่อ"},
			Command: "kubectl get --raw /api/v1/namespaces/NS/pods | jq -r .metadata.resourceVersion",
			Hint:    i18n.Text{EN: "A fresh list is always servable; only old revisions are gone. (kubectl get -o json wraps the items in a List of its own, without the server's resourceVersion: read the raw list.)", TH: "list ใหม่อ่านได้เสมอ ที่หายไปมีแค่ revision เก่า (kubectl get -o json ห่อ item ไว้ใน List ของตัวเองที่ไม่มี resourceVersion ของ server จึงต้องอ่าน list ดิบ)"},
			How: i18n.Text{EN: "After the 410, the server answered a list of pods in your namespace: from your own client, or from the timeline's watcher relisting the moment its resume got 410 (the timeline's lists when its page opens do not count).",
				TH: "หลังได้ 410 server ตอบ list pod ใน namespace ของคุณ จาก client ของคุณเอง หรือจาก watcher ของ timeline ที่ list ใหม่ทันทีที่การ resume ได้ 410 (การ list ของ timeline ตอนเปิดหน้าไม่นับ)"},
			Check: relisted,
			Views: timelineOrRunItLive,
		}},
	}
}

// The views whose requests count for a step besides the student's own
// clients: a Run it live button is pressed for the step's command; the
// timeline is the 410 exercise's instrument.
var (
	runItLive           = []string{pipeline.ViewRunItLive}
	timelineOrRunItLive = []string{pipeline.ViewTimeline, pipeline.ViewRunItLive}
)

// prefixAnswers are the ways to write the first bytes of a stored value.
var prefixAnswers = []string{`k8s\x00`, `k8s\0`, `k8s\000`, `k8s\u0000`, "6b387300", "6b 38 73 00", "k8s"}

func etcdLab() *Lab {
	return &Lab{
		ID:     "etcd",
		Title:  i18n.Text{EN: "Reading etcd directly, and why not to", TH: "อ่าน etcd ตรง ๆ และทำไมไม่ควรทำ"},
		Intro:  i18n.Text{EN: "Read one of your pods straight from etcd and see what the API server hides: a protobuf value behind a k8s prefix, read with no authentication, no RBAC and no watch cache (admission never sees a read, through the API or not).", TH: "อ่าน pod ของคุณตรงจาก etcd แล้วดูสิ่งที่ API server ซ่อนไว้: ค่า protobuf ที่มี prefix k8s นำหน้า อ่านได้โดยไม่ผ่าน authentication, RBAC และ watch cache (ส่วน admission ไม่เคยเห็นการอ่านเลย จะผ่าน API หรือไม่ก็ตาม)"},
		Lesson: LessonEtcd,
		Steps: []Step{{
			ID:    "read-key",
			Title: i18n.Text{EN: "Read a pod's key", TH: "อ่าน key ของ pod"},
			Do: i18n.Text{EN: "Open the etcd inspector on the lesson's etcd page (/lesson/etcd#insp-h) and read the key of one of your pods. This step passes from the inspector only: etcdctl leaves no trace on the API server. On a kubelab of your own, etcdctl shows the same bytes; in a class, students have no access to etcd.",
				TH: "เปิด etcd inspector ในหน้า etcd ของบทเรียน (/lesson/etcd#insp-h) แล้วอ่าน key ของ pod ตัวหนึ่งของคุณ ขั้นนี้ผ่านได้จาก inspector เท่านั้น เพราะ etcdctl ไม่ทิ้ง trace ใด ๆ ไว้ที่ API server บน kubelab ของคุณเอง etcdctl แสดง byte เดียวกัน ส่วนในห้องเรียน นักเรียนเข้าถึง etcd ไม่ได้"},
			Command: "etcdctl get /registry/pods/NS/ssa-demo",
			Hint:    i18n.Text{EN: "Keys are /registry/<resource>/<namespace>/<name>.", TH: "key มีรูปแบบ /registry/<resource>/<namespace>/<name>"},
			How: i18n.Text{EN: "etcdctl talks to etcd, not to the API server, so no trace of it can exist — that is the lesson's point. This step is checked from the browser's etcd inspector, which reads through kubelab and is traced; if you used etcdctl, the questions after it check what you saw.",
				TH: "etcdctl คุยกับ etcd โดยตรง ไม่ผ่าน API server จึงไม่มี trace ใด ๆ เกิดขึ้น ซึ่งก็คือประเด็นของบทเรียน ขั้นนี้จึงตรวจจาก etcd inspector ในเบราว์เซอร์ซึ่งอ่านผ่าน kubelab และมี trace ถ้าคุณใช้ etcdctl คำถามหลังจากนี้จะตรวจสิ่งที่คุณเห็น"},
			// A value, which the inspector reads when a key is picked; not
			// the key list, which it loads with the page.
			Check: requested(path("/ui/etcd/value", false), code(200, 200)),
			Open:  Inspector,
		}, {
			ID:    "prefix",
			Title: i18n.Text{EN: "What is the value's prefix?", TH: "ค่านั้นขึ้นต้นด้วยอะไร"},
			Do:    i18n.Text{EN: "Type the first four bytes of the stored value, as etcdctl or the inspector shows them.", TH: "พิมพ์ 4 byte แรกของค่าที่เก็บไว้ ตามที่ etcdctl หรือ inspector แสดง"},
			Hint:  i18n.Text{EN: "Three letters and a zero byte, before the protobuf.", TH: "ตัวอักษรสามตัวกับ byte ศูนย์หนึ่งตัว ก่อน protobuf"},
			How:   i18n.Text{EN: "Your answer is compared with the bytes every built-in object is stored with.", TH: "คำตอบของคุณถูกเทียบกับ byte ที่ object ในตัวทุกชนิดถูกเก็บไว้"},
			Answer: sameForEveryone(func(a string) bool {
				a = strings.TrimSpace(strings.Trim(strings.TrimSpace(a), `"'`))
				return slices.ContainsFunc(prefixAnswers, func(p string) bool { return strings.EqualFold(a, p) })
			}),
		}, {
			ID:    "mod-revision",
			Title: i18n.Text{EN: "At which revision was your pod last written?", TH: "pod ของคุณถูกเขียนครั้งล่าสุดที่ revision ไหน"},
			Do: i18n.Text{EN: "Type the mod revision of one of your pods' keys, as etcd holds it now: the inspector shows it as modRevision, etcdctl get -w json as mod_revision.",
				TH: "พิมพ์ mod revision ของ key ของ pod ตัวหนึ่งของคุณ ตามที่ etcd เก็บอยู่ตอนนี้ inspector แสดงเป็น modRevision ส่วน etcdctl get -w json แสดงเป็น mod_revision"},
			Command: "etcdctl get /registry/pods/NS/ssa-demo -w json | jq .kvs[0].mod_revision",
			Hint: i18n.Text{EN: "It is the revision of the etcd transaction that last wrote the key: the number the API returns as the pod's resourceVersion. If you changed the pod since you read it, read it again.",
				TH: "คือ revision ของ transaction ใน etcd ที่เขียน key นั้นครั้งล่าสุด ซึ่งเป็นเลขเดียวกับที่ API คืนมาเป็น resourceVersion ของ pod ถ้าคุณแก้ pod หลังจากอ่าน ให้อ่านใหม่"},
			How: i18n.Text{EN: "Your answer is compared with the mod revisions etcd holds now for the pods of your namespace: a number of your own namespace, not your neighbour's.",
				TH: "คำตอบของคุณถูกเทียบกับ mod revision ที่ etcd เก็บอยู่ตอนนี้สำหรับ pod ใน namespace ของคุณ ซึ่งเป็นเลขของ namespace คุณเอง ไม่ใช่ของเพื่อน"},
			Answer: modRevisionAnswer,
		}, {
			ID:    "why-not",
			Title: i18n.Text{EN: "Why not read etcd in a controller?", TH: "ทำไมไม่ควรให้ controller อ่าน etcd"},
			Do:    i18n.Text{EN: "Pick what reading etcd directly skips.", TH: "เลือกสิ่งที่การอ่าน etcd ตรง ๆ ข้ามไป"},
			Hint:  i18n.Text{EN: "Think of the pipeline's stages before storage.", TH: "นึกถึง stage ต่าง ๆ ของ pipeline ที่อยู่ก่อน storage"},
			How:   i18n.Text{EN: "Your choice is graded on the server.", TH: "คำตอบของคุณถูกตรวจที่ server"},
			Choices: []Choice{
				{"nothing", i18n.Text{EN: "Nothing: etcd is just a faster read path", TH: "ไม่มีอะไร etcd เป็นแค่ทางอ่านที่เร็วกว่า"}},
				{"skips", i18n.Text{EN: "Authentication, RBAC and the watch cache, and it returns protobuf", TH: "authentication, RBAC และ watch cache อีกทั้งได้ protobuf กลับมา"}},
				{"json", i18n.Text{EN: "Only the JSON conversion", TH: "แค่การแปลงเป็น JSON"}},
			},
			Answer: sameForEveryone(func(a string) bool { return a == "skips" }),
		}},
	}
}

func discoveryLab() *Lab {
	return &Lab{
		ID:     "discovery",
		Title:  i18n.Text{EN: "Discovery and OpenAPI", TH: "Discovery และ OpenAPI"},
		Intro:  i18n.Text{EN: "Every client first asks the server what it serves: the API groups, then the OpenAPI schema that kubectl explain and validation read.", TH: "client ทุกตัวจะถามก่อนว่า server ให้บริการอะไรบ้าง: API group ต่าง ๆ แล้วก็ schema OpenAPI ที่ kubectl explain และ validation อ่าน"},
		Lesson: LessonOpenAPI,
		Steps: []Step{{
			ID:      "groups",
			Title:   i18n.Text{EN: "List the API groups", TH: "list API group"},
			Do:      i18n.Text{EN: "Read /apis and find apiregistration.k8s.io and apiextensions.k8s.io.", TH: "อ่าน /apis แล้วหา apiregistration.k8s.io และ apiextensions.k8s.io"},
			Command: "kubectl get --raw /apis | jq -r '.groups[].name'",
			Hint:    i18n.Text{EN: "kubectl api-versions reads the same document.", TH: "kubectl api-versions ก็อ่านเอกสารเดียวกัน"},
			How:     i18n.Text{EN: "The server answered your request for /apis.", TH: "server ตอบ request /apis ของคุณ"},
			Check:   requested(path("/apis", false), code(200, 299)),
			Views:   runItLive,
		}, {
			ID:      "openapi",
			Title:   i18n.Text{EN: "Read the OpenAPI schema", TH: "อ่าน schema OpenAPI"},
			Do:      i18n.Text{EN: "Read an OpenAPI v3 document: the index, or kubectl explain, which reads it for you.", TH: "อ่านเอกสาร OpenAPI v3: index หรือใช้ kubectl explain ซึ่งอ่านให้คุณ"},
			Command: "kubectl explain pod.spec.containers.image",
			Hint:    i18n.Text{EN: "kubectl get --raw /openapi/v3 lists a document per group and version.", TH: "kubectl get --raw /openapi/v3 แสดงเอกสารหนึ่งชุดต่อ group และ version"},
			How:     i18n.Text{EN: "The server answered your request under /openapi/v3.", TH: "server ตอบ request ของคุณที่อยู่ใต้ /openapi/v3"},
			Check:   requested(path("/openapi/v3", true), code(200, 299)),
			Views:   runItLive,
		}},
	}
}

func extendLab() *Lab {
	return &Lab{
		ID:     "extend",
		Title:  i18n.Text{EN: "CRD versus aggregated API", TH: "CRD กับ aggregated API"},
		Intro:  i18n.Text{EN: "kubelab serves both kinds of extension: metrics.k8s.io through an APIService (another server, its own storage) and CRDs from its own etcd, where a custom resource is stored as JSON beside the built-in kinds' protobuf.", TH: "kubelab มีส่วนขยายทั้งสองแบบ: metrics.k8s.io ผ่าน APIService (server อีกตัวที่มี storage ของตัวเอง) และ CRD ที่เก็บใน etcd ของตัวเอง โดย custom resource ถูกเก็บเป็น JSON คู่กับ protobuf ของ kind ในตัว"},
		Lesson: LessonAggregation,
		Steps: []Step{{
			ID:      "metrics",
			Title:   i18n.Text{EN: "Read an aggregated API", TH: "อ่าน aggregated API"},
			Do:      i18n.Text{EN: "Read something served by metrics.k8s.io: kubelab's aggregated API counts the objects of each namespace, from its own storage.", TH: "อ่านสิ่งที่ metrics.k8s.io ให้บริการ: aggregated API ของ kubelab นับ object ในแต่ละ namespace จาก storage ของตัวเอง"},
			Command: "kubectl get --raw /apis/metrics.k8s.io/v1beta1 | jq -r '.resources[].name'",
			Hint: i18n.Text{EN: "The command reads what the group serves: namespacemetrics. On a kubelab of your own, kubectl get namespacemetrics lists the counts and kubectl get apiservices shows who serves the group; both are cluster-wide, so a student in a class may read only the group's discovery.",
				TH: "คำสั่งนี้อ่านว่า group นี้ให้บริการอะไร: namespacemetrics บน kubelab ของคุณเอง kubectl get namespacemetrics แสดงตัวเลข และ kubectl get apiservices แสดงว่าใครเป็นผู้ให้บริการ group นี้ ทั้งสองอย่างเป็นระดับคลัสเตอร์ นักเรียนในห้องเรียนจึงอ่านได้แค่ discovery ของ group"},
			How: i18n.Text{EN: "The server answered your request to the metrics.k8s.io group.", TH: "server ตอบ request ของคุณที่ไปยัง group metrics.k8s.io"},
			Check: anyOf(
				requested(func(t *pipeline.Trace) bool { return t.APIGroup == "metrics.k8s.io" }, code(200, 299)),
				requested(path("/apis/metrics.k8s.io", true), code(200, 299)),
			),
		}, {
			ID:    "custom-resource",
			Title: i18n.Text{EN: "Make a custom resource", TH: "สร้าง custom resource"},
			Do: i18n.Text{EN: "Make one object of a kind a CRD defines, in your namespace: the lesson's etcd page defines the kind Note (notes.lab.example.com). In a class, your instructor defines it and you create the Note.",
				TH: "สร้าง object หนึ่งตัวของ kind ที่ CRD กำหนด ใน namespace ของคุณ หน้า etcd ของบทเรียนกำหนด kind ชื่อ Note (notes.lab.example.com) ไว้ ถ้าเรียนในห้อง ผู้สอนจะสร้าง CRD ให้ คุณสร้าง Note เอง"},
			Command: `kubectl -n NS create -f - <<'EOF'
{"apiVersion": "lab.example.com/v1", "kind": "Note", "metadata": {"name": "hello"}, "spec": {"text": "stored as JSON"}}
EOF`,
			Hint: i18n.Text{EN: "kubectl get crd lists the kinds CRDs define here; kubectl api-resources shows them beside the built-in ones.",
				TH: "kubectl get crd แสดง kind ที่ CRD กำหนดไว้ ส่วน kubectl api-resources แสดงมันคู่กับ kind ในตัว"},
			How: i18n.Text{EN: "The server stored an object you created in your namespace, of a resource that a CustomResourceDefinition in etcd defines.",
				TH: "server เก็บ object ที่คุณสร้างใน namespace ของคุณ ซึ่งเป็น resource ที่ CustomResourceDefinition ใน etcd กำหนดไว้"},
			Check: customResourceCreated,
		}, {
			ID:    "json-beside-protobuf",
			Title: i18n.Text{EN: "JSON beside protobuf, in the inspector", TH: "JSON คู่กับ protobuf ใน inspector"},
			Do: i18n.Text{EN: "In the etcd inspector on the lesson's etcd page, open your custom resource's key, then one of your pods': the first is plain JSON, the second starts with k8s and a zero byte.",
				TH: "ใน etcd inspector ของหน้า etcd ในบทเรียน เปิด key ของ custom resource ของคุณ แล้วเปิด key ของ pod ตัวหนึ่ง ตัวแรกเป็น JSON ธรรมดา ตัวที่สองขึ้นต้นด้วย k8s และ byte ศูนย์"},
			Hint: i18n.Text{EN: "Type your custom resource's prefix in the inspector's filter, such as /registry/lab.example.com/notes/ followed by your namespace. etcdctl reaches etcd without kubelab, so only the inspector can be checked.",
				TH: "พิมพ์ prefix ของ custom resource ของคุณในช่องกรองของ inspector เช่น /registry/lab.example.com/notes/ ตามด้วย namespace ของคุณ etcdctl คุยกับ etcd โดยไม่ผ่าน kubelab จึงตรวจได้จาก inspector เท่านั้น"},
			How: i18n.Text{EN: "The inspector read, for you, the key of a custom resource in your namespace since this step began, and a pod's key of your namespace during this lab.",
				TH: "inspector อ่าน key ของ custom resource ใน namespace ของคุณให้คุณตั้งแต่ขั้นนี้เริ่ม และอ่าน key ของ pod ใน namespace ของคุณระหว่าง lab นี้"},
			Check: jsonBesideProtobuf,
			Open:  Inspector,
			Views: []string{pipeline.ViewInspector},
		}, {
			ID:    "where",
			Title: i18n.Text{EN: "Where does each one's data live?", TH: "ข้อมูลของแต่ละแบบอยู่ที่ไหน"},
			Do:    i18n.Text{EN: "Pick the true sentence.", TH: "เลือกประโยคที่ถูก"},
			Hint:  i18n.Text{EN: "Restoring this cluster's etcd from a backup restores one of the two.", TH: "การกู้ etcd ของคลัสเตอร์นี้จาก backup จะกู้คืนได้แค่แบบเดียว"},
			How:   i18n.Text{EN: "Your choice is graded on the server.", TH: "คำตอบของคุณถูกตรวจที่ server"},
			Choices: []Choice{
				{"same", i18n.Text{EN: "Both are stored in this cluster's etcd", TH: "ทั้งสองแบบเก็บใน etcd ของคลัสเตอร์นี้"}},
				{"crd-here", i18n.Text{EN: "Custom resources are in this cluster's etcd; an aggregated API's data is in its own server's storage", TH: "custom resource อยู่ใน etcd ของคลัสเตอร์นี้ ส่วนข้อมูลของ aggregated API อยู่ใน storage ของ server ตัวนั้นเอง"}},
				{"agg-here", i18n.Text{EN: "An aggregated API's data is in this cluster's etcd; custom resources are not", TH: "ข้อมูลของ aggregated API อยู่ใน etcd ของคลัสเตอร์นี้ ส่วน custom resource ไม่ได้อยู่"}},
			},
			Answer: sameForEveryone(func(a string) bool { return a == "crd-here" }),
		}},
	}
}

func pipelineLab() *Lab {
	return &Lab{
		ID:     "pipeline",
		Title:  i18n.Text{EN: "The pipeline: an admission mutation and an RBAC denial", TH: "pipeline: การแก้ไขโดย admission และการถูก RBAC ปฏิเสธ"},
		Intro:  i18n.Text{EN: "Send requests that end at different stages: one that mutating admission changes on its way to etcd, and one that authorization stops.", TH: "ส่ง request ที่ไปจบคนละ stage: ตัวหนึ่งถูก mutating admission แก้ระหว่างทางไป etcd อีกตัวถูก authorization หยุดไว้"},
		Lesson: LessonPipeline,
		Steps: []Step{{
			ID:      "mutate",
			Title:   i18n.Text{EN: "Create a pod that admission mutates", TH: "สร้าง pod ที่ admission แก้ไข"},
			Do:      i18n.Text{EN: "Create a pod in your namespace and look at its trace: the ServiceAccount plugin patches in serviceAccountName.", TH: "สร้าง pod ใน namespace ของคุณแล้วดู trace: plugin ServiceAccount จะ patch serviceAccountName ใส่ให้"},
			Command: "kubectl -n NS run lab-pod --image=nginx:1.27",
			Hint:    i18n.Text{EN: "RequireLimits may refuse a pod without limits in some namespaces; its message says what to add.", TH: "RequireLimits อาจปฏิเสธ pod ที่ไม่มี limits ในบาง namespace ข้อความจะบอกว่าต้องเพิ่มอะไร"},
			How:     i18n.Text{EN: "A create of yours was stored after a mutating admission plugin patched it.", TH: "request create ของคุณถูกเก็บหลังจาก mutating admission plugin patch มัน"},
			Check:   admissionPatched,
		}, {
			ID:    "deny",
			Title: i18n.Text{EN: "Be denied by RBAC", TH: "ถูก RBAC ปฏิเสธ"},
			Do: i18n.Text{EN: "Ask for something that is not allowed, such as the pods of kube-system as your namespace's default service account, which has no binding there, and read the 403's message.",
				TH: "ขอสิ่งที่ไม่ได้รับอนุญาต เช่น pod ใน kube-system ในนาม service account default ของ namespace คุณ ซึ่งไม่มี binding ที่นั่น แล้วอ่านข้อความของ 403"},
			Command: "kubectl --as=system:serviceaccount:NS:default -n kube-system get pods",
			Hint: i18n.Text{EN: "--as asks the server to serve the request as that service account (you may impersonate the service accounts of your namespace); the request is still yours, so it counts. In a class, kubectl -n kube-system get pods as yourself is denied too; in local mode you are cluster-admin and nothing is denied to you.",
				TH: "--as ขอให้ server ทำคำขอในนาม service account นั้น (คุณ impersonate service account ใน namespace ของคุณได้) คำขอนั้นยังนับเป็นของคุณ ในห้องเรียน kubectl -n kube-system get pods ในนามตัวคุณเองก็ถูกปฏิเสธเช่นกัน ส่วนใน local mode คุณเป็น cluster-admin จึงไม่มีอะไรถูกปฏิเสธ"},
			How:   i18n.Text{EN: "A request of yours ended at the authorization stage with deny (HTTP 403).", TH: "request ของคุณจบที่ stage authorization ด้วย deny (HTTP 403)"},
			Check: rbacDenied,
		}},
	}
}

// nsOf matches traces in the student's namespace; it is filled in per
// Env by requested.
var nsOf TraceMatch = nil

// requested passes when a trace since the step began matches; a nil match
// (nsOf) stands for "in the student's namespace".
func requested(matches ...TraceMatch) Check {
	return func(_ context.Context, env *Env) (Result, error) {
		ms := make([]TraceMatch, 0, len(matches))
		for _, m := range matches {
			if m == nil {
				m = inNamespace(env.Namespace)
			}
			ms = append(ms, m)
		}
		if t := lastTrace(env, env.StepStarted, ms...); t != nil {
			return Result{Passed: true, Evidence: describe(t)}, nil
		}
		return Result{}, nil
	}
}

func anyOf(checks ...Check) Check {
	return func(ctx context.Context, env *Env) (Result, error) {
		for _, c := range checks {
			r, err := c(ctx, env)
			if err != nil || r.Passed {
				return r, err
			}
		}
		return Result{}, nil
	}
}

func watchOnPods(ctx context.Context, env *Env) (Result, error) {
	if w := lastWatch(env, env.StepStarted, podsWatch(env)); w != nil {
		return Result{Passed: true, Evidence: i18n.Text{EN: "watch on pods in " + w.Namespace + " opened at " + w.Time.Format("15:04:05"), TH: "watch pods ใน " + w.Namespace + " เปิดเมื่อ " + w.Time.Format("15:04:05")}}, nil
	}
	return requested(verb("watch"), resource("", "pods"), nsOf, code(200, 299))(ctx, env)
}

func podsWatch(env *Env) func(*Watch) bool {
	return func(w *Watch) bool { return w.APIGroup == "" && w.Resource == "pods" && w.Namespace == env.Namespace }
}

func watchDelivered(typ string) Check {
	return func(_ context.Context, env *Env) (Result, error) {
		isPods := podsWatch(env)
		w := lastWatch(env, env.LabStarted, func(w *Watch) bool { return isPods(w) && w.Events[typ] > 0 })
		if w == nil {
			return Result{}, nil
		}
		return Result{Passed: true, Evidence: i18n.Text{EN: typ + " sent on your watch of pods in " + w.Namespace + " at " + w.Last[typ].Format("15:04:05"), TH: "server ส่ง " + typ + " บน watch pods ใน " + w.Namespace + " ของคุณ เวลา " + w.Last[typ].Format("15:04:05")}}, nil
	}
}

// labelChanged passes when a write of the student's own to a pod of
// their namespace changed that pod's labels or annotations in etcd. A
// write that changed nothing stored (a label set to the value it had)
// does not pass, and the step says so.
func labelChanged(ctx context.Context, env *Env) (Result, error) {
	writes := func(t *pipeline.Trace) bool { return t.Name != "" }
	own := lastTrace(env, env.StepStarted, verb("patch", "update"), resource("", "pods"), inNamespace(env.Namespace), code(200, 299), writes)
	if own == nil {
		return Result{}, nil
	}
	names, err := env.World.LabelChanges(ctx, env.Namespace, env.StepRev)
	if err != nil {
		return Result{}, err
	}
	for _, t := range since(env.Traces, env.StepStarted) {
		if slices.Contains(names, t.Name) && t.Namespace == env.Namespace && t.Resource == "pods" && (t.Verb == "patch" || t.Verb == "update") && t.Code < 300 {
			return Result{Passed: true, Evidence: i18n.Text{EN: "labels or annotations of pod " + t.Name + " changed in etcd, by ", TH: "label หรือ annotation ของ pod " + t.Name + " ใน etcd เปลี่ยน โดย "}.Plus(describe(&t))}, nil
		}
	}
	when := own.Time.Format(time.TimeOnly)
	return Result{Why: i18n.Text{
		EN: "Your last change, " + own.Verb + " pods/" + own.Name + " at " + when + ", changed nothing stored: the pod already had those labels and annotations, so etcd kept the same resourceVersion and no watch saw a MODIFIED. Set a value the pod does not have yet.",
		TH: "การเปลี่ยนครั้งล่าสุดของคุณ " + own.Verb + " pods/" + own.Name + " เวลา " + when + " ไม่ได้เปลี่ยนสิ่งที่เก็บไว้เลย เพราะ pod มี label และ annotation ค่านั้นอยู่แล้ว etcd จึงคง resourceVersion เดิมและไม่มี watch ไหนเห็น MODIFIED ให้ตั้งค่าที่ pod ยังไม่มี",
	}}, nil
}

func resumed(_ context.Context, env *Env) (Result, error) {
	isPods := podsWatch(env)
	w := lastWatch(env, env.StepStarted, func(w *Watch) bool {
		return isPods(w) && w.ResourceVersion != "" && w.ResourceVersion != "0" && !w.Expired
	})
	if w == nil {
		return Result{}, nil
	}
	return Result{Passed: true, Evidence: i18n.Text{EN: "watch of pods in " + w.Namespace + " resumed from resourceVersion " + w.ResourceVersion, TH: "watch pods ใน " + w.Namespace + " resume จาก resourceVersion " + w.ResourceVersion}}, nil
}

// windowMoved passes once the pods watch cache's window has moved past
// the revision the step began at and the student changed a pod of their
// own since: the window is the whole class's, so another student's
// changes alone do not pass it.
func windowMoved(ctx context.Context, env *Env) (Result, error) {
	own := lastTrace(env, env.StepStarted, verb("create", "update", "patch", "delete"), resource("", "pods"), inNamespace(env.Namespace), code(200, 299))
	if own == nil {
		return Result{}, nil
	}
	start, err := env.World.WatchWindowStart(ctx)
	if err != nil || start <= env.StepRev {
		return Result{}, err
	}
	from, began := strconv.FormatInt(start, 10), strconv.FormatInt(env.StepRev, 10)
	return Result{Passed: true, Evidence: i18n.Text{
		EN: "the pods watch cache's window starts at resourceVersion " + from + ", past " + began + " where this step began; your last change: ",
		TH: "หน้าต่างของ watch cache ของ pods เริ่มที่ resourceVersion " + from + " เลย " + began + " ที่ขั้นนี้เริ่มแล้ว การเปลี่ยนครั้งล่าสุดของคุณ: ",
	}.Plus(describe(own))}, nil
}

// relistWithin is how soon after its 410 the timeline's watcher relists.
const relistWithin = 10 * time.Second

// relisted passes on a list of the student's pods after the 410: one of
// their own (or Run it live's) since the step began, or the timeline's
// watcher relisting on the 410 its resume got. The timeline also lists
// whenever its page opens, so only a list of its right after one of its
// watches got 410 counts.
func relisted(_ context.Context, env *Env) (Result, error) {
	list := []TraceMatch{verb("list"), resource("", "pods"), inNamespace(env.Namespace), code(200, 299)}
	notTimeline := func(t *pipeline.Trace) bool { return t.Source != pipeline.ViewTimeline }
	if t := lastTrace(env, env.StepStarted, append(list, notTimeline)...); t != nil {
		return Result{Passed: true, Evidence: describe(t)}, nil
	}
	isPods := podsWatch(env)
	for _, w := range env.Watches {
		if w.Source != pipeline.ViewTimeline || !w.Expired || !isPods(&w) || w.Time.Before(env.LabStarted) {
			continue
		}
		gone := w.Last["ERROR"]
		if gone.IsZero() {
			gone = w.Time // refused before it started: a plain 410 Status
		}
		after := func(t *pipeline.Trace) bool {
			return t.Source == pipeline.ViewTimeline && !t.Time.Before(gone) && t.Time.Sub(gone) <= relistWithin
		}
		if t := lastTrace(env, env.LabStarted, append(list, after)...); t != nil {
			return Result{Passed: true, Evidence: i18n.Text{EN: "the timeline's watcher relisted after its 410: ", TH: "watcher ของ timeline list ใหม่หลังได้ 410: "}.Plus(describe(t))}, nil
		}
	}
	return Result{}, nil
}

func expired(_ context.Context, env *Env) (Result, error) {
	w := lastWatch(env, env.StepStarted, func(w *Watch) bool { return w.Expired && ownPods(env, w) })
	if w == nil {
		return Result{}, nil
	}
	return Result{Passed: true, Evidence: i18n.Text{EN: "410 Expired on your watch of " + w.Resource + " from resourceVersion " + w.ResourceVersion, TH: "410 Expired บน watch " + w.Resource + " ของคุณจาก resourceVersion " + w.ResourceVersion}}, nil
}

func admissionPatched(_ context.Context, env *Env) (Result, error) {
	t := lastTrace(env, env.StepStarted, verb("create"), inNamespace(env.Namespace), code(200, 299), func(t *pipeline.Trace) bool {
		r := record(t, pipeline.StageMutatingAdmission, pipeline.Mutate)
		return r != nil && len(r.Patch) > 0
	})
	if t == nil {
		return Result{}, nil
	}
	r := record(t, pipeline.StageMutatingAdmission, pipeline.Mutate)
	return Result{Passed: true, Evidence: describe(t).Plus(i18n.Text{EN: "; " + r.Plugin + " patched " + string(r.Patch), TH: "; " + r.Plugin + " patch " + string(r.Patch)})}, nil
}

func rbacDenied(_ context.Context, env *Env) (Result, error) {
	t := lastTrace(env, env.StepStarted, code(403, 403), func(t *pipeline.Trace) bool {
		last := len(t.Records) - 1
		return last >= 0 && t.Records[last].Stage == pipeline.StageAuthorization && t.Records[last].Decision == pipeline.Deny
	})
	if t == nil {
		return Result{}, nil
	}
	return Result{Passed: true, Evidence: describe(t).Plus(i18n.Same("; authorization: deny"))}, nil
}
