// kubelab's pages: the theme toggle, then each live view present on the page.
import { initTheme } from "./theme.js";
import { initTracer } from "./tracer.js";
import { initTimeline } from "./timeline.js";
import { initRun, initQuizAnswer } from "./run.js";
import { initInspector } from "./inspector.js";
import { initPollWatch } from "./pollwatch.js";
import { initAccount } from "./account.js";
import { initLab, initDashboard } from "./labs.js";
import { initCommand } from "./commands.js";

initTheme();
for (const el of document.querySelectorAll("[data-account]")) initAccount(el);
for (const el of document.querySelectorAll("[data-live=tracer]")) initTracer(el);
for (const el of document.querySelectorAll("[data-live=timeline]")) initTimeline(el);
for (const el of document.querySelectorAll("figure.cmd[data-cmd]")) initRun(el);
for (const el of document.querySelectorAll("[data-quiz-answer]")) initQuizAnswer(el);
for (const el of document.querySelectorAll("[data-live=inspector]")) initInspector(el);
for (const el of document.querySelectorAll("[data-live=pollwatch]")) initPollWatch(el);
for (const el of document.querySelectorAll("[data-lab]")) initLab(el);
for (const el of document.querySelectorAll("[data-dashboard]")) initDashboard(el);
for (const el of document.querySelectorAll("pre[data-commands]")) initCommand(el);
