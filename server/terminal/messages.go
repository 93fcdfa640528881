package terminal

import (
	"fmt"
	"strings"

	"github.com/kubelab/kubelab/web/i18n"
)

// messages are what the terminal itself says, in each language of the
// site; kubectl's and etcdctl's own output stays theirs. %s is the word
// of the command line the message is about.
var messages = i18n.Catalog[map[string]string]{
	i18n.English: {
		"shell.operator":     "%s: there is no shell here, so no pipes, redirects or several commands on a line. Run one command at a time; for `apply -f -` paste the YAML into the stdin box below the terminal.",
		"shell.expand":       "%s: there is no shell here, so no variables or command substitution. Type the value itself.",
		"shell.unterminated": "the line ends inside a quote or after a backslash: close the quote.",
		"shell.lines":        "there is no shell here, so one command at a time: run the lines one by one.",
		"notkubectl":         "%s: this terminal runs kubectl and etcdctl only (there is no shell). Try `kubectl get pods`.",
		"cmd.edit":           "%s opens an editor on the server. Use `kubectl apply -f -` with the YAML pasted into the stdin box, or `kubectl patch`.",
		"cmd.exec":           "%s needs a container, and kubelab's simulated node runs none; no command here runs a program.",
		"cmd.portforward":    "%s opens a port on the server; kubelab serves the API to you already, at this page's address.",
		"cmd.cp":             "kubectl cp copies files to and from containers; kubelab's simulated node runs none.",
		"cmd.plugin":         "%s: plugins are other programs, and this terminal runs none.",
		"cmd.config":         "kubectl config reads and writes kubeconfig files; here you are always yourself, on this kubelab. For your own kubectl, see \"Use your own kubectl\".",
		"cmd.diff":           "kubectl diff runs a diff program on the server. Preview a change with `kubectl apply --dry-run=server -o yaml -f -` instead.",
		"cmd.wait":           "%s waits on the server's signals, which a shared server cannot hand to one student. Watch instead: `kubectl get pods -w`.",
		"cmd.logs":           "kubectl logs reads a container's output, and kubelab's simulated node runs no containers.",
		"cmd.completion":     "Tab completes here already; kubectl completion is for your own shell.",
		"flag.server":        "%s: this terminal talks to this kubelab only.",
		"flag.kubeconfig":    "%s: there is no kubeconfig here, you are always yourself on this kubelab. For your own kubectl, see \"Use your own kubectl\".",
		"flag.token":         "%s: commands here carry your sign-in, not other credentials. To act as someone else, use --as, which RBAC decides.",
		"flag.cachedir":      "%s: nothing is cached on the server's disk.",
		"flag.profile":       "%s writes files on the server.",
		"flag.verbose":       "%s: kubectl's log goes to the server's log. The tracer shows each of your requests instead.",
		"flag.kustomize":     "%s reads a directory on the server. Paste the rendered YAML into the stdin box and use `-f -`.",
		"flag.filename":      "-f %s: the terminal cannot read files (they would be the server's). Paste the YAML into the stdin box and use `-f -`.",
		"flag.url":           "-f %s: the terminal reaches no other server. Paste the YAML into the stdin box and use `-f -`.",
		"flag.outputfile":    "-o %s reads a template file on the server. Put the template on the command line: -o jsonpath='{...}' or -o go-template='{{...}}'.",
		"flag.file":          "%s names a file or directory, which would be the server's. Paste the content into the stdin box, or give it as a literal.",
		"flag.replaceforce":  "kubectl replace --force copies your input to a file on the server. Delete, then `kubectl create -f -`.",
		"cap.commands":       "you already have %s commands running (in this or another tab): stop one with Ctrl-C first.",
		"cap.total":          "the server is running %s commands for the class right now, the most it runs at once: try again in a moment.",
		"cap.output":         "stopped: the command wrote more than %s; narrow it (a selector, -o name, --chunk-size).",
		"cap.time":           "stopped: commands here run for at most %s.",
		"cap.memory":         "stopped: the command needed more than %s of memory; narrow what it prints (a selector, a simpler template).",
		"shell.program":      "%s: not a program of this terminal's shell, which runs %s, and the shell's own builtins (echo, printf, test, read, ...).",
		"shell.builtin":      "%s looks names up among the server's files, which this shell does not show.",
		"shell.procsubst":    "process substitution, <(...) and >(...), is not available here: use a pipe, or a file in your scratch directory.",
		"shell.coproc":       "coproc is not available here.",
		"cap.cpu":            "stopped: the command used more than %s of processor time; a loop or a template that runs that long is stopped.",
		"cap.stdin":          "the stdin box holds more than %s; apply it in parts.",
		"etcd.classroom":     "etcdctl reads etcd directly, past authentication and RBAC, so in a class it would show every student's objects. The etcd inspector on the lesson's pages shows your namespace's keys.",
		"etcd.usage":         "etcdctl here reads the embedded member: etcdctl get KEY [--prefix] [--keys-only] [--print-value-only] [--limit=N] [--rev=N] [-w json], etcdctl watch KEY [--prefix] [--rev=N], etcdctl endpoint status [-w table].",
		"etcd.readonly":      "%s: this terminal's etcdctl only reads (get, watch, endpoint status); writes go through the API, so that the pipeline and the watch cache see them.",
		"etcd.flag":          "%s: the terminal's etcdctl reads the embedded member only: leave the flag out (--endpoints may name the member's own address).",
		"interrupted":        "^C",
		"signedout":          "you have signed out, so this terminal has stopped: sign in again to use it.",
	},
	i18n.Thai: {
		"shell.operator":     "%s: ที่นี่ไม่มีเชลล์ จึงใช้ไพป์ การเปลี่ยนทิศทาง หรือหลายคำสั่งในบรรทัดเดียวไม่ได้ รันทีละคำสั่ง ส่วน `apply -f -` ให้วาง YAML ในช่อง stdin ใต้เทอร์มินัล",
		"shell.expand":       "%s: ที่นี่ไม่มีเชลล์ จึงใช้ตัวแปรหรือการแทนคำสั่งไม่ได้ พิมพ์ค่านั้นลงไปตรง ๆ",
		"shell.unterminated": "บรรทัดจบในเครื่องหมายคำพูดหรือหลังแบ็กสแลช: ปิดเครื่องหมายคำพูดก่อน",
		"shell.lines":        "ที่นี่ไม่มีเชลล์ จึงรันได้ทีละคำสั่ง: รันทีละบรรทัด",
		"notkubectl":         "%s: เทอร์มินัลนี้รันได้เฉพาะ kubectl และ etcdctl (ไม่มีเชลล์) ลอง `kubectl get pods`",
		"cmd.edit":           "%s เปิดโปรแกรมแก้ไขบนเซิร์ฟเวอร์ ให้ใช้ `kubectl apply -f -` โดยวาง YAML ในช่อง stdin หรือใช้ `kubectl patch`",
		"cmd.exec":           "%s ต้องมีคอนเทนเนอร์ แต่โหนดจำลองของ kubelab ไม่ได้รันคอนเทนเนอร์ใดเลย และไม่มีคำสั่งใดที่นี่รันโปรแกรม",
		"cmd.portforward":    "%s เปิดพอร์ตบนเซิร์ฟเวอร์ แต่ kubelab ให้บริการ API แก่คุณอยู่แล้วที่ที่อยู่ของหน้านี้",
		"cmd.cp":             "kubectl cp คัดลอกไฟล์เข้าออกคอนเทนเนอร์ แต่โหนดจำลองของ kubelab ไม่มีคอนเทนเนอร์",
		"cmd.plugin":         "%s: ปลั๊กอินคือโปรแกรมอื่น และเทอร์มินัลนี้ไม่รันโปรแกรมอื่น",
		"cmd.config":         "kubectl config อ่านและเขียนไฟล์ kubeconfig แต่ที่นี่คุณเป็นตัวคุณเองบน kubelab นี้เสมอ ถ้าจะใช้ kubectl ของคุณเอง ดู \"ใช้ kubectl ของคุณเอง\"",
		"cmd.diff":           "kubectl diff รันโปรแกรม diff บนเซิร์ฟเวอร์ ให้ดูตัวอย่างการเปลี่ยนแปลงด้วย `kubectl apply --dry-run=server -o yaml -f -` แทน",
		"cmd.wait":           "%s รอสัญญาณของเซิร์ฟเวอร์ ซึ่งเซิร์ฟเวอร์ที่ใช้ร่วมกันมอบให้นักเรียนคนเดียวไม่ได้ ให้เฝ้าดูแทน: `kubectl get pods -w`",
		"cmd.logs":           "kubectl logs อ่านเอาต์พุตของคอนเทนเนอร์ แต่โหนดจำลองของ kubelab ไม่ได้รันคอนเทนเนอร์",
		"cmd.completion":     "กด Tab เพื่อเติมคำได้ที่นี่อยู่แล้ว kubectl completion มีไว้สำหรับเชลล์ของคุณเอง",
		"flag.server":        "%s: เทอร์มินัลนี้คุยกับ kubelab นี้เท่านั้น",
		"flag.kubeconfig":    "%s: ที่นี่ไม่มี kubeconfig คุณเป็นตัวคุณเองบน kubelab นี้เสมอ ถ้าจะใช้ kubectl ของคุณเอง ดู \"ใช้ kubectl ของคุณเอง\"",
		"flag.token":         "%s: คำสั่งที่นี่ใช้การลงชื่อเข้าใช้ของคุณ ไม่ใช้ข้อมูลรับรองอื่น ถ้าจะทำในนามคนอื่น ใช้ --as ซึ่ง RBAC เป็นผู้ตัดสิน",
		"flag.cachedir":      "%s: ไม่มีสิ่งใดถูกแคชไว้บนดิสก์ของเซิร์ฟเวอร์",
		"flag.profile":       "%s เขียนไฟล์บนเซิร์ฟเวอร์",
		"flag.verbose":       "%s: บันทึกของ kubectl จะไปอยู่ในบันทึกของเซิร์ฟเวอร์ ให้ดูคำขอแต่ละรายการของคุณในตัวติดตาม (tracer) แทน",
		"flag.kustomize":     "%s อ่านไดเรกทอรีบนเซิร์ฟเวอร์ ให้วาง YAML ที่เรนเดอร์แล้วในช่อง stdin และใช้ `-f -`",
		"flag.filename":      "-f %s: เทอร์มินัลอ่านไฟล์ไม่ได้ (จะเป็นไฟล์ของเซิร์ฟเวอร์) ให้วาง YAML ในช่อง stdin และใช้ `-f -`",
		"flag.url":           "-f %s: เทอร์มินัลไม่ติดต่อเซิร์ฟเวอร์อื่น ให้วาง YAML ในช่อง stdin และใช้ `-f -`",
		"flag.outputfile":    "-o %s อ่านไฟล์เทมเพลตบนเซิร์ฟเวอร์ ให้ใส่เทมเพลตในบรรทัดคำสั่ง: -o jsonpath='{...}' หรือ -o go-template='{{...}}'",
		"flag.file":          "%s ระบุไฟล์หรือไดเรกทอรี ซึ่งจะเป็นของเซิร์ฟเวอร์ ให้วางเนื้อหาในช่อง stdin หรือใส่เป็นค่าตรง ๆ",
		"flag.replaceforce":  "kubectl replace --force คัดลอกอินพุตของคุณไปเป็นไฟล์บนเซิร์ฟเวอร์ ให้ลบก่อนแล้วใช้ `kubectl create -f -`",
		"cap.commands":       "คุณมีคำสั่งที่กำลังรันอยู่แล้ว %s คำสั่ง (ในแท็บนี้หรือแท็บอื่น) กด Ctrl-C หยุดสักคำสั่งก่อน",
		"cap.total":          "ตอนนี้เซิร์ฟเวอร์กำลังรัน %s คำสั่งให้ทั้งชั้นเรียน ซึ่งเป็นจำนวนมากที่สุดที่รันพร้อมกันได้ โปรดลองใหม่อีกสักครู่",
		"cap.output":         "หยุดแล้ว: คำสั่งเขียนผลลัพธ์เกิน %s ให้จำกัดให้แคบลง (ตัวเลือก selector, -o name, --chunk-size)",
		"cap.time":           "หยุดแล้ว: คำสั่งที่นี่รันได้นานสุด %s",
		"cap.memory":         "หยุดแล้ว: คำสั่งต้องใช้หน่วยความจำเกิน %s ให้จำกัดสิ่งที่พิมพ์ให้แคบลง (ใช้ selector หรือเทมเพลตที่ง่ายกว่า)",
		"shell.program":      "%s: ไม่ใช่โปรแกรมของเชลล์ในเทอร์มินัลนี้ ซึ่งรันได้เฉพาะ %s และคำสั่งในตัวของเชลล์ (echo, printf, test, read, ...)",
		"shell.builtin":      "%s ค้นหาชื่อในไฟล์ของเซิร์ฟเวอร์ ซึ่งเชลล์นี้ไม่แสดง",
		"shell.procsubst":    "ที่นี่ใช้ process substitution, <(...) และ >(...) ไม่ได้ ให้ใช้ไพป์ หรือไฟล์ในไดเรกทอรี scratch ของคุณ",
		"shell.coproc":       "ที่นี่ใช้ coproc ไม่ได้",
		"cap.cpu":            "หยุดแล้ว: คำสั่งใช้เวลาประมวลผลเกิน %s ลูปหรือเทมเพลตที่ทำงานนานขนาดนั้นจะถูกหยุด",
		"cap.stdin":          "ช่อง stdin มีข้อมูลเกิน %s ให้แบ่ง apply เป็นส่วน ๆ",
		"etcd.classroom":     "etcdctl อ่าน etcd โดยตรง ข้ามการยืนยันตัวตนและ RBAC ในชั้นเรียนจึงจะเห็นออบเจ็กต์ของนักเรียนทุกคน ตัวตรวจ etcd (inspector) ในหน้าบทเรียนแสดงคีย์ในเนมสเปซของคุณ",
		"etcd.usage":         "etcdctl ที่นี่อ่านสมาชิก etcd ที่ฝังอยู่: etcdctl get KEY [--prefix] [--keys-only] [--print-value-only] [--limit=N] [--rev=N] [-w json], etcdctl watch KEY [--prefix] [--rev=N], etcdctl endpoint status [-w table]",
		"etcd.readonly":      "%s: etcdctl ของเทอร์มินัลนี้อ่านได้อย่างเดียว (get, watch, endpoint status) การเขียนต้องผ่าน API เพื่อให้ไปป์ไลน์และ watch cache เห็น",
		"etcd.flag":          "%s: etcdctl ของเทอร์มินัลอ่านได้เฉพาะสมาชิก etcd ที่ฝังอยู่ ให้ละแฟล็กนี้ไว้ (--endpoints ระบุได้เฉพาะที่อยู่ของสมาชิกนั้นเอง)",
		"interrupted":        "^C",
		"signedout":          "คุณออกจากระบบแล้ว เทอร์มินัลนี้จึงหยุดทำงาน ลงชื่อเข้าใช้อีกครั้งเพื่อใช้งาน",
	},
}

// say renders r in lang.
func say(lang i18n.Lang, r *refusal) string {
	format := messages.In(lang)[r.key]
	if format == "" {
		return r.key
	}
	if len(r.args) == 0 || !strings.Contains(format, "%") {
		return format
	}
	return fmt.Sprintf(format, r.args...)
}
