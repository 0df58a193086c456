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

// An agent as people read it: its display name (label), else its name.
function named(label, name) { return label || name; }

// A question's words without the "y/n" or "(yes/no)" it ends with: its answers are buttons.
function withoutYesNo(prompt) {
  return prompt.replace(/\s*(?:\by\/n|\(\s*(?:yes\s*\/\s*no|y\s*\/\s*n|yes or no)\s*\))[\s.:]*$/i, "");
}

// When something was said (``at``: seconds since the epoch, else now), for a person: the time today,
// the date and time before today, or always both (``dated``).
function when(at, dated) {
  const date = at ? new Date(at * 1000) : new Date();
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (!dated && date.toDateString() === new Date().toDateString()) return time;
  return date.toLocaleDateString([], { year: "numeric", month: "short", day: "numeric" }) + " " + time;
}

function describe(ev) {
  switch (ev.type) {
    case "handoff": {
      const source = named(ev.source_label, ev.source);
      const target = named(ev.target_label, ev.target);
      if (ev.outcome === "loop_stopped") return "⚠ handoff loop stopped at " + source;
      if (ev.outcome !== "handoff") return "✗ " + source + " could not hand over to " + target;
      return "↪ " + target + " has joined";
    }
    case "tool_started":
      return "⚙ " + (ev.tool ? named(ev.label, ev.agent) + " is running " + ev.tool + "…" : ev.text);
    case "tool_finished": return "⚙ " + ev.tool + (ev.is_error ? " failed" : " done");
    case "notice": return ev.detail ? ev.text + ": " + ev.detail : ev.text;  // details: operators only
    case "question": return withoutYesNo(ev.prompt);  // a confirmation or an approval, then its answer
    case "ended": return "The conversation has ended.";
    default: return null;
  }
}

// A transcript view: bubbles for what people and agents say (with the time), lines for everything else.
class Transcript {
  constructor(node) { this.node = node; this.streaming = null; }
  clear() { this.node.replaceChildren(); this.streaming = null; }
  bubble(kind, who, text, at) {
    const row = el("div", "msg " + kind);
    const head = el("div", "who", who);
    const stamp = el("time", "", when(at));
    stamp.dateTime = new Date(at ? at * 1000 : Date.now()).toISOString();
    head.append(stamp);
    row.append(head);
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
    if (ev.type === "said") {  // the customer's words, or the operator's answer to an approval
      this.bubble("you", ev.person === "operator" ? "Operator" : youLabel, ev.text, ev.at);
      return;
    }
    if (ev.type === "delta") {
      const who = named(ev.label, ev.agent);
      if (!this.streaming || this.streaming.agent !== who) {
        this.streaming = this.bubble("agent streaming", who, "");
      }
      this.streaming.body.textContent += ev.text;
      this.node.scrollTop = this.node.scrollHeight;
      return;
    }
    if (ev.type === "reply") {
      const who = named(ev.label, ev.agent);
      const s = this.streaming;
      if (s && s.agent === who) {
        s.body.textContent = ev.text;  // the whole reply replaces its pieces (a cut stream too)
        s.row.classList.remove("streaming");
      } else {
        this.bubble("agent", who, ev.text, ev.at);
      }
      this.streaming = null;
      return;
    }
    const text = describe(ev);
    if (text === null) return;
    const kind = ev.type === "question" ? "asked" : ev.type.replace(/_.*/, "");  // "question": the box
    if (this.streaming && kind !== "tool" && ev.type !== "ended") {
      // A handoff or notice recorded while a reply streams happened before it: show it above.
      this.node.insertBefore(el("div", "line " + kind, text), this.streaming.row);
      return;
    }
    if (this.streaming) { this.streaming.row.classList.remove("streaming"); this.streaming = null; }
    this.line(kind, text);
  }
}
