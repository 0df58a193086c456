// The operator console's waiting list: who waits, for how long, their last words; a chime and a count in
// the title bar for each session that starts to wait.
"use strict";

const waitingList = document.getElementById("waiting");
const consoleTitle = document.title;
let waitingNow = [];  // the sessions of the last list, each with the time it was received
let waitingSeen = new Set();
let chimes = null;

function waitedText(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + String(s % 60).padStart(2, "0") + " s";
  return Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " min";
}

function chime() {  // a short tone; browsers play it once the operator has clicked in the page
  try {
    chimes = chimes || new AudioContext();
    const tone = chimes.createOscillator();
    const volume = chimes.createGain();
    tone.frequency.value = 880;
    volume.gain.value = 0.15;
    tone.connect(volume).connect(chimes.destination);
    tone.start();
    tone.stop(chimes.currentTime + 0.25);
  } catch (error) {
    // no audio here: the title bar still counts
  }
}
document.addEventListener("click", () => { if (chimes) chimes.resume(); });

function tickWaiting() {
  for (const s of waitingNow) {
    s.node.textContent = (s.away ? "left " : "waiting ") + waitedText(s.waited + (Date.now() - s.received) / 1000)
      + (s.away ? " ago" : "");
  }
}
setInterval(tickWaiting, 1000);

function renderWaiting(sessions) {
  const received = Date.now();
  const present = sessions.filter((s) => !s.away);
  if (present.some((s) => !waitingSeen.has(s.session))) chime();
  waitingSeen = new Set(present.map((s) => s.session));
  document.title = present.length ? "(" + present.length + ") " + consoleTitle : consoleTitle;
  waitingList.replaceChildren();
  waitingNow = [];
  for (const s of sessions) {
    const item = el("li", "waiting " + s.kind + (s.away ? " away" : ""));
    const head = el("div", "head");
    head.append(el("span", "id", s.session.slice(0, 8)));
    const what = s.kind === "approval" ? "approval: " + s.prompt
      : s.away ? "customer away, left a message" : "asks for a person";
    head.append(el("span", "kind", " " + what + " · "));
    const waited = el("span", "waited");
    head.append(waited);
    item.append(head);
    if (s.last) item.append(el("div", "last", "“" + s.last + "”"));
    const button = el("button", "take", s.away ? "Done" : "Take");
    button.type = "button";
    button.addEventListener("click", () => socket.send(JSON.stringify({
      type: s.away ? "dismiss" : "take", session: s.session,
    })));
    item.append(button);
    waitingList.append(item);
    waitingNow.push({ ...s, received: received, node: waited });
  }
  tickWaiting();
}
