// The operator console: sessions waiting for a person appear live; take one, answer, hand it back.
"use strict";

const logNode = document.getElementById("log");
const waitingList = document.getElementById("waiting");
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
const held = new Map();  // session -> {log: element, transcript: Transcript, question}
let current = null;
let socket = null;

function token() {
  forgetAddressedToken();
  return sessionStorage.getItem("handoffs.operator");
}

function select(session) {
  current = session;
  const entry = held.get(session);
  title.textContent = entry ? "Session " + session.slice(0, 8) : "Take a waiting session";
  logNode.replaceChildren(...(entry ? [entry.log] : []));
  for (const item of mineList.children) item.classList.toggle("selected", item.dataset.session === session);
  showQuestion(entry ? entry.question : null);
}

function showQuestion(question) {
  const open = question !== null && question !== undefined;
  input.disabled = !open;
  send.disabled = !open;
  handback.disabled = !open || question.choices.length > 0;
  questionBox.replaceChildren();
  questionBox.hidden = !open;
  if (!open) return;
  questionBox.append(el("div", "prompt", question.choices.length ? withoutYesNo(question.prompt) : question.prompt));
  for (const choice of question.choices) {
    const button = el("button", "choice", choice === "yes" ? "Approve" : choice === "no" ? "Refuse" : choice);
    button.type = "button";
    button.addEventListener("click", () => answer(choice));
    questionBox.append(button);
  }
}

function answer(text) {
  if (!current || !text.trim()) return;
  const entry = held.get(current);
  socket.send(JSON.stringify({ type: "say", session: current, text: text }));
  // An answer to the customer comes back as the reply they read (under the operator's display name); the
  // answer to an approval does not, so it is shown here.
  if (entry.question && entry.question.choices.length) {
    entry.transcript.show({ type: "reply", agent: "You (operator)", text: text });
  }
  entry.question = null;
  showQuestion(null);
}

function renderWaiting(sessions) {
  waitingList.replaceChildren();
  for (const s of sessions) {
    const item = el("li", "waiting " + s.kind);
    item.append(el("span", "id", s.session.slice(0, 8)));
    item.append(el("span", "kind", s.kind === "approval" ? " approval: " + s.prompt : " asks for a person"));
    const take = el("button", "take", "Take");
    take.type = "button";
    take.addEventListener("click", () => socket.send(JSON.stringify({ type: "take", session: s.session })));
    item.append(take);
    waitingList.append(item);
  }
}

function taken(ev) {
  const log = el("div", "transcript");
  const entry = { log: log, transcript: new Transcript(log), question: ev.question };
  held.set(ev.session, entry);
  for (const item of ev.history) entry.transcript.show(item, "Customer");
  const item = el("li", "mine", ev.session.slice(0, 8));
  item.dataset.session = ev.session;
  item.addEventListener("click", () => select(ev.session));
  mineList.append(item);
  select(ev.session);
}

function released(session) {
  held.delete(session);
  for (const item of [...mineList.children]) if (item.dataset.session === session) item.remove();
  if (current === session) select(null);
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
    case "released": released(ev.session); break;
    case "error":
      statusLine.textContent = ev.message;
      if (isTokenError(ev.message)) { sessionStorage.removeItem("handoffs.operator"); signin.hidden = false; }
      break;
    default: {
      const entry = held.get(ev.session);
      if (!entry) return;
      if (ev.type === "question") {
        if (ev.person === "operator") { entry.question = ev; if (current === ev.session) showQuestion(ev); }
        return;
      }
      if (ev.type === "said" && ev.person === "operator") return;  // shown when sent
      entry.transcript.show(ev, "Customer");
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
    for (const session of [...held.keys()]) released(session);
    if (sessionStorage.getItem("handoffs.operator")) { statusLine.textContent = "reconnecting…"; setTimeout(connect, 1000); }
  });
}

signin.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("handoffs.operator", document.getElementById("token").value.trim());
  connect();
});
form.addEventListener("submit", (event) => { event.preventDefault(); answer(input.value); input.value = ""; });
handback.addEventListener("click", () => {
  if (!current) return;
  socket.send(JSON.stringify({ type: "hand_back", session: current, agent: agents.value }));
});
connect();
