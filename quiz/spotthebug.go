package quiz

import (
	"strings"

	"github.com/kubelab/kubelab/web/i18n"
)

// waitForPodReady is the lesson's snippet, one statement per line as the
// student marks them.
const waitForPodReady = "// A \"faster\" health-check script someone wrote\n" +
	"async function waitForPodReady(name: string) {\n" +
	"  while (true) {\n" +
	"    const pod = await readEtcdDirectly(`/registry/pods/default/${name}`);\n" +
	"    if (pod.status.phase === 'Running') return;\n" +
	"    await sleep(500);\n" +
	"  }\n" +
	"}"

// SnippetLines splits a snippet into its lines, numbered from 1 by the
// index plus one.
func SnippetLines(snippet string) []string {
	return strings.Split(snippet, "\n")
}

func spotTheBugQuiz() *Quiz {
	return &Quiz{
		ID: SpotTheBugQuizID,
		Title: i18n.Text{
			EN: "Spot the bug: waitForPodReady",
			TH: "หา bug: waitForPodReady",
		},
		Intro: i18n.Text{
			EN: "Someone wrote a \"faster\" health check. Mark each line that is wrong and say why; a line wrong for more than one reason takes a mark for each. Each bug you find is a point; each mark on a line that is fine, or with the wrong reason, takes one away.",
			TH: "มีคนเขียน health check ที่ \"เร็วกว่า\" ทำเครื่องหมายทุกบรรทัดที่ผิดและบอกว่าผิดเพราะอะไร บรรทัดที่ผิดมากกว่าหนึ่งเหตุผลให้ทำเครื่องหมายครบทุกเหตุผล bug ที่หาเจอได้ข้อละหนึ่งคะแนน ทำเครื่องหมายบรรทัดที่ไม่ผิด หรือเลือกเหตุผลผิด ถูกหักหนึ่งคะแนนต่อครั้ง",
		},
		Questions: []Question{{
			ID:   "wait-for-pod-ready",
			Kind: SpotTheBug,
			Prompt: i18n.Text{
				EN: "Which lines are buggy, and what is wrong with each?",
				TH: "บรรทัดไหนมี bug และแต่ละบรรทัดผิดเพราะอะไร?",
			},
			Snippet: waitForPodReady,
			Options: []Option{
				{ID: "etcd-direct", Text: i18n.Text{
					EN: "Reads etcd directly: it skips authentication and RBAC, and the value is protobuf, not a Pod object",
					TH: "อ่าน etcd ตรง ๆ: ข้าม authentication และ RBAC และค่าที่ได้คือ protobuf ไม่ใช่ object Pod",
				}},
				{ID: "polling", Text: i18n.Text{
					EN: "Polls on a timer instead of watching: a watch delivers the change as a MODIFIED event",
					TH: "poll ตาม timer แทนที่จะ watch: watch ส่งการเปลี่ยนแปลงมาเป็น event MODIFIED",
				}},
				{ID: "running-not-ready", Text: i18n.Text{
					EN: "Running is not Ready: a pod runs before its readiness probe passes; wait for the Ready condition",
					TH: "Running ไม่ใช่ Ready: pod รันก่อน readiness probe จะผ่าน ต้องรอ condition Ready",
				}},
				{ID: "no-timeout", Text: i18n.Text{
					EN: "No timeout: for a pod that never gets ready, or is deleted, the loop runs forever",
					TH: "ไม่มี timeout: ถ้า pod ไม่เคย ready หรือถูกลบ loop นี้จะวนไปตลอดกาล",
				}},
				{ID: "wrong-key", Text: i18n.Text{
					EN: "Wrong key: Pods are stored under /pods/<name>, without the /registry prefix or the namespace",
					TH: "key ผิด: Pod เก็บอยู่ใต้ /pods/<name> ไม่มี prefix /registry และไม่มี namespace",
				}},
				{ID: "interval", Text: i18n.Text{
					EN: "The interval is too long: checking every 50 ms instead of 500 ms would make it correct",
					TH: "interval นานเกินไป: เช็คทุก 50 ms แทน 500 ms จะทำให้ถูกต้อง",
				}},
				{ID: "await-in-loop", Text: i18n.Text{
					EN: "await cannot be used inside a while loop: the function must chain .then() calls instead",
					TH: "ใช้ await ข้างใน while loop ไม่ได้: ฟังก์ชันต้องต่อ .then() เป็นทอด ๆ แทน",
				}},
			},
			Bugs: []Bug{
				{
					ID: "reads-etcd", Lines: []int{4, 5}, Reason: "etcd-direct",
					Explanation: i18n.Text{
						EN: `readEtcdDirectly gets raw protobuf behind a k8s\0 header: there is no convenient pod.status.phase to read without a full protobuf decoder, and going around the API server skips authentication and RBAC, which exist for a reason (admission never sees a read, so there is none to skip). (The key itself is right: /registry/<resource>/<namespace>/<name>.)`,
						TH: `readEtcdDirectly ได้ protobuf ดิบหลัง header k8s\0 ไม่มี pod.status.phase สะดวก ๆ ให้อ่านถ้าไม่เขียน protobuf decoder เต็มก่อน และการอ้อม API server ข้าม authentication กับ RBAC ที่มีอยู่ด้วยเหตุผล (admission ไม่เคยเห็นการอ่าน จึงไม่มีให้ข้าม) (ตัว key ถูกแล้ว: /registry/<resource>/<namespace>/<name>)`,
					},
					Proof: Proof{Href: anchorEtcd, Label: i18n.Text{EN: "a Pod's raw bytes in etcd, live", TH: "byte ดิบของ Pod ใน etcd แบบสด ๆ"}},
				},
				{
					ID: "polls", Lines: []int{3, 6}, Reason: "polling",
					Explanation: i18n.Text{
						EN: "Even pointed at the real API server this is a poll, every 500 ms whether or not anything changed; a shorter interval only polls harder. The proven pattern is a watch, which delivers the moment the pod changes as a real MODIFIED event, with no interval to tune and no change missed between polls.",
						TH: "แม้แก้ให้คุยกับ API server จริงแล้ว นี่ก็ยังเป็น poll ทุก 500 ms ไม่ว่าอะไรจะเปลี่ยนหรือไม่ ลด interval ก็แค่ poll หนักขึ้น pattern ที่พิสูจน์แล้วคือ watch ที่ส่งมาตรงจังหวะที่ pod เปลี่ยน เป็น event MODIFIED จริง ไม่มี interval ให้ tune และไม่พลาดการเปลี่ยนแปลงระหว่างรอบ poll",
					},
					Proof: Proof{Href: anchorWatch, Label: i18n.Text{EN: "a watch and its MODIFIED event, live", TH: "watch และ event MODIFIED แบบสด ๆ"}},
				},
				{
					ID: "not-ready", Lines: []int{5}, Reason: "running-not-ready",
					Explanation: i18n.Text{
						EN: "phase Running means the pod is bound to a node and at least one container has started; it says nothing about the readiness probe. A function named waitForPodReady should wait until status.conditions has type Ready with status True, which is what kubectl wait --for=condition=Ready checks.",
						TH: "phase Running แปลว่า pod ถูกผูกกับ node แล้วและมี container อย่างน้อยหนึ่งตัวเริ่มทำงาน ไม่ได้บอกอะไรเรื่อง readiness probe ฟังก์ชันชื่อ waitForPodReady ควรรอจน status.conditions มี type Ready ที่ status เป็น True ซึ่งคือสิ่งที่ kubectl wait --for=condition=Ready ตรวจ",
					},
					Proof: Proof{Href: anchorWatch, Label: i18n.Text{EN: "a pod's status on a watch, live", TH: "status ของ pod บน watch แบบสด ๆ"}},
				},
				{
					ID: "loops-forever", Lines: []int{3}, Reason: "no-timeout",
					Explanation: i18n.Text{
						EN: "while (true) has no way out but success: a pod that never becomes ready, or is deleted, keeps the caller waiting forever. Give the wait a deadline (a watch with timeoutSeconds, or a context with a timeout) and report why it ended.",
						TH: "while (true) ไม่มีทางออกนอกจากสำเร็จ: pod ที่ไม่เคย ready หรือถูกลบ จะทำให้ผู้เรียกรอไปตลอดกาล ให้การรอมี deadline (watch ที่มี timeoutSeconds หรือ context ที่มี timeout) แล้วบอกว่าจบเพราะอะไร",
					},
					Proof: Proof{Href: anchorWatch, Label: i18n.Text{EN: "a watch with timeoutSeconds, live", TH: "watch ที่มี timeoutSeconds แบบสด ๆ"}},
				},
			},
			Explanation: i18n.Text{
				EN: "Four faults, two big and two smaller: reading etcd directly (line 4, and the pod.status.phase it pretends to get on line 5), polling instead of watching (the loop on line 3 and the sleep on line 6), taking Running for Ready (line 5), and a loop with no timeout (line 3). A line can hold more than one bug: line 3 is both the poll and the loop with no timeout, and each is found by a mark of its own.",
				TH: "มีข้อผิดสี่ข้อ ใหญ่สองข้อและเล็กสองข้อ: อ่าน etcd ตรง ๆ (บรรทัด 4 และ pod.status.phase ที่ทำเหมือนอ่านได้ในบรรทัด 5) poll แทนที่จะ watch (loop บรรทัด 3 และ sleep บรรทัด 6) ถือว่า Running คือ Ready (บรรทัด 5) และ loop ที่ไม่มี timeout (บรรทัด 3) บรรทัดหนึ่งมี bug ได้มากกว่าหนึ่งข้อ: บรรทัด 3 เป็นทั้งการ poll และ loop ที่ไม่มี timeout และแต่ละข้อหาเจอได้ด้วยเครื่องหมายของตัวเอง",
			},
			Proof: Proof{Href: anchorEtcd, Label: i18n.Text{EN: "etcd's raw bytes, and a live watch", TH: "byte ดิบใน etcd และ watch แบบสด ๆ"}},
		}},
	}
}
