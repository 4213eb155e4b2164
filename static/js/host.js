// What a backend asks the user during a tool call, shown where the call runs: its sampling request's
// editable fields (samplingEdit), and its questions (MCP elicitation):
// a form built from the request's restricted schema (strings with formats, numbers, booleans,
// single- and multi-select enums, defaults, required), or a link to open (URL mode: the box then
// waits until the server says it is done there, `notifications/elicitation/complete`). The page's
// own script passes `answer(action, content)`, which sends the user's decision to the hub.
(function () {
  "use strict";
  const { el } = hubRender;
  const boxes = new Map();  // request id -> its box on the page
  const typed = new Map();  // request id -> the values last submitted (kept when shown again)

  function choices(field) {
    const options = field.oneOf || field.anyOf;
    if (options) return options.map((o) => [o.const, o.title || o.const]);
    if (field.enum) return field.enum.map((v, i) => [v, (field.enumNames || [])[i] || v]);
    return null;
  }

  const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

  function control(name, field, id, given) {
    const picks = choices(field);
    field = given === undefined ? field : { ...field, default: given };
    if (field.type === "array") {
      const box = el("fieldset", "elicit-multi");
      const wanted = new Set(field.default || []);
      for (const [value, title] of choices(field.items || {}) || []) {
        const label = el("label", "check");
        const check = el("input");
        check.type = "checkbox"; check.value = value; check.checked = wanted.has(value);
        label.append(check, " " + title);
        box.append(label);
      }
      box.id = id;
      return [box, () => [...box.querySelectorAll("input:checked")].map((c) => c.value)];
    }
    if (picks) {
      const select = el("select");
      select.id = id;
      for (const [value, title] of picks) {
        const option = el("option", "", title);
        option.value = value; option.selected = value === field.default;
        select.append(option);
      }
      return [select, () => select.value];
    }
    const input = el("input");
    input.id = id; input.name = name;
    if (field.type === "boolean") {
      input.type = "checkbox"; input.checked = field.default === true;
      return [input, () => input.checked];
    }
    if (field.type === "number" || field.type === "integer") {
      input.type = "number"; input.step = field.type === "integer" ? "1" : "any";
      if (field.minimum !== undefined) input.min = field.minimum;
      if (field.maximum !== undefined) input.max = field.maximum;
      if (field.default !== undefined) input.value = field.default;
      return [input, () => (input.value === "" ? null : Number(input.value))];
    }
    input.type = INPUT_TYPES[field.format] || "text";
    if (field.default !== undefined) input.value = field.default;
    return [input, () => input.value];
  }

  function form(p, answer) {
    const schema = p.requestedSchema || {};
    const required = new Set(schema.required || []);
    const node = el("form", "elicit-form");
    const read = {};
    const given = typed.get(p.id) || {};
    for (const [name, field] of Object.entries(schema.properties || {})) {
      const id = p.id + "-" + name;
      const label = el("label", "", (field.title || name) + (required.has(name) ? " *" : ""));
      label.htmlFor = id;
      const [input, value] = control(name, field, id, given[name]);
      if (required.has(name) && input.tagName === "INPUT" && input.type !== "checkbox") input.required = true;
      node.append(label, input);
      if (field.description) node.append(el("p", "help", field.description));
      read[name] = value;
    }
    const buttons = el("div", "elicit-buttons");
    const submit = el("button", "btn btn-primary btn-small", "Submit");
    submit.type = "submit";
    buttons.append(submit, button("Decline", () => answer("decline")), button("Cancel", () => answer("cancel")));
    node.append(buttons);
    node.addEventListener("submit", (e) => {
      e.preventDefault();
      const content = {};
      for (const [name, value] of Object.entries(read)) { const v = value(); if (v !== null && v !== "") content[name] = v; }
      typed.set(p.id, content);
      answer("accept", content);
    });
    return node;
  }

  function link(p, answer) {
    const node = el("div", "elicit-url");
    const shown = el("code", "", p.url);
    const open = button("Open", () => { window.open(p.url, "_blank", "noopener"); answer("accept"); });
    open.classList.add("btn-primary");
    node.append(shown, open, button("Decline", () => answer("decline")), button("Cancel", () => answer("cancel")));
    return node;
  }

  function button(label, onClick) {
    const b = el("button", "btn btn-small", label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }

  // Show (or show again, with what was wrong) the request `p` in `container`.
  function elicitation(p, container, answer) {
    const old = boxes.get(p.id);
    const box = el("div", "elicitation card");
    box.id = p.id + "-box";
    if (p.mode === "url" && p.elicitationId) box.dataset.elicitation = p.elicitationId;
    box.append(el("p", "elicit-message", p.message || "A server asks for your input."));
    if (p.error) box.append(el("p", "elicit-error is-error", p.error));
    box.append(p.mode === "url" ? link(p, (action, content) => answer({ id: p.id, action, content })) : form(p, (action, content) => answer({ id: p.id, action, content })));
    if (old) old.replaceWith(box); else container.append(box);
    boxes.set(p.id, box);
  }

  // The request was answered (here or on another device): the form goes, a line says how.
  function answered(p) {
    const box = boxes.get(p.id);
    if (!box || box.classList.contains("elicit-complete")) return;
    const waiting = box.dataset.elicitation && p.action === "accept";
    box.replaceChildren(el("p", "elicit-done", waiting ? "You opened the link: waiting for the server to hear you finished there…" : "You answered: " + p.action));
  }

  // The server says the user finished at a URL elicitation's link (`elicitationId`).
  function completed(p) {
    const box = document.querySelector(`.elicitation[data-elicitation="${CSS.escape(p.elicitationId)}"]`);
    if (!box) return false;
    box.classList.add("elicit-complete");
    box.replaceChildren(el("p", "elicit-done", "Done at the link: the server heard you finished."));
    return true;
  }

  // The run page: each question the run waits on (kept with the run, so a reload or another
  // device shows it) is drawn in its placeholder; the answer is posted, and the page reloads.
  for (const pending of document.querySelectorAll(".elicitation-pending")) {
    const p = JSON.parse(pending.querySelector("script").textContent);
    const token = pending.querySelector("[name=csrfmiddlewaretoken]").value;
    const post = async (answer) => {
      const response = await fetch(pending.dataset.answer, {
        method: "POST", body: JSON.stringify(answer),
        headers: { "Content-Type": "application/json", "X-CSRFToken": token },
      });
      if (response.ok) { window.location.reload(); return; }
      elicitation({ ...p, error: (await response.json()).error || "Not sent." }, pending, post);
    };
    elicitation(p, pending, post);
  }

  // A sampling request's fields the user may change before allowing it (`editable`, from the
  // hub: each message's text, the system prompt, max tokens up to the endpoint's cap, the model).
  // `allow(edit)` sends the changes; the hub checks them and shows the request again if wrong.
  function samplingEdit(editable, allow) {
    const node = el("form", "sampling-edit");
    const field = (label, input) => {
      const id = "sampling-" + Math.random().toString(36).slice(2, 10);
      const tag = el("label", "", label);
      tag.htmlFor = id; input.id = id;
      node.append(tag, input);
      return input;
    };
    const area = (label, value) => { const t = el("textarea"); t.rows = 3; t.value = value; return field(label, t); };
    const system = area("System prompt", editable.systemPrompt || "");
    const texts = (editable.messages || []).map((m, i) => area("Message " + (i + 1) + " (" + m.role + ")", m.text));
    const tokens = el("input");
    tokens.type = "number"; tokens.min = "1"; tokens.step = "1"; tokens.max = editable.maxTokensCap; tokens.value = editable.maxTokens;
    field("Max tokens (at most " + editable.maxTokensCap + ")", tokens);
    const model = el("select");
    for (const m of editable.models || []) {
      const option = el("option", "", m.label);
      option.value = m.value; option.selected = m.value === editable.model;
      model.append(option);
    }
    field("Model", model);
    const submit = el("button", "btn btn-primary btn-small", "Allow edited");
    submit.type = "submit";
    node.append(submit);
    node.addEventListener("submit", (e) => {
      e.preventDefault();
      allow({
        systemPrompt: system.value,
        messages: texts.map((t) => t.value),
        maxTokens: tokens.value === "" ? null : Number(tokens.value),
        model: model.value,
      });
    });
    return node;
  }

  // The run page: a sampling request it waits on can be edited, then allowed (posted with the
  // approval form, the changes as JSON in its `edit` field).
  for (const pending of document.querySelectorAll(".approval[data-editable]")) {
    const editable = JSON.parse(pending.querySelector("script").textContent);
    const allowForm = pending.querySelector("form input[name=allow][value=true]").form;
    const edit = button("Edit", () => {
      edit.remove();
      pending.append(samplingEdit(editable, (changes) => {
        const field = el("input");
        field.type = "hidden"; field.name = "edit"; field.value = JSON.stringify(changes);
        allowForm.append(field);
        allowForm.submit();
      }));
    });
    pending.append(edit);
  }

  window.hubHost = { elicitation, answered, completed, samplingEdit, button };
})();
