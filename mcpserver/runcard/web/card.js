// The run card: GoRunner's MCP App (SPEC §5, MCP Apps). The host hands it a workflow tool's
// result (ui/notifications/tool-result); it shows the run (status, steps, output or error),
// follows it while it has not ended with gorunner_get_run {runId, waitSeconds} calls
// through the host, and answers the hook it waits on with gorunner_resume_hook. It talks
// to the host only through the ext-apps App class, and loads nothing.
import { App, applyDocumentTheme, applyHostStyleVariables } from "@modelcontextprotocol/ext-apps";
import { askFields, askPayload, declinePayload, hookOf } from "./ask.js";
import { stepTree, duration } from "./steps.js";

// FOLLOW_WAIT_SECONDS is the waitSeconds of each gorunner_get_run call that follows a run
// (the tool's bound is 60 s; a shorter wait keeps each host call well inside its timeouts).
const FOLLOW_WAIT_SECONDS = 30;
// HOOK_RECHECK_MS is how often a run waiting on a hook is read again, so that an answer
// given elsewhere (the console, REST, another card) shows here.
const HOOK_RECHECK_MS = 10_000;
// MAX_FOLLOW_MS is how long the card follows a run by itself; past it, Refresh goes on.
const MAX_FOLLOW_MS = 30 * 60_000;
// ENDED are the statuses of a run that has ended.
const ENDED = new Set(["completed", "failed", "cancelled"]);

const $ = (id) => document.getElementById(id);
const app = new App({ name: "GoRunner run card", version: "1.0.0" }, {}, { autoResize: true });

// state is what the card shows: the run envelope, the run object read through the host
// (for its steps), and the follow loop's generation (a new result restarts the loop).
// answered is the token the person just answered: the run still waits on it until a worker
// takes the payload, and the form must not come back meanwhile.
const state = { envelope: null, run: null, generation: 0, followSince: 0, hookToken: "", answered: "" };

// envelopeOf reads the run envelope {runId, status, output, error, waitingOn} of a tool
// result: its structuredContent, else the JSON of its first text block. A result with no
// run (invalid arguments, a refused call) is {problem}.
function envelopeOf(result) {
  let v = result?.structuredContent;
  if (!v) {
    const text = result?.content?.find((c) => c.type === "text")?.text;
    try { v = JSON.parse(text); } catch { v = undefined; }
  }
  if (v && typeof v.runId === "string" && typeof v.status === "string") return v;
  const problem = v?.error?.message || result?.content?.find((c) => c.type === "text")?.text || "The tool gave no run.";
  return { problem };
}

function text(el, s) { el.textContent = s ?? ""; }

// showStatus shows the run's status, or label (styled as status) when there is no run.
function showStatus(status, label = status) {
  const el = $("status");
  el.className = "badge " + status;
  text(el, label);
}

// showEnvelope renders what every tool result carries.
function showEnvelope(env) {
  if (env.problem) {
    showStatus("failed", "refused"); // no run was started
    $("result").hidden = false;
    text($("result-title"), "Error");
    $("output").hidden = true;
    text($("error"), env.problem);
    return;
  }
  showStatus(env.status);
  // The title of the workflow's own tool, when that is the tool the card came with.
  const tool = app.getHostContext()?.toolInfo?.tool;
  const own = tool && (!state.run || tool.name === state.run.workflow) ? tool.title || tool.name : "";
  text($("title"), own || state.run?.workflow || "GoRunner run");
  const facts = ["Run " + env.runId];
  if (state.run?.startedAt) facts.push(duration(state.run.startedAt, state.run.finishedAt));
  text($("facts"), facts.join(" · "));
  const ended = ENDED.has(env.status);
  $("result").hidden = !ended;
  if (ended) {
    const failed = env.status !== "completed";
    text($("result-title"), failed ? "Error" : "Output");
    $("output").hidden = failed;
    text($("output"), failed ? "" : JSON.stringify(env.output ?? null, null, 2));
    const e = env.error;
    text($("error"), failed ? (e ? `${e.code}: ${e.message}${e.step ? ` (step ${e.step})` : ""}` : "The run was " + env.status + ".") : "");
  }
  showAsk(env);
  showNote(env);
}

function showNote(env) {
  const sleep = env.waitingOn?.sleepUntil;
  let note = "";
  if (state.answered) note = "Answer sent; the run goes on…";
  else if (sleep) note = "Sleeping until " + new Date(sleep).toLocaleTimeString() + "; the card follows the run.";
  else if (!ENDED.has(env.status) && !hookOf(env) && following()) note = "Following the run…";
  text($("note"), note);
  $("refresh").hidden = ENDED.has(env.status) || following();
}

function following() { return Date.now() - state.followSince < MAX_FOLLOW_MS; }

// showAsk shows the form of the hook the run waits on, built once per token.
function showAsk(env) {
  let hook = hookOf(env);
  if (hook?.token === state.answered) hook = null;
  $("ask").hidden = !hook;
  if (!hook || hook.token === state.hookToken) return;
  state.hookToken = hook.token;
  text($("ask-title"), "Waiting for " + hook.token);
  text($("ask-message"), hook.message);
  text($("ask-error"), "");
  const fields = $("ask-fields");
  fields.replaceChildren(...askFields(hook.schema).map(fieldElement));
}

// fieldElement is one input of the ask form, as the console draws it: a checkbox for a
// boolean, a select for an enum, a number or text input otherwise; a schema-less hook gets
// one JSON payload box.
function fieldElement(f) {
  const wrap = document.createElement("div");
  wrap.className = "field" + (f.type === "boolean" ? " check" : "");
  const id = "ask-" + f.name;
  let input;
  if (f.type === "boolean") {
    input = document.createElement("input");
    input.type = "checkbox";
  } else if (f.enum) {
    input = document.createElement("select");
    for (const v of f.enum) input.append(new Option(v, v));
  } else if (f.type === "json") {
    input = document.createElement("textarea");
    input.spellcheck = false;
  } else {
    input = document.createElement("input");
    if (f.type === "number" || f.type === "integer") {
      input.type = "number";
      input.step = f.type === "number" ? "any" : "1";
    }
  }
  input.id = id;
  input.name = f.name;
  input.dataset.type = f.type;
  input.required = f.required && f.type !== "boolean";
  const label = document.createElement("label");
  label.htmlFor = id;
  label.textContent = f.title + (input.required ? " (required)" : "");
  if (f.type === "boolean") wrap.append(input, label);
  else wrap.append(label, input);
  if (f.description) {
    const hint = document.createElement("p");
    hint.className = "hint";
    hint.id = id + "-hint";
    hint.textContent = f.description;
    input.setAttribute("aria-describedby", hint.id);
    wrap.append(hint);
  }
  return wrap;
}

// callTool calls one of GoRunner's tools through the host.
async function callTool(name, args) {
  const result = await app.callServerTool({ name, arguments: args });
  return envelopeOf(result);
}

// answer resumes the hook with payload, then follows the run from the answer.
async function answer(payload) {
  const buttons = [$("approve"), $("decline")];
  buttons.forEach((b) => (b.disabled = true));
  text($("ask-error"), "");
  try {
    const env = await callTool("gorunner_resume_hook", { token: state.hookToken, payload });
    if (env.problem) {
      text($("ask-error"), env.problem);
      return;
    }
    state.answered = state.hookToken;
    state.hookToken = "";
    track(env);
  } catch (err) {
    text($("ask-error"), "Sending the answer failed: " + err.message);
  } finally {
    buttons.forEach((b) => (b.disabled = false));
  }
}

// readRun reads the run object (with its steps) through the host, when the host reads
// resources for the card; else the card shows the envelope only.
async function readRun(runId) {
  if (!app.getHostCapabilities()?.serverResources) return;
  try {
    const res = await app.readServerResource({ uri: "gorunner://runs/" + runId });
    state.run = JSON.parse(res.contents?.[0]?.text ?? "null");
  } catch {
    return; // the steps stay as they were; the envelope still shows
  }
  const list = $("steps");
  list.replaceChildren(...stepTree(state.run?.steps ?? []).map(stepElement));
  $("steps-section").hidden = !state.run?.steps?.length;
}

function stepElement(node) {
  const li = document.createElement("li");
  li.className = "step " + (node.status ?? "");
  li.dataset.path = node.path;
  const row = document.createElement("div");
  row.className = "step-row";
  const name = document.createElement("span");
  name.className = "step-name";
  name.textContent = node.name;
  row.append(name);
  if (node.status) {
    const badge = document.createElement("span");
    badge.className = "badge " + node.status;
    badge.textContent = node.status;
    row.append(badge);
  }
  if (node.startedAt) {
    const d = document.createElement("span");
    d.className = "duration";
    d.textContent = duration(node.startedAt, node.finishedAt);
    row.append(d);
  }
  li.append(row);
  if (node.children.length) {
    const ol = document.createElement("ol");
    ol.setAttribute("aria-label", "Steps of " + node.name);
    ol.append(...node.children.map(stepElement));
    li.append(ol);
  }
  return li;
}

// track shows env and follows its run until it ends, reading it again as it moves.
async function track(env) {
  const generation = ++state.generation;
  state.followSince = Date.now();
  state.envelope = env;
  if (env.problem) return showEnvelope(env);
  await readRun(env.runId);
  showEnvelope(env);
  while (generation === state.generation && !ENDED.has(state.envelope.status) && following()) {
    await pause(state.envelope);
    if (generation !== state.generation) return;
    let next;
    try {
      next = await callTool("gorunner_get_run", { runId: env.runId, waitSeconds: FOLLOW_WAIT_SECONDS });
    } catch (err) {
      text($("note"), "Following the run failed: " + err.message);
      $("refresh").hidden = false;
      return;
    }
    if (generation !== state.generation) return;
    state.answered = ""; // the wait took the payload: a wait on the token now is a new one
    if (next.problem) {
      text($("note"), next.problem);
      return;
    }
    // A run still waiting on the same thing has the same steps: no need to read them again.
    const same = next.status === "waiting" && JSON.stringify(next.waitingOn) === JSON.stringify(state.envelope.waitingOn);
    state.envelope = next;
    if (!same) await readRun(next.runId);
    showEnvelope(next);
  }
  showNote(state.envelope);
}

// pause waits before the next read where gorunner_get_run would answer at once: until a
// sleeping run wakes, or HOOK_RECHECK_MS for a run waiting on a hook.
function pause(env) {
  let ms = 0;
  if (state.answered) ms = 0;
  else if (env.waitingOn?.sleepUntil) ms = Date.parse(env.waitingOn.sleepUntil) - Date.now();
  else if (env.status === "waiting") ms = HOOK_RECHECK_MS;
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

function applyContext(ctx) {
  if (ctx?.theme) applyDocumentTheme(ctx.theme);
  if (ctx?.styles?.variables) applyHostStyleVariables(ctx.styles.variables);
}

// Approve is a plain button, not a submit: hosts sandbox the card without allow-forms,
// where a form is never submitted. Enter in a one-line field approves, as in a form.
function approve() {
  const form = $("ask-form");
  if (!form.reportValidity()) return;
  const { payload, problem } = askPayload(form.elements);
  if (problem) {
    text($("ask-error"), problem);
    return;
  }
  answer(payload);
}
$("approve").addEventListener("click", approve);
$("ask-form").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && ev.target instanceof HTMLInputElement && ev.target.type !== "checkbox") {
    ev.preventDefault();
    approve();
  }
});
$("decline").addEventListener("click", () => answer(declinePayload));
$("refresh").addEventListener("click", () => state.envelope && track(state.envelope));

app.ontoolresult = (result) => track(envelopeOf(result));
app.ontoolcancelled = () => text($("note"), "The tool call was cancelled; the run may go on.");
app.onhostcontextchanged = applyContext;
app.connect().then(() => applyContext(app.getHostContext()), (err) => text($("note"), "The card cannot talk to the host: " + err.message));
