package quiz

import "strings"

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
		Title: Text{
			EN: "Spot the bug: waitForPodReady",
			TH: "หา bug: waitForPodReady",
		},
		Intro: Text{
			EN: "Someone wrote a \"faster\" health check. Mark each line that is wrong and say why. Each bug you find is a point; each mark on a line that is fine, or with the wrong reason, takes one away.",
			TH: "มีคนเขียน health check ที่ \"เร็วกว่า\" ทำเครื่องหมายทุกบรรทัดที่ผิดและบอกว่าผิดเพราะอะไร bug ที่หาเจอได้ข้อละหนึ่งคะแนน ทำเครื่องหมายบรรทัดที่ไม่ผิด หรือเลือกเหตุผลผิด ถูกหักหนึ่งคะแนนต่อครั้ง",
		},
		Questions: []Question{{
			ID:   "wait-for-pod-ready",
			Kind: SpotTheBug,
			Prompt: Text{
				EN: "Which lines are buggy, and what is wrong with each?",
				TH: "บรรทัดไหนมี bug และแต่ละบรรทัดผิดเพราะอะไร?",
			},
			Snippet: waitForPodReady,
			Options: []Option{
				{ID: "etcd-direct", Text: Text{
					EN: "Reads etcd directly: it bypasses the API server's authentication and RBAC, and the stored value is raw protobuf, not a Pod object",
					TH: "อ่าน etcd ตรง ๆ: ข้าม authentication และ RBAC ของ API server และค่าที่เก็บคือ protobuf ดิบ ไม่ใช่ object Pod",
				}},
				{ID: "polling", Text: Text{
					EN: "Polls on a timer instead of watching: a watch delivers the change as a MODIFIED event over one held-open connection",
					TH: "poll ตาม timer แทนที่จะ watch: watch ส่งการเปลี่ยนแปลงมาเป็น event MODIFIED ผ่าน connection เดียวที่ค้างเปิดไว้",
				}},
				{ID: "wrong-key", Text: Text{
					EN: "Wrong key: Pods are stored under /pods/<name>, without /registry or the namespace",
					TH: "key ผิด: Pod เก็บอยู่ใต้ /pods/<name> ไม่มี /registry และ namespace",
				}},
				{ID: "interval", Text: Text{
					EN: "The interval is too long: checking every 50 ms instead of 500 ms would make it correct",
					TH: "interval นานเกินไป: เช็คทุก 50 ms แทน 500 ms จะทำให้ถูกต้อง",
				}},
				{ID: "await-in-loop", Text: Text{
					EN: "await cannot be used inside a while loop",
					TH: "ใช้ await ข้างใน while loop ไม่ได้",
				}},
			},
			Bugs: []Bug{
				{
					ID: "reads-etcd", Lines: []int{4, 5}, Reason: "etcd-direct",
					Explanation: Text{
						EN: `readEtcdDirectly gets raw protobuf behind a k8s\0 header: there is no convenient pod.status.phase to read without a full protobuf decoder, and going around the API server skips authentication and RBAC, which exist for a reason (admission never sees a read, so there is none to skip). (The key itself is right: /registry/<resource>/<namespace>/<name>.)`,
						TH: `readEtcdDirectly ได้ protobuf ดิบหลัง header k8s\0 ไม่มี pod.status.phase สะดวก ๆ ให้อ่านถ้าไม่เขียน protobuf decoder เต็มก่อน และการอ้อม API server ข้าม authentication กับ RBAC ที่มีอยู่ด้วยเหตุผล (admission ไม่เคยเห็นการอ่าน จึงไม่มีให้ข้าม) (ตัว key ถูกแล้ว: /registry/<resource>/<namespace>/<name>)`,
					},
					Proof: Proof{Href: anchorEtcd, Label: Text{EN: "a Pod's raw bytes in etcd, live", TH: "byte ดิบของ Pod ใน etcd แบบสด ๆ"}},
				},
				{
					ID: "polls", Lines: []int{3, 6}, Reason: "polling",
					Explanation: Text{
						EN: "Even pointed at the real API server this is a poll, every 500 ms whether or not anything changed; a shorter interval only polls harder. The proven pattern is a watch, which delivers the moment status.phase becomes Running as a real MODIFIED event, with no interval to tune and no change missed between polls.",
						TH: "แม้แก้ให้คุยกับ API server จริงแล้ว นี่ก็ยังเป็น poll ทุก 500 ms ไม่ว่าอะไรจะเปลี่ยนหรือไม่ ลด interval ก็แค่ poll หนักขึ้น pattern ที่พิสูจน์แล้วคือ watch ที่ส่งมาตรงจังหวะที่ status.phase กลายเป็น Running เป็น event MODIFIED จริง ไม่มี interval ให้ tune และไม่พลาดการเปลี่ยนแปลงระหว่างรอบ poll",
					},
					Proof: Proof{Href: anchorWatch, Label: Text{EN: "a watch and its MODIFIED event, live", TH: "watch และ event MODIFIED แบบสด ๆ"}},
				},
			},
			Explanation: Text{
				EN: "Two real problems: reading etcd directly (line 4, and the pod.status.phase it pretends to get on line 5) and polling instead of watching (the loop on line 3 and the sleep on line 6).",
				TH: "มีปัญหาจริงสองข้อ: อ่าน etcd ตรง ๆ (บรรทัด 4 และ pod.status.phase ที่ทำเหมือนอ่านได้ในบรรทัด 5) และ poll แทนที่จะ watch (loop บรรทัด 3 และ sleep บรรทัด 6)",
			},
			Proof: Proof{Href: anchorEtcd, Label: Text{EN: "etcd's raw bytes, and a live watch", TH: "byte ดิบใน etcd และ watch แบบสด ๆ"}},
		}},
	}
}
