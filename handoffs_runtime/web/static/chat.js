// The customer chat: one WebSocket, the session id and key kept in localStorage so a reload resumes.
"use strict";

const transcript = new Transcript(document.getElementById("log"));
const form = document.getElementById("form");
const input = document.getElementById("text");
const send = document.getElementById("send");
const questionBox = document.getElementById("question");
const suggestionBox = document.getElementById("suggestions");
const typing = document.getElementById("typing");
const statusLine = document.getElementById("status");
const saved = window.localStorage;
const ANSWERS = { yes: "Yes", no: "No" };
let socket = null;
let retry = 500;
let speaker = "";  // who is answering the customer, as they read it
let resuming = null;  // the stored session this connection asked for: the server kept it, or forgot it
let earliest = 0;  // the number of the first transcript item shown: the server sends the last ones first
let asked = null;  // a question outside the customer's turn (a confirmation): shown above its answer
let current = null;  // the question the customer's next line answers: the line names it (its id)
const earlier = el("button", "choice earlier", "Show earlier messages");
earlier.type = "button";
earlier.addEventListener("click", () => {
  if (!socket || socket.readyState !== WebSocket.OPEN) return;
  earlier.disabled = true;  // one page at a time: a second click would fetch the same page again
  socket.send(JSON.stringify({ type: "earlier", before: earliest }));
});

function showEarlier(ev) {  // a page of older items goes above those shown
  const older = document.createElement("div");
  const view = new Transcript(older);
  for (const item of ev.items) view.show(item, "You");
  earlier.remove();
  earlier.disabled = false;
  transcript.node.prepend(...older.childNodes);
  earliest = ev.start;
  if (earliest > 0) transcript.node.prepend(earlier);
}

function setTurn(question) {
  current = question;
  const isOpen = question !== null;
  input.disabled = !isOpen;
  send.disabled = !isOpen;
  for (const chip of suggestionBox.children) chip.disabled = !isOpen;
  asked = isOpen && !question.turn ? question : null;
  questionBox.replaceChildren();
  questionBox.hidden = true;
  if (isOpen && (!question.turn || question.choices.length > 0)) {
    questionBox.hidden = false;
    if (!question.turn) questionBox.append(el("div", "prompt", withoutYesNo(question.prompt)));
    for (const choice of question.choices) {
      const button = el("button", "choice", ANSWERS[choice] || choice);
      button.type = "button";
      button.addEventListener("click", () => say(choice));
      questionBox.append(button);
    }
  }
  if (isOpen) { working(false); input.focus(); }
}

// "ACME sales is typing…" while an agent works on the customer's message.
function working(on) {
  typing.textContent = speaker ? speaker + " is typing" : "Typing";
  typing.hidden = !on;
}

function offerSuggestions(suggestions) {
  suggestionBox.replaceChildren();
  for (const text of suggestions) {
    const chip = el("button", "chip", text);
    chip.type = "button";
    chip.disabled = input.disabled;
    chip.addEventListener("click", () => say(text));
    suggestionBox.append(chip);
  }
  suggestionBox.hidden = suggestions.length === 0;
}

function say(text) {
  if (!text.trim() || !socket || socket.readyState !== WebSocket.OPEN) return;
  // A yes/no question takes only an answer that names it: a "yes" never confirms a question not yet shown.
  const answering = current && current.id ? { question: current.id } : {};
  socket.send(JSON.stringify({ type: "say", text: text, ...answering }));
  if (asked) transcript.show(asked, "You");  // as the stored transcript shows it: the question, the answer
  transcript.show({ type: "said", text: text }, "You");
  offerSuggestions([]);
  setTurn(null);
  working(true);
}

function handle(ev) {
  switch (ev.type) {
    case "session":
      saved.setItem("handoffs.session", ev.session);
      saved.setItem("handoffs.key", ev.key);
      statusLine.textContent = ev.session === resuming ? "reconnected" : "connected";
      break;
    case "history":
      showWait({ state: "over" });  // a wait still under way is told again after the history
      transcript.clear();
      earliest = ev.start;
      earlier.disabled = false;
      if (earliest > 0) transcript.node.append(earlier);
      for (const item of ev.items) transcript.show(item, "You");
      offerSuggestions([]);  // offered again, in a session where nothing was said yet
      break;
    case "suggestions":
      offerSuggestions(ev.suggestions);
      break;
    case "earlier":
      showEarlier(ev);
      break;
    case "question":
      setTurn(ev);
      break;
    case "said":  // shown when sent
      break;
    case "queue":
      showWait(ev);
      break;
    case "error":
      if (ev.message.startsWith("unknown session")) forget();
      transcript.line("error", ev.message);
      working(false);
      break;
    case "ended":
      transcript.show(ev, "You");
      forget();
      setTurn(null);
      working(false);
      showWait({ state: "over" });
      offerNewConversation();
      break;
    default:
      if (ev.type === "reply" || ev.type === "delta") speaker = named(ev.label, ev.agent);
      if (ev.type === "handoff" && ev.outcome === "handoff") speaker = named(ev.target_label, ev.target);
      transcript.show(ev, "You");
      // The indicator stands for work the customer cannot see yet: a streamed reply shows itself, and a
      // notice (waiting for a person, say) tells what is going on.
      if (["reply", "delta", "notice"].includes(ev.type)) working(false);
      else if (ev.type === "handoff" || ev.type.startsWith("tool")) working(true);
  }
}

function forget() {
  saved.removeItem("handoffs.session");
  saved.removeItem("handoffs.key");
}

function offerNewConversation() {
  const button = el("button", "choice", "Start a new conversation");
  button.type = "button";
  button.addEventListener("click", () => { transcript.clear(); socket.close(); });
  questionBox.replaceChildren(button);
  questionBox.hidden = false;
}

function connect() {
  socket = new WebSocket(socketUrl("/ws"));
  socket.addEventListener("open", () => {
    retry = 500;
    const session = saved.getItem("handoffs.session");
    const key = saved.getItem("handoffs.key");
    resuming = session && key ? session : null;
    socket.send(JSON.stringify(session && key ? { type: "hello", session: session, key: key } : { type: "hello" }));
  });
  socket.addEventListener("message", (message) => handle(JSON.parse(message.data)));
  socket.addEventListener("close", () => {
    setTurn(null);
    working(false);
    statusLine.textContent = "reconnecting…";
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 10000);
  });
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  say(input.value);
  input.value = "";
});
connect();
