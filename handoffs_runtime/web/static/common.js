// Shared by the pages of handoffs serve. Everything from the server is shown with textContent: inert text.
"use strict";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function socketUrl(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

// The operator token is typed into the sign-in form and kept for this tab only (sessionStorage). It is
// never read from the address: browsers keep every address in their history, replaceState or not.
function forgetAddressedToken() {
  if (/token=/.test(location.hash)) history.replaceState(null, "", location.pathname);
}

function isTokenError(message) {
  return message === "wrong operator token" || message === "the operator token is required";
}

function describe(ev) {
  switch (ev.type) {
    case "handoff":
      if (ev.outcome === "loop_stopped") return "⚠ handoff loop stopped at " + ev.source;
      if (ev.outcome !== "handoff") return "✗ " + ev.source + " could not hand over to " + ev.target;
      return "↪ " + ev.source + " handed the conversation to " + ev.target;
    case "tool_started": return "⚙ " + (ev.tool ? ev.agent + " is running " + ev.tool + "…" : ev.text);
    case "tool_finished": return "⚙ " + ev.tool + (ev.is_error ? " failed" : " done");
    case "notice": return ev.detail ? ev.text + ": " + ev.detail : ev.text;  // details: operators only
    case "ended": return "The conversation has ended.";
    default: return null;
  }
}

// A transcript view: bubbles for what people and agents say, lines for everything else.
class Transcript {
  constructor(node) { this.node = node; this.streaming = null; }
  clear() { this.node.replaceChildren(); this.streaming = null; }
  bubble(kind, who, text) {
    const row = el("div", "msg " + kind);
    row.append(el("div", "who", who));
    const body = el("div", "text", text);
    row.append(body);
    this.node.append(row);
    this.node.scrollTop = this.node.scrollHeight;
    return { row: row, body: body, agent: who };
  }
  line(kind, text) {
    this.node.append(el("div", "line " + kind, text));
    this.node.scrollTop = this.node.scrollHeight;
  }
  show(ev, youLabel) {
    if (ev.type === "said") { this.bubble("you", youLabel, ev.text); return; }
    if (ev.type === "delta") {
      if (!this.streaming || this.streaming.agent !== ev.agent) {
        this.streaming = this.bubble("agent streaming", ev.agent, "");
      }
      this.streaming.body.textContent += ev.text;
      this.node.scrollTop = this.node.scrollHeight;
      return;
    }
    if (ev.type === "reply") {
      const s = this.streaming;
      if (s && s.agent === ev.agent) {
        s.body.textContent = ev.text;  // the whole reply replaces its pieces (a cut stream too)
        s.row.classList.remove("streaming");
      } else {
        this.bubble("agent", ev.agent, ev.text);
      }
      this.streaming = null;
      return;
    }
    const text = describe(ev);
    if (text === null) return;
    const kind = ev.type.replace(/_.*/, "");
    if (this.streaming && kind !== "tool" && ev.type !== "ended") {
      // A handoff or notice recorded while a reply streams happened before it: show it above.
      this.node.insertBefore(el("div", "line " + kind, text), this.streaming.row);
      return;
    }
    if (this.streaming) { this.streaming.row.classList.remove("streaming"); this.streaming = null; }
    this.line(kind, text);
  }
}
