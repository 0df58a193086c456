// The stored sessions and their transcripts, read from /api/sessions with the operator token.
"use strict";

const rows = document.getElementById("rows");
const title = document.getElementById("title");
const transcript = new Transcript(document.getElementById("log"));
const statusLine = document.getElementById("status");
const signin = document.getElementById("signin");

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
  title.textContent = "Session " + session + " · " + data.status + " · with " + data.agent;
  transcript.clear();
  for (const item of data.items) transcript.show(item, "Customer");
}

async function load() {
  const data = await api("/api/sessions");
  if (!data) return;
  signin.hidden = true;
  rows.replaceChildren();
  for (const s of data.sessions) {
    const row = el("tr");
    for (const value of [s.session, s.agent, s.status, String(s.messages)]) row.append(el("td", "", value));
    row.addEventListener("click", () => open(s.session));
    rows.append(row);
  }
  statusLine.textContent = data.sessions.length + " sessions";
}

forgetAddressedToken();
signin.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("handoffs.operator", document.getElementById("token").value.trim());
  load();
});
load();
