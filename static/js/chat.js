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
      const context = p.context || {};
      for (const m of context.prompt || []) {
        const box = el("div", "msg msg-prompt " + (m.role === "assistant" ? "msg-assistant" : "msg-user"));
        box.append(el("div", "tool-label", "/" + m.prompt), hubRender.rich(m.content, null, readResource, true) || el("span", "muted", "(empty)"));
        root.append(box);
      }
      if (p.text || (context.attachments || []).length) {
        const box = el("div", "msg msg-user", p.text);
        for (const a of context.attachments || []) {
          const details = el("details", "mcp-attachment");
          details.append(el("summary", "", "@ " + a.uri), ...(a.contents || []).map(hubRender.resourceBody));
          box.append(details);
        }
        root.append(box);
      }
      setRunning(true);
      // The hub titles an untitled conversation after its first message: show it without a reload,
      // in the list, the heading and the settings form (saving that form must not clear it).
      const current = document.querySelector('.chat-list a[aria-current="page"]');
      if (current && current.dataset.untitled === "true") {
        const opening = p.text || hubRender.resultText(((context.prompt || [])[0] || {}).content);  // as the hub titles it
        const title = opening.split(/\s+/).filter(Boolean).join(" ").slice(0, 60);
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
    status(p) {
      // A lost worker's turn continues elsewhere, re-asking the model for the round it was streaming.
      if (p.state === "recovering" && bubble) { bubble.remove(); bubble = null; bubbleText = ""; }
      statusLine.textContent = p.state === "complete" ? "" : p.message || ""; if (p.state !== "complete") setRunning(true); },
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
      if (p.editable) {  // a sampling request: its prompt, max tokens and model may be changed first
        const allowEdited = (edit) => { send({ type: "approve", payload: { call_id: p.id, allow: true, edit } }); box.remove(); };
        const edit = hubHost.button("Edit", () => { edit.remove(); box.append(hubHost.samplingEdit(p.editable, allowEdited)); });
        box.append(edit);
        if (p.editable.error) { box.append(el("p", "sampling-edit-error is-error", p.editable.error)); box.append(hubHost.samplingEdit(p.editable, allowEdited)); edit.remove(); }
      }
      if (c.approval) c.approval.remove();  // shown again (an edit that did not fit)
      c.approval = box;
      c.details.append(box);
    },
    tool_progress(p) {
      const c = cards.get(p.id);
      if (c && !c.done) { hubRender.progress(c.details, p); c.details.open = true; }
    },
    tool_log(p) {
      const c = cards.get(p.id);
      if (c) hubRender.logLine(c.details, p);
    },
    // A backend asks the user (host.js draws the form or link; the answer goes back to the turn).
    elicitation_required(p) { endBubble(); hubHost.elicitation(p, root, (answer) => send({ type: "elicit", payload: answer })); },
    elicitation_answered(p) { hubHost.answered(p); },
    elicitation_complete(p) { hubHost.completed(p); },
    tool_result(p) {
      const c = card(p.id, p.name);
      if (c.approval) c.approval.remove();
      c.done = true;
      const bar = c.details.querySelector(".mcp-progress");
      if (bar) bar.remove();
      c.details.classList.toggle("is-error", !!p.isError);
      const args = c.details.querySelector(".tool-args");
      if (p.arguments && args) {  // a sampling request the user edited: what was sent
        args.textContent = JSON.stringify(p.arguments, null, 2);
        args.previousElementSibling.textContent = "Arguments (as you edited them)";
      }
      c.summary.textContent = p.name + (p.isError ? " · error" : " · done") + " · " + Math.round(p.duration_ms || 0) + " ms";
      c.details.append(el("div", "tool-label", "Result"), el("pre", "tool-result", hubRender.resultText(p.content, p.structuredContent)));
      const more = hubRender.rich(p.content, p.structuredContent, readResource);
      if (more) { c.details.append(more); c.details.open = true; }
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
    if (event.seq === null && answers.has((event.payload || {}).id)) {
      const resolve = answers.get(event.payload.id);
      answers.delete(event.payload.id);
      resolve(event.payload);
      return;
    }
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

  // --- asking the socket (the `/` and `@` menus, resource links): answers carry the request's id ---
  const answers = new Map();
  let nextId = 1;
  function ask(type, payload) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      answers.set(id, resolve);
      if (!send({ type, payload: { ...payload, id } })) { answers.delete(id); reject(new Error("not connected")); }
      setTimeout(() => { if (answers.delete(id)) reject(new Error("no answer (see the status line)")); }, 20000);
    });
  }
  async function readResource(uri) { return (await ask("read", { uri })).contents || []; }

  // --- `/` prompts and `@` resources ----------------------------------------------------------------
  const picked = { prompt: null, resources: [] };
  const chips = el("div", "chat-context");
  const menu = el("ul", "chat-menu");
  menu.id = "chat-menu"; menu.setAttribute("role", "listbox"); menu.hidden = true;
  const argsForm = el("div", "chat-args card");
  argsForm.id = "chat-args"; argsForm.hidden = true;
  form.prepend(menu, argsForm, chips);  // above the input, which stays at the bottom of the page
  let items = null, active = 0, shownItems = [], menuTurn = 0;

  function offered() {  // one ask for every keystroke that comes before its answer
    if (!items) items = ask("items", {}).catch((e) => { items = null; throw e; });
    return items;
  }

  // What the caret is on: `/name` at the start, or an `@word`.
  function trigger() {
    const before = input.value.slice(0, input.selectionStart);
    let m = /^\/(\S*)$/.exec(before);
    if (m) return { kind: "/", query: m[1], start: 0 };
    m = /(^|\s)@(\S*)$/.exec(before);
    if (m) return { kind: "@", query: m[2], start: before.length - m[2].length - 1 };
    return null;
  }

  async function updateMenu() {
    const turn = ++menuTurn;
    if (!trigger()) { menu.hidden = true; return; }
    let all;
    try { all = await offered(); } catch (e) { menu.hidden = true; return; }
    // A later keystroke, a choice or a blur came meanwhile: this answer is stale, never reopen.
    const t = trigger();
    if (turn !== menuTurn || !t || document.activeElement !== input) return;
    const q = t.query.toLowerCase();
    const match = (x) => [x.name, x.title, x.uri, x.uriTemplate, x.description].some((v) => v && String(v).toLowerCase().includes(q));
    shownItems = t.kind === "/"
      ? all.prompts.filter(match).map((x) => ({ kind: "prompt", item: x }))
      : [...all.resources.filter(match).map((x) => ({ kind: "resource", item: x })), ...all.templates.filter(match).map((x) => ({ kind: "template", item: x }))];
    menu.replaceChildren();
    if (!shownItems.length) menu.append(el("li", "muted", t.kind === "/" ? "No prompts on this endpoint match." : "No resources on this endpoint match."));
    shownItems.slice(0, 50).forEach((entry, i) => {
      const li = el("li", "chat-menu-item");
      li.setAttribute("role", "option");
      const x = entry.item;
      li.append(el("strong", "", (t.kind === "/" ? "/" : "@") + (x.name || x.uri)), el("span", "muted", " " + (x.uriTemplate || (entry.kind === "resource" ? x.uri : "")) + (x.description ? " — " + x.description : "")));
      li.addEventListener("mousedown", (e) => { e.preventDefault(); choose(entry, t); });
      menu.append(li);
      if (i === active) li.setAttribute("aria-selected", "true");
    });
    menu.hidden = false;
  }

  function highlight(step) {
    const options = [...menu.querySelectorAll(".chat-menu-item")];
    if (!options.length) return;
    active = (active + step + options.length) % options.length;
    options.forEach((o, i) => o.setAttribute("aria-selected", String(i === active)));
  }

  function choose(entry, t) {
    input.value = input.value.slice(0, t.start) + input.value.slice(input.selectionStart);
    menu.hidden = true;
    menuTurn++;
    active = 0;
    if (entry.kind === "resource") { attach(entry.item.uri, entry.item.name || entry.item.uri); return; }
    const x = entry.item;
    const fields = entry.kind === "prompt"
      ? (x.arguments || []).map((a) => ({ name: a.name, description: a.description, required: !!a.required }))
      : (x.variables || []).map((name) => ({ name, required: true }));
    const ref = entry.kind === "prompt" ? { type: "ref/prompt", name: x.name } : { type: "ref/resource", uri: x.uriTemplate };
    argumentForm(entry.kind === "prompt" ? "/" + x.name : "@" + x.uriTemplate, x.description, fields, ref, (values) => {
      if (entry.kind === "prompt") { picked.prompt = { name: x.name, arguments: values }; renderChips(); }
      else attach(expand(x.uriTemplate, values), x.name);
    });
  }

  // RFC 6570 simple ({v}) and reserved ({+v}) expansion: what the menu's templates use.
  function expand(template, values) {
    return template.replace(/\{([+]?)([^}]+)\}/g, (_, op, names) => names.split(",").map((n) => {
      const v = values[n.replace(/\*$/, "")] || "";
      return op === "+" ? encodeURI(v) : encodeURIComponent(v);
    }).join(","));
  }

  // A form of the prompt's arguments (or the template's variables), each suggesting what the
  // backend's completion/complete offers for what is typed, knowing the others already filled.
  function argumentForm(title, description, fields, ref, done) {
    argsForm.replaceChildren(el("strong", "", title));
    if (description) argsForm.append(el("p", "muted", description));
    const inputs = {};
    for (const f of fields) {
      const id = "chat-arg-" + f.name.replace(/[^A-Za-z0-9_-]/g, "_");
      const label = el("label", "", f.name + (f.required ? " *" : ""));
      label.htmlFor = id;
      const box = el("input"); box.id = id; box.name = f.name; box.required = f.required; box.autocomplete = "off";
      const list = el("datalist"); list.id = id + "-options"; box.setAttribute("list", list.id);
      if (f.description) box.placeholder = f.description;
      let timer = null;
      const suggest = () => {
        clearTimeout(timer);
        timer = setTimeout(async () => {
          const context = {};
          for (const [n, i] of Object.entries(inputs)) if (n !== f.name && i.value) context[n] = i.value;
          try {
            const answer = await ask("complete", { ref, argument: { name: f.name, value: box.value }, context });
            list.replaceChildren(...(answer.values || []).map((v) => { const o = el("option"); o.value = v; return o; }));
          } catch (e) { list.replaceChildren(); }
        }, 150);
      };
      box.addEventListener("input", suggest);
      box.addEventListener("focus", suggest);
      inputs[f.name] = box;
      argsForm.append(label, box, list);
    }
    const use = el("button", "btn btn-primary btn-small", ref.type === "ref/prompt" ? "Use prompt" : "Attach");
    const cancel = el("button", "btn btn-small", "Cancel");
    use.type = cancel.type = "button";
    use.addEventListener("click", () => {
      const missing = fields.filter((f) => f.required && !inputs[f.name].value);
      if (missing.length) { statusLine.textContent = "Fill " + missing.map((f) => f.name).join(", ") + "."; return; }
      const values = {};
      for (const [n, i] of Object.entries(inputs)) if (i.value) values[n] = i.value;
      argsForm.hidden = true;
      done(values);
      input.focus();
    });
    cancel.addEventListener("click", () => { argsForm.hidden = true; input.focus(); });
    argsForm.append(el("div", "chat-args-actions"));
    argsForm.lastChild.append(use, cancel);
    argsForm.hidden = false;
    const first = argsForm.querySelector("input");
    if (first) first.focus();
  }

  function attach(uri, name) {
    if (!picked.resources.some((r) => r.uri === uri)) picked.resources.push({ uri, name });
    renderChips();
    input.focus();
  }

  function renderChips() {
    chips.replaceChildren();
    const chip = (label, drop) => {
      const c = el("span", "chip", label);
      const x = el("button", "chip-remove", "×"); x.type = "button"; x.setAttribute("aria-label", "Remove " + label);
      x.addEventListener("click", () => { drop(); renderChips(); });
      c.append(x);
      chips.append(c);
    };
    if (picked.prompt) chip("/" + picked.prompt.name, () => { picked.prompt = null; });
    for (const r of picked.resources) chip("@" + (r.name || r.uri), () => { picked.resources = picked.resources.filter((o) => o !== r); });
    input.required = !picked.prompt && !picked.resources.length;
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim() && !picked.prompt && !picked.resources.length) return;
    statusLine.classList.remove("is-error");
    const payload = { text };
    if (picked.prompt) payload.prompt = picked.prompt;
    if (picked.resources.length) payload.resources = picked.resources.map((r) => r.uri);
    if (send({ type: "message", payload })) {
      input.value = "";
      picked.prompt = null; picked.resources = [];
      renderChips();
    }
  });
  input.addEventListener("input", () => { active = 0; updateMenu(); });
  input.addEventListener("blur", () => { menu.hidden = true; menuTurn++; });
  input.addEventListener("keydown", (e) => {
    if (!menu.hidden && shownItems.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") { e.preventDefault(); highlight(e.key === "ArrowDown" ? 1 : -1); return; }
      if (e.key === "Enter" || e.key === "Tab") { e.preventDefault(); const t = trigger(); if (t) choose(shownItems[active], t); return; }
    }
    if (e.key === "Escape") { menu.hidden = true; menuTurn++; return; }
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
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
