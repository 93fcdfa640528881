package labhttp

import "github.com/kubelab/kubelab/web/i18n"

// uiText is the pages' own words in one language.
type uiText struct {
	Lang                                                          i18n.Lang
	LabsTitle, LabsIntro, LabOf, Steps, StepsDone, Start, Started string
	Done, Todo, Current, Passed, Check, Checking, Hint, How, Try  string
	Lesson, LabLink, Namespace, YourAnswer, Submit, Wrong, Right  string
	Tries, Reset, ResetHelp, ResetDone, Prev, Next, AllLabs       string
	Dashboard, DashboardIntro, Student, Where, Quizzes, Stuck     string
	Updated, NoStudents, StuckAfter, SigninTitle, SigninHelp      string
	EtcdFull, EtcdReclaiming, EtcdLiveData                        string
	Token, SignIn, TokenMissing, TokenWrong, TokenNotInstructor   string
	Forbidden, ForbiddenBody, Back, LabsDone, Finished, Evidence  string
	Live, NotStarted                                              string
	// The instructor's room: names, attendance, relative times and the
	// drill-down into one student.
	User, NamespaceCol, JoinedAgo, NoProgress, JustNow, MinAgo, HoursAgo, DaysAgo string
	// A duration in words: "%d h", "%d min", "%d s".
	Hours, Minutes, Seconds                                                       string
	Details, StudentOf, ClassLink, StepsHeading, RequestsHeading, AttemptsHeading string
	NoRequests, NoAttempts, NoLabs, AttemptN, Score, When, Request, Code, Joined  string
	RequestsHelp, StudentNotFound                                                 string
	// A lab's end, doing it again, and why a step waits.
	LabDone, YouProved, NextLab, LastLab, DoAgain, DoAgainHelp, DoneBefore, WhyNot string
	OpenIt                                                                         string
	// The class a student joined, as the drill-down names it.
	Class string
	// SameName flags a display name that reads as another student's.
	SameName string
	// RemoveStudent, RemoveWarning (a format with the student's name) and
	// RemoveNow are the drill-down's button that takes a student out of
	// the class, behind a second click, since it cannot be undone.
	RemoveStudent, RemoveWarning, RemoveNow string
	// The room's summary (each state a filter), its search, its orders,
	// and the flag of a student who joined long ago and has not started.
	Working, AllDone, Idle, FilterBy, Search, SortBy               string
	SortAttention, SortName, SortProgress, SortActivity, SortScore string
}

var texts = i18n.Catalog[uiText]{
	i18n.English: {
		Lang: "en", LabsTitle: "Labs", LabsIntro: "Seven hands-on labs, in the order the lesson's pages link them. Each step is checked from what really happened on the server — your requests' traces, the watch events it sent you, the state in etcd — so kubectl, curl and the browser all count.",
		LabOf: "Lab %d of %d", Steps: "steps", StepsDone: "%d of %d steps done", Start: "Start this lab", Started: "In progress",
		Done: "Done", Todo: "To do", Current: "Now", Passed: "Passed", Check: "Check now", Checking: "Steps are checked by themselves as you work; this checks again right away.",
		Hint: "Hint", How: "How this is checked", Try: "A way to do it", Lesson: "Lesson section", LabLink: "Practise it in a lab",
		Namespace: "Your namespace", YourAnswer: "Your answer", Submit: "Answer", Wrong: "Not quite — try again.", Right: "Right!",
		Tries: "tries", Reset: "Reset my namespace", ResetHelp: "Deletes everything the labs created in your namespace and makes the lesson's pods again. Your namespace, its default ServiceAccount and your RoleBinding stay; so does your progress.",
		ResetDone: "Your namespace is as kubelab made it.", Prev: "Previous lab", Next: "Next lab", AllLabs: "All labs",
		Dashboard: "Class dashboard", DashboardIntro: "Live progress of the class: who is on which lab step, quiz scores, and who has made no progress for a while.",
		Student: "Student", Where: "Lab step", Quizzes: "Quizzes", Stuck: "stuck", Updated: "Last progress", NoStudents: "No student has joined or started a lab yet.",
		StuckAfter:     "Stuck means no progress for %s.",
		EtcdFull:       "etcd is out of space (%s): it refuses every write in the class, students' and yours.",
		EtcdReclaiming: "kubelab is compacting and defragmenting it; writes work again within a minute.",
		EtcdLiveData:   "What the class stores now takes nearly all of etcd's quota (%s of %s), so compaction frees nothing: delete objects (kubectl delete, or a student's Reset) and kubelab lets writes in again as soon as there is room.",
		SigninTitle:    "Instructor sign-in", SigninHelp: "Paste the instructor token (KUBELAB_INSTRUCTOR_TOKEN) to open the dashboard in this browser.",
		Token: "Instructor token", SignIn: "Open the dashboard", TokenMissing: "Paste a token first.", TokenWrong: "That token is not valid.", TokenNotInstructor: "That token is not an instructor's or an admin's.",
		Forbidden: "For instructors only", ForbiddenBody: "The class dashboard shows every student's progress, so only instructors and admins may open it. Your own progress is on the labs page.",
		Back: "Back", LabsDone: "labs done", Finished: "finished", Evidence: "What the server saw", Live: "live", NotStarted: "not started",
		User: "user", NamespaceCol: "namespace", JoinedAgo: "joined", NoProgress: "no progress yet", JustNow: "just now",
		MinAgo: "%d min ago", HoursAgo: "%d h ago", DaysAgo: "%d d ago",
		Hours: "%d h", Minutes: "%d min", Seconds: "%d s",
		Details: "Details of %s", StudentOf: "Student %s", ClassLink: "Class dashboard", StepsHeading: "Lab steps",
		RequestsHeading: "Recent requests", AttemptsHeading: "Quiz attempts", NoRequests: "No requests yet.", NoAttempts: "No quiz submitted yet.",
		NoLabs: "No lab started yet.", AttemptN: "Attempt %d", Score: "Score", When: "When", Request: "Request", Code: "Status", Joined: "Joined",
		RequestsHelp:    "The student's most recent requests to the API server, newest first, as the tracer recorded them.",
		StudentNotFound: "No student of that name has joined, started a lab or taken a quiz.",
		LabDone:         "Lab done", YouProved: "What you proved, from what the server saw:", NextLab: "Next lab", LastLab: "That was the last lab: back to all labs",
		DoAgain: "Do it again", DoAgainHelp: "Starts this lab's steps over; they count only what you do from now on. That you finished it stays on record.",
		DoneBefore: "Finished %d time(s) before.", WhyNot: "Not yet",
		OpenIt: "This step is checked in the browser, not from the terminal: open the etcd inspector",
		Class:  "Class", SameName: "same name as",
		RemoveStudent: "Remove from the class",
		RemoveWarning: "%s's sign-ins and kubeconfigs stop working at once, their namespace and everything in it is deleted, and their lab progress and quiz attempts are dropped: the room and the grader no longer list them. Their seat is free for a new join; signing in again makes a new student. This cannot be undone.",
		RemoveNow:     "Remove now",
		Working:       "working", AllDone: "done", Idle: "no lab started since joining",
		FilterBy: "Show only", Search: "Find a student", SortBy: "Order",
		SortAttention: "needs help first", SortName: "name", SortProgress: "progress", SortActivity: "last activity", SortScore: "quiz score",
	},
	i18n.Thai: {
		Lang: "th", LabsTitle: "แล็บ", LabsIntro: "แล็บลงมือทำเจ็ดชุด เรียงตามลำดับที่หน้าบทเรียนลิงก์ถึง ทุกขั้นตรวจจากสิ่งที่เกิดขึ้นจริงบน server ทั้ง trace ของ request ของคุณ event ของ watch ที่ server ส่งให้คุณ และ state ใน etcd ดังนั้นจะใช้ kubectl, curl หรือเบราว์เซอร์ก็นับเหมือนกัน",
		LabOf: "แล็บที่ %d จาก %d", Steps: "ขั้น", StepsDone: "ทำแล้ว %d จาก %d ขั้น", Start: "เริ่มแล็บนี้", Started: "กำลังทำ",
		Done: "เสร็จแล้ว", Todo: "ยังไม่ทำ", Current: "ตอนนี้", Passed: "ผ่าน", Check: "ตรวจเดี๋ยวนี้", Checking: "ขั้นต่าง ๆ ถูกตรวจเองระหว่างที่คุณทำ ปุ่มนี้สั่งตรวจอีกครั้งทันที",
		Hint: "คำใบ้", How: "ตรวจอย่างไร", Try: "วิธีหนึ่งที่ทำได้", Lesson: "ส่วนของบทเรียน", LabLink: "ฝึกในแล็บ",
		Namespace: "namespace ของคุณ", YourAnswer: "คำตอบของคุณ", Submit: "ตอบ", Wrong: "ยังไม่ใช่ ลองอีกครั้ง", Right: "ถูกต้อง!",
		Tries: "ครั้ง", Reset: "รีเซ็ต namespace ของฉัน", ResetHelp: "ลบทุกอย่างที่แล็บสร้างไว้ใน namespace ของคุณแล้วสร้าง pod ของบทเรียนใหม่ namespace, ServiceAccount default และ RoleBinding ของคุณยังอยู่ ความคืบหน้าก็ยังอยู่",
		ResetDone: "namespace ของคุณกลับเป็นแบบที่ kubelab สร้างไว้แล้ว", Prev: "แล็บก่อนหน้า", Next: "แล็บถัดไป", AllLabs: "แล็บทั้งหมด",
		Dashboard: "แดชบอร์ดของชั้นเรียน", DashboardIntro: "ความคืบหน้าสดของชั้นเรียน: ใครอยู่แล็บไหนขั้นไหน คะแนนแบบทดสอบ และใครไม่มีความคืบหน้ามาสักพัก",
		Student: "นักเรียน", Where: "ขั้นของแล็บ", Quizzes: "แบบทดสอบ", Stuck: "ติดอยู่", Updated: "ความคืบหน้าล่าสุด", NoStudents: "ยังไม่มีนักเรียนเข้าร่วมหรือเริ่มแล็บ",
		StuckAfter:     "ติดอยู่ หมายถึงไม่มีความคืบหน้ามา %s",
		EtcdFull:       "etcd เต็มแล้ว (%s): ทุกการเขียนในชั้นเรียนถูกปฏิเสธ ทั้งของนักเรียนและของคุณ",
		EtcdReclaiming: "kubelab กำลัง compact และ defragment อยู่ การเขียนจะกลับมาใช้ได้ภายในหนึ่งนาที",
		EtcdLiveData:   "ข้อมูลที่ชั้นเรียนเก็บอยู่ตอนนี้ใช้โควตาของ etcd เกือบหมด (%s จาก %s) การ compact จึงไม่คืนพื้นที่ ให้ลบอ็อบเจกต์ (kubectl delete หรือปุ่มรีเซ็ตของนักเรียน) แล้ว kubelab จะให้เขียนได้อีกทันทีที่มีที่ว่าง",
		SigninTitle:    "เข้าสู่ระบบสำหรับผู้สอน", SigninHelp: "วาง token ของผู้สอน (KUBELAB_INSTRUCTOR_TOKEN) เพื่อเปิดแดชบอร์ดในเบราว์เซอร์นี้",
		Token: "token ของผู้สอน", SignIn: "เปิดแดชบอร์ด", TokenMissing: "วาง token ก่อน", TokenWrong: "token นี้ใช้ไม่ได้", TokenNotInstructor: "token นี้ไม่ใช่ของผู้สอนหรือผู้ดูแล",
		Forbidden: "สำหรับผู้สอนเท่านั้น", ForbiddenBody: "แดชบอร์ดแสดงความคืบหน้าของนักเรียนทุกคน จึงเปิดได้เฉพาะผู้สอนและผู้ดูแล ความคืบหน้าของคุณเองอยู่ที่หน้าแล็บ",
		Back: "กลับ", LabsDone: "แล็บที่เสร็จ", Finished: "เสร็จแล้ว", Evidence: "สิ่งที่ server เห็น", Live: "สด", NotStarted: "ยังไม่เริ่ม",
		User: "ผู้ใช้", NamespaceCol: "namespace", JoinedAgo: "เข้าร่วม", NoProgress: "ยังไม่มีความคืบหน้า", JustNow: "เมื่อสักครู่",
		MinAgo: "%d นาทีที่แล้ว", HoursAgo: "%d ชั่วโมงที่แล้ว", DaysAgo: "%d วันที่แล้ว",
		Hours: "%d ชั่วโมง", Minutes: "%d นาที", Seconds: "%d วินาที",
		Details: "รายละเอียดของ %s", StudentOf: "นักเรียน %s", ClassLink: "แดชบอร์ดของชั้นเรียน", StepsHeading: "ขั้นของแล็บ",
		RequestsHeading: "request ล่าสุด", AttemptsHeading: "การทำแบบทดสอบ", NoRequests: "ยังไม่มี request", NoAttempts: "ยังไม่ได้ส่งแบบทดสอบ",
		NoLabs: "ยังไม่ได้เริ่มแล็บ", AttemptN: "ครั้งที่ %d", Score: "คะแนน", When: "เมื่อ", Request: "request", Code: "สถานะ", Joined: "เข้าร่วม",
		RequestsHelp:    "request ล่าสุดของนักเรียนที่ส่งถึง API server เรียงจากใหม่ไปเก่า ตามที่ tracer บันทึกไว้",
		StudentNotFound: "ไม่มีนักเรียนชื่อนี้ที่เข้าร่วม เริ่มแล็บ หรือทำแบบทดสอบ",
		LabDone:         "แล็บนี้เสร็จแล้ว", YouProved: "สิ่งที่คุณพิสูจน์ได้ จากสิ่งที่ server เห็น:", NextLab: "แล็บถัดไป", LastLab: "นี่คือแล็บสุดท้าย กลับไปที่แล็บทั้งหมด",
		DoAgain: "ทำอีกครั้ง", DoAgainHelp: "เริ่มขั้นของแล็บนี้ใหม่ทั้งหมด โดยนับเฉพาะสิ่งที่คุณทำต่อจากนี้ บันทึกว่าคุณเคยทำเสร็จยังอยู่",
		DoneBefore: "เคยทำเสร็จมาแล้ว %d ครั้ง", WhyNot: "ยังไม่ผ่าน",
		OpenIt: "ขั้นนี้ตรวจจากเบราว์เซอร์ ไม่ใช่จากเทอร์มินัล: เปิด etcd inspector",
		Class:  "ชั้นเรียน", SameName: "ชื่อซ้ำกับ",
		RemoveStudent: "นำออกจากชั้นเรียน",
		RemoveWarning: "การเข้าสู่ระบบและ kubeconfig ของ %s จะใช้ไม่ได้ทันที namespace และทุกอย่างในนั้นจะถูกลบ ความคืบหน้าของแล็บและการทำแบบทดสอบจะถูกลบทิ้ง ห้องเรียนและผู้ตรวจคะแนนจะไม่แสดงนักเรียนคนนี้อีก ที่นั่งจะว่างให้คนใหม่เข้าร่วม และการเข้าสู่ระบบอีกครั้งจะเป็นนักเรียนคนใหม่ ย้อนกลับไม่ได้",
		RemoveNow:     "นำออกเดี๋ยวนี้",
		Working:       "กำลังทำ", AllDone: "เสร็จครบ", Idle: "ยังไม่เริ่มแล็บตั้งแต่เข้าร่วม",
		FilterBy: "แสดงเฉพาะ", Search: "ค้นหานักเรียน", SortBy: "เรียงตาม",
		SortAttention: "ต้องช่วยก่อน", SortName: "ชื่อ", SortProgress: "ความคืบหน้า", SortActivity: "กิจกรรมล่าสุด", SortScore: "คะแนนแบบทดสอบ",
	},
}

func ui(lang i18n.Lang) uiText { return texts.In(lang) }

// stateName is a row state in words, as the summary counts it.
func (s uiText) stateName(st RowState) string {
	switch st {
	case StateStuck:
		return s.Stuck
	case StateNotStarted:
		return s.NotStarted
	case StateWorking:
		return s.Working
	}
	return s.AllDone
}
