// The catalog editor: a small single-page app over the editor API (/v1/admin/, see
// docs/editor-api.md). It keeps nothing of the catalog itself: every view asks the API again,
// and every change sends the app's source revision back in If-Match, so that two editors never
// overwrite each other. Elements are built with the DOM, never from HTML strings, so that no
// product name or report can inject markup; the server's Content-Security-Policy forbids inline
// script anyway.
"use strict";

const TOKEN_KEY = "catalog.editor.token";
// Every request is bounded: a server that stops answering shows an error instead of a spinner.
const REQUEST_TIMEOUT_MS = 15000;
const PLATFORMS = ["iOS", "macOS", "tvOS", "watchOS", "visionOS"];
const TYPES = ["consumable", "non-consumable", "auto-renewable", "non-renewing"];
const STATUSES = ["draft", "cleared", "removed", "retired"];
const CHART_DAYS = 30;

const main = document.getElementById("main");
const statusLine = document.getElementById("status");

// MARK: - Talking to the API

/** A non-2xx answer other than 401, with the API's JSON error (`{"error":{"message":…}}`). */
class APIError extends Error {
  constructor(status, body, etag) {
    super((body && body.error && body.error.message) || `the server answered ${status}`);
    this.status = status;
    this.body = body;
    this.etag = etag;
  }
}

/** Thrown after a 401 has sent the editor back to sign-in: callers just stop. */
class SignedOut extends Error {}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(method, path, { body, ifMatch } = {}) {
  const headers = { Accept: "application/json" };
  const secret = token();
  if (secret) headers.Authorization = `Bearer ${secret}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (ifMatch) headers["If-Match"] = ifMatch;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
  let response, text;
  try {
    response = await fetch(path, {
      method, headers, cache: "no-store", signal: controller.signal,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    text = await response.text();
  } catch (error) {
    throw new APIError(0, { error: { message: error.name === "AbortError" ? "the server did not answer in time" : "the server cannot be reached" } });
  } finally {
    clearTimeout(timer);
  }
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (response.status === 401 && path.startsWith("/v1/admin/")) {
    signOut("The server refused the token (unknown or revoked). Sign in again.");
    throw new SignedOut();
  }
  if (!response.ok) throw new APIError(response.status, json, response.headers.get("ETag"));
  return { json, etag: response.headers.get("ETag") };
}

const enc = encodeURIComponent;

// MARK: - Building the page

/** `h("a", {href: "#/"}, "text", child)`: attributes starting with `on` become listeners. */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the view and moves focus to its heading, so keyboard and screen-reader users start there. */
function show(title, ...content) {
  document.title = `${title} · Catalog editor`;
  const heading = h("h1", { tabindex: "-1" }, title);
  main.replaceChildren(heading, ...content.flat().filter(Boolean));
  main.removeAttribute("aria-busy");
  heading.focus();
}

function say(message) {
  statusLine.textContent = message || "";
}

function loading(title) {
  show(title, h("p", { class: "muted" }, "Loading…"));
  // Until the view is complete; assistive technology (and the browser test) wait for it.
  main.setAttribute("aria-busy", "true");
}

/** An error box for a failed request; 403 and 409 get the API's own explanation. */
function errorBox(error) {
  const message = error instanceof APIError ? error.message : String(error);
  return h("div", { class: "error", role: "alert" }, h("p", {}, message));
}

function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC");
}

function short(revision) {
  return revision ? revision.slice(0, 12) : "—";
}

/** A table that becomes one card per row on a narrow screen (each cell labelled by its column). */
function table(caption, columns, rows) {
  return h("div", { class: "table" },
    h("table", {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((column) => h("th", { scope: "col" }, column)))),
      h("tbody", {}, rows.map((cells) =>
        h("tr", {}, cells.map((cell, index) =>
          index === 0 ? h("th", { scope: "row", "data-label": columns[index] }, cell) : h("td", { "data-label": columns[index] }, cell)))))));
}

function badge(text, kind) {
  return h("span", { class: `badge ${kind || text}` }, text);
}

/** Products, Publish, History, Reports, Customers: links, with the current one marked for assistive technology. */
function appTabs(app, current) {
  const tabs = [["Products", `#/apps/${enc(app)}`], ["Publish", `#/apps/${enc(app)}/publish`],
    ["History", `#/apps/${enc(app)}/history`], ["Reports", `#/apps/${enc(app)}/reports`],
    ["Customers", `#/apps/${enc(app)}/customers`]];
  return h("nav", { class: "tabs", "aria-label": `${app}` },
    h("a", { href: "#/apps" }, "All apps"),
    tabs.map(([label, href]) => h("a", { href, "aria-current": label === current ? "page" : undefined }, label)));
}

function diagnosticsList(diagnostics) {
  if (!diagnostics || diagnostics.length === 0) return null;
  return h("ul", { class: "diagnostics" }, diagnostics.map((d) => h("li", { class: d.severity }, h("code", {}, d.text))));
}

// MARK: - Sign in and out

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("nav").hidden = true;
  say("");
  renderSignIn(message);
}

function renderSignIn(message) {
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", spellcheck: "false", required: true, "aria-describedby": "token-hint" });
  const problem = h("p", { id: "sign-in-error", class: "error", role: "alert", hidden: !message }, message || "");
  const form = h("form", { class: "card narrow", id: "sign-in", onsubmit: async (event) => {
    event.preventDefault();
    const secret = input.value.trim();
    if (!secret) return;
    sessionStorage.setItem(TOKEN_KEY, secret);
    try {
      await api("GET", "/v1/admin/apps");
    } catch (error) {
      if (error instanceof SignedOut) return;
      sessionStorage.removeItem(TOKEN_KEY);
      problem.textContent = error.message;
      problem.hidden = false;
      return;
    }
    document.getElementById("nav").hidden = false;
    const target = location.hash && location.hash !== "#/sign-in" ? location.hash : "#/apps";
    if (location.hash === target) route(); else location.hash = target;
  } },
    problem,
    h("label", { for: "token" }, "Editor token"),
    input,
    h("p", { id: "token-hint", class: "hint" }, "Paste a token made with ", h("code", {}, "catalog token create NAME --role editor"),
      ". It is kept in this tab only and forgotten when you sign out or close it."),
    h("button", { type: "submit", class: "primary" }, "Sign in"));
  show("Sign in", form);
}

// MARK: - Apps

async function renderApps() {
  loading("Apps");
  const { json } = await api("GET", "/v1/admin/apps");
  const rows = json.apps.map((app) => [
    h("a", { href: `#/apps/${enc(app.app)}` }, app.app),
    app.publishedRevision === null ? badge("not published", "draft") : `revision ${app.publishedRevision}`,
    h("code", { title: app.sourceRevision }, short(app.sourceRevision)),
  ]);
  show("Apps", rows.length ? table("Apps with catalog sources", ["App", "Published", "Source revision"], rows)
    : h("p", {}, "No app has catalog sources yet."));
}

// MARK: - Products

async function loadApp(app) {
  const { json, etag } = await api("GET", `/v1/admin/apps/${enc(app)}`);
  return { state: json, etag };
}

function verdictOf(state, product) {
  const verdict = state.verdicts[product.id];
  if (product.quarantine) return badge("quarantined", "quarantined");
  if (verdict) return h("span", {}, badge(verdict.status), " ", h("span", { class: "muted" }, verdict.reason));
  return h("span", { class: "muted" }, "none");
}

async function renderProducts(app) {
  loading(app);
  const { state } = await loadApp(app);
  const facts = h("dl", { class: "facts" },
    h("dt", {}, "Published"), h("dd", {}, state.published ? `revision ${state.published.revision}, ${when(state.published.publishedAt)}` : "never"),
    h("dt", {}, "Source revision"), h("dd", {}, h("code", { title: state.sourceRevision }, short(state.sourceRevision))),
    h("dt", {}, "Files"), h("dd", {}, state.files.join(", ")));
  const rows = state.products.map((product) => [
    state.editable ? h("a", { href: `#/apps/${enc(app)}/products/${enc(product.id)}` }, product.id) : product.id,
    product.referenceName || "—",
    product.type || "—",
    badge(product.status),
    verdictOf(state, product),
  ]);
  show(app,
    appTabs(app, "Products"),
    facts,
    state.editable ? null : h("p", { class: "notice" }, `Read only here: ${state.notEditableReason}`),
    state.diagnostics.length ? h("section", { class: "card" }, h("h2", {}, "Problems in the sources"), diagnosticsList(state.diagnostics)) : null,
    table(`Products of ${app}`, ["Product", "Reference name", "Type", "Status", "Verdict"], rows));
}

// MARK: - Editing a product

// The form's fields, in source order (docs/catalog-format.md); `match` finds the field a
// diagnostic is about from its message, since diagnostics name a file position, not a key.
const FIELDS = [
  { key: "referenceName", label: "Reference name", match: /reference name/ },
  { key: "type", label: "Type", choices: TYPES, match: /product type|needs type|this one is/ },
  { key: "status", label: "Status", choices: STATUSES, match: /status/ },
  { key: "platforms", label: "Platforms", match: /platform/ },
  { key: "minimumAppVersion", label: "Minimum app version", hint: "such as 2.3.1; empty for every version", match: /app version/ },
  { key: "availableFrom", label: "Available from", hint: "ISO 8601, such as 2026-12-01T00:00:00Z; empty for now", match: /availablefrom/ },
  { key: "availableUntil", label: "Available until", hint: "ISO 8601; empty for no end", match: /availableuntil/ },
  { key: "subscription.group", label: "Subscription group", match: /subscription group|no 'group'|needs a subscription|have a subscription/ },
  { key: "subscription.period", label: "Subscription period", hint: "such as P1M or P1Y", match: /period/ },
  { key: "subscription.rank", label: "Subscription rank", number: true, match: /rank/ },
  { key: "displayOrder", label: "Display order", number: true, match: /displayorder|display order/ },
  { key: "metadata", label: "Metadata (JSON object)", textarea: true, match: /metadata/ },
];

function fieldID(key) {
  return `field-${key.replace(".", "-")}`;
}

function fieldValue(product, key) {
  const [head, tail] = key.split(".");
  const value = tail ? (product[head] || {})[tail] : product[head];
  if (key === "metadata") return value ? JSON.stringify(value, null, 2) : "";
  return value === undefined || value === null ? "" : String(value);
}

function fieldControl(field, product) {
  const id = fieldID(field.key);
  const describedBy = `${id}-hint ${id}-error`;
  if (field.key === "platforms") {
    const chosen = new Set(product.platforms || []);
    return h("fieldset", { class: "field", id, "aria-describedby": describedBy },
      h("legend", {}, field.label),
      h("div", { class: "choices" }, PLATFORMS.map((platform) =>
        h("label", { class: "choice" }, h("input", { type: "checkbox", name: "platforms", value: platform, checked: chosen.has(platform) }), platform))),
      h("p", { class: "hint", id: `${id}-hint` }, "None ticked: every platform of the app."),
      h("p", { class: "field-error", id: `${id}-error`, hidden: true }));
  }
  let control;
  if (field.choices) {
    control = h("select", { id, name: field.key, "aria-describedby": describedBy },
      h("option", { value: "" }, field.key === "status" ? "cleared (default)" : "—"),
      field.choices.map((choice) => h("option", { value: choice, selected: fieldValue(product, field.key) === choice }, choice)));
  } else if (field.textarea) {
    control = h("textarea", { id, name: field.key, rows: 5, spellcheck: "false", "aria-describedby": describedBy });
    control.value = fieldValue(product, field.key);
  } else {
    control = h("input", { id, name: field.key, type: field.number ? "number" : "text", inputmode: field.number ? "numeric" : undefined, "aria-describedby": describedBy });
    control.value = fieldValue(product, field.key);
  }
  return h("div", { class: "field" },
    h("label", { for: id }, field.label),
    control,
    h("p", { class: "hint", id: `${id}-hint`, hidden: !field.hint }, field.hint || ""),
    h("p", { class: "field-error", id: `${id}-error`, hidden: true }));
}

/** The product as the form says: unknown keys of the original are kept, empty fields left out. */
function productFromForm(form, original) {
  const product = { ...original };
  delete product.quarantine;
  const text = (key) => form.elements[key].value.trim();
  for (const key of ["referenceName", "type", "status", "minimumAppVersion", "availableFrom", "availableUntil"]) {
    if (text(key)) product[key] = text(key); else delete product[key];
  }
  const platforms = [...form.querySelectorAll("input[name=platforms]:checked")].map((box) => box.value);
  if (platforms.length) product.platforms = platforms; else delete product.platforms;
  const order = text("displayOrder");
  if (order) product.displayOrder = Number(order); else delete product.displayOrder;
  const subscription = { group: text("subscription.group"), period: text("subscription.period") };
  if (text("subscription.rank")) subscription.rank = Number(text("subscription.rank"));
  if (subscription.group || subscription.period || subscription.rank !== undefined) {
    product.subscription = Object.fromEntries(Object.entries(subscription).filter(([, value]) => value !== ""));
  } else {
    delete product.subscription;
  }
  const metadata = text("metadata");
  if (metadata) {
    let parsed;
    try { parsed = JSON.parse(metadata); } catch { parsed = undefined; }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new FormProblem([{ key: "metadata", text: "metadata must be a JSON object, such as {\"amount\": 100}" }]);
    }
    product.metadata = parsed;
  } else {
    delete product.metadata;
  }
  return product;
}

/** Problems found before sending, in the shape the form shows. */
class FormProblem extends Error {
  constructor(problems) {
    super(problems.map((problem) => problem.text).join("; "));
    this.problems = problems;
  }
}

function fieldFor(message) {
  const lower = message.toLowerCase();
  const field = FIELDS.find((candidate) => candidate.match.test(lower));
  return field ? field.key : null;
}

/** Shows each problem under its field (when one fits) and all of them in a summary that takes focus. */
function showProblems(form, summary, problems) {
  for (const element of form.querySelectorAll(".field-error")) { element.hidden = true; element.textContent = ""; }
  for (const element of form.querySelectorAll("[aria-invalid]")) element.removeAttribute("aria-invalid");
  if (!problems.length) { summary.hidden = true; return; }
  const items = problems.map((problem) => {
    const key = problem.key || fieldFor(problem.message || problem.text);
    if (key) {
      const id = fieldID(key);
      const slot = document.getElementById(`${id}-error`);
      slot.hidden = false;
      slot.append(h("span", { class: "line" }, problem.message || problem.text));
      document.getElementById(id).setAttribute("aria-invalid", "true");
      return h("li", {}, h("a", { href: `#${id}`, onclick: (event) => { event.preventDefault(); document.getElementById(id).focus(); } }, problem.text));
    }
    return h("li", {}, problem.text);
  });
  summary.replaceChildren(h("h2", {}, "The catalog's rules refuse this change"), h("ul", {}, items));
  summary.hidden = false;
  summary.focus();
}

async function renderEdit(app, id) {
  loading(id);
  let { state, etag } = await loadApp(app);
  let product = state.products.find((candidate) => candidate.id === id);
  if (!product) {
    show(id, appTabs(app, "Products"), h("p", { class: "error", role: "alert" }, `No product '${id}' in ${app}.`));
    return;
  }
  const summary = h("div", { class: "error", id: "problems", role: "alert", tabindex: "-1", hidden: true });
  const outcome = h("div", { id: "outcome", role: "status" });
  const form = h("form", { class: "card", id: "edit", novalidate: true },
    summary,
    h("p", {}, "Product ", h("code", {}, id), " (its identifier never changes).",
      product.quarantine ? h("span", { class: "notice" }, ` Quarantined: ${product.quarantine}`) : null),
    FIELDS.map((field) => fieldControl(field, product)),
    h("div", { class: "actions" },
      h("button", { type: "submit", class: "primary" }, "Save"),
      h("a", { href: `#/apps/${enc(app)}` }, "Back to products")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    outcome.replaceChildren();
    let body;
    try {
      body = productFromForm(form, product);
    } catch (problem) {
      if (!(problem instanceof FormProblem)) throw problem;
      showProblems(form, summary, problem.problems);
      return;
    }
    try {
      const { json, etag: newTag } = await api("PUT", `/v1/admin/apps/${enc(app)}/products/${enc(id)}`, { body, ifMatch: etag });
      etag = newTag;
      product = json.product;
      showProblems(form, summary, []);
      outcome.replaceChildren(h("p", { class: "ok" }, `Saved in ${json.file}. `, h("a", { href: `#/apps/${enc(app)}/publish` }, "Preview and publish"), " to make it live."));
      say(`Saved ${id}.`);
    } catch (error) {
      if (error instanceof SignedOut) return;
      if (error.status === 422) {
        showProblems(form, summary, error.body.error.diagnostics.map((d) => ({ message: d.message, text: d.text })));
      } else if (error.status === 412 && error.body && error.body.error.current) {
        // Someone else changed the app: show their version rather than silently overwrite it.
        await renderEdit(app, id);
        document.getElementById("outcome").replaceChildren(h("p", { class: "error", role: "alert" },
          "Someone else changed this app since you opened it. The form now shows the current version: make your change again."));
      } else {
        outcome.replaceChildren(errorBox(error));
      }
    }
  });
  show(`Edit ${id}`, appTabs(app, "Products"), outcome, form);
}

// MARK: - Publishing

function diffView(diff) {
  const sections = [];
  if (diff.added.length) sections.push(h("section", {}, h("h3", {}, `Added (${diff.added.length})`), h("ul", { class: "diff added" }, diff.added.map((id) => h("li", {}, h("code", {}, id))))));
  if (diff.changed.length) {
    sections.push(h("section", {}, h("h3", {}, `Changed (${diff.changed.length})`),
      h("ul", { class: "diff changed" }, diff.changed.map((change) =>
        h("li", {}, h("code", {}, change.id), h("ul", {}, change.details.map((detail) => h("li", {}, detail))))))));
  }
  if (diff.quarantined && diff.quarantined.length) {
    sections.push(h("section", {}, h("h3", {}, `Quarantined (${diff.quarantined.length})`),
      h("ul", { class: "diff removed" }, diff.quarantined.map((item) => h("li", {}, h("code", {}, item.id), ` ${item.reason}`)))));
  }
  if (diff.released && diff.released.length) sections.push(h("section", {}, h("h3", {}, `Released (${diff.released.length})`), h("ul", { class: "diff added" }, diff.released.map((id) => h("li", {}, h("code", {}, id))))));
  if (diff.removed.length) sections.push(h("section", {}, h("h3", {}, `Removed (${diff.removed.length})`), h("ul", { class: "diff removed" }, diff.removed.map((id) => h("li", {}, h("code", {}, id))))));
  return sections;
}

async function renderPublish(app, notice) {
  loading(`Publish ${app}`);
  const { etag } = await loadApp(app);
  let preview;
  try {
    preview = (await api("POST", `/v1/admin/apps/${enc(app)}/publish?dryRun=true`, { ifMatch: etag })).json;
  } catch (error) {
    if (error instanceof APIError && error.status === 422) {
      show(`Publish ${app}`, appTabs(app, "Publish"), h("div", { class: "error", role: "alert" },
        h("p", {}, "The sources break the catalog's rules; fix them before publishing."), diagnosticsList(error.body.error.diagnostics)));
      return;
    }
    throw error;
  }
  const outcome = h("div", { id: "outcome", role: "status" });
  if (preview.unchanged) {
    show(`Publish ${app}`, appTabs(app, "Publish"), notice, outcome,
      h("p", { class: "notice", id: "preview" }, `Nothing to publish: the sources give the same products as revision ${preview.revision}.`));
    return;
  }
  const message = h("input", { id: "publish-message", type: "text", maxlength: 500, "aria-describedby": "publish-message-hint" });
  const button = h("button", { type: "button", class: "primary", id: "confirm-publish" }, `Publish revision ${preview.revision}`);
  button.addEventListener("click", async () => {
    button.disabled = true;
    const why = message.value.trim();
    try {
      const { json } = await api("POST", `/v1/admin/apps/${enc(app)}/publish${why ? `?message=${enc(why)}` : ""}`, { ifMatch: etag });
      say(`Published revision ${json.revision} of ${app}.`);
      show(`Published ${app}`, appTabs(app, "Publish"),
        h("p", { class: "ok", id: "published" }, `Revision ${json.revision} is published. Apps get it with their next fetch.`),
        h("p", {}, h("a", { href: `#/apps/${enc(app)}/history` }, "See it in the history")));
    } catch (error) {
      if (error instanceof SignedOut) return;
      if (error.status === 412) {
        await renderPublish(app, h("p", { class: "error", role: "alert" },
          "Someone else changed or published this app after this preview was made. Here is a new preview: check it again."));
        return;
      }
      button.disabled = false;
      outcome.replaceChildren(errorBox(error));
    }
  });
  show(`Publish ${app}`, appTabs(app, "Publish"), notice,
    h("section", { class: "card", id: "preview" },
      h("h2", {}, `What revision ${preview.revision} would change`),
      diffView(preview.diff)),
    h("div", { class: "field" }, h("label", { for: "publish-message" }, "Message (optional)"), message,
      h("p", { class: "hint", id: "publish-message-hint" }, "Why, for the history; your token's name is recorded as the author.")),
    outcome,
    h("div", { class: "actions" }, button, h("a", { href: `#/apps/${enc(app)}` }, "Cancel")));
}

// MARK: - History

async function renderHistory(app, notice) {
  loading(`History of ${app}`);
  const [{ json: history }, { json: audit }] = await Promise.all([
    api("GET", `/v1/admin/apps/${enc(app)}/revisions?limit=100`),
    api("GET", `/v1/admin/audit?app=${enc(app)}&limit=20`)]);
  const newest = history.revisions.length ? history.revisions[0].revision : null;
  const rows = history.revisions.map((revision) => {
    const counts = ["added", "changed", "removed", "quarantined", "released"]
      .filter((key) => revision[key] > 0).map((key) => `${revision[key]} ${key}`).join(", ") || "no product changes";
    const rollback = revision.revision === newest ? h("span", { class: "muted" }, "current")
      : h("button", { type: "button", "data-revision": revision.revision, onclick: (event) => rollBack(app, revision.revision, event.currentTarget) },
        `Roll back to ${revision.revision}`);
    return [`${revision.revision}`, when(revision.publishedAt), revision.author || "—",
      revision.message || (revision.rollbackOf ? `rollback to ${revision.rollbackOf}` : "—"), counts, rollback];
  });
  const changes = audit.entries.map((entry) => [when(entry.at), entry.actor, entry.action, entry.summary]);
  show(`History of ${app}`, appTabs(app, "History"), notice,
    h("div", { id: "outcome", role: "status" }),
    rows.length ? table(`Revisions of ${app}, newest first`, ["Revision", "Published", "By", "Message", "Products", "Rollback"], rows)
      : h("p", {}, "Not published yet."),
    h("p", { class: "hint" }, "Rolling back publishes that revision's content as a new revision and writes it into the sources; history only grows."),
    h("h2", {}, "Recent changes"),
    changes.length ? table("Audit log, newest first", ["When", "Who", "What", "Summary"], changes) : h("p", {}, "No changes through the API yet."));
}

async function rollBack(app, revision, button) {
  button.disabled = true;
  try {
    const { etag } = await loadApp(app);
    const { json } = await api("POST", `/v1/admin/apps/${enc(app)}/revisions/${revision}/rollback`, { ifMatch: etag });
    say(json.unchanged ? `Revision ${revision} has the same products as the current one: nothing to publish.`
      : `Rolled back: revision ${json.revision} restores revision ${revision}.`);
    await renderHistory(app);
  } catch (error) {
    if (error instanceof SignedOut) return;
    if (error.status === 412) {
      await renderHistory(app, h("p", { class: "error", role: "alert" }, "Someone else changed this app meanwhile; here is the current history. Roll back again if you still mean to."));
      return;
    }
    button.disabled = false;
    const outcome = document.getElementById("outcome");
    outcome.replaceChildren(errorBox(error), diagnosticsList(error.body && error.body.error && error.body.error.diagnostics) || "");
  }
}

// MARK: - Reports

async function renderReports(app) {
  loading(`Reports for ${app}`);
  const [{ json: reports }, { state }] = await Promise.all([
    api("GET", `/v1/admin/apps/${enc(app)}/reports?since=${CHART_DAYS}d`), loadApp(app)]);
  // One row per identifier: the API aggregates per platform and environment too.
  const byIdentifier = new Map();
  for (const row of reports.aggregates) {
    const entry = byIdentifier.get(row.identifier) || { identifier: row.identifier, reports: 0, installs: 0, firstSeen: row.firstSeen, lastSeen: row.lastSeen, verdict: row.verdict, reason: row.reason, cause: row.cause, awaitingEditor: row.awaitingEditor, networks: row.networks };
    entry.reports += row.reports;
    entry.installs += row.installs;
    if (row.firstSeen < entry.firstSeen) entry.firstSeen = row.firstSeen;
    if (row.lastSeen > entry.lastSeen) entry.lastSeen = row.lastSeen;
    entry.verdict = entry.verdict || row.verdict;
    entry.reason = entry.reason || row.reason;
    entry.cause = entry.cause || row.cause;
    entry.awaitingEditor = entry.awaitingEditor || row.awaitingEditor;
    entry.networks = entry.networks || row.networks;
    byIdentifier.set(row.identifier, entry);
  }
  const identifiers = [...byIdentifier.values()].sort((a, b) => b.reports - a.reports);
  const known = new Set(state.products.map((product) => product.id));
  const figures = await Promise.all(identifiers.slice(0, 12).map(async (entry) => {
    const { json } = await api("GET", `/v1/admin/apps/${enc(app)}/reports/daily?identifier=${enc(entry.identifier)}&days=${CHART_DAYS}`);
    return reportCard(app, entry, json.days, known.has(entry.identifier), state.verdicts[entry.identifier]);
  }));
  // A store-wide failure is about the app, not its products: it comes first.
  const alert = (reports.alerts || {})[app];
  show(`Reports for ${app}`, appTabs(app, "Reports"),
    alert ? h("p", { class: "notice alert", role: "alert" }, h("strong", {}, "Alert: "), alert.message, ` (since ${when(alert.since)})`) : null,
    h("p", {}, `Identifiers the App Store answered as invalid, as apps reported them in the last ${CHART_DAYS} days.`),
    identifiers.length ? figures : h("p", { class: "notice" }, "No reports in this period."));
}

/** A button that posts an editor's decision on one identifier's verdict, then shows the reports again. */
function decisionButton(app, identifier, action, label) {
  return h("button", { type: "button", onclick: async (event) => {
    event.currentTarget.disabled = true;
    try {
      const { json } = await api("POST", `/v1/admin/apps/${enc(app)}/feedback/${enc(identifier)}/${action}`);
      say(json.summary);
      await renderReports(app);
    } catch (error) {
      if (!(error instanceof SignedOut)) say(error.message);
    }
  } }, label);
}

function reportCard(app, entry, days, isProduct, verdict) {
  const release = verdict ? decisionButton(app, entry.identifier, "release", `Release ${entry.identifier}`) : null;
  // Kept on sale by the quarantine budget or a store-wide alert: the editor decides.
  const quarantine = entry.awaitingEditor && isProduct
    ? decisionButton(app, entry.identifier, "quarantine", `Quarantine ${entry.identifier}`) : null;
  return h("section", { class: "card report" },
    h("h2", {}, h("code", {}, entry.identifier), isProduct ? null : h("span", { class: "muted" }, " (not in the catalog)")),
    h("dl", { class: "facts" },
      h("dt", {}, "Reports"), h("dd", {}, `${entry.reports} from ${entry.installs} installs`),
      h("dt", {}, "Seen"), h("dd", {}, `${when(entry.firstSeen)} to ${when(entry.lastSeen)}`),
      h("dt", {}, "Networks"), h("dd", {}, entry.networks ? `${entry.networks} (production reports about the product)` : "none that count toward quarantine"),
      h("dt", {}, "Verdict"), h("dd", {}, verdict ? [badge(verdict.status), " ", verdict.reason] : entry.verdict ? [badge(entry.verdict), " ", entry.reason || ""] : "none"),
      entry.cause ? h("dt", {}, "Probable cause") : null, entry.cause ? h("dd", { class: "cause" }, entry.cause) : null),
    chart(entry.identifier, days),
    release, quarantine);
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  append(element, children);
  return element;
}

/** Reports per day as bars, scaled to the busiest day; the label carries the figures for screen readers. */
function chart(identifier, days) {
  const width = 600, height = 180, left = 36, bottom = 22, top = 10;
  const peak = Math.max(1, ...days.map((day) => day.reports));
  const total = days.reduce((sum, day) => sum + day.reports, 0);
  const busiest = days.reduce((best, day) => (day.reports > best.reports ? day : best), days[0] || { reports: 0 });
  const slot = (width - left) / Math.max(1, days.length);
  const plot = height - bottom - top;
  const label = `${total} reports of ${identifier} over ${days.length} days` + (total ? `, most on ${busiest.day} (${busiest.reports})` : "");
  const bars = days.map((day, index) => {
    const barHeight = (day.reports / peak) * plot;
    return svg("rect", { x: left + index * slot + 1, y: top + plot - barHeight, width: Math.max(1, slot - 2), height: barHeight, class: "bar" },
      svg("title", {}, `${day.day}: ${day.reports}`));
  });
  return h("figure", { class: "chart" },
    svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label },
      svg("line", { x1: left, y1: top + plot, x2: width, y2: top + plot, class: "axis" }),
      svg("text", { x: left - 6, y: top + 8, "text-anchor": "end", class: "tick" }, peak),
      svg("text", { x: left - 6, y: top + plot, "text-anchor": "end", class: "tick" }, 0),
      svg("text", { x: left, y: height - 4, class: "tick" }, days.length ? days[0].day : ""),
      svg("text", { x: width, y: height - 4, "text-anchor": "end", class: "tick" }, days.length ? days[days.length - 1].day : ""),
      bars),
    h("figcaption", {}, label));
}

// MARK: - Customers

// Apple's revocation reasons (`revocationReason`).
const REVOCATION_REASONS = { 0: "refunded or revoked for another reason", 1: "refunded for an issue in the app" };

function revocation(item) {
  if (!item.revocationDate) return h("span", { class: "muted" }, "—");
  const reason = REVOCATION_REASONS[item.revocationReason];
  return h("span", {}, badge("revoked", "revoked"), " ", when(item.revocationDate), reason ? ` (${reason})` : "");
}

/** A period's state at the moment read: what a support person needs to see first. */
function periodState(period) {
  const states = [];
  if (period.active) states.push(badge("active", "cleared"));
  if (period.gracePeriodExpiresDate) states.push(badge(`grace until ${when(period.gracePeriodExpiresDate)}`, "suspect"));
  if (period.isInBillingRetryPeriod) states.push(badge("billing retry", "suspect"));
  if (period.isUpgraded) states.push(badge("upgraded", "draft"));
  if (period.revocationDate) states.push(revocation(period));
  if (!states.length) states.push(h("span", { class: "muted" }, "ended"));
  return h("span", { class: "states" }, states.flatMap((state, index) => index ? [" ", state] : [state]));
}

/** A transaction id, with its purchase's original transaction when that is another. */
function transactionCell(item) {
  const original = item.originalTransactionId && item.originalTransactionId !== item.transactionId
    ? h("span", { class: "muted" }, " of ", h("code", {}, item.originalTransactionId)) : null;
  return h("span", {}, h("code", {}, item.transactionId), original);
}

function offer(period) {
  if (period.offerType === undefined && !period.offerIdentifier) return "—";
  return [period.offerIdentifier, period.offerDiscountType, period.offerType !== undefined ? `type ${period.offerType}` : null]
    .filter(Boolean).join(", ");
}

/** The search by any key, and the customer it finds (`#/apps/APP/customers/KEY`). */
async function renderCustomers(app, key) {
  const title = `Customers of ${app}`;
  loading(title);
  const input = h("input", { id: "customer-key", name: "key", type: "search", value: key || "", autocomplete: "off", spellcheck: "false", required: true, "aria-describedby": "customer-key-hint" });
  const search = h("form", { class: "card", id: "customer-search", role: "search", onsubmit: (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (value) location.hash = `#/apps/${enc(app)}/customers/${enc(value)}`;
  } },
  h("label", { for: "customer-key" }, "Customer key"),
  input,
  h("p", { class: "hint", id: "customer-key-hint" }, "Any of the customer's keys: an appAccountToken, an appTransactionId, an originalTransactionId or a transactionId."),
  h("button", { type: "submit" }, "Find"));
  if (!key) {
    show(title, appTabs(app, "Customers"), search);
    return;
  }
  let customer;
  try {
    ({ json: customer } = await api("GET", `/v1/admin/apps/${enc(app)}/customers/${enc(key)}`));
  } catch (error) {
    if (error instanceof SignedOut) throw error;
    show(title, appTabs(app, "Customers"), search,
      error.status === 404 ? h("p", { class: "notice", id: "customer-outcome" }, `No customer of ${app} has the key ${key}.`)
        : h("div", { id: "customer-outcome" }, errorBox(error)));
    return;
  }
  const purchases = customer.purchases || [];
  const periods = customer.periods || [];
  const refunds = purchases.filter((purchase) => purchase.revocationDate);
  const transfers = customer.transfers || [];
  const consumption = customer.consumptionAnswers || [];
  const content = await contentSection(app, key);
  show(title, appTabs(app, "Customers"), search,
    h("section", { id: "customer", "aria-labelledby": "customer-heading" },
      h("h2", { id: "customer-heading" }, `Customer ${customer.customer}`),
      h("p", { class: "muted" }, `As of ${when(customer.at)}.`),
      table("Keys", ["Kind", "Value"], customer.keys.map((item) => [item.kind, h("code", {}, item.value)])),
      h("h3", {}, "Entitlements now"),
      customer.entitlements.length ? table("Active entitlements", ["Entitlement", "Environment", "Product", "Transaction", "Until", "Grace period"],
        customer.entitlements.map((item) => [item.entitlement, item.environment, item.productId, h("code", {}, item.transactionId),
          when(item.expiresDate), item.inGracePeriod ? badge("in grace", "suspect") : "no"]))
        : h("p", {}, "None."),
      customer.credits.length ? table("Consumable credits", ["Product", "Environment", "Quantity"],
        customer.credits.map((item) => [item.productId, item.environment, `${item.quantity}`])) : null,
      h("h3", {}, "Purchases"),
      purchases.length ? table("Purchases, every transaction", ["Transaction", "Product", "Type", "Environment", "Purchased", "Quantity", "Ownership", "Revocation"],
        purchases.map((item) => [transactionCell(item), item.productId, item.type || "—",
          item.environment, when(item.purchaseDate), `${item.quantity}`, item.inAppOwnershipType || "—", revocation(item)]))
        : h("p", {}, "None."),
      h("h3", {}, "Subscription periods"),
      periods.length ? table("Subscription periods", ["Transaction", "Product", "Environment", "Start", "End", "Offer", "State"],
        periods.map((item) => [transactionCell(item), item.productId, item.environment, when(item.start), when(item.end), offer(item), periodState(item)]))
        : h("p", {}, "None."),
      h("h3", {}, "Refunds"),
      refunds.length ? table("Refunded or revoked purchases", ["Transaction", "Product", "Environment", "Purchased", "Revoked"],
        refunds.map((item) => [h("code", {}, item.transactionId), item.productId, item.environment, when(item.purchaseDate), revocation(item)]))
        : h("p", {}, "None."),
      h("h3", {}, "Transfers"),
      transfers.length ? table("Transfers to or from this customer, oldest first (the audit of the transfer policy)", ["When", "Purchase", "From customer", "To customer", "Outcome"],
        transfers.map((item) => [when(item.at), h("code", {}, item.originalTransactionId), `${item.fromCustomer}`, `${item.toCustomer}`,
          badge(item.outcome, item.outcome === "refused" ? "suspect" : "cleared")]))
        : h("p", {}, "None."),
      consumption.length ? h("h3", {}, "Refund requests answered") : null,
      consumption.length ? table("Apple's consumption requests and the answers sent (docs/app-store-api.md)", ["When", "Transaction", "State", "Sent", "Apple's answer"],
        consumption.map((item) => [when(item.at), h("code", {}, item.transactionId || "—"),
          badge(item.state, item.state === "sent" ? "cleared" : item.state === "pending" ? "suspect" : "quarantined"),
          item.body ? h("code", {}, item.body) : "—", item.error || (item.status ? `${item.status}` : "—")]))
        : null),
    content);
}

/** A size in bytes as people read it (1 KiB is 1024 bytes). */
function size(bytes) {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * What the customer may download now and why, and what not (docs/content.md): the server decides
 * it as the content endpoint does; this only draws it. No download links: support signs one with
 * `catalog content url`.
 */
async function contentSection(app, key) {
  const section = (...children) => h("section", { id: "customer-content", "aria-labelledby": "customer-content-heading" },
    h("h2", { id: "customer-content-heading" }, "Content"), ...children);
  let content;
  try {
    ({ json: content } = await api("GET", `/v1/admin/apps/${enc(app)}/customers/${enc(key)}/content`));
  } catch (error) {
    if (error instanceof SignedOut) throw error;
    return section(h("div", { id: "customer-content-outcome" }, errorBox(error)));
  }
  if (!content.offered) return section(h("p", { id: "customer-content-outcome" }, "This app delivers no content."));
  return section(
    h("p", { class: "muted" }, `What they may download as of ${when(content.at)}, from revision ${content.revision}'s content. To give them a download link, run catalog content url ${app} ITEM --customer ${key}.`),
    content.items.length
      ? table("Items they may download, and the rule that grants each", ["Item", "Version", "Rule", "Transaction", "Product", "Files", "Size"],
        content.items.map((item) => [item.item, `${item.version}`, h("span", { title: item.why }, item.rule), h("code", {}, item.transactionId),
          item.productId || "—", `${item.files}`, size(item.bytes)]))
      : h("p", { id: "customer-content-outcome" }, "No content for this customer."),
    content.refused.length
      ? table("Items they may not download, and why", ["Item", "Version", "Why not"],
        content.refused.map((item) => [item.item, `${item.version}`, item.reason]))
      : null);
}

// MARK: - Routing

/** `#/apps/APP/products/ID` and the like; the hash keeps every view linkable and the Back button working. */
async function route() {
  say("");
  if (!token()) { renderSignIn(); return; }
  document.getElementById("nav").hidden = false;
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] !== "apps" || parts.length === 1) await renderApps();
    else if (parts.length === 2) await renderProducts(parts[1]);
    else if (parts[2] === "products" && parts.length === 4) await renderEdit(parts[1], parts[3]);
    else if (parts[2] === "publish") await renderPublish(parts[1]);
    else if (parts[2] === "history") await renderHistory(parts[1]);
    else if (parts[2] === "reports") await renderReports(parts[1]);
    else if (parts[2] === "customers") await renderCustomers(parts[1], parts.length > 3 ? parts[3] : null);
    else await renderApps();
  } catch (error) {
    if (error instanceof SignedOut) return;
    show("Something went wrong", errorBox(error), h("p", {}, h("a", { href: "#/apps" }, "Back to the apps")));
  }
}

document.getElementById("sign-out").addEventListener("click", () => {
  signOut("Signed out.");
});
// The skip link must not change the hash, which is the router's.
document.getElementById("skip").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});
window.addEventListener("hashchange", route);
route();
