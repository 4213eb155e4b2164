// The chat page: one WebSocket per open conversation, rebuilt from the event log (resume after the
// last seen number, also after a reconnect). Model text is rendered by render.js (safe markdown).
(function () {
  "use strict";
  const root = document.getElementById("chat");
  if (!root) return;
  const form = document.getElementById("chat-form");
  const input = document.getElementById("chat-input");
  const stopButton = document.getElementById("chat-stop");
  const sendButton = document.getElementById("chat-send");
  const statusLine = document.getElementById("chat-status");
  let ws = null, lastSeq = 0, retry = 500;
  let bubble = null, bubbleText = "", renderQueued = false;
  let thinking = null;  // the <details> the model's current reasoning streams into (collapsed)
  const cards = new Map();

  const { el, markdown } = hubRender;

  // --- events --------------------------------------------------------------------------------
  function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }

  function setRunning(running) {
    stopButton.hidden = !running;
    sendButton.disabled = running;
  }

  function endBubble() {
    if (bubble) markdown(bubbleText, bubble);  // a replay ends bubbles faster than frames render them
    bubble = null; bubbleText = "";
    endThinking();
  }

  function endThinking() {
    if (thinking) thinking.summary.textContent = "Reasoning";
    thinking = null;
  }

  // A turn cut at the model's output limit: say so, and offer to let the model go on.
  function cutNotice() {
    const box = el("div", "msg msg-notice cut-notice");
    box.append(el("span", "", "Cut at the model's output limit. "));
    const more = el("button", "btn btn-small", "Continue");
    more.type = "button";
    more.addEventListener("click", () => { if (send({ type: "message", payload: { text: "Continue" } })) box.remove(); });
    box.append(more);
    root.append(box);
  }

  function renderBubble() {
    renderQueued = false;
    if (bubble) { markdown(bubbleText, bubble); scrollDown(); }
  }

  function card(id, name) {
    let c = cards.get(id);
    if (!c) {
      const details = el("details", "toolcard");
      const summary = el("summary", "", name + " · running…");
      details.append(summary);
      c = { details, summary, name, done: false };
      cards.set(id, c);
      root.append(details);
    }
    return c;
  }

  const handlers = {
    user_message(p) {
      endBubble();
      root.append(el("div", "msg msg-user", p.text));
      setRunning(true);
      // The hub titles an untitled conversation after its first message: show it without a reload,
      // in the list, the heading and the settings form (saving that form must not clear it).
      const current = document.querySelector('.chat-list a[aria-current="page"]');
      if (current && current.dataset.untitled === "true") {
        const title = p.text.split(/\s+/).filter(Boolean).join(" ").slice(0, 60);
        current.textContent = title;
        current.dataset.untitled = "false";
        const heading = document.querySelector(".chat-settings summary strong");
        if (heading) heading.textContent = title;
        const field = document.getElementById("id_title");
        if (field && !field.value) field.value = title;
      }
    },
    reasoning(p) {
      if (!thinking) {
        const details = el("details", "reasoning");
        const summary = el("summary", "", "Thinking…");
        const body = el("div", "reasoning-text");
        details.append(summary, body);
        root.append(details);
        thinking = { details, summary, body };
      }
      thinking.body.textContent += p.text;  // shown as text, never as markup
    },
    refusal(p) {
      if (!bubble) { bubble = el("div", "msg msg-assistant"); root.append(bubble); }
      bubbleText += p.text || (bubbleText ? "" : "(no reason given)");
      bubble.classList.add("msg-refusal");
      endBubble();
    },
    text(p) {
      endThinking();
      if (!bubble) { bubble = el("div", "msg msg-assistant"); root.append(bubble); }
      bubbleText += p.text;
      if (!renderQueued) { renderQueued = true; requestAnimationFrame(renderBubble); }
    },
    status(p) { statusLine.textContent = p.state === "complete" ? "" : p.message || ""; if (p.state !== "complete") setRunning(true); },
    tool_call(p) {
      endBubble();
      const c = card(p.id, p.name);
      c.details.append(el("div", "tool-label", "Arguments"), el("pre", "tool-args", JSON.stringify(p.arguments, null, 2)));
    },
    approval_required(p) {
      const c = card(p.id, p.name);
      c.summary.textContent = p.name + " · waiting for your approval";
      c.details.open = true;
      const box = el("div", "approval");
      // The reason is the hub's (why this call asks); older stored events have none.
      box.append(el("span", "", "Run " + p.name + "?" + (p.reason ? " (" + p.reason + ")" : "")));
      for (const [label, allow] of [["Allow", true], ["Deny", false]]) {
        const b = el("button", allow ? "btn btn-primary btn-small" : "btn btn-danger btn-small", label);
        b.type = "button";
        b.addEventListener("click", () => { send({ type: "approve", payload: { call_id: p.id, allow } }); box.remove(); });
        box.append(b);
      }
      c.approval = box;
      c.details.append(box);
    },
    // A backend asks the user (host.js draws the form or link; the answer goes back to the turn).
    elicitation_required(p) { endBubble(); hubHost.elicitation(p, root, (answer) => send({ type: "elicit", payload: answer })); },
    elicitation_answered(p) { hubHost.answered(p); },
    tool_result(p) {
      const c = card(p.id, p.name);
      if (c.approval) c.approval.remove();
      c.done = true;
      c.details.classList.toggle("is-error", !!p.isError);
      c.summary.textContent = p.name + (p.isError ? " · error" : " · done") + " · " + Math.round(p.duration_ms || 0) + " ms";
      c.details.append(el("div", "tool-label", "Result"), el("pre", "tool-result", hubRender.resultText(p.content)));
    },
    error(p, event) {
      if (event.seq === null) { statusLine.textContent = p.message; statusLine.classList.add("is-error"); return; }
      endBubble();
      root.append(el("div", "msg msg-error", p.message));
    },
    end(p) {
      endBubble();
      for (const c of cards.values()) {
        if (!c.done) { c.done = true; c.summary.textContent = c.name + " · cancelled"; if (c.approval) c.approval.remove(); }
      }
      const u = p.usage || {};
      root.append(el("div", "usage", (p.status === "complete" ? "" : p.status + " · ") + "tokens in " + (u.input_tokens || 0) + " · out " + (u.output_tokens || 0)));
      for (const old of root.querySelectorAll(".cut-notice")) old.remove();  // only the latest turn may go on
      if (p.status === "incomplete") cutNotice();
      statusLine.textContent = "";
      setRunning(false);
    },
  };

  function onEvent(event) {
    if (event.seq !== null) {
      if (event.seq <= lastSeq) return;
      lastSeq = event.seq;
    }
    const handler = handlers[event.type];
    if (handler) handler(event.payload || {}, event);
    scrollDown();
  }

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) { ws.send(JSON.stringify(message)); return true; }
    statusLine.textContent = "Not connected; reconnecting…";
    return false;
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    ws = new WebSocket(scheme + location.host + root.dataset.ws);
    ws.addEventListener("open", () => { retry = 500; root.dataset.connected = "true"; statusLine.classList.remove("is-error"); ws.send(JSON.stringify({ type: "resume", payload: { after: lastSeq } })); });
    ws.addEventListener("message", (m) => onEvent(JSON.parse(m.data)));
    ws.addEventListener("close", () => { root.dataset.connected = "false"; statusLine.textContent = "Connection lost; reconnecting…"; setTimeout(connect, retry); retry = Math.min(retry * 2, 10000); });
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    statusLine.classList.remove("is-error");
    if (send({ type: "message", payload: { text } })) input.value = "";
  });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); } });
  stopButton.addEventListener("click", () => send({ type: "stop" }));
  // The model picker offers what the chosen provider serves, asked live (its error, when it fails).
  const providerSelect = document.getElementById("id_provider");
  async function loadModels() {
    const options = document.getElementById("model-options"), note = document.getElementById("model-note");
    options.replaceChildren();
    note.textContent = "";
    if (!providerSelect.value) return;
    try {
      const answer = await (await fetch("/api/llm/providers/" + encodeURIComponent(providerSelect.value) + "/models/")).json();
      for (const id of answer.models || []) { const o = document.createElement("option"); o.value = id; options.append(o); }
      note.textContent = answer.ok ? (answer.models || []).length + " models available" : "Provider error: " + (answer.error || "unreachable");
    } catch (e) { note.textContent = "Could not list the provider's models."; }
  }
  if (providerSelect) {
    providerSelect.addEventListener("change", loadModels);
    document.querySelector(".chat-settings").addEventListener("toggle", (e) => { if (e.target.open) loadModels(); });
  }

  setRunning(root.dataset.running === "true");
  connect();
})();
