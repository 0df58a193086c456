// The customer's wait for a person: while nobody has answered, the way back to the assistant is offered.
"use strict";

const waitBox = document.getElementById("wait");

function showWait(ev) {
  const waiting = ev.state === "waiting" || ev.state === "unavailable";
  waitBox.replaceChildren();
  waitBox.hidden = !waiting;
  if (!waiting) return;
  const hint = ev.state === "unavailable"
    ? "Nobody can answer right now: leave a message with your email or phone, keep writing, or"
    : "You can keep writing while you wait, or";
  const back = el("button", "choice back", "Back to the assistant");
  back.type = "button";
  back.addEventListener("click", () => {
    if (!socket || socket.readyState !== WebSocket.OPEN) return;
    socket.send(JSON.stringify({ type: "back" }));
    waitBox.hidden = true;
  });
  waitBox.append(el("span", "prompt", hint + " "), back);
}
