// The stored sessions and their transcripts, read from /api/sessions with the operator token.
"use strict";

const rows = document.getElementById("rows");
const search = document.getElementById("search");
const title = document.getElementById("title");
const transcript = new Transcript(document.getElementById("log"));
const statusLine = document.getElementById("status");
const signin = document.getElementById("signin");
let sessions = [];

async function api(path) {
  const token = sessionStorage.getItem("handoffs.operator");
  if (!token) { signin.hidden = false; return null; }
  const response = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  if (response.status === 401) {
    sessionStorage.removeItem("handoffs.operator");
    signin.hidden = false;
    statusLine.textContent = (await response.json()).error;
    return null;
  }
  return response.json();
}

async function open(session) {
  const data = await api("/api/sessions/" + encodeURIComponent(session));
  if (!data || data.error) { statusLine.textContent = data ? data.error : ""; return; }
  title.textContent = "Session " + session + " · " + data.status + " · with " + named(data.label, data.agent);
  transcript.clear();
  for (const item of data.items) transcript.show(item, "Customer");
  for (const row of rows.children) row.classList.toggle("selected", row.dataset.session === session);
}

// A row's cells: a short id (the whole one on hover), dates, who has the conversation, its state.
function cells(s) {
  return [
    s.session.slice(0, 8), when(s.created, true), when(s.updated, true), named(s.label, s.agent), s.status, String(s.messages),
  ];
}

function render() {
  const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  rows.replaceChildren();
  let shown = 0;
  for (const s of sessions) {
    const values = cells(s);
    const haystack = [s.session, s.team, s.agent, ...values].join(" ").toLowerCase();
    if (!words.every((word) => haystack.includes(word))) continue;
    const row = el("tr");
    row.dataset.session = s.session;
    values.forEach((value, i) => row.append(el("td", i === 5 ? "number" : "", value)));
    row.firstChild.title = s.session;
    row.addEventListener("click", () => open(s.session));
    rows.append(row);
    shown += 1;
  }
  statusLine.textContent = shown === sessions.length ? sessions.length + " sessions" : shown + " of " + sessions.length + " sessions";
}

async function load() {
  const data = await api("/api/sessions");
  if (!data) return;
  signin.hidden = true;
  sessions = data.sessions;
  render();
}

forgetAddressedToken();
signin.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("handoffs.operator", document.getElementById("token").value.trim());
  load();
});
search.addEventListener("input", render);
load();
