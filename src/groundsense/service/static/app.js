// The review page: no framework, no CDN; talks to /v1/detect.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "groundsense-api-key"; // in sessionStorage: kept for this tab until it closes
let keyEntered = null; // while the key form is shown: resolves when a key is submitted

// The key form, shown with the server's message; resolves once a key is stored.
function askKey(message) {
  $("key-message").textContent = message;
  $("key-form").hidden = false;
  $("api-key").focus();
  keyEntered = keyEntered || new Promise((resolve) => {
    $("key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      sessionStorage.setItem(KEY, $("api-key").value.trim());
      $("api-key").value = "";
      $("key-form").hidden = true;
      keyEntered = null;
      resolve();
    }, { once: true });
  });
  return keyEntered;
}

// fetch, with the API key when the server asks for one (401): asked once, then sent with every call.
async function api(path, options = {}) {
  for (;;) {
    const key = sessionStorage.getItem(KEY);
    const headers = { ...(options.headers || {}), ...(key ? { Authorization: `Bearer ${key}` } : {}) };
    const response = await fetch(path, { ...options, headers });
    if (response.status !== 401) return response;
    sessionStorage.removeItem(KEY);
    const body = await response.json().catch(() => ({}));
    await askKey(body.error || "This server needs an API key.");
  }
}
const SEPARATOR = /^\s*---\s*$/m;
const SPREAD = { sensitivity: 2.0, gap: 0.5, fused: 0.1 }; // score units per colour step
let current = null; // {request, result}

function evidenceMode() {
  return document.querySelector("input[name=evidence]:checked").value;
}

function setEvidenceMode(mode) {
  document.querySelector(`input[name=evidence][value=${mode}]`).checked = true;
}

function fillForm(row) {
  $("question").value = row.question || "";
  $("answer").value = row.answer || "";
  if (row.passages) {
    setEvidenceMode("passages");
    $("evidence").value = row.passages.join("\n---\n");
  } else {
    setEvidenceMode("context");
    $("evidence").value = row.context || "";
  }
}

function readForm() {
  const request = { question: $("question").value, answer: $("answer").value };
  if (evidenceMode() === "passages") {
    request.passages = $("evidence").value.split(SEPARATOR).map((p) => p.trim()).filter((p) => p);
  } else {
    request.context = $("evidence").value;
  }
  return request;
}

// Blank as the API counts it: only whitespace, control and format characters (text.is_blank).
const BLANK = /^[\s\p{Cc}\p{Cf}]*$/u;

// The string the API's chunk spans index: the context, or non-blank passages joined by a blank line.
function scoredContext(request) {
  return request.passages ? request.passages.filter((p) => !BLANK.test(p)).join("\n\n") : request.context;
}

// The API's offsets count code points (Python string indices); JavaScript strings index
// UTF-16 code units, where a character outside the Basic Multilingual Plane (most emoji)
// takes two. unitIndex(text) maps a code-point offset of text to its UTF-16 index.
function unitIndex(text) {
  const units = [0];
  for (const ch of text) units.push(units[units.length - 1] + ch.length);
  return (offset) => units[Math.min(offset, units.length - 1)];
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function band(sentence, result, range) {
  if (sentence.status !== "scored") return "unscored";
  if (sentence.flagged) return "flagged";
  let distance; // how far below "suspicious", in colour steps
  if (result.threshold !== null) {
    distance = (result.threshold - sentence.score) / (SPREAD[result.score_rule] || 1);
  } else {
    distance = range.max > range.min ? (3 * (range.max - sentence.score)) / (range.max - range.min) : 1;
  }
  if (distance < 0.5) return "borderline";
  return distance < 1.5 ? "neutral" : "grounded";
}

function render(request, result) {
  current = { request, result };
  const scores = result.sentences.filter((s) => s.score !== null).map((s) => s.score);
  const range = { min: Math.min(...scores), max: Math.max(...scores) };
  const view = $("answer-view");
  view.replaceChildren();
  const at = unitIndex(request.answer);
  let cursor = 0;
  for (const s of result.sentences) {
    view.append(request.answer.slice(cursor, at(s.start)));
    const span = document.createElement("span");
    const kind = band(s, result, range);
    span.className = `s s-${kind}`;
    span.append(...markAbsent(s.text, s.absent || [], s.in_cut_evidence || []));
    span.tabIndex = 0;
    span.dataset.index = s.index;
    span.setAttribute("role", "button");
    span.setAttribute("aria-pressed", "false");
    span.setAttribute("aria-label", `${s.text} (${kind}${s.score === null ? "" : `, score ${s.score.toFixed(2)}`})`);
    span.addEventListener("click", () => select(s.index));
    span.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(s.index); }
    });
    view.append(span);
    cursor = at(s.end);
  }
  view.append(request.answer.slice(cursor));
  const a = result.answer;
  // With an answer threshold the verdict is the answer's own (docs/calibration.md#the-answer-verdict).
  const verdicts = a.threshold === null || a.threshold === undefined
    ? { true: "Has unsupported sentences", false: "All sentences supported", null: "Not judged" }
    : { true: "Answer flagged", false: "Answer passes", null: "Not judged" };
  const reached = a.score !== null && a.threshold !== null && a.threshold !== undefined && a.score >= a.threshold;
  // a fused answer is flagged by a flagged sentence too, whatever its noisy-OR
  const bar = a.threshold === null || a.threshold === undefined || a.score === null ? ""
    : ` (${a.flagged && !reached ? "a sentence is flagged; " : ""}`
      + `${result.sentences.some((s) => s.fused !== null && s.fused !== undefined) ? "mean of its two highest fused scores"
        : result.score_rule === "fused" ? "length-aware noisy-OR of its sentences" : "most suspicious sentence"}`
      + ` ${a.score.toFixed(3)} ${reached ? "≥" : "<"} answer threshold ${a.threshold.toFixed(3)})`;
  $("verdict").textContent = `${verdicts[a.flagged]}${a.flagged === null ? "" : bar}`
    + ` — ${a.n_flagged} of ${a.n_sentences} sentences flagged, ${a.n_unscored} unscored`
    + ` · scorer ${result.scorer}, ${result.score_rule} score`
    + (result.threshold === null ? " (uncalibrated: colours are relative to this answer)" : "");
  const notes = (result.warnings || []).map((w) => `Warning: ${w}.`);
  if (result.truncated.context) notes.push(`${result.truncated.context_tokens_removed} context tokens were cut to fit the scorer.`);
  if (result.truncated.answer) notes.push(`${result.truncated.answer_tokens_unscored} answer tokens past the cap were not scored.`);
  $("notes").replaceChildren(...notes.map((n) => Object.assign(document.createElement("p"), { className: "note", textContent: n })));
  $("results").hidden = false;
  const first = result.sentences.find((s) => s.flagged) || result.sentences[0];
  select(first.index);
}

// The sentence's text with each term the evidence scored lacks (its `absent` list) in a <mark>,
// titled apart when only the evidence cut to fit the budget holds it (`in_cut_evidence`).
function markAbsent(text, absent, inCut) {
  if (!absent.length) return [text];
  const escaped = absent.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${escaped.join("|")})(?![\\p{L}\\p{N}_])`, "gu");
  const parts = [];
  let cursor = 0;
  for (const m of text.matchAll(pattern)) {
    parts.push(text.slice(cursor, m.index));
    parts.push(Object.assign(document.createElement("mark"), { className: "absent", textContent: m[0],
      title: inCut.includes(m[0]) ? "only in the evidence cut to fit the budget" : "absent from the evidence" }));
    cursor = m.index + m[0].length;
  }
  parts.push(text.slice(cursor));
  return parts;
}

function select(index) {
  const { request, result } = current;
  const s = result.sentences[index];
  for (const el of document.querySelectorAll("#answer-view .s")) {
    const on = Number(el.dataset.index) === index;
    el.classList.toggle("selected", on);
    el.setAttribute("aria-pressed", String(on));
  }
  const where = s.support ? (s.support.passage !== null ? `passage ${s.support.passage + 1}` : `chunk ${s.support.chunk + 1}`) : null;
  $("support-summary").textContent = s.status !== "scored"
    ? `“${s.text}” was not scored: ${s.reason}.`
    : s.support
      ? `“${s.text}” relies most on ${where}: removing it lowers the sentence's log-likelihood by ${s.support.drop.toFixed(3)} per token.`
      : `“${s.text}”: removing no chunk lowers its likelihood — no passage supports it.`;
  // why it scored as it did: its fused signals' ranks and the terms the evidence lacks (docs/output.md)
  $("absent-summary").textContent = s.explanation ? `Why: ${s.explanation}.` : "";
  const rows = [["score", s.score], ["flagged", s.flagged], ...Object.entries(s.features)];
  $("features").tBodies[0].replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    const value = typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(4)) : String(v);
    tr.append(Object.assign(document.createElement("td"), { textContent: k }), Object.assign(document.createElement("td"), { textContent: value }));
    return tr;
  }));
  drawDrops(s, result);
  drawContext(request, result, s.support);
  $("support").hidden = false;
}

function drawDrops(s, result) {
  const biggest = Math.max(1e-9, ...s.drops.map((d) => Math.abs(d ?? 0)));
  const rows = s.drops.map((d, k) => {
    const chunk = result.chunks[k];
    const label = chunk.passage !== null ? `passage ${chunk.passage + 1}` : `chunk ${k + 1}`;
    const row = document.createElement("div");
    row.className = "bar-row" + (s.support && s.support.chunk === k ? " best" : "");
    const track = Object.assign(document.createElement("div"), { className: "track" });
    const bar = Object.assign(document.createElement("div"), { className: "bar" + (d < 0 ? " neg" : "") });
    bar.style.width = `${(100 * Math.abs(d ?? 0)) / biggest}%`;
    track.append(bar);
    row.append(Object.assign(document.createElement("span"), { textContent: label + (s.support && s.support.chunk === k ? " ★" : "") }),
      track, Object.assign(document.createElement("span"), { textContent: d === null ? "n/a" : d.toFixed(3) }));
    return row;
  });
  $("drops").replaceChildren(...(rows.length ? rows : [Object.assign(document.createElement("p"), { textContent: "Two-pass mode: no leave-one-out drops." })]));
}

function drawContext(request, result, support) {
  const text = scoredContext(request);
  const at = unitIndex(text);
  const view = $("context-view");
  view.replaceChildren();
  let cursor = 0;
  for (const chunk of result.chunks) {
    view.append(text.slice(cursor, at(chunk.start)));
    const el = document.createElement(support && support.chunk === chunk.index ? "mark" : "span");
    el.className = "chunk";
    el.textContent = text.slice(at(chunk.start), at(chunk.end));
    view.append(el);
    cursor = at(chunk.end);
  }
  const rest = text.slice(cursor);
  if (result.truncated.context && rest.trim()) {
    const cut = Object.assign(document.createElement("span"), { className: "cut", textContent: rest });
    cut.title = "cut: past the scorer's context budget, not seen by the scorer";
    view.append(Object.assign(document.createElement("span"), { className: "cut-label", textContent: "\n[not scored: past the context budget]\n" }), cut);
  } else {
    view.append(rest);
  }
  const mark = view.querySelector("mark");
  if (mark) view.scrollTop = mark.offsetTop - view.offsetTop - 20;
}

async function run() {
  const request = readForm();
  showError("");
  $("run").disabled = true;
  $("progress").hidden = false;
  const started = Date.now();
  const timer = setInterval(() => {
    $("progress-text").textContent = `Scoring… ${Math.round((Date.now() - started) / 1000)} s`;
  }, 500);
  try {
    const response = await api("/v1/detect", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(request),
    });
    const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    if (!response.ok) {
      const retry = response.headers.get("Retry-After");
      throw new Error(body.error + (retry ? ` (retry in ${retry} s)` : ""));
    }
    render(request, body);
  } catch (err) {
    showError(err.message || String(err));
  } finally {
    clearInterval(timer);
    $("run").disabled = false;
    $("progress").hidden = true;
    $("progress-text").textContent = "Scoring…";
  }
}

// Replay the answer as an LLM would emit it, word by word, through /v1/detect/stream, and
// show each sentence's verdict as its event arrives. (A browser cannot stream a request body
// over HTTP/1.1, so the words go in one body; the server still judges and answers them one
// sentence at a time, as it would for a live generator.)
function streamBody(request) {
  const { answer, ...head } = request;
  const words = answer.split(" ").map((w, i, all) => (i < all.length - 1 ? `${w} ` : w));
  return [head, ...words.map((delta) => ({ delta }))].map((line) => JSON.stringify(line)).join("\n") + "\n";
}

function renderArriving(request, sentences) {
  const view = $("answer-view");
  view.replaceChildren();
  const at = unitIndex(request.answer);
  let cursor = 0;
  for (const s of sentences) {
    view.append(request.answer.slice(cursor, at(s.start)));
    const span = document.createElement("span");
    span.className = `s s-${s.status !== "scored" ? "unscored" : s.flagged ? "flagged" : "grounded"}`;
    span.append(...markAbsent(s.text, s.absent || [], s.in_cut_evidence || []));
    span.dataset.index = s.index;
    view.append(span);
    cursor = at(s.end);
  }
  const pending = document.createElement("span");
  pending.className = "pending";
  pending.textContent = request.answer.slice(cursor);
  view.append(pending);
  $("verdict").textContent = `Judging as the answer streams… ${sentences.length} sentence(s) judged so far`;
  $("notes").replaceChildren();
  $("support").hidden = true;
  $("results").hidden = false;
}

async function replay() {
  const request = readForm();
  showError("");
  for (const id of ["run", "replay"]) $(id).disabled = true;
  try {
    const response = await api("/v1/detect/stream", {
      method: "POST", headers: { "Content-Type": "application/x-ndjson" }, body: streamBody(request),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
      throw new Error(body.error);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const sentences = [];
    renderArriving(request, sentences);
    let buffer = "", result = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const lines = buffer.split("\n");
      buffer = lines.pop();
      for (const line of lines.filter((l) => l.trim())) {
        const event = JSON.parse(line);
        if (event.event === "sentence") { sentences.push(event.sentence); renderArriving(request, sentences); }
        else if (event.event === "result") result = event.result;
        else throw new Error(event.error); // the stream failed: not judged
      }
    }
    if (!result) throw new Error("the stream ended without a result: the answer was not judged");
    render(request, result);
  } catch (err) {
    showError(err.message || String(err));
  } finally {
    for (const id of ["run", "replay"]) $(id).disabled = false;
  }
}

async function init() {
  $("run").addEventListener("click", run);
  $("replay").addEventListener("click", replay);
  $("load-example").addEventListener("click", async () => {
    const name = $("example").value;
    if (!name) return showError("Choose an example first.");
    const response = await api(`/v1/examples/${encodeURIComponent(name)}`);
    fillForm(await response.json());
    showError("");
  });
  $("upload").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    try { fillForm(JSON.parse(await file.text())); showError(""); }
    catch (err) { showError(`${file.name} is not a JSON object with question, context or passages, and answer: ${err.message}`); }
  });
  pollReady();
  const names = await (await api("/v1/examples")).json(); // asks for the key first, when the server wants one
  for (const name of names) $("example").append(new Option(name, name));
}

async function pollReady() {
  const ready = await fetch("/readyz").then((r) => r.json()).catch(() => ({ status: "unreachable" }));
  $("ready").textContent = ready.status === "ready" ? `scorer ${ready.scorer} ready` : `scorer ${ready.status}`;
  $("ready").className = "ready " + (ready.status === "ready" ? "ok" : "bad");
  if (ready.status === "loading") setTimeout(pollReady, 2000);
}

init();
