// The operator console: sessions waiting for a person appear live; take one, answer as often as needed,
// hand it back at any time.
"use strict";

const logNode = document.getElementById("log");
const mineList = document.getElementById("mine");
const title = document.getElementById("title");
const form = document.getElementById("form");
const input = document.getElementById("text");
const send = document.getElementById("send");
const questionBox = document.getElementById("question");
const agents = document.getElementById("agents");
const handback = document.getElementById("handback");
const statusLine = document.getElementById("status");
const signin = document.getElementById("signin");
const held = new Map();  // session -> {log: element, transcript: Transcript, question, closed}
let current = null;
let socket = null;

function token() {
  forgetAddressedToken();
  return sessionStorage.getItem("handoffs.operator");
}

function follow() {  // the newest line in view, above whatever is shown under the conversation
  logNode.scrollTop = logNode.scrollHeight;
}

function select(session) {
  if (current !== session) forgetClosed(session);
  current = session;
  const entry = held.get(session);
  title.textContent = entry ? "Session " + session.slice(0, 8) : "Take a waiting session";
  logNode.replaceChildren(...(entry ? [entry.log] : []));
  for (const item of mineList.children) item.classList.toggle("selected", item.dataset.session === session);
  showQuestion(entry);
}

// While a session is held the operator may write at any time: Send waits only for the session's question
// to the operator, which comes back at once after each answer. Only approvals get a banner.
function showQuestion(entry) {
  const holding = entry !== undefined && entry !== null && !entry.closed;
  const question = holding ? entry.question : null;
  const open = question !== null && question !== undefined;
  const approval = open && question.choices.length > 0;
  input.disabled = !holding || approval;
  send.disabled = !open || approval;
  handback.disabled = !open || approval;
  questionBox.replaceChildren();
  questionBox.hidden = !approval;
  if (approval) {
    questionBox.append(el("div", "prompt", withoutYesNo(question.prompt)));
    for (const choice of question.choices) {
      const button = el("button", "choice", choice === "yes" ? "Approve" : choice === "no" ? "Refuse" : choice);
      button.type = "button";
      button.addEventListener("click", () => answer(choice));
      questionBox.append(button);
    }
  }
  follow();
}

function answer(text) {
  const entry = held.get(current);
  if (!entry || !entry.question || !text.trim()) return false;
  // An approval takes only an answer that names it: a "yes" never approves a question it was not given to.
  const answering = entry.question.id ? { question: entry.question.id } : {};
  socket.send(JSON.stringify({ type: "say", session: current, text: text, ...answering }));
  // An answer to the customer comes back as the reply they read (under the operator's display name); the
  // answer to an approval does not, so it is shown here.
  if (entry.question.choices.length) {
    entry.transcript.show(entry.question);
    entry.transcript.show({ type: "reply", agent: "You (operator)", text: text });
  }
  entry.question = null;
  showQuestion(entry);
  return true;
}

function taken(ev) {
  const log = el("div", "transcript");
  const entry = { log: log, transcript: new Transcript(log), question: ev.question, closed: false };
  held.set(ev.session, entry);
  for (const item of ev.history) entry.transcript.show(item, "Customer");
  for (const old of [...mineList.children]) if (old.dataset.session === ev.session) old.remove();  // taken again
  const item = el("li", "mine", ev.session.slice(0, 8));
  item.dataset.session = ev.session;
  item.addEventListener("click", () => select(ev.session));
  mineList.append(item);
  select(ev.session);
}

// A session let go (handed back, answered, ended) stays on screen with what happened, until another is chosen.
function released(session, text) {
  const entry = held.get(session);
  if (!entry) return;
  entry.closed = true;
  entry.question = null;
  entry.transcript.line("released", "✓ " + (text || "You let go of this session."));
  for (const item of mineList.children) if (item.dataset.session === session) item.classList.add("closed");
  if (current === session) showQuestion(entry);
}

function forgetClosed(keep) {
  for (const [session, entry] of [...held]) {
    if (!entry.closed || session === keep) continue;
    held.delete(session);
    for (const item of [...mineList.children]) if (item.dataset.session === session) item.remove();
  }
}

function handle(ev) {
  switch (ev.type) {
    case "ready":
      statusLine.textContent = "signed in";
      signin.hidden = true;
      agents.replaceChildren(...ev.agents.map((name) => {
        const option = el("option", "", named((ev.labels || {})[name], name));  // the team's words
        option.value = name;
        return option;
      }));
      break;
    case "waiting": renderWaiting(ev.sessions); break;
    case "taken": taken(ev); break;
    case "released": released(ev.session, ev.text); break;
    case "error":
      statusLine.textContent = ev.message;
      if (isTokenError(ev.message)) { sessionStorage.removeItem("handoffs.operator"); signin.hidden = false; }
      break;
    default: {
      const entry = held.get(ev.session);
      if (!entry) return;
      if (ev.type === "question") {
        if (ev.person === "operator") { entry.question = ev; if (current === ev.session) showQuestion(entry); }
        return;
      }
      if (ev.type === "said" && ev.person === "operator") return;  // shown when sent
      entry.transcript.show(ev, "Customer");
      if (current === ev.session) follow();
    }
  }
}

function connect() {
  const t = token();
  if (!t) { signin.hidden = false; return; }
  socket = new WebSocket(socketUrl("/ws/operator"));
  socket.addEventListener("open", () => socket.send(JSON.stringify({ type: "hello", token: t })));
  socket.addEventListener("message", (message) => handle(JSON.parse(message.data)));
  socket.addEventListener("close", () => {
    for (const session of [...held.keys()]) released(session, "The connection was lost: take the session again.");
    if (sessionStorage.getItem("handoffs.operator")) { statusLine.textContent = "reconnecting…"; setTimeout(connect, 1000); }
  });
}

signin.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("handoffs.operator", document.getElementById("token").value.trim());
  connect();
});
form.addEventListener("submit", (event) => {
  event.preventDefault();
  if (answer(input.value)) input.value = "";
});
handback.addEventListener("click", () => {
  const entry = held.get(current);
  if (!entry || entry.closed) return;
  socket.send(JSON.stringify({ type: "hand_back", session: current, agent: agents.value }));
});
connect();
